//! The claims of a resolve response (§8.3.2), built from a resolved chain and the Trust Marks
//! that passed verification.
//!
//! Kept pure and separate from signing so that the data plane can cache the claims once per
//! resolution and sign them per caller (`aud`) and per signing key.

use serde_json::{Map, Value, json};

use super::ResolvedChain;
use crate::trust_mark::VerifiedTrustMark;

/// JWT `typ` of a resolve response.
pub const RESOLVE_RESPONSE_TYP: &str = "resolve-response+jwt";

/// Media type of a resolve response.
pub const RESOLVE_RESPONSE_CONTENT_TYPE: &str = "application/resolve-response+jwt";

/// The response's `exp`: the chain's expiry lowered to the earliest `exp` of any included
/// Trust Mark (§8.3.2 MUST).
pub fn response_exp(chain: &ResolvedChain, marks: &[VerifiedTrustMark]) -> i64 {
    marks.iter().filter_map(|m| m.exp).fold(chain.exp, i64::min)
}

/// The claims set: `iss` (the resolver), `sub`, `iat`, `exp`, `metadata`, `trust_chain`,
/// `trust_marks` (only when some were verified) and `aud` (only for an authenticated caller,
/// then exactly its Entity ID).
pub fn response_claims(
    resolver: &str,
    chain: &ResolvedChain,
    marks: &[VerifiedTrustMark],
    now: i64,
    aud: Option<&str>,
    legacy_id: bool,
) -> Map<String, Value> {
    let subject = chain
        .subject_claims
        .get("sub")
        .cloned()
        .unwrap_or(Value::Null);
    let mut c = Map::new();
    c.insert("iss".into(), resolver.into());
    c.insert("sub".into(), subject);
    c.insert("iat".into(), now.into());
    c.insert("exp".into(), response_exp(chain, marks).into());
    c.insert("metadata".into(), chain.metadata.clone());
    c.insert("trust_chain".into(), json!(chain.chain));
    if !marks.is_empty() {
        let marks: Vec<Value> = marks.iter().map(|m| m.to_json(legacy_id)).collect();
        c.insert("trust_marks".into(), Value::Array(marks));
    }
    if let Some(aud) = aud {
        c.insert("aud".into(), aud.into());
    }
    c
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing unwrap is a failing test
mod tests {
    use super::*;

    fn chain() -> ResolvedChain {
        ResolvedChain {
            trust_anchor: "https://ta.example".into(),
            chain: vec!["a.b.c".into(), "d.e.f".into()],
            metadata: json!({"openid_relying_party": {"client_name": "x"}}),
            exp: 2_000,
            subject_claims: json!({"sub": "https://leaf.example"})
                .as_object()
                .unwrap()
                .clone(),
            anchor_claims: Map::new(),
        }
    }

    fn mark(exp: Option<i64>) -> VerifiedTrustMark {
        VerifiedTrustMark {
            trust_mark_type: "https://t".into(),
            trust_mark: "x.y.z".into(),
            exp,
        }
    }

    #[test]
    fn exp_is_the_minimum_over_chain_and_marks() {
        assert_eq!(response_exp(&chain(), &[]), 2_000);
        assert_eq!(
            response_exp(&chain(), &[mark(None), mark(Some(3_000))]),
            2_000
        );
        assert_eq!(
            response_exp(&chain(), &[mark(Some(1_500)), mark(None)]),
            1_500
        );
    }

    #[test]
    fn claims_carry_aud_and_trust_marks_only_when_there_are_some() {
        let c = response_claims("https://r.example", &chain(), &[], 1_000, None, true);
        assert_eq!(c["sub"], "https://leaf.example");
        assert_eq!(c["iat"], 1_000);
        assert_eq!(c["trust_chain"], json!(["a.b.c", "d.e.f"]));
        assert!(!c.contains_key("aud") && !c.contains_key("trust_marks"));
        let c = response_claims(
            "https://r",
            &chain(),
            &[mark(Some(1_200))],
            1_000,
            Some("https://c"),
            true,
        );
        assert_eq!(c["aud"], "https://c");
        assert_eq!(c["exp"], 1_200);
        assert_eq!(c["trust_marks"][0]["trust_mark"], "x.y.z");
        let tm_type = &c["trust_marks"][0]["trust_mark_type"];
        assert_eq!(&c["trust_marks"][0]["id"], tm_type, "the legacy id alias");
        let c = response_claims("https://r", &chain(), &[mark(None)], 1_000, None, false);
        assert!(c["trust_marks"][0].get("id").is_none());
    }
}
