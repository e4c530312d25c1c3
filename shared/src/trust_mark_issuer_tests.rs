use super::*;

fn spec(lifetime: Option<i64>) -> IssuanceSpec {
    IssuanceSpec {
        id: 1,
        trust_mark_type: "https://tm.example/member".into(),
        lifetime,
        ref_uri: Some("https://tm.example/ref".into()),
        logo_uri: None,
        delegation_jwt: None,
        additional_claims: serde_json::from_value(json!({"level": "gold", "iss": "forged"}))
            .unwrap(),
        eligibility: EligibilityMode::DbOnly,
        checker: None,
        check_cache_ttl: 0,
        cache_ttl: 0,
        version: 1,
    }
}

fn issued(expires_at: Option<i64>, revoked_at: Option<i64>) -> IssuedMark {
    IssuedMark {
        jti: "j".into(),
        trust_mark_type: "t".into(),
        subject: "https://rp.example".into(),
        issued_at: 100,
        expires_at,
        revoked_at,
        signed: None,
    }
}

#[test]
fn claims_carry_the_type_twice_and_protected_claims_are_ours() {
    let subject: Map<String, Value> =
        serde_json::from_value(json!({"level": "platinum", "jti": "x"})).unwrap();
    let c = mark_claims(
        "https://tmi.example",
        &spec(Some(3600)),
        Some(&subject),
        "https://rp.example",
        "j1",
        1000,
        true,
    );
    assert_eq!(c["iss"], "https://tmi.example");
    assert_eq!(c["sub"], "https://rp.example");
    assert_eq!(c["trust_mark_type"], "https://tm.example/member");
    assert_eq!(c["id"], "https://tm.example/member");
    assert_eq!(c["iat"], 1000);
    assert_eq!(c["exp"], 4600);
    assert_eq!(c["ref"], "https://tm.example/ref");
    assert_eq!(c["jti"], "j1");
    assert_eq!(
        c["level"], "platinum",
        "the subject's claim wins over the spec's"
    );
    assert!(!c.contains_key("logo_uri"));
}

#[test]
fn no_lifetime_means_no_exp_and_no_legacy_id_when_off() {
    let c = mark_claims("i", &spec(None), None, "s", "j", 5, false);
    assert!(!c.contains_key("exp"));
    assert!(!c.contains_key("id"));
    assert_eq!(c["level"], "gold");
}

#[test]
fn status_revocation_wins_over_expiry() {
    assert_eq!(issued(Some(200), None).status(150), MarkStatus::Active);
    assert_eq!(issued(Some(200), None).status(200), MarkStatus::Expired);
    assert_eq!(issued(None, None).status(1 << 40), MarkStatus::Active);
    assert_eq!(
        issued(Some(200), Some(120)).status(300),
        MarkStatus::Revoked
    );
    assert_eq!(issued(None, Some(120)).status(119), MarkStatus::Active);
}

#[test]
fn standing_follows_the_stored_status() {
    let s = |status| Subject {
        id: 1,
        entity_id: "e".into(),
        status,
        additional_claims: Map::new(),
        version: 1,
    };
    assert_eq!(
        standing(Some(&s(SubjectStatus::Active))),
        Standing::Entitled
    );
    assert_eq!(
        standing(Some(&s(SubjectStatus::Pending))),
        Standing::Pending
    );
    assert_eq!(
        standing(Some(&s(SubjectStatus::Blocked))),
        Standing::Blocked
    );
    assert_eq!(
        standing(Some(&s(SubjectStatus::Inactive))),
        Standing::NotEntitled
    );
    assert_eq!(standing(None), Standing::NotEntitled);
}

#[test]
fn holders_are_distinct_sorted_and_valid() {
    let mut tm = TrustMarks::default();
    let mut add = |jti: &str, sub: &str, exp: Option<i64>, rev: Option<i64>| {
        let m = IssuedMark {
            jti: jti.into(),
            trust_mark_type: "t".into(),
            subject: sub.into(),
            issued_at: 1,
            expires_at: exp,
            revoked_at: rev,
            signed: None,
        };
        tm.issued.insert(jti.into(), Arc::new(m));
    };
    add("1", "https://b", None, None);
    add("2", "https://a", Some(100), None);
    add("3", "https://b", Some(10), None);
    add("4", "https://c", None, Some(5));
    assert_eq!(tm.holders("t", None, 50), vec!["https://a", "https://b"]);
    assert_eq!(tm.holders("t", Some("https://a"), 50), vec!["https://a"]);
    assert_eq!(tm.holders("t", Some("https://c"), 50), Vec::<String>::new());
    assert!(tm.holders("other", None, 50).is_empty());
    // The answer holds until a counted mark expires (b's mark of exp 10 is not counted at 50).
    assert_eq!(tm.valid_holders(Some("t"), 50).1, 100);
    let (all, until) = tm.valid_holders(None, 4);
    assert_eq!(all, ["https://a", "https://b", "https://c"]);
    assert_eq!(until, 5, "c's scheduled revocation");
    assert_eq!(tm.valid_holders(Some("other"), 4), (vec![], i64::MAX));
}

#[test]
fn ec_claims_skip_types_without_issuers_or_owner() {
    let mut tm = TrustMarks::default();
    assert!(tm.issuers_claim().is_none() && tm.owners_claim().is_none());
    tm.types.insert("a".into(), TrustMarkType::default());
    tm.types.insert(
        "b".into(),
        TrustMarkType {
            owner: Some(Owner {
                entity_id: "https://owner".into(),
                jwks: Jwks::default(),
            }),
            issuers: vec!["https://tmi".into()],
        },
    );
    assert_eq!(tm.issuers_claim().unwrap(), json!({"b": ["https://tmi"]}));
    assert_eq!(
        tm.owners_claim().unwrap(),
        json!({"b": {"sub": "https://owner", "jwks": {"keys": []}}})
    );
}

#[test]
fn eligibility_modes_parse() {
    for m in [
        EligibilityMode::DbOnly,
        EligibilityMode::CheckOnly,
        EligibilityMode::DbOrCheck,
        EligibilityMode::DbAndCheck,
    ] {
        assert_eq!(EligibilityMode::parse(m.as_str()), Some(m));
    }
    assert_eq!(
        EligibilityMode::parse("custom"),
        Some(EligibilityMode::CheckOnly)
    );
    assert_eq!(EligibilityMode::parse("bogus"), None);
}

#[test]
fn a_mark_is_renewed_past_the_share_of_its_lifetime_or_the_cache_ttl() {
    let half = Renewal::default();
    assert_eq!(half.renew_at(100, Some(300), 0), Some(200));
    assert_eq!(Renewal(80).renew_at(100, Some(300), 0), Some(260));
    assert_eq!(
        half.renew_at(100, Some(300), 50),
        Some(150),
        "cache_ttl first"
    );
    assert_eq!(half.renew_at(100, Some(300), 500), Some(200));
    assert_eq!(half.renew_at(100, None, 0), None, "no exp: not by time");
    assert_eq!(half.renew_at(100, None, 60), Some(160));
    assert_eq!(
        Renewal(0).renew_at(100, Some(300), 0),
        Some(102),
        "at least 1 %"
    );
}

#[test]
fn the_stored_standing_admits_a_mark_as_each_mode_says() {
    use EligibilityMode::*;
    use Standing::*;
    for mode in [DbOnly, CheckOnly, DbOrCheck, DbAndCheck] {
        assert!(
            !mode.admits(Blocked, true),
            "{mode:?}: blocked stays blocked"
        );
    }
    assert!(DbOnly.admits(Entitled, false));
    assert!(!DbOnly.admits(NotEntitled, true));
    assert!(!DbOnly.admits(Pending, false));
    assert!(CheckOnly.admits(NotEntitled, true));
    assert!(!CheckOnly.admits(Entitled, false));
    assert!(DbOrCheck.admits(Entitled, false));
    assert!(DbOrCheck.admits(NotEntitled, true));
    assert!(!DbOrCheck.admits(NotEntitled, false));
    assert!(DbAndCheck.admits(Entitled, true));
    assert!(!DbAndCheck.admits(Entitled, false));
    assert!(!DbAndCheck.admits(NotEntitled, true));
}

fn signed(claims: Value) -> Arc<SignedMark> {
    let key = crate::jose::SigningKey::generate(crate::jose::Algorithm::ES256, 0).unwrap();
    let token = crate::jose::sign(&key, "trust-mark+jwt", claims.as_object().unwrap(), None);
    Arc::new(SignedMark::parse(&token.unwrap()).unwrap())
}

#[test]
fn the_newest_active_mark_with_the_same_content_and_key_is_reused() {
    let mut tm = TrustMarks::default();
    let says = json!({"sub": "https://rp.example", "level": 1, "jti": "a", "iat": 100, "exp": 300});
    let held = signed(says.clone());
    let kid = held.kid.clone().unwrap();
    let mark = |jti: &str, iat: i64, revoked: Option<i64>| IssuedMark {
        jti: jti.into(),
        issued_at: iat,
        expires_at: Some(iat + 200),
        revoked_at: revoked,
        signed: Some(held.clone()),
        ..issued(None, None)
    };
    tm.put_issued(Arc::new(mark("old", 50, None)));
    tm.put_issued(Arc::new(mark("a", 100, None)));
    tm.put_issued(Arc::new(mark("older", 10, None)));
    let fresh =
        json!({"sub": "https://rp.example", "level": 1, "jti": "new", "iat": 150, "exp": 350});
    let fresh = fresh.as_object().unwrap();
    let reused = |tm: &TrustMarks, fresh: &Map<String, Value>, kid: &str, now: i64| {
        tm.reusable("t", "https://rp.example", fresh, kid, 0, now)
            .map(|m| m.jti.clone())
    };
    assert_eq!(
        reused(&tm, fresh, &kid, 150).as_deref(),
        Some("a"),
        "the newest"
    );
    assert_eq!(
        reused(&tm, fresh, &kid, 200),
        None,
        "half its lifetime gone"
    );
    assert_eq!(reused(&tm, fresh, "other-kid", 150), None, "another key");
    let more = json!({"sub": "https://rp.example", "level": 2, "jti": "n", "iat": 1});
    assert_eq!(
        reused(&tm, more.as_object().unwrap(), &kid, 150),
        None,
        "other content"
    );
    let fewer = json!({"sub": "https://rp.example", "jti": "n", "iat": 1});
    assert_eq!(
        reused(&tm, fewer.as_object().unwrap(), &kid, 150),
        None,
        "a claim less"
    );
    tm.put_issued(Arc::new(mark("a", 100, Some(120))));
    assert_eq!(reused(&tm, fresh, &kid, 150), None, "revoked");
    tm.remove_issued("a");
    assert!(tm.latest.is_empty(), "the index follows a removal");
    assert_eq!(tm.issued.len(), 2);
}
