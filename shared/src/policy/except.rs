//! The `except` operator: a set of values that must not appear in a metadata parameter. It is
//! not one of the seven operators of OpenID Federation 1.0 but an extension (defined in
//! G. Zachmann's "except metadata policy operator" document, implemented by go-oidfed/lib and
//! lighthouse 0.22), so it lives apart from the standard rules and is the one non-standard
//! operator Pharos implements (it may be listed in `metadata_policy_crit`).
//!
//! The rules, as go-oidfed/lib implements them (`policyoperators.go`, `policyverifiers.go`):
//! - operator value: an array, like `subset_of`;
//! - merge: the union, so a subordinate can only exclude more, never re-admit a value;
//! - apply, after `superset_of` and before `essential`: an absent parameter stays absent, an
//!   array loses the excepted values (it may become empty, and stays present), and a single
//!   value that is excepted is `invalid_metadata` (there is nothing left to keep);
//! - combinations: allowed with every standard operator, but refused when `value` (or one of
//!   its elements), `add` or `superset_of` names an excepted value. Each of those requires a
//!   value the same policy forbids, so the policy could never be met. `default`, `one_of`,
//!   `subset_of` and `essential` combine without a condition: the order of application settles
//!   them (an excepted `default` is removed or refused like a value the entity gave).

use serde_json::{Map, Value};

use super::sets::{contains, invalid_metadata, invalid_policy};
use crate::Result;

/// The operator's name.
pub(crate) const EXCEPT: &str = "except";

/// The elements of `a` that are in `except`, for naming them in a message.
fn excepted<'a>(a: &'a [Value], except: &[Value]) -> Vec<&'a Value> {
    a.iter().filter(|x| contains(except, x)).collect()
}

/// `"a", "b"`: values for a message.
fn list(values: &[&Value]) -> String {
    values
        .iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The combination rules of `except` with the operators beside it in one parameter policy.
/// `except` is the operator's (type-checked) value.
pub(crate) fn check_combinations(policy: &Map<String, Value>, except: &[Value]) -> Result<()> {
    match policy.get("value") {
        // A null value removes the parameter: nothing is left for `except` to forbid.
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            let bad = excepted(items, except);
            if !bad.is_empty() {
                return Err(invalid_policy(format!(
                    "the value must not contain except values ({})",
                    list(&bad)
                )));
            }
        }
        Some(single) => {
            if contains(except, single) {
                return Err(invalid_policy(format!(
                    "the value {single} is among the except values"
                )));
            }
        }
    }
    for op in ["add", "superset_of"] {
        if let Some(items) = policy.get(op).and_then(Value::as_array) {
            let bad = excepted(items, except);
            if !bad.is_empty() {
                return Err(invalid_policy(format!(
                    "the values of {op} must not be among the except values ({})",
                    list(&bad)
                )));
            }
        }
    }
    Ok(())
}

/// Apply `except` to the parameter's current value (`None` = absent): excepted values leave an
/// array; a single excepted value is non-compliant metadata.
pub(crate) fn apply(except: &[Value], cur: &mut Option<Value>) -> Result<()> {
    match cur {
        None => Ok(()),
        Some(Value::Array(items)) => {
            items.retain(|x| !contains(except, x));
            Ok(())
        }
        Some(single) if contains(except, single) => Err(invalid_metadata(format!(
            "the value {single} is among the except values"
        ))),
        Some(_) => Ok(()),
    }
}
