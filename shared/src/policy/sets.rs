//! What the policy operators, merge, apply and `except` share: sets of JSON values compared by
//! JSON equality (the order of merged values is undefined, §6.1.3), and the two error kinds.

use serde_json::Value;

use crate::Error;

/// Shorthand for an `invalid_policy` error.
pub(crate) fn invalid_policy(msg: impl Into<String>) -> Error {
    Error::InvalidPolicy(msg.into())
}

/// Shorthand for an `invalid_metadata` error.
pub(crate) fn invalid_metadata(msg: impl Into<String>) -> Error {
    Error::InvalidMetadata(msg.into())
}

/// Set membership by JSON equality (order of merged values is undefined, §6.1.3).
pub(crate) fn contains(set: &[Value], v: &Value) -> bool {
    set.iter().any(|x| x == v)
}

/// `a ⊆ b`, comparing elements by JSON equality.
pub(crate) fn is_subset(a: &[Value], b: &[Value]) -> bool {
    a.iter().all(|x| contains(b, x))
}

/// `a ∪ b`, keeping `a`'s order and appending the new elements of `b` in their order.
pub(crate) fn union(a: &[Value], b: &[Value]) -> Vec<Value> {
    let mut out = a.to_vec();
    for x in b {
        if !contains(&out, x) {
            out.push(x.clone());
        }
    }
    out
}

/// `a ∩ b`, keeping `a`'s order.
pub(crate) fn intersection(a: &[Value], b: &[Value]) -> Vec<Value> {
    a.iter().filter(|x| contains(b, x)).cloned().collect()
}

/// Whether two operator values are equal for the `value`/`default` merge rule: JSON equality,
/// except that arrays are compared as sets (the order of array values is not significant).
pub(crate) fn values_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Array(x), Value::Array(y)) => is_subset(x, y) && is_subset(y, x),
        _ => a == b,
    }
}
