use serde_json::{Map, Value, json};

use super::*;
use crate::jose::{Algorithm, Signer, SigningKey, sign};

const SUB: &str = "https://leaf.example";

fn key() -> SigningKey {
    SigningKey::generate(Algorithm::ES256, 2048).unwrap()
}

fn jwks_of(keys: &[&SigningKey]) -> Jwks {
    Jwks {
        keys: keys.iter().map(|k| k.public_jwk().clone()).collect(),
    }
}

fn claims(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

fn configuration(signer: &SigningKey, published: &Jwks) -> String {
    let c = claims(json!({"iss": SUB, "sub": SUB, "iat": 1, "exp": 5_000, "jwks": published}));
    sign(signer, ENTITY_STATEMENT_TYP, &c, None).unwrap()
}

#[test]
fn configuration_verifies_with_stored_keys_or_seeds_from_its_own() {
    let (old, new) = (key(), key());
    let published = jwks_of(&[&old, &new]);
    let jws = configuration(&old, &published);
    let got = check_configuration(&jws, SUB, Some(&jwks_of(&[&old])), 100).unwrap();
    assert_eq!(got.jwks, published);
    assert_eq!(got.exp, Some(5_000));
    // Nothing stored: the first poll seeds from the configuration's own keys.
    assert!(check_configuration(&jws, SUB, None, 100).is_ok());
    assert!(check_configuration(&jws, SUB, Some(&Jwks::default()), 100).is_ok());
}

#[test]
fn an_expired_or_future_configuration_is_refused() {
    let k = key();
    let jws = configuration(&k, &jwks_of(&[&k])); // iat 1, exp 5_000
    let e = check_configuration(&jws, SUB, Some(&jwks_of(&[&k])), 5_001).unwrap_err();
    assert!(
        matches!(e, KeyCheckError::Invalid(ref m) if m.contains("expired")),
        "{e}"
    );
    let future =
        claims(json!({"iss": SUB, "sub": SUB, "iat": 1_000, "exp": 5_000, "jwks": jwks_of(&[&k])}));
    let jws = sign(&k, ENTITY_STATEMENT_TYP, &future, None).unwrap();
    let e = check_configuration(&jws, SUB, None, 100).unwrap_err();
    assert!(
        matches!(e, KeyCheckError::Invalid(ref m) if m.contains("future")),
        "{e}"
    );
}

#[test]
fn configuration_signed_by_an_unknown_key_is_a_signature_failure() {
    let (stored, stranger) = (key(), key());
    let jws = configuration(&stranger, &jwks_of(&[&stranger]));
    let e = check_configuration(&jws, SUB, Some(&jwks_of(&[&stored])), 100).unwrap_err();
    assert!(matches!(e, KeyCheckError::Signature(_)), "{e}");
    let e = check_configuration(&jws, "https://other.example", None, 100).unwrap_err();
    assert!(matches!(e, KeyCheckError::Invalid(_)), "{e}");
}

fn signed_jwks(signer: &SigningKey, c: Value) -> String {
    sign(signer, JWK_SET_TYP, &claims(c), None).unwrap()
}

#[test]
fn signed_jwk_set_form_is_checked() {
    let k = key();
    let keys = jwks_of(&[&k]).keys;
    let ok = signed_jwks(
        &k,
        json!({"iss": SUB, "sub": SUB, "keys": keys, "iat": 90, "exp": 200}),
    );
    let got = parse_signed_jwks(&ok, 100).unwrap();
    assert_eq!(got.sub, SUB);
    assert_eq!(got.keys.keys, keys);
    assert_eq!(got.iat, 90);

    let cases = [
        json!({"iss": SUB, "sub": SUB, "keys": keys, "exp": 99}),
        json!({"iss": SUB, "sub": "https://x.example", "keys": keys}),
        json!({"sub": SUB, "keys": keys}),
        json!({"iss": SUB, "sub": SUB, "keys": []}),
        json!({"iss": SUB, "sub": SUB, "keys": [{"kty": "EC"}]}),
        json!({"iss": SUB, "sub": SUB, "keys": [{"kid": "a"}, {"kid": "a"}]}),
        json!({"iss": SUB, "sub": SUB, "keys": keys, "iat": "yesterday"}),
        // No iat: pushes could not be ordered, so an old one could be replayed.
        json!({"iss": SUB, "sub": SUB, "keys": keys}),
        json!({"iss": SUB, "sub": SUB, "keys": keys, "iat": 100 + 61}),
    ];
    for c in cases {
        let t = signed_jwks(&k, c.clone());
        assert!(parse_signed_jwks(&t, 100).is_err(), "{c}");
    }
    let wrong_typ = sign(
        &k,
        "entity-statement+jwt",
        &claims(json!({"iss": SUB, "sub": SUB, "keys": keys})),
        None,
    )
    .unwrap();
    assert!(parse_signed_jwks(&wrong_typ, 100).is_err());
    assert!(parse_signed_jwks("not.a.jwt", 100).is_err());
}

fn raw_jwks(v: Value) -> Jwks {
    serde_json::from_value(json!({ "keys": v })).unwrap()
}

#[test]
fn new_keys_need_unique_non_empty_kids() {
    let (a, b) = (key(), key());
    let two = jwks_of(&[&a, &b]);
    assert!(check_new_keys(&two, Some(&[])).is_ok());
    assert!(check_new_keys(&raw_jwks(json!([])), Some(&[])).is_err());
    let dup = jwks_of(&[&a, &a]);
    assert!(check_new_keys(&dup, Some(&[])).is_err());
    let mut no_kid = jwks_of(&[&a]);
    no_kid.keys[0].insert("kid".into(), "".into());
    assert!(check_new_keys(&no_kid, Some(&[])).is_err());
    assert!(check_new_keys(&raw_jwks(json!([{"kty": "EC", "kid": "a"}])), Some(&[])).is_err());
}

#[test]
fn an_unknown_kty_is_left_to_the_configuration_only_when_deferred() {
    let other = raw_jwks(json!([{"kty": "XYZ", "kid": "a", "pub": "AAAA"}]));
    assert!(check_new_keys(&other, None).is_ok());
    assert!(check_new_keys(&other, Some(&[])).is_err());
    assert!(check_new_keys(&other, Some(&["XYZ".to_owned()])).is_ok());
    // Deferring never lets a malformed key of a known type through.
    let bad =
        raw_jwks(json!([{"kty": "EC", "kid": "a", "crv": "P-256", "x": "AAAA", "y": "AAAA"}]));
    assert!(check_new_keys(&bad, None).is_err());
}
