//! Additional claims: extra top-level claims an operator adds to a statement Pharos signs (our
//! Entity Configuration, the general subordinate statement settings, or one subordinate's
//! statement), and the one rule that decides which names an operator may use.
//!
//! The rule is the same for every statement so that a claim accepted in one place is accepted
//! in all of them: every claim the specification defines is reserved, except
//! `trust_anchor_hints`, which Pharos does not compute itself. A reserved claim is refused on
//! write and, should a hand-edited database contain one, left out when signing (the protocol
//! claims Pharos computes always win).

use serde_json::Value;

/// Claims defined by the spec; `crit` may not list them (§13.4). Which of them an operator's
/// additional claims may set is decided here ([`is_reserved`]).
pub const STANDARD_CLAIMS: [&str; 18] = [
    "iss",
    "sub",
    "iat",
    "exp",
    "jwks",
    "metadata",
    "crit",
    "authority_hints",
    "trust_anchor_hints",
    "trust_marks",
    "trust_mark_issuers",
    "trust_mark_owners",
    "constraints",
    "metadata_policy",
    "metadata_policy_crit",
    "source_endpoint",
    "aud",
    "trust_anchor",
];

/// One additional claim as the data plane publishes it.
#[derive(Debug, Clone, PartialEq)]
pub struct AdditionalClaim {
    /// Claim name.
    pub claim: String,
    /// Claim value.
    pub value: Value,
    /// Listed in `crit` when true.
    pub crit: bool,
}

/// Longest claim name (the database column is `VARCHAR(255)`; a longer name is a 400, not a
/// database error).
pub const MAX_NAME_LEN: usize = 255;

/// Claims Pharos computes in every statement it signs.
const COMPUTED: [&str; 8] = [
    "iss",
    "sub",
    "iat",
    "exp",
    "jwks",
    "metadata",
    "crit",
    "authority_hints",
];

/// Claims Pharos computes from the subordinate settings (documents, operators, fetch URL).
const SUBORDINATE_STATEMENT: [&str; 4] = [
    "metadata_policy",
    "metadata_policy_crit",
    "constraints",
    "source_endpoint",
];

/// Trust mark claims: signed trust marks and their authorities are not free-form values.
const TRUST_MARKS: [&str; 3] = ["trust_marks", "trust_mark_issuers", "trust_mark_owners"];

/// Claims of other statement types (resolve responses, client assertions) that would make a
/// statement read as something it is not.
const OTHER_STATEMENTS: [&str; 2] = ["aud", "trust_anchor"];

/// The standard claims an operator may set: Pharos does not compute `trust_anchor_hints`.
/// They still may not be listed in `crit` (spec §13.4: `crit` lists extension claims only).
pub const OPERATOR_STANDARD_CLAIMS: [&str; 1] = ["trust_anchor_hints"];

/// Whether `name` is reserved: Pharos sets it (or it is not an operator's to set).
pub fn is_reserved(name: &str) -> bool {
    [
        &COMPUTED[..],
        &SUBORDINATE_STATEMENT,
        &TRUST_MARKS,
        &OTHER_STATEMENTS,
    ]
    .iter()
    .any(|set| set.contains(&name))
}

/// Why an additional claim was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClaimError {
    /// No name, an empty one, or one longer than [`MAX_NAME_LEN`].
    #[error("claim is required (at most 255 characters)")]
    Name,
    /// A reserved name (see [`is_reserved`]).
    #[error("claim {0:?} is set by Pharos itself")]
    Reserved(String),
    /// A standard claim listed in `crit`.
    #[error("claim {0:?} is defined by the specification and cannot be listed in crit")]
    StandardCrit(String),
}

/// Checks an additional claim's name and `crit` flag; returns the name.
pub fn check(name: Option<&str>, crit: bool) -> Result<String, ClaimError> {
    let name = name
        .filter(|n| !n.is_empty() && n.len() <= MAX_NAME_LEN)
        .ok_or(ClaimError::Name)?;
    if is_reserved(name) {
        return Err(ClaimError::Reserved(name.to_owned()));
    }
    if crit && STANDARD_CLAIMS.contains(&name) {
        return Err(ClaimError::StandardCrit(name.to_owned()));
    }
    Ok(name.to_owned())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn refused(names: &[&str]) {
        for n in names {
            assert_eq!(
                check(Some(n), false),
                Err(ClaimError::Reserved(n.to_string())),
                "{n}"
            );
        }
    }

    #[test]
    fn computed_claims_are_reserved() {
        refused(&COMPUTED);
    }

    #[test]
    fn subordinate_statement_claims_are_reserved() {
        refused(&SUBORDINATE_STATEMENT);
    }

    #[test]
    fn trust_mark_claims_are_reserved() {
        refused(&TRUST_MARKS);
    }

    #[test]
    fn other_statement_claims_are_reserved() {
        refused(&OTHER_STATEMENTS);
    }

    #[test]
    fn operator_standard_claims_are_allowed_but_not_critical() {
        for n in OPERATOR_STANDARD_CLAIMS {
            assert_eq!(check(Some(n), false).unwrap(), n);
            assert_eq!(
                check(Some(n), true),
                Err(ClaimError::StandardCrit(n.to_string()))
            );
        }
    }

    /// A claim the specification adds must be classified here before it can be released.
    #[test]
    fn every_standard_claim_is_classified() {
        for n in STANDARD_CLAIMS {
            assert!(
                is_reserved(n) != OPERATOR_STANDARD_CLAIMS.contains(&n),
                "{n} is neither reserved nor operator-settable (or both)"
            );
        }
    }

    #[test]
    fn extension_claims_are_accepted_and_may_be_critical() {
        assert_eq!(check(Some("x_note"), true).unwrap(), "x_note");
        assert_eq!(
            check(Some("https://example.org/claim"), false).unwrap(),
            "https://example.org/claim"
        );
    }

    #[test]
    fn names_are_required_and_bounded() {
        assert_eq!(check(None, false), Err(ClaimError::Name));
        assert_eq!(check(Some(""), false), Err(ClaimError::Name));
        assert_eq!(check(Some(&"x".repeat(256)), false), Err(ClaimError::Name));
        assert!(check(Some(&"x".repeat(255)), false).is_ok());
    }
}
