//! Do our superiors publish our keys? A superior's Subordinate Statement about us carries the
//! keys a relying party will verify our Entity Configuration with. After a rotation, a key we
//! dropped that a superior still publishes is one an attacker holding it could still use
//! through that superior ("stale"), and a key we sign with that a superior does not publish yet
//! breaks every chain through it ("missing"). Pure: the control plane fetches, this compares.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::jose::{Jwk, Jwks};

/// How one superior's statement about us compares with our published keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Agreement {
    /// It publishes exactly our keys.
    InStep,
    /// It still publishes a key we no longer publish.
    Stale,
    /// It does not publish a key we publish.
    Missing,
    /// Both of the above.
    StaleAndMissing,
    /// Its statement about us could not be had or did not verify.
    Unreachable,
}

/// One superior's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SuperiorKeys {
    /// The superior (one of our authority hints).
    pub superior: String,
    /// The comparison.
    pub agreement: Agreement,
    /// Keys (by `kid`, or the key's members without one) its statement publishes.
    pub published: Vec<String>,
    /// Keys it publishes that we do not.
    pub stale: Vec<String>,
    /// Keys we publish that it does not.
    pub missing: Vec<String>,
    /// Its statement's `exp`.
    pub statement_expires: Option<i64>,
    /// Why it is unreachable.
    pub error: Option<String>,
}

/// How a key is named: its `kid`, else its public members (a key without `kid` is still told
/// apart from another).
pub fn key_name(k: &Jwk) -> String {
    if let Some(kid) = k.get("kid").and_then(Value::as_str) {
        return kid.to_owned();
    }
    let public: Map<String, Value> = k
        .iter()
        .filter(|(n, _)| ["kty", "crv", "x", "y", "n", "e"].contains(&n.as_str()))
        .map(|(n, v)| (n.clone(), v.clone()))
        .collect();
    Value::Object(public).to_string()
}

/// Compares `ours` with the `jwks` of `statement` (the verified claims of `superior`'s
/// Subordinate Statement about us).
pub fn compare(superior: &str, ours: &Jwks, statement: &Map<String, Value>) -> SuperiorKeys {
    let theirs: Vec<String> = statement
        .get("jwks")
        .and_then(|j| j.get("keys"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .map(key_name)
        .collect();
    let mine: Vec<String> = ours.keys.iter().map(key_name).collect();
    let stale: Vec<String> = theirs
        .iter()
        .filter(|k| !mine.contains(k))
        .cloned()
        .collect();
    let missing: Vec<String> = mine
        .iter()
        .filter(|k| !theirs.contains(k))
        .cloned()
        .collect();
    let agreement = match (stale.is_empty(), missing.is_empty()) {
        (true, true) => Agreement::InStep,
        (false, true) => Agreement::Stale,
        (true, false) => Agreement::Missing,
        (false, false) => Agreement::StaleAndMissing,
    };
    SuperiorKeys {
        superior: superior.to_owned(),
        agreement,
        published: theirs,
        stale,
        missing,
        statement_expires: statement.get("exp").and_then(Value::as_i64),
        error: None,
    }
}

/// A superior whose statement about us could not be had, and why.
pub fn unreachable(superior: &str, error: String) -> SuperiorKeys {
    SuperiorKeys {
        superior: superior.to_owned(),
        agreement: Agreement::Unreachable,
        published: Vec::new(),
        stale: Vec::new(),
        missing: Vec::new(),
        statement_expires: None,
        error: Some(error),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn jwks(kids: &[&str]) -> Jwks {
        serde_json::from_value(json!({"keys": kids.iter().map(|k| json!({"kty": "EC", "kid": k})).collect::<Vec<_>>()})).unwrap()
    }

    fn statement(kids: &[&str]) -> Map<String, Value> {
        let v = json!({"exp": 99, "jwks": jwks(kids)});
        v.as_object().unwrap().clone()
    }

    #[test]
    fn each_disagreement_is_named() {
        let s = compare("https://ta", &jwks(&["a", "b"]), &statement(&["a", "b"]));
        assert_eq!(
            (s.agreement, s.statement_expires),
            (Agreement::InStep, Some(99))
        );
        let s = compare("https://ta", &jwks(&["b"]), &statement(&["a", "b"]));
        assert_eq!(
            (s.agreement, s.stale.clone(), s.missing.clone()),
            (Agreement::Stale, vec!["a".into()], vec![])
        );
        let s = compare("https://ta", &jwks(&["a", "c"]), &statement(&["a"]));
        assert_eq!(
            (s.agreement, s.missing.clone()),
            (Agreement::Missing, vec!["c".to_string()])
        );
        let s = compare("https://ta", &jwks(&["c"]), &statement(&["a"]));
        assert_eq!(s.agreement, Agreement::StaleAndMissing);
        let s = compare("https://ta", &jwks(&["c"]), &Map::new());
        assert_eq!((s.agreement, s.published.len()), (Agreement::Missing, 0));
    }

    #[test]
    fn keys_without_kid_are_told_apart_by_their_members() {
        let a: Jwk = json!({"kty": "EC", "crv": "P-256", "x": "1", "y": "2", "use": "sig"})
            .as_object()
            .unwrap()
            .clone();
        let b: Jwk = json!({"kty": "EC", "crv": "P-256", "x": "1", "y": "2"})
            .as_object()
            .unwrap()
            .clone();
        let c: Jwk = json!({"kty": "EC", "crv": "P-256", "x": "3", "y": "2"})
            .as_object()
            .unwrap()
            .clone();
        assert_eq!(key_name(&a), key_name(&b), "metadata members do not matter");
        assert_ne!(key_name(&a), key_name(&c));
    }
}
