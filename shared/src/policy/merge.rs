//! Merging policies down a Trust Chain (§6.1.4.1): a superior's policy is combined with its
//! subordinate's so that the subordinate can only restrict further, never relax.

use serde_json::{Map, Value};

use super::except::EXCEPT;
use super::operators::check_param_policy;
use super::sets::{intersection, invalid_policy, union, values_equal};
use crate::Result;

/// Merge two values of the same operator by that operator's merge rule (§6.1.3.1; `except`
/// merges as the union, like `add`: a subordinate can only exclude more).
fn merge_operator(op: &str, sup: &Value, sub: &Value) -> Result<Value> {
    let arrays = || match (sup.as_array(), sub.as_array()) {
        (Some(a), Some(b)) => Ok((a, b)),
        _ => Err(invalid_policy(format!("operator {op} requires arrays"))),
    };
    match op {
        "value" | "default" => {
            if values_equal(sup, sub) {
                Ok(sup.clone())
            } else {
                Err(invalid_policy(format!(
                    "operator {op}: superior and subordinate values differ"
                )))
            }
        }
        "add" | "superset_of" | EXCEPT => {
            let (a, b) = arrays()?;
            Ok(Value::Array(union(a, b)))
        }
        "subset_of" => {
            let (a, b) = arrays()?;
            Ok(Value::Array(intersection(a, b)))
        }
        "one_of" => {
            let (a, b) = arrays()?;
            let merged = intersection(a, b);
            if merged.is_empty() {
                Err(invalid_policy(
                    "operator one_of: merged intersection is empty",
                ))
            } else {
                Ok(Value::Array(merged))
            }
        }
        "essential" => match (sup.as_bool(), sub.as_bool()) {
            (Some(a), Some(b)) => Ok(Value::Bool(a || b)),
            _ => Err(invalid_policy("operator essential requires a boolean")),
        },
        // A non-standard operator that is not critical is ignored (§6.1.3.2). It has no known
        // merge rule, so the superior's value is kept: a subordinate cannot relax a superior.
        _ => Ok(sup.clone()),
    }
}

/// Merge a superior's (higher in the chain) and a subordinate's parameter policy per the
/// operator merge rules, then re-check the combination rules on the result, because a merge
/// can produce a combination that neither input had (§6.1.4.1).
pub fn merge_param_policy(
    superior: &Map<String, Value>,
    subordinate: &Map<String, Value>,
) -> Result<Map<String, Value>> {
    check_param_policy(superior, &[])?;
    check_param_policy(subordinate, &[])?;
    let mut out = superior.clone();
    for (op, sub_value) in subordinate {
        let merged = match out.get(op) {
            Some(sup_value) => merge_operator(op, sup_value, sub_value)?,
            None => sub_value.clone(),
        };
        out.insert(op.clone(), merged);
    }
    check_param_policy(&out, &[])?;
    Ok(out)
}

/// View a JSON value as an object, or fail with a policy error naming `what`.
pub(crate) fn as_policy_object<'a>(v: &'a Value, what: &str) -> Result<&'a Map<String, Value>> {
    v.as_object()
        .ok_or_else(|| invalid_policy(format!("{what} must be a JSON object")))
}

/// Validate a whole `metadata_policy` claim (`{entity_type: {param: {op: value}}}`): the
/// three-level structure and every parameter policy, with the chain's critical operators.
/// Used for each statement's policy before it is merged (§6.1.4.1 step 3).
pub fn check_metadata_policy(policy: &Value, crit: &[String]) -> Result<()> {
    for (entity_type, params) in as_policy_object(policy, "metadata_policy")? {
        let params = as_policy_object(params, &format!("metadata_policy.{entity_type}"))?;
        for (param, ops) in params {
            let ops = as_policy_object(ops, &format!("metadata_policy.{entity_type}.{param}"))?;
            check_param_policy(ops, crit)
                .map_err(|e| invalid_policy(format!("{entity_type}.{param}: {}", strip(e))))?;
        }
    }
    Ok(())
}

/// The message of an error without its code prefix, for re-wrapping with context.
pub(crate) fn strip(e: crate::Error) -> String {
    match e {
        crate::Error::InvalidPolicy(m) | crate::Error::InvalidMetadata(m) => m,
        other => other.to_string(),
    }
}

/// Merge two full `metadata_policy` objects level by level (§6.1.4.1 step 4): entity types and
/// parameters present in only one side are copied, those present in both are merged. `null` on
/// either side means "no policy".
pub fn merge_metadata_policy(superior: &Value, subordinate: &Value) -> Result<Value> {
    if subordinate.is_null() {
        check_metadata_policy(superior, &[])?;
        return Ok(superior.clone());
    }
    if superior.is_null() {
        check_metadata_policy(subordinate, &[])?;
        return Ok(subordinate.clone());
    }
    check_metadata_policy(superior, &[])?;
    check_metadata_policy(subordinate, &[])?;
    let mut out = as_policy_object(superior, "metadata_policy")?.clone();
    for (entity_type, sub_params) in as_policy_object(subordinate, "metadata_policy")? {
        let Some(sup_params) = out.get_mut(entity_type).and_then(Value::as_object_mut) else {
            out.insert(entity_type.clone(), sub_params.clone());
            continue;
        };
        for (param, sub_ops) in as_policy_object(sub_params, entity_type)? {
            let merged = match sup_params.get(param).and_then(Value::as_object) {
                Some(sup_ops) => merge_param_policy(sup_ops, as_policy_object(sub_ops, param)?)
                    .map_err(|e| invalid_policy(format!("{entity_type}.{param}: {}", strip(e))))?,
                None => as_policy_object(sub_ops, param)?.clone(),
            };
            sup_params.insert(param.clone(), Value::Object(merged));
        }
    }
    Ok(Value::Object(out))
}
