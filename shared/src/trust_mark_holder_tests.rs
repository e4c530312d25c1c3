use serde_json::{Value, json};

use super::*;
use crate::jose::{Algorithm, Signer, SigningKey, sign};

const NOW: i64 = 1_800_000_000;
const TYPE: &str = "https://tm.example/certified";
const US: &str = "https://leaf.example";
const TMI: &str = "https://tmi.example";

fn key() -> SigningKey {
    SigningKey::generate(Algorithm::ES256, 0).unwrap()
}

fn jwt(k: &SigningKey, typ: &str, claims: Value) -> String {
    sign(k, typ, claims.as_object().unwrap(), None).unwrap()
}

fn claims() -> Value {
    json!({"iss": TMI, "sub": US, "trust_mark_type": TYPE, "iat": NOW - 10, "exp": NOW + 600})
}

fn check_claims(c: Value) -> Result<HeldMark, String> {
    check(&jwt(&key(), TRUST_MARK_TYP, c), US, TYPE, None, NOW, 10)
}

#[test]
fn a_good_mark_is_accepted_and_described() {
    let held = check_claims(claims()).unwrap();
    assert_eq!(
        held,
        HeldMark {
            iss: TMI.into(),
            iat: NOW - 10,
            exp: Some(NOW + 600)
        }
    );
}

#[test]
fn the_signature_is_checked_with_the_issuers_keys() {
    let (k, other) = (key(), key());
    let token = jwt(&k, TRUST_MARK_TYP, claims());
    let keys = |k: &SigningKey| Jwks {
        keys: vec![k.public_jwk().clone()],
    };
    assert!(check(&token, US, TYPE, Some(&keys(&k)), NOW, 10).is_ok());
    let e = check(&token, US, TYPE, Some(&keys(&other)), NOW, 10).unwrap_err();
    assert!(e.contains("signature"), "{e}");
}

#[test]
fn each_refusal_names_its_problem() {
    let k = key();
    let wrong_typ = check(&jwt(&k, "JWT", claims()), US, TYPE, None, NOW, 0).unwrap_err();
    assert!(wrong_typ.contains("typ"), "{wrong_typ}");
    let not_jwt = check("not-a-jwt", US, TYPE, None, NOW, 0).unwrap_err();
    assert!(not_jwt.contains("not a signed JWT"), "{not_jwt}");
    let mut c = claims();
    c["sub"] = json!("https://other.example");
    assert!(check_claims(c).unwrap_err().contains("sub"));
    let mut c = claims();
    c["trust_mark_type"] = json!("https://tm.example/other");
    assert!(check_claims(c).unwrap_err().contains("type"));
    let mut c = claims();
    c["exp"] = json!(NOW);
    assert!(check_claims(c).unwrap_err().contains("expired"));
    let mut c = claims();
    c["exp"] = json!(NOW + 5);
    assert!(check_claims(c).unwrap_err().contains("min_lifetime"));
    let mut c = claims();
    c["iat"] = json!(NOW + 3_600);
    assert!(check_claims(c).unwrap_err().contains("future"));
    let mut c = claims();
    c.as_object_mut().unwrap().remove("iss");
    assert!(check_claims(c).unwrap_err().contains("iss"));
}

#[test]
fn the_type_is_read_from_trust_mark_type_before_the_legacy_id() {
    let mut c = claims();
    c.as_object_mut().unwrap().remove("trust_mark_type");
    c["id"] = json!(TYPE);
    assert!(check_claims(c).is_ok(), "legacy id alone");
    let mut c = claims();
    c["id"] = json!("https://tm.example/stale-alias");
    assert!(check_claims(c).is_ok(), "trust_mark_type wins over id");
}

#[test]
fn renewal_is_due_at_once_without_a_mark_never_without_exp_else_at_the_grace_point() {
    assert_eq!(renewal_at(None, 3_600), Some(i64::MIN));
    let m = |exp| HeldMark {
        iss: TMI.into(),
        iat: NOW,
        exp,
    };
    assert_eq!(renewal_at(Some(&m(None)), 3_600), None);
    assert_eq!(
        renewal_at(Some(&m(Some(NOW + 7_200))), 3_600),
        Some(NOW + 3_600)
    );
}

#[test]
fn failures_double_the_rate_limit_up_to_sixty_four_times_and_one_hour() {
    let d: Vec<i64> = (1..=8).map(|f| retry_delay(10, f)).collect();
    assert_eq!(d, [20, 40, 80, 160, 320, 640, 640, 640]);
    assert_eq!(retry_delay(60, 3), 480);
    assert_eq!(retry_delay(60, 7), MAX_RETRY);
    assert_eq!(retry_delay(0, 1), 2, "a zero rate limit still waits");
}

#[test]
fn lifetimes_are_seconds_or_durations() {
    assert_eq!(seconds(&json!(600)), Ok(600));
    assert_eq!(seconds(&json!("600")), Ok(600));
    assert_eq!(seconds(&json!("24h")), Ok(86_400));
    assert_eq!(seconds(&json!("7d")), Ok(604_800));
    assert!(seconds(&json!("soon")).is_err());
    assert!(seconds(&json!(1.5)).is_err());
    let s: SelfIssuance =
        serde_json::from_value(json!({"lifetime": "1h", "ref": "https://r"})).unwrap();
    assert_eq!(
        (s.lifetime, s.ref_uri.as_deref()),
        (3_600, Some("https://r"))
    );
}

#[test]
fn self_issuance_refuses_protected_claims_and_builds_its_spec() {
    let s = SelfIssuance {
        lifetime: 600,
        additional_claims: json!({"level": "high"}).as_object().unwrap().clone(),
        ..Default::default()
    };
    assert!(s.check().is_ok());
    let spec = s.spec(TYPE);
    assert_eq!(
        (spec.lifetime, spec.trust_mark_type.as_str()),
        (Some(600), TYPE)
    );
    let bad = SelfIssuance {
        additional_claims: json!({"exp": 1}).as_object().unwrap().clone(),
        ..Default::default()
    };
    assert!(bad.check().unwrap_err().contains("exp"));
    let negative = SelfIssuance {
        lifetime: -1,
        ..Default::default()
    };
    assert!(negative.check().is_err());
}

#[test]
fn status_checks_are_spaced_by_the_rate_limit_within_bounds() {
    assert_eq!(status_interval(1), MIN_STATUS_INTERVAL);
    assert_eq!(status_interval(600), 600);
    assert_eq!(status_interval(i64::MAX), MAX_STATUS_INTERVAL);
    assert!(withdrawn("revoked") && withdrawn("invalid"));
    assert!(!withdrawn("active") && !withdrawn("expired"));
}

#[test]
fn a_status_response_counts_only_signed_by_the_issuer_about_the_mark() {
    let key = SigningKey::generate(Algorithm::ES256, 0).unwrap();
    let keys = Jwks {
        keys: vec![key.public_jwk().clone()],
    };
    let answer =
        |claims: Value, typ: &str| sign(&key, typ, claims.as_object().unwrap(), None).unwrap();
    let typ = "trust-mark-status-response+jwt";
    let ok = answer(
        json!({"iss": "https://tmi.example", "trust_mark": "m", "status": "revoked", "iat": 1}),
        typ,
    );
    assert_eq!(
        status_of(&ok, "m", "https://tmi.example", &keys).as_deref(),
        Ok("revoked")
    );
    assert!(status_of(&ok, "other", "https://tmi.example", &keys).is_err());
    assert!(status_of(&ok, "m", "https://else.example", &keys).is_err());
    let wrong_typ = answer(
        json!({"iss": "https://tmi.example", "trust_mark": "m", "status": "revoked"}),
        "jwt",
    );
    assert!(status_of(&wrong_typ, "m", "https://tmi.example", &keys).is_err());
    let other = SigningKey::generate(Algorithm::ES256, 0).unwrap();
    let others = Jwks {
        keys: vec![other.public_jwk().clone()],
    };
    assert!(status_of(&ok, "m", "https://tmi.example", &others).is_err());
}

#[test]
fn a_listing_names_the_subject_or_not_and_junk_says_nothing() {
    let us = "https://leaf.example";
    assert_eq!(listed(r#"["https://leaf.example"]"#, us), Some(true));
    assert_eq!(listed(r#"["https://other.example"]"#, us), Some(false));
    assert_eq!(listed("[]", us), Some(false));
    assert_eq!(listed(r#"{"error":"not_found"}"#, us), None);
    assert_eq!(listed("<html>", us), None);
    assert_eq!(listed("[1, 2]", us), None);
}
