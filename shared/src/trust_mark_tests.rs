use serde_json::{Value, json};

use super::*;
use crate::jose::{Algorithm, Signer, SigningKey, sign};

const NOW: i64 = 1_800_000_000;
const TYPE: &str = "https://tm.example/certified";
const LEAF: &str = "https://leaf.example";
const TMI: &str = "https://tmi.example";
const OWNER: &str = "https://owner.example";

fn key() -> SigningKey {
    SigningKey::generate(Algorithm::ES256, 0).unwrap()
}

fn jwks(k: &SigningKey) -> Jwks {
    Jwks {
        keys: vec![k.public_jwk().clone()],
    }
}

fn mark(k: &SigningKey, typ: &str, claims: Value) -> Value {
    let jwt = sign(k, typ, claims.as_object().unwrap(), None).unwrap();
    json!({"trust_mark_type": TYPE, "trust_mark": jwt})
}

fn claims() -> Value {
    json!({"iss": TMI, "sub": LEAF, "trust_mark_type": TYPE, "iat": NOW - 10, "exp": NOW + 600})
}

fn anchor(issuers: Value) -> Map<String, Value> {
    json!({"trust_mark_issuers": issuers})
        .as_object()
        .unwrap()
        .clone()
}

#[test]
fn a_valid_mark_from_an_admitted_issuer_is_kept() {
    let k = key();
    let entry = mark(&k, TRUST_MARK_TYP, claims());
    let ta = anchor(json!({TYPE: [TMI]}));
    let subject = json!({"trust_marks": [entry.clone()]});
    let c = candidates(subject.as_object().unwrap(), &ta, true);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].1, TMI);
    let v = verify(&entry, LEAF, &ta, &jwks(&k), NOW, true).unwrap();
    assert_eq!(v.exp, Some(NOW + 600));
    assert_eq!(v.to_json(false), entry);
}

#[test]
fn issuers_the_anchor_does_not_list_are_not_candidates() {
    let k = key();
    let entry = mark(&k, TRUST_MARK_TYP, claims());
    let subject = json!({"trust_marks": [entry]});
    let s = subject.as_object().unwrap();
    assert!(candidates(s, &anchor(json!({TYPE: ["https://other.example"]})), true).is_empty());
    assert!(candidates(s, &anchor(json!({"https://other/type": []})), true).is_empty());
    assert!(candidates(s, &Map::new(), true).is_empty());
    assert_eq!(candidates(s, &anchor(json!({TYPE: []})), true).len(), 1);
}

#[test]
fn wrong_typ_subject_type_expiry_or_key_is_rejected() {
    let k = key();
    let ta = anchor(json!({TYPE: []}));
    let cases = [
        mark(&k, "jwt", claims()),
        mark(
            &k,
            TRUST_MARK_TYP,
            json!({"iss": TMI, "sub": "https://x.example", "trust_mark_type": TYPE, "iat": NOW}),
        ),
        mark(
            &k,
            TRUST_MARK_TYP,
            json!({"iss": TMI, "sub": LEAF, "trust_mark_type": "https://t2", "iat": NOW}),
        ),
        mark(
            &k,
            TRUST_MARK_TYP,
            json!({"iss": TMI, "sub": LEAF, "trust_mark_type": TYPE, "iat": NOW - 99, "exp": NOW}),
        ),
        mark(
            &k,
            TRUST_MARK_TYP,
            json!({"iss": TMI, "sub": LEAF, "trust_mark_type": TYPE, "iat": NOW + 600}),
        ),
    ];
    for (i, entry) in cases.iter().enumerate() {
        assert!(
            verify(entry, LEAF, &ta, &jwks(&k), NOW, true).is_err(),
            "case {i}"
        );
    }
    let entry = mark(&k, TRUST_MARK_TYP, claims());
    assert!(verify(&entry, LEAF, &ta, &jwks(&key()), NOW, true).is_err());
}

#[test]
fn a_mark_without_exp_never_expires() {
    let k = key();
    let entry = mark(
        &k,
        TRUST_MARK_TYP,
        json!({"iss": TMI, "sub": LEAF, "trust_mark_type": TYPE, "iat": NOW}),
    );
    let v = verify(
        &entry,
        LEAF,
        &anchor(json!({TYPE: []})),
        &jwks(&k),
        NOW,
        true,
    )
    .unwrap();
    assert_eq!(v.exp, None);
}

#[test]
fn an_owned_type_needs_a_valid_delegation_from_the_owner() {
    let (tmi, owner) = (key(), key());
    let delegation = |signer: &SigningKey, sub: &str| {
        let c = json!({"iss": OWNER, "sub": sub, "trust_mark_type": TYPE, "iat": NOW - 5});
        sign(signer, DELEGATION_TYP, c.as_object().unwrap(), None).unwrap()
    };
    let mut ta = anchor(json!({TYPE: []}));
    ta.insert(
        "trust_mark_owners".into(),
        json!({TYPE: {"sub": OWNER, "jwks": jwks(&owner)}}),
    );
    let with = |d: String| {
        let mut c = claims();
        c["delegation"] = d.into();
        mark(&tmi, TRUST_MARK_TYP, c)
    };
    let ok = with(delegation(&owner, TMI));
    assert!(verify(&ok, LEAF, &ta, &jwks(&tmi), NOW, true).is_ok());
    let missing = mark(&tmi, TRUST_MARK_TYP, claims());
    assert!(verify(&missing, LEAF, &ta, &jwks(&tmi), NOW, true).is_err());
    let forged = with(delegation(&tmi, TMI));
    assert!(verify(&forged, LEAF, &ta, &jwks(&tmi), NOW, true).is_err());
    let other_issuer = with(delegation(&owner, "https://else.example"));
    assert!(verify(&other_issuer, LEAF, &ta, &jwks(&tmi), NOW, true).is_err());
}

#[test]
fn self_signed_keys_come_from_a_current_self_issued_configuration() {
    let k = key();
    let ec = |iss: &str, exp: i64| {
        let c = json!({"iss": iss, "sub": TMI, "iat": NOW - 5, "exp": exp, "jwks": jwks(&k)});
        sign(&k, ENTITY_STATEMENT_TYP, c.as_object().unwrap(), None).unwrap()
    };
    assert_eq!(
        self_signed_keys(&ec(TMI, NOW + 60), TMI, NOW).unwrap(),
        jwks(&k)
    );
    assert!(self_signed_keys(&ec(TMI, NOW - 1), TMI, NOW).is_err());
    assert!(self_signed_keys(&ec(LEAF, NOW + 60), TMI, NOW).is_err());
}

/// The issuer's check of a delegation it is asked to store: one case per refusal.
mod issuer_side_delegation {
    use super::*;

    fn delegation(signer: &SigningKey, typ: &str, claims: Value) -> String {
        sign(signer, typ, claims.as_object().unwrap(), None).unwrap()
    }

    fn good() -> Value {
        json!({"iss": OWNER, "sub": TMI, "trust_mark_type": TYPE, "iat": NOW - 5, "exp": NOW + 600})
    }

    fn check(jwt: &str, owner: &SigningKey) -> std::result::Result<(), String> {
        check_delegation_for_issuer(jwt, OWNER, &jwks(owner), TMI, TYPE, NOW)
    }

    fn with(field: &str, v: Value) -> Value {
        let mut c = good();
        c[field] = v;
        c
    }

    #[test]
    fn a_current_delegation_from_the_owner_to_us_is_accepted() {
        let owner = key();
        assert_eq!(
            check(&delegation(&owner, DELEGATION_TYP, good()), &owner),
            Ok(())
        );
        let mut no_exp = good();
        no_exp.as_object_mut().unwrap().remove("exp");
        assert_eq!(
            check(&delegation(&owner, DELEGATION_TYP, no_exp), &owner),
            Ok(())
        );
    }

    #[test]
    fn wrong_typ_is_refused() {
        let owner = key();
        let e = check(&delegation(&owner, TRUST_MARK_TYP, good()), &owner).unwrap_err();
        assert!(e.contains("typ"), "{e}");
    }

    #[test]
    fn a_signature_by_another_key_is_refused() {
        let (owner, other) = (key(), key());
        let e = check(&delegation(&other, DELEGATION_TYP, good()), &owner).unwrap_err();
        assert!(e.contains("not signed by the owner"), "{e}");
    }

    #[test]
    fn another_issuer_owner_or_type_is_refused() {
        let owner = key();
        let cases = [
            ("sub", "https://else.example", "another issuer"),
            ("iss", "https://else.example", "not issued by the owner"),
            (
                "trust_mark_type",
                "https://tm.example/other",
                "another trust_mark_type",
            ),
        ];
        for (field, value, want) in cases {
            let jwt = delegation(&owner, DELEGATION_TYP, with(field, json!(value)));
            let e = check(&jwt, &owner).unwrap_err();
            assert!(e.contains(want), "{field}: {e}");
        }
    }

    #[test]
    fn expired_future_or_timeless_delegations_are_refused() {
        let owner = key();
        let expired = delegation(&owner, DELEGATION_TYP, with("exp", json!(NOW - 1)));
        assert!(check(&expired, &owner).unwrap_err().contains("expired"));
        let future = delegation(&owner, DELEGATION_TYP, with("iat", json!(NOW + 3600)));
        assert!(check(&future, &owner).unwrap_err().contains("future"));
        let mut no_iat = good();
        no_iat.as_object_mut().unwrap().remove("iat");
        let e = check(&delegation(&owner, DELEGATION_TYP, no_iat), &owner).unwrap_err();
        assert!(e.contains("iat missing"), "{e}");
    }

    #[test]
    fn a_missing_claim_or_garbage_is_refused() {
        let owner = key();
        let mut no_sub = good();
        no_sub.as_object_mut().unwrap().remove("sub");
        let e = check(&delegation(&owner, DELEGATION_TYP, no_sub), &owner).unwrap_err();
        assert!(e.contains("sub missing"), "{e}");
        assert!(check("not.a.jwt", &owner).is_err());
    }
}

/// A mark shaped as spid-cie-oidc (before 2025: `id`; 2025: `trust_mark_id`) or Sphereon shape
/// it: the type is read from the old names, in the entry and in the JWT, unless strict.
#[test]
fn draft_era_type_names_are_understood_unless_strict() {
    let k = key();
    let ta = anchor(json!({TYPE: [TMI]}));
    for name in ["id", "trust_mark_id"] {
        let c = json!({"iss": TMI, "sub": LEAF, name: TYPE, "iat": NOW - 10});
        let jwt = sign(&k, TRUST_MARK_TYP, c.as_object().unwrap(), None).unwrap();
        let entry = json!({name: TYPE, "trust_mark": jwt});
        let subject = json!({"trust_marks": [entry.clone()]});
        let s = subject.as_object().unwrap();
        assert_eq!(candidates(s, &ta, true).len(), 1, "{name}");
        let v = verify(&entry, LEAF, &ta, &jwks(&k), NOW, true).unwrap();
        assert_eq!(v.trust_mark_type, TYPE);
        assert_eq!(
            v.to_json(false),
            json!({"trust_mark_type": TYPE, "trust_mark": jwt})
        );
        assert!(candidates(s, &ta, false).is_empty(), "{name} strict");
        assert!(verify(&entry, LEAF, &ta, &jwks(&k), NOW, false).is_err());
    }
}

#[test]
fn old_names_that_disagree_name_no_type() {
    let both = json!({"trust_mark_id": TYPE, "id": "https://other/type"});
    assert_eq!(mark_type(both.as_object().unwrap(), true), None);
    let current = json!({"trust_mark_type": TYPE, "id": "https://other/type"});
    assert_eq!(mark_type(current.as_object().unwrap(), false), Some(TYPE));
}

/// spid-cie-oidc anchors before November 2023 named the claim `trust_marks_issuers`.
#[test]
fn the_draft_era_issuers_claim_admits_marks_unless_strict() {
    let k = key();
    let entry = mark(&k, TRUST_MARK_TYP, claims());
    let subject = json!({"trust_marks": [entry]});
    let s = subject.as_object().unwrap();
    let old = json!({"trust_marks_issuers": {TYPE: [TMI]}});
    let old = old.as_object().unwrap();
    assert_eq!(candidates(s, old, true).len(), 1);
    assert!(candidates(s, old, false).is_empty());
    let mut both = old.clone();
    both.insert("trust_mark_issuers".into(), json!({}));
    assert!(
        candidates(s, &both, true).is_empty(),
        "the current claim wins"
    );
}
