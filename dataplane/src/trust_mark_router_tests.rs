//! The Trust Mark Issuer's endpoints through the public router, in process (see
//! [`crate::trust_mark_test_support`]).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use axum::http::StatusCode;
use pharos_shared::config::FederationSettings;
use std::sync::atomic::Ordering;

use pharos_shared::trust_mark_issuer::{
    EligibilityMode, IssuedMark, SignedMark, Subject, SubjectStatus,
};
use serde_json::json;

use crate::test_support::{ENTITY_ID, NOW, RP, get};
use crate::trust_mark_test_support::{
    BLOCKED, CHECKED, Issuer, PENDING, Records, TM, TM_RP, enc, instance, issuer, refused,
};
#[tokio::test]
async fn a_mark_carries_exactly_its_claims_and_is_recorded_before_it_is_handed_out() {
    let i = Issuer::new(issuer().build());
    let a = i.get(TM_RP).await;
    assert_eq!(a.status, StatusCode::OK, "{:?}", a.body);
    assert_eq!(a.content_type(), "application/trust-mark+jwt");
    let mark = a.verified(&i.snap(), "trust-mark+jwt").claims;
    let mut names: Vec<&str> = mark.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "a",
            "b",
            "exp",
            "iat",
            "id",
            "iss",
            "jti",
            "ref",
            "sub",
            "trust_mark_type"
        ]
    );
    assert_eq!(mark["iss"], ENTITY_ID, "a spec claim cannot set iss");
    assert_eq!(mark["sub"], RP);
    assert_eq!(mark["trust_mark_type"], TM);
    assert_eq!(mark["id"], TM, "the legacy alias");
    assert_eq!(mark["iat"], NOW);
    assert_eq!(mark["exp"], NOW + 3600);
    assert_eq!(mark["ref"], "https://marks.example.org/about");
    assert_eq!((&mark["a"], &mark["b"]), (&json!(1), &json!("subject")));
    let jti = mark["jti"].as_str().unwrap();
    assert!(
        jti.len() == 32 && jti.chars().all(|c| c.is_ascii_hexdigit()),
        "{jti}"
    );
    let snap = i.snap();
    let recorded = snap.trust_marks.issued.get(jti).expect("recorded");
    let expected = IssuedMark {
        issued_at: NOW,
        signed: Some(Arc::new(
            SignedMark::parse(std::str::from_utf8(&a.body).unwrap()).unwrap(),
        )),
        ..instance(jti, RP, Some(NOW + 3600), None)
    };
    assert_eq!(**recorded, expected);
}

#[tokio::test]
async fn a_held_mark_is_handed_out_again_from_the_snapshot_until_its_renewal() {
    let i = Issuer::new(issuer().build());
    let first = i.get(TM_RP).await;
    assert_eq!(first.status, StatusCode::OK, "{:?}", first.body);
    for _ in 0..20 {
        assert_eq!(i.get(TM_RP).await.body, first.body, "the same mark");
    }
    assert_eq!(i.recorded.load(Ordering::SeqCst), 1, "one record command");
    assert_eq!(i.snap().trust_marks.issued.len(), 1, "one instance");
    // Up to half of its hour (federation.trust_mark_renew_after_percent: 50).
    i.clock.advance(1799);
    assert_eq!(i.get(TM_RP).await.body, first.body);
    i.clock.advance(1);
    let renewed = i.get(TM_RP).await;
    assert_ne!(renewed.body, first.body, "renewed");
    let jti = |a: &crate::test_support::Answer| {
        a.verified(&i.snap(), "trust-mark+jwt").claims["jti"].clone()
    };
    assert_ne!(jti(&renewed), jti(&first));
    assert_eq!(i.get(TM_RP).await.body, renewed.body);
    assert_eq!(i.recorded.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_subject_that_is_not_an_entity_identifier_is_refused_before_any_check() {
    // check_only: the checker (which fetches `sub`) would answer 403 "not on the list".
    let snap = issuer()
        .mark_spec(TM, |s| s.eligibility = EligibilityMode::CheckOnly)
        .build();
    let i = Issuer::new(snap);
    for sub in [
        "http://plain.example.org",
        "https://q.example.org/?x=1",
        "https://f.example.org/#x",
        "not a url",
    ] {
        let q = format!("/tm?sub={}&trust_mark_type={}", enc(sub), enc(TM));
        let a = i.get(&q).await;
        refused(&a, 400, "invalid_request");
        assert!(
            a.json()["error_description"]
                .as_str()
                .unwrap()
                .contains("'sub' must be an entity identifier"),
            "{sub}"
        );
    }
    assert_eq!(i.recorded.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn without_lifetime_there_is_no_exp_and_the_legacy_id_can_be_turned_off() {
    let mut snap = issuer().mark_spec(TM, |_| {}).build();
    // `federation.trust_mark_legacy_id: false`, as the control plane loads it.
    let mut tm = pharos_shared::trust_mark_issuer::TrustMarks::clone(&snap.trust_marks);
    tm.legacy_id = false;
    snap.trust_marks = Arc::new(tm);
    let i = Issuer::start(snap, Records::Work, &FederationSettings::default());
    let mark = i
        .get(TM_RP)
        .await
        .verified(&i.snap(), "trust-mark+jwt")
        .claims;
    assert!(mark.get("exp").is_none(), "{mark:?}");
    assert!(mark.get("id").is_none(), "{mark:?}");
    assert!(
        mark.get("a").is_none(),
        "the spec was replaced without extra claims"
    );
    assert_eq!(mark["b"], "subject");
    let jti = mark["jti"].as_str().unwrap();
    assert_eq!(i.snap().trust_marks.issued[jti].expires_at, None);
}

#[tokio::test]
async fn refusals_follow_the_specification_and_the_subject_standing() {
    let other = "https://other.example.org";
    let snap = issuer()
        .mark_subject(
            TM,
            "https://blocked.example.org",
            SubjectStatus::Blocked,
            json!({}),
            2,
        )
        .mark_subject(
            TM,
            "https://pending.example.org",
            SubjectStatus::Pending,
            json!({}),
            3,
        )
        .mark_subject(
            TM,
            "https://inactive.example.org",
            SubjectStatus::Inactive,
            json!({}),
            4,
        )
        .build();
    let i = Issuer::new(snap);
    let q = |sub: &str, tm: &str| format!("/tm?sub={}&trust_mark_type={}", enc(sub), enc(tm));
    refused(
        &i.get("/tm?trust_mark_type=x").await,
        400,
        "invalid_request",
    );
    refused(&i.get("/tm?sub=x").await, 400, "invalid_request");
    refused(
        &i.get(&format!("{TM_RP}&sub=x")).await,
        400,
        "invalid_request",
    );
    refused(
        &i.get(&q(RP, "https://unknown.example.org")).await,
        404,
        "not_found",
    );
    refused(&i.get(&q(other, TM)).await, 404, "not_found");
    refused(
        &i.get(&q("https://inactive.example.org", TM)).await,
        404,
        "not_found",
    );
    refused(
        &i.get(&q("https://blocked.example.org", TM)).await,
        403,
        "invalid_request",
    );
    let pending = i.get(&q("https://pending.example.org", TM)).await;
    refused(&pending, 202, "invalid_request");
    assert!(
        pending.json()["error_description"]
            .as_str()
            .unwrap()
            .starts_with("the request is pending")
    );
    assert!(i.snap().trust_marks.issued.is_empty(), "nothing issued");
}

#[tokio::test]
async fn eligibility_modes_combine_the_stored_standing_and_the_checker() {
    use pharos_shared::trust_mark_issuer::EligibilityMode::*;
    // RP is stored active; the fake checker passes CHECKED and BLOCKED only.
    let stranger = "https://stranger.example.org";
    // (mode, RP, CHECKED (no row), stranger (no row), BLOCKED, PENDING)
    let table = [
        (DbOnly, 200, 404, 404, 403, 202),
        (CheckOnly, 403, 200, 403, 403, 403),
        (DbOrCheck, 200, 200, 403, 403, 403),
        (DbAndCheck, 403, 404, 404, 403, 202),
    ];
    for (mode, rp, checked, other, blocked, pending) in table {
        let snap = issuer()
            .mark_spec(TM, |s| s.eligibility = mode)
            .mark_subject(TM, BLOCKED, SubjectStatus::Blocked, json!({}), 2)
            .mark_subject(TM, PENDING, SubjectStatus::Pending, json!({}), 3)
            .build();
        let i = Issuer::new(snap);
        let q = |sub: &str| format!("/tm?sub={}&trust_mark_type={}", enc(sub), enc(TM));
        for (sub, want) in [
            (RP, rp),
            (CHECKED, checked),
            (stranger, other),
            (BLOCKED, blocked),
            (PENDING, pending),
        ] {
            let a = i.get(&q(sub)).await;
            assert_eq!(a.status.as_u16(), want, "{mode:?} {sub}: {:?}", a.body);
            if want == 200 {
                let mark = a.verified(&i.snap(), "trust-mark+jwt").claims;
                assert_eq!(mark["sub"], sub);
            }
        }
        // The checker's own denial is what the client sees.
        if mode == CheckOnly {
            let a = i.get(&q(stranger)).await;
            refused(&a, 403, "forbidden");
            assert_eq!(a.json()["error_description"], "not on the list");
        }
    }
}

#[tokio::test]
async fn a_mark_that_cannot_be_recorded_is_not_handed_out() {
    let i = Issuer::start(
        issuer().build(),
        Records::Fail,
        &FederationSettings::default(),
    );
    refused(&i.get(TM_RP).await, 500, "server_error");
    // No control plane at all: 503.
    let (dp, _p) = crate::test_support::data_plane(issuer().build());
    refused(&get(&dp, TM_RP).await, 503, "temporarily_unavailable");
}

#[tokio::test]
async fn a_cached_mark_is_served_again_but_never_past_a_subject_change() {
    let snap = issuer().mark_spec(TM, |s| {
        s.cache_ttl = 600;
        s.lifetime = Some(300);
    });
    let snap = snap
        .mark_subject(TM, RP, SubjectStatus::Active, json!({}), 1)
        .build();
    let i = Issuer::new(snap);
    let first = i.get(TM_RP).await.body;
    assert_eq!(i.get(TM_RP).await.body, first, "the same mark");
    assert_eq!(i.snap().trust_marks.issued.len(), 1);

    // The mark expires after 300 s, before the cache_ttl: a new one then.
    i.clock.advance(300);
    let second = i.get(TM_RP).await.body;
    assert_ne!(second, first);
    assert_eq!(i.get(TM_RP).await.body, second);

    // The subject stored again (new version): a new mark with its new claims.
    let subject = |status, version| {
        Arc::new(Subject {
            id: 1,
            entity_id: RP.into(),
            status,
            additional_claims: json!({"c": 3}).as_object().cloned().unwrap(),
            version,
        })
    };
    i.change(|tm| {
        tm.subjects
            .insert((TM.into(), RP.into()), subject(SubjectStatus::Active, 7));
    });
    let third = i.get(TM_RP).await;
    assert_ne!(third.body, second);
    assert_eq!(third.verified(&i.snap(), "trust-mark+jwt").claims["c"], 3);

    // Blocked: refused at once, the cached mark is not served.
    i.change(|tm| {
        tm.subjects
            .insert((TM.into(), RP.into()), subject(SubjectStatus::Blocked, 8));
    });
    refused(&i.get(TM_RP).await, 403, "invalid_request");
    // Active again with the old version number's instance revoked: never the revoked mark.
    let jti = third.verified(&i.snap(), "trust-mark+jwt").claims["jti"].clone();
    i.change(|tm| {
        tm.subjects
            .insert((TM.into(), RP.into()), subject(SubjectStatus::Active, 7));
        let revoked = Arc::new(IssuedMark {
            revoked_at: Some(NOW),
            ..IssuedMark::clone(&tm.issued[jti.as_str().unwrap()])
        });
        tm.issued.insert(Arc::from(jti.as_str().unwrap()), revoked);
    });
    let fourth = i.get(TM_RP).await;
    assert_ne!(
        fourth.body, third.body,
        "a revoked instance is never served again"
    );
}

#[path = "trust_mark_router_tests_more.rs"]
mod more;
