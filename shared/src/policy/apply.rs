//! Applying a (resolved) metadata policy to metadata (§6.1.4.2): operators run in the fixed
//! order value → add → default → one_of → subset_of → superset_of → except → essential
//! (`except`, an extension, where go-oidfed/lib runs it: after every operator that can change or
//! check the value, before `essential` checks that one is left).

use serde_json::{Map, Value};

use super::except::{self, EXCEPT};
use super::merge::{as_policy_object, strip};
use super::operators::check_param_policy;
use super::sets::{contains, invalid_metadata, is_subset};
use super::trace::{OpStep, OperatorStep};
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
    apply_param_traced(policy, value, None)
}

/// Runs operator `op` of `policy`, if present, on `cur`, recording its effect in `trace`.
fn step(
    trace: &mut Option<&mut Vec<OpStep>>,
    policy: &Map<String, Value>,
    op: &str,
    cur: &mut Option<Value>,
    f: impl FnOnce(&Value, &mut Option<Value>) -> Result<()>,
) -> Result<()> {
    let Some(operand) = policy.get(op) else {
        return Ok(());
    };
    let before = trace.is_some().then(|| cur.clone());
    let r = f(operand, cur);
    if let (Some(steps), Some(before)) = (trace.as_deref_mut(), before) {
        steps.push(OpStep {
            operator: op.to_owned(),
            operand: operand.clone(),
            before,
            after: if r.is_ok() { cur.clone() } else { None },
            error: r.as_ref().err().map(|e| strip(clone_error(e))),
        });
    }
    r
}

/// The message of `e`, kept for the trace while `e` itself is returned.
fn clone_error(e: &crate::Error) -> crate::Error {
    match e {
        crate::Error::InvalidMetadata(m) => invalid_metadata(m.clone()),
        other => crate::Error::InvalidPolicy(other.to_string()),
    }
}

/// [`apply_param_policy`], recording each operator's effect in `trace` when one is given.
pub(crate) fn apply_param_traced(
    policy: &Map<String, Value>,
    value: Option<&Value>,
    mut trace: Option<&mut Vec<OpStep>>,
) -> Result<Option<Value>> {
    check_param_policy(policy, &[])?;
    let t = &mut trace;
    let mut cur = value.cloned();
    step(t, policy, "value", &mut cur, |v, cur| {
        *cur = if v.is_null() { None } else { Some(v.clone()) };
        Ok(())
    })?;
    step(t, policy, "add", &mut cur, |add, cur| {
        let Some(add) = add.as_array() else {
            return Ok(());
        };
        match cur.as_mut() {
            None => *cur = Some(Value::Array(add.clone())),
            Some(v) => {
                let items = as_array_param("add", v)?;
                for x in add {
                    if !contains(items, x) {
                        items.push(x.clone());
                    }
                }
            }
        }
        Ok(())
    })?;
    step(t, policy, "default", &mut cur, |d, cur| {
        if cur.is_none() {
            *cur = Some(d.clone());
        }
        Ok(())
    })?;
    step(t, policy, "one_of", &mut cur, |one_of, cur| {
        match (one_of.as_array(), cur.as_ref()) {
            (Some(one_of), Some(v)) if !contains(one_of, v) => {
                Err(invalid_metadata("value is not one of the one_of values"))
            }
            _ => Ok(()),
        }
    })?;
    step(t, policy, "subset_of", &mut cur, |subset_of, cur| {
        if let (Some(subset_of), Some(v)) = (subset_of.as_array(), cur.as_mut()) {
            as_array_param("subset_of", v)?.retain(|x| contains(subset_of, x));
        }
        Ok(())
    })?;
    step(t, policy, "superset_of", &mut cur, |superset_of, cur| {
        if let (Some(superset_of), Some(v)) = (superset_of.as_array(), cur.as_mut())
            && !is_subset(superset_of, as_array_param("superset_of", v)?)
        {
            return Err(invalid_metadata(
                "value does not contain all superset_of values",
            ));
        }
        Ok(())
    })?;
    step(t, policy, EXCEPT, &mut cur, |ex, cur| match ex.as_array() {
        Some(ex) => except::apply(ex, cur),
        None => Ok(()),
    })?;
    step(t, policy, "essential", &mut cur, |essential, cur| {
        if essential.as_bool() == Some(true) && cur.is_none() {
            return Err(invalid_metadata("essential parameter is absent"));
        }
        Ok(())
    })?;
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
fn apply_scope_policy(
    original: &Map<String, Value>,
    value: Option<&Value>,
    trace: Option<&mut Vec<OpStep>>,
) -> Result<Option<Value>> {
    let mut policy = original.clone();
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
    let mut steps = trace.is_some().then(Vec::new);
    let out = apply_param_traced(&policy, input.as_ref(), steps.as_mut());
    if let (Some(trace), Some(steps)) = (trace, steps) {
        // Shown as the metadata has them: a string, and the operand as the policy wrote it.
        trace.extend(steps.into_iter().map(|s| OpStep {
            operand: original.get(&s.operator).cloned().unwrap_or(s.operand),
            before: s.before.map(join_scope),
            after: s.after.map(join_scope),
            ..s
        }));
    }
    Ok(out?.map(join_scope))
}

/// An array of strings joined back into a space-separated `scope`; anything else as it is.
fn join_scope(v: Value) -> Value {
    match v {
        Value::Array(items) if items.iter().all(Value::is_string) => {
            let words: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
            Value::String(words.join(" "))
        }
        other => other,
    }
}

/// Apply a parameter policy to the parameter called `param`: `scope` gets its string/array
/// conversion, everything else goes straight to [`apply_param_policy`].
pub(crate) fn apply_named_param(
    param: &str,
    policy: &Map<String, Value>,
    value: Option<&Value>,
) -> Result<Option<Value>> {
    apply_named_traced(param, policy, value, None)
}

/// [`apply_named_param`], recording each operator's effect in `trace` when one is given.
fn apply_named_traced(
    param: &str,
    policy: &Map<String, Value>,
    value: Option<&Value>,
    trace: Option<&mut Vec<OpStep>>,
) -> Result<Option<Value>> {
    if param == "scope" {
        apply_scope_policy(policy, value, trace)
    } else {
        apply_param_traced(policy, value, trace)
    }
}

/// Apply a full `metadata_policy` to full metadata (`{entity_type: {param: value}}`). Only
/// entity types present in the metadata are affected; policies for other types are ignored
/// (§6.1.4.2). `null` policy means "no policy".
pub fn apply_metadata_policy(policy: &Value, metadata: &Value) -> Result<Value> {
    apply_metadata_policy_traced(policy, metadata, None)
}

/// [`apply_metadata_policy`], recording every operator's effect on every parameter in
/// `trace` when one is given (the chain explainer); the result is the same.
pub fn apply_metadata_policy_traced(
    policy: &Value,
    metadata: &Value,
    mut trace: Option<&mut Vec<OperatorStep>>,
) -> Result<Value> {
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
            let mut steps = trace.is_some().then(Vec::new);
            let applied = apply_named_traced(param, ops, md.get(param), steps.as_mut());
            if let (Some(trace), Some(steps)) = (trace.as_deref_mut(), steps) {
                trace.extend(steps.into_iter().map(|s| OperatorStep {
                    entity_type: entity_type.clone(),
                    parameter: param.clone(),
                    operator: s.operator,
                    operand: s.operand,
                    before: s.before,
                    after: s.after,
                    error: s.error,
                }));
            }
            let applied = applied.map_err(|e| match e {
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
