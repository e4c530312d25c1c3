//! What a metadata policy must be before Pharos stores it and signs it into statements: the
//! checks the resolver applies to a statement's policy ([`super::check_metadata_policy`]: the
//! operator value types and the combinations of §6.1.3.1), run at write time, plus the rules
//! that keep a typo from silently doing nothing:
//! - every operator one Pharos implements, or a non-standard one the operator accepts
//!   (`federation.accept.policy_operators`): a resolver ignores an operator it does not know
//!   unless it is critical, so `{"frobnicate": …}` would never be enforced anywhere;
//! - every entity type one of the specifications or allowed
//!   ([`crate::metadata_types::check_entity_type`]);
//! - a `value` or `default` of a parameter the specifications type has that type (the value
//!   ends up in the metadata as given).
//!
//! `metadata_policy_crit` may list only the non-standard operators Pharos implements
//! ([`check_crit_operator`]): a critical operator a resolver does not implement makes every
//! chain through the statement invalid, Pharos's own resolver included.

use serde_json::Value;

use super::operators::STANDARD_OPERATORS;
use crate::metadata_types::{check_entity_type, param_type};

/// Non-standard operators Pharos's policy engine implements (merge, apply and combinations):
/// the only names `metadata_policy_crit` may list: `except` (an extension; its rules are in
/// `policy/except.rs`).
pub const NON_STANDARD_OPERATORS: [&str; 1] = [super::except::EXCEPT];

/// Whether Pharos's policy engine implements `op`.
pub fn implements(op: &str) -> bool {
    STANDARD_OPERATORS.contains(&op) || NON_STANDARD_OPERATORS.contains(&op)
}

/// The names a stored policy may use beyond what Pharos knows, and the critical operators.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteRules<'a> {
    /// The operators declared critical (`metadata_policy_crit` of the general settings).
    pub crit: &'a [String],
    /// `federation.accept.entity_types`.
    pub entity_types: &'a [String],
    /// `federation.accept.policy_operators`.
    pub operators: &'a [String],
}

/// Checks a `metadata_policy` document before it is stored; the message names the place
/// (`metadata_policy.<type>.<param>.<operator>`).
pub fn check_policy_to_store(policy: &Value, rules: &WriteRules<'_>) -> Result<(), String> {
    let types = policy
        .as_object()
        .ok_or("metadata_policy: must be a JSON object")?;
    for (t, params) in types {
        let at = format!("metadata_policy.{t}");
        check_entity_type(t, rules.entity_types).map_err(|e| format!("{at}: {e}"))?;
        let params = params
            .as_object()
            .ok_or_else(|| format!("{at}: must be a JSON object"))?;
        for (p, ops) in params {
            let at = format!("{at}.{p}");
            let ops = ops
                .as_object()
                .ok_or_else(|| format!("{at}: must be a JSON object of operators"))?;
            for (op, v) in ops {
                if !implements(op) && !rules.operators.iter().any(|o| o == op) {
                    return Err(format!(
                        "{at}.{op}: Pharos does not implement the operator {op:?} (it implements \
                         {}); a non-standard operator only when listed in \
                         federation.accept.policy_operators",
                        STANDARD_OPERATORS
                            .iter()
                            .chain(NON_STANDARD_OPERATORS.iter())
                            .copied()
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                if matches!(op.as_str(), "value" | "default")
                    && !v.is_null()
                    && let Some(ty) = param_type(t, p)
                    && !ty.accepts(v)
                {
                    return Err(format!("{at}.{op}: must be {}", ty.describe()));
                }
            }
        }
    }
    super::check_metadata_policy(policy, rules.crit)
        .map_err(|e| format!("metadata_policy: {}", super::merge::strip(e)))
}

/// Checks one name for `metadata_policy_crit`: a non-standard operator Pharos implements
/// (standard operators are never listed, §6.1.3.2).
pub fn check_crit_operator(op: &str) -> Result<(), String> {
    if STANDARD_OPERATORS.contains(&op) {
        return Err(format!(
            "{op:?} is a standard operator; metadata_policy_crit lists only non-standard ones"
        ));
    }
    if !NON_STANDARD_OPERATORS.contains(&op) {
        return Err(format!(
            "{op:?} is not a non-standard operator Pharos implements ({}): listed as critical it \
             would make every chain through the statement invalid",
            NON_STANDARD_OPERATORS.join(", ")
        ));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing unwrap is a failing test
mod tests {
    use serde_json::json;

    use super::*;

    fn check(v: Value, rules: &WriteRules<'_>) -> Result<(), String> {
        check_policy_to_store(&v, rules)
    }

    #[test]
    fn unknown_operators_are_refused_unless_accepted() {
        let p = json!({"openid_relying_party": {"contacts": {"frobnicate": ["x"]}}});
        let e = check(p.clone(), &WriteRules::default()).unwrap_err();
        assert!(
            e.starts_with(
                "metadata_policy.openid_relying_party.contacts.frobnicate: Pharos does not \
                 implement the operator \"frobnicate\""
            ),
            "{e}"
        );
        let accepted = ["frobnicate".to_owned()];
        let rules = WriteRules {
            operators: &accepted,
            ..WriteRules::default()
        };
        assert!(check(p, &rules).is_ok());
    }

    #[test]
    fn the_engine_s_combination_rules_apply_at_write_time() {
        let p = json!({"openid_provider": {"scopes_supported": {"value": ["a"], "one_of": ["b"]}}});
        let e = check(p, &WriteRules::default()).unwrap_err();
        assert!(e.starts_with("metadata_policy: "), "{e}");
        let p = json!({"openid_provider": {"x": {"essential": "yes"}}});
        assert!(check(p, &WriteRules::default()).is_err());
    }

    #[test]
    fn entity_types_and_typed_values_are_checked() {
        let e = check(json!({"openid_relying_partyy": {}}), &WriteRules::default()).unwrap_err();
        assert!(
            e.starts_with("metadata_policy.openid_relying_partyy: "),
            "{e}"
        );
        let p = json!({"openid_relying_party": {"redirect_uris": {"value": "https://x"}}});
        assert_eq!(
            check(p, &WriteRules::default()).unwrap_err(),
            "metadata_policy.openid_relying_party.redirect_uris.value: must be an array of URI strings"
        );
        // A null value removes the parameter; untyped parameters take anything.
        let p =
            json!({"openid_relying_party": {"redirect_uris": {"value": null}, "x": {"value": 1}}});
        assert!(check(p, &WriteRules::default()).is_ok());
    }

    #[test]
    fn crit_lists_only_implemented_non_standard_operators() {
        assert!(check_crit_operator("value").is_err());
        assert!(check_crit_operator("regexp").is_err());
        for op in NON_STANDARD_OPERATORS {
            assert!(check_crit_operator(op).is_ok());
        }
    }
}
