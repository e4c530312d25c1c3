//! The signed RS256 Trust Chain of the spec's §4.3 example
//! (`tests/vectors/openid-federation-1_0-spec-examples/trust-chain-signed-4.3.json`).

use serde_json::Value;

use super::{Fed, chain_error};
use crate::chain::{AnchorSpec, validate_chain};
use crate::jose::Jwks;

fn vector() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/vectors/openid-federation-1_0-spec-examples/trust-chain-signed-4.3.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn chain(v: &Value) -> Vec<String> {
    serde_json::from_value(v["trust_chain"].clone()).unwrap()
}

fn anchor(v: &Value, pinned: bool) -> AnchorSpec {
    let jwks: Jwks = serde_json::from_value(v["trust_anchor"]["jwks"].clone()).unwrap();
    AnchorSpec {
        entity_id: v["trust_anchor"]["entity_id"].as_str().unwrap().to_owned(),
        jwks: pinned.then_some(jwks),
        ..AnchorSpec::default()
    }
}

fn case<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap()
}

#[test]
fn chain_spec_4_3_valid_within_lifetime() {
    let v = vector();
    let c = case(&v, "valid_within_lifetime");
    let now = c["now"].as_i64().unwrap();
    for pinned in [true, false] {
        let ok = validate_chain(&chain(&v), &anchor(&v, pinned), now).unwrap();
        assert_eq!(ok.subject, c["expect"]["subject"].as_str().unwrap());
        assert_eq!(
            ok.trust_anchor,
            v["trust_anchor"]["entity_id"].as_str().unwrap()
        );
        assert_eq!(ok.exp, c["expect"]["chain_exp"].as_i64().unwrap());
        assert_eq!(ok.metadata, c["expect"]["resolved_metadata"]);
        assert_eq!(ok.statements.len(), 4);
        for (s, d) in ok.statements.iter().zip(v["decoded"].as_array().unwrap()) {
            assert_eq!(Value::Object(s.claims.clone()), d["payload"]);
        }
    }
}

#[test]
fn chain_spec_4_3_expired_and_not_yet_valid() {
    let v = vector();
    for (name, what) in [("expired", "exp"), ("not_yet_valid", "iat")] {
        let now = case(&v, name)["now"].as_i64().unwrap();
        let msg = chain_error(validate_chain(&chain(&v), &anchor(&v, true), now));
        assert!(msg.contains(what), "{name}: {msg}");
    }
}

#[test]
fn chain_spec_4_3_wrong_trust_anchor_key() {
    let v = vector();
    let now = case(&v, "valid_within_lifetime")["now"].as_i64().unwrap();
    let entity_id = v["trust_anchor"]["entity_id"].as_str().unwrap().to_owned();
    let wrong = AnchorSpec {
        jwks: Some(Fed::default().jwks(&entity_id)),
        entity_id,
        ..AnchorSpec::default()
    };
    let msg = chain_error(validate_chain(&chain(&v), &wrong, now));
    assert!(msg.contains("Trust Anchor, pinned keys"), "{msg}");
}

#[test]
fn chain_spec_4_3_tampered_shapes_are_rejected() {
    let v = vector();
    let now = case(&v, "valid_within_lifetime")["now"].as_i64().unwrap();
    let full = chain(&v);
    let a = anchor(&v, true);
    // Without the Trust Anchor's EC, reordered, or for another anchor.
    chain_error(validate_chain(&full[..3], &a, now));
    chain_error(validate_chain(&full[..2], &a, now));
    chain_error(validate_chain(&[], &a, now));
    let mut swapped = full.clone();
    swapped.swap(1, 2);
    chain_error(validate_chain(&swapped, &a, now));
    let other = AnchorSpec {
        entity_id: "https://other-anchor.example.org".into(),
        jwks: None,
        ..AnchorSpec::default()
    };
    chain_error(validate_chain(&full, &other, now));
    // A corrupted signature on the middle statement.
    let mut corrupt = full.clone();
    let last = corrupt[1].pop().unwrap();
    corrupt[1].push(if last == 'A' { 'B' } else { 'A' });
    chain_error(validate_chain(&corrupt, &a, now));
}
