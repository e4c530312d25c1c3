//! Applying a (resolved) metadata policy to metadata (§6.1.4.2): operators run in the fixed
//! order value → add → default → one_of → subset_of → superset_of → except → essential
//! (`except`, an extension, where go-oidfed/lib runs it: after every operator that can change or
//! check the value, before `essential` checks that one is left).

use serde_json::{Map, Value};

use super::except::{self, EXCEPT};
use super::merge::as_policy_object;
use super::operators::check_param_policy;
use super::sets::{contains, invalid_metadata, is_subset};
use crate::Result;

/// The parameter value as an array, or a metadata error: array operators cannot act on
/// scalars.
fn as_array_param<'a>(op: &str, v: &'a mut Value) -> Result<&'a mut Vec<Value>> {
    v.as_array_mut().ok_or_else(|| {
        invalid_metadata(format!("operator {op} requires an array-valued parameter"))
    })
}

/// Apply a parameter policy to one metadata parameter value (`None` = absent). Returns the new
/// value (`None` = remove the parameter) or `invalid_metadata` when the value fails a check.
/// The policy is validated first, so an invalid policy never silently half-applies.
pub fn apply_param_policy(
    policy: &Map<String, Value>,
    value: Option<&Value>,
) -> Result<Option<Value>> {
    check_param_policy(policy, &[])?;
    let op_array = |op: &str| policy.get(op).and_then(Value::as_array);
    let mut cur = value.cloned();

    if let Some(v) = policy.get("value") {
        cur = if v.is_null() { None } else { Some(v.clone()) };
    }
    if let Some(add) = op_array("add") {
        match cur.as_mut() {
            None => cur = Some(Value::Array(add.clone())),
            Some(v) => {
                let items = as_array_param("add", v)?;
                for x in add {
                    if !contains(items, x) {
                        items.push(x.clone());
                    }
                }
            }
        }
    }
    if let Some(d) = policy.get("default")
        && cur.is_none()
    {
        cur = Some(d.clone());
    }
    if let (Some(one_of), Some(v)) = (op_array("one_of"), cur.as_ref())
        && !contains(one_of, v)
    {
        return Err(invalid_metadata("value is not one of the one_of values"));
    }
    if let (Some(subset_of), Some(v)) = (op_array("subset_of"), cur.as_mut()) {
        as_array_param("subset_of", v)?.retain(|x| contains(subset_of, x));
    }
    if let (Some(superset_of), Some(v)) = (op_array("superset_of"), cur.as_mut())
        && !is_subset(superset_of, as_array_param("superset_of", v)?)
    {
        return Err(invalid_metadata(
            "value does not contain all superset_of values",
        ));
    }
    if let Some(ex) = op_array(EXCEPT) {
        except::apply(ex, &mut cur)?;
    }
    if policy.get("essential").and_then(Value::as_bool) == Some(true) && cur.is_none() {
        return Err(invalid_metadata("essential parameter is absent"));
    }
    Ok(cur)
}

/// Split a space-separated OAuth `scope` string into a string array (§6.1.3.1.8: operators
/// treat `scope` as an array).
fn split_scope(s: &str) -> Value {
    Value::Array(
        s.split_whitespace()
            .map(|t| Value::String(t.to_owned()))
            .collect(),
    )
}

/// Apply a parameter policy to `scope`, which is a space-separated string in metadata but an
/// array of strings for the operators; the result is joined back with spaces.
fn apply_scope_policy(policy: &Map<String, Value>, value: Option<&Value>) -> Result<Option<Value>> {
    let mut policy = policy.clone();
    for op in ["value", "default"] {
        if let Some(Value::String(s)) = policy.get(op) {
            let split = split_scope(s);
            policy.insert(op.to_owned(), split);
        }
    }
    let input = match value {
        Some(Value::String(s)) => Some(split_scope(s)),
        other => other.cloned(),
    };
    let out = apply_param_policy(&policy, input.as_ref())?;
    Ok(match out {
        Some(Value::Array(items)) if items.iter().all(Value::is_string) => {
            let words: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
            Some(Value::String(words.join(" ")))
        }
        other => other,
    })
}

/// Apply a parameter policy to the parameter called `param`: `scope` gets its string/array
/// conversion, everything else goes straight to [`apply_param_policy`].
pub(crate) fn apply_named_param(
    param: &str,
    policy: &Map<String, Value>,
    value: Option<&Value>,
) -> Result<Option<Value>> {
    if param == "scope" {
        apply_scope_policy(policy, value)
    } else {
        apply_param_policy(policy, value)
    }
}

/// Apply a full `metadata_policy` to full metadata (`{entity_type: {param: value}}`). Only
/// entity types present in the metadata are affected; policies for other types are ignored
/// (§6.1.4.2). `null` policy means "no policy".
pub fn apply_metadata_policy(policy: &Value, metadata: &Value) -> Result<Value> {
    let metadata_obj = metadata
        .as_object()
        .ok_or_else(|| invalid_metadata("metadata must be a JSON object"))?;
    if policy.is_null() {
        return Ok(metadata.clone());
    }
    let policy = as_policy_object(policy, "metadata_policy")?;
    let mut out = metadata_obj.clone();
    for (entity_type, md) in out.iter_mut() {
        let Some(params) = policy.get(entity_type) else {
            continue;
        };
        let params = as_policy_object(params, entity_type)?;
        let md = md
            .as_object_mut()
            .ok_or_else(|| invalid_metadata(format!("metadata.{entity_type} must be an object")))?;
        for (param, ops) in params {
            let ops = as_policy_object(ops, param)?;
            let applied = apply_named_param(param, ops, md.get(param)).map_err(|e| match e {
                crate::Error::InvalidMetadata(m) => {
                    invalid_metadata(format!("{entity_type}.{param}: {m}"))
                }
                other => other,
            })?;
            match applied {
                Some(v) => {
                    md.insert(param.clone(), v);
                }
                None => {
                    md.remove(param);
                }
            }
        }
    }
    Ok(Value::Object(out))
}
