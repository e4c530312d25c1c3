//! The seven standard metadata policy operators (OpenID Federation §6.1.3.1): their operator
//! value types and the allowed combinations (the set helpers they share with merge, apply and
//! `except` are in [`super::sets`]). The one non-standard operator Pharos implements, `except`, has its rules in
//! [`super::except`]; they are called from here.
//!
//! Validation lives here, in one place, because the spec applies the same combination rules to
//! a single statement's policy and to the merged policy (§6.1.3, §6.1.4.1).

use serde_json::{Map, Value};

use super::except::{self, EXCEPT};
use super::sets::{contains, invalid_policy, is_subset};
use crate::Result;

/// The seven standard operators, in the fixed application order of §6.1.3.1.
///
/// Callers use this to tell standard from non-standard operators, e.g. when deciding whether a
/// name in `metadata_policy_crit` is understood.
pub const STANDARD_OPERATORS: [&str; 7] = [
    "value",
    "add",
    "default",
    "one_of",
    "subset_of",
    "superset_of",
    "essential",
];

/// Elements the array operators accept: strings (mandatory), numbers and objects (optional,
/// supported here because JSON equality makes them cheap).
fn is_set_element(v: &Value) -> bool {
    matches!(v, Value::String(_) | Value::Number(_) | Value::Object(_))
}

/// The operator value of an array operator, or a policy error if it has the wrong type.
fn array_operand<'a>(op: &str, v: &'a Value) -> Result<&'a Vec<Value>> {
    match v {
        Value::Array(items) if items.iter().all(is_set_element) => Ok(items),
        _ => Err(invalid_policy(format!(
            "operator {op} requires an array of strings, numbers or objects"
        ))),
    }
}

/// The array of an operator known to be present and already type-checked.
fn arr<'a>(policy: &'a Map<String, Value>, op: &str) -> Option<&'a Vec<Value>> {
    policy.get(op).and_then(Value::as_array)
}

/// Validate one parameter-level policy (`{operator: value}`): operator value types and the
/// allowed combinations of §6.1.3.1 (and of `except`). Unknown (non-standard) operators are
/// ignored unless their name is in `crit` (collected from `metadata_policy_crit`), in which case
/// the policy cannot be enforced and is rejected, as §6.1.3.2 requires. `except` is not unknown:
/// it is checked, merged and applied, critical or not.
pub fn check_param_policy(policy: &Map<String, Value>, crit: &[String]) -> Result<()> {
    for (op, v) in policy {
        match op.as_str() {
            "value" => {}
            "add" | "one_of" | "subset_of" | "superset_of" | EXCEPT => {
                array_operand(op, v)?;
            }
            "default" => {
                if v.is_null() {
                    return Err(invalid_policy("operator default must not be null"));
                }
            }
            "essential" => {
                if !v.is_boolean() {
                    return Err(invalid_policy("operator essential requires a boolean"));
                }
            }
            other => {
                if crit.iter().any(|c| c == other) {
                    return Err(invalid_policy(format!(
                        "critical operator {other} is not supported"
                    )));
                }
            }
        }
    }
    check_combinations(policy)
}

/// The pairwise combination rules of §6.1.3.1 (table "Allowed with"), then those of `except`.
fn check_combinations(policy: &Map<String, Value>) -> Result<()> {
    let add = arr(policy, "add");
    let one_of = arr(policy, "one_of");
    let subset_of = arr(policy, "subset_of");
    let superset_of = arr(policy, "superset_of");
    let essential = policy.get("essential").and_then(Value::as_bool);

    if let Some(value) = policy.get("value") {
        check_value_combinations(policy, value, essential)?;
    }
    if add.is_some() && one_of.is_some() {
        return Err(invalid_policy(
            "operators add and one_of cannot be combined",
        ));
    }
    if one_of.is_some() && (subset_of.is_some() || superset_of.is_some()) {
        return Err(invalid_policy(
            "operator one_of cannot be combined with subset_of or superset_of",
        ));
    }
    if let (Some(add), Some(sub)) = (add, subset_of)
        && !is_subset(add, sub)
    {
        return Err(invalid_policy(
            "the values of add must be a subset of the values of subset_of",
        ));
    }
    if let (Some(sub), Some(sup)) = (subset_of, superset_of)
        && !is_subset(sup, sub)
    {
        return Err(invalid_policy(
            "the values of subset_of must be a superset of the values of superset_of",
        ));
    }
    if let Some(ex) = arr(policy, EXCEPT) {
        except::check_combinations(policy, ex)?;
    }
    Ok(())
}

/// A `value` combination rule: operator name, predicate over (value, operand), and message.
type ValueRule = (&'static str, fn(&[Value], &[Value]) -> bool, &'static str);

/// Combination rules that involve `value`.
fn check_value_combinations(
    policy: &Map<String, Value>,
    value: &Value,
    essential: Option<bool>,
) -> Result<()> {
    if value.is_null() {
        // A null value removes the parameter: nothing else can constrain it, and it cannot be
        // essential.
        for op in ["add", "default", "one_of", "subset_of", "superset_of"] {
            if policy.contains_key(op) {
                return Err(invalid_policy(format!(
                    "operator value null cannot be combined with {op}"
                )));
            }
        }
        if essential == Some(true) {
            return Err(invalid_policy(
                "operator value null cannot be combined with essential true",
            ));
        }
        return Ok(());
    }
    if let Some(one_of) = arr(policy, "one_of")
        && !contains(one_of, value)
    {
        return Err(invalid_policy("the value must be among the one_of values"));
    }
    let checks: [ValueRule; 3] = [
        (
            "add",
            |v, o| is_subset(o, v),
            "the values of add must be a subset of the value",
        ),
        (
            "subset_of",
            |v, o| is_subset(v, o),
            "the value must be a subset of subset_of",
        ),
        (
            "superset_of",
            |v, o| is_subset(o, v),
            "the value must be a superset of superset_of",
        ),
    ];
    for (op, ok, msg) in checks {
        if let Some(operand) = arr(policy, op) {
            match value.as_array() {
                Some(v) if ok(v, operand) => {}
                Some(_) => return Err(invalid_policy(msg)),
                None => {
                    return Err(invalid_policy(format!(
                        "operator {op} requires an array-valued value operator"
                    )));
                }
            }
        }
    }
    Ok(())
}
