//! Status, listing and request endpoints of the Trust Mark Issuer, and the list endpoint's
//! trust mark filters.

use std::sync::Arc;

use pharos_shared::jose::{self, Algorithm, SigningKey};
use pharos_shared::snapshot::KeySet;
use pharos_shared::trust_mark_issuer::SubjectStatus;
use serde_json::{Map, Value, json};

use crate::test_support::{ENTITY_ID, NOW, RP};
use crate::trust_mark_test_support::{Issuer, TM, TM_RP, enc, instance, issuer, refused};

/// A trust mark with `claims`, signed by `signer` with `typ`.
fn token(signer: &dyn jose::Signer, typ: &str, claims: Value) -> String {
    let claims: Map<String, Value> = claims.as_object().cloned().unwrap();
    jose::sign(signer, typ, &claims, None).unwrap()
}

fn mark_claims(jti: &str) -> Value {
    json!({"iss": ENTITY_ID, "sub": RP, "trust_mark_type": TM, "iat": NOW - 100, "jti": jti})
}

/// The status the endpoint answers for `token` (checking the response's form).
async fn status(i: &Issuer, token: &str) -> String {
    let a = i.post("/status", &[("trust_mark", token)]).await;
    assert_eq!(a.status.as_u16(), 200, "{:?}", a.body);
    assert_eq!(
        a.content_type(),
        "application/trust-mark-status-response+jwt"
    );
    let d = a
        .verified(&i.snap(), "trust-mark-status-response+jwt")
        .claims;
    assert_eq!(d["iss"], ENTITY_ID);
    assert_eq!(d["iat"], NOW);
    assert_eq!(d["trust_mark"], token, "the token asked about");
    d["status"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn repeated_status_checks_follow_a_revocation_at_once() {
    let i = Issuer::new(issuer().build());
    let issued = String::from_utf8(i.get(TM_RP).await.body.to_vec()).unwrap();
    let jti = jose::decode_unverified(&issued).unwrap().claims["jti"]
        .as_str()
        .unwrap()
        .to_owned();
    // Asked twice (cached verification and answer), then revoked within the same second.
    assert_eq!(status(&i, &issued).await, "active");
    assert_eq!(status(&i, &issued).await, "active");
    i.change(|tm| {
        let mut m = pharos_shared::trust_mark_issuer::IssuedMark::clone(&tm.issued[jti.as_str()]);
        m.revoked_at = Some(NOW - 1);
        tm.issued.insert(Arc::from(jti.as_str()), Arc::new(m));
    });
    assert_eq!(status(&i, &issued).await, "revoked");
    // A forgery stays invalid however often it is asked about.
    let forger = SigningKey::generate(Algorithm::ES256, 0).unwrap();
    let forged = token(&forger, "trust-mark+jwt", mark_claims(&jti));
    for _ in 0..2 {
        assert_eq!(status(&i, &forged).await, "invalid");
    }
}

#[tokio::test]
async fn status_answers_active_expired_revoked_invalid_and_404() {
    let old = SigningKey::generate(Algorithm::ES256, 0).unwrap();
    let mut snap = issuer()
        .issued_mark(instance("expired", RP, Some(NOW - 1), None))
        .issued_mark(instance("revoked", RP, Some(NOW + 60), Some(NOW - 10)))
        .issued_mark(instance("old-key", RP, None, None))
        .build();
    snap.keys = Arc::new(KeySet {
        historical: vec![jose::Signer::public_jwk(&old).clone()],
        ..KeySet::clone(&snap.keys)
    });
    let i = Issuer::new(snap);
    let signer = i.snap().keys.signer.clone();

    // Issued here: active, then the stored instance's status.
    let issued = String::from_utf8(i.get(TM_RP).await.body.to_vec()).unwrap();
    assert_eq!(status(&i, &issued).await, "active");
    let ours = |jti| token(signer.as_ref(), "trust-mark+jwt", mark_claims(jti));
    assert_eq!(status(&i, &ours("expired")).await, "expired");
    assert_eq!(status(&i, &ours("revoked")).await, "revoked");
    let by_old_key = token(&old, "trust-mark+jwt", mark_claims("old-key"));
    assert_eq!(
        status(&i, &by_old_key).await,
        "active",
        "historical keys verify"
    );

    // Forged (another key, an issued jti), another issuer: invalid.
    let forger = SigningKey::generate(Algorithm::ES256, 0).unwrap();
    let jti = jose::decode_unverified(&issued).unwrap().claims["jti"].clone();
    let forged = token(
        &forger,
        "trust-mark+jwt",
        mark_claims(jti.as_str().unwrap()),
    );
    assert_eq!(status(&i, &forged).await, "invalid");
    let mut foreign = mark_claims("expired");
    foreign["iss"] = json!("https://other.example.org");
    let foreign = token(signer.as_ref(), "trust-mark+jwt", foreign);
    assert_eq!(status(&i, &foreign).await, "invalid");

    // Verified but never issued here, or without jti: 404.
    let never = ours("never-issued");
    refused(
        &i.post("/status", &[("trust_mark", never.as_str())]).await,
        404,
        "not_found",
    );
    let mut no_jti = mark_claims("x");
    no_jti.as_object_mut().unwrap().remove("jti");
    let no_jti = token(signer.as_ref(), "trust-mark+jwt", no_jti);
    refused(
        &i.post("/status", &[("trust_mark", no_jti.as_str())]).await,
        404,
        "not_found",
    );

    // Ours and expired, its instance pruned since: still expired.
    let mut pruned = mark_claims("pruned");
    pruned["exp"] = json!(NOW);
    let pruned = token(signer.as_ref(), "trust-mark+jwt", pruned);
    assert_eq!(status(&i, &pruned).await, "expired");

    // Not a trust mark at all, missing, twice: 400.
    let wrong_typ = token(
        signer.as_ref(),
        "entity-statement+jwt",
        mark_claims("expired"),
    );
    for form in [
        vec![("trust_mark", wrong_typ.as_str())],
        vec![("trust_mark", "not-a-jwt")],
        vec![],
        vec![
            ("trust_mark", issued.as_str()),
            ("trust_mark", issued.as_str()),
        ],
    ] {
        refused(&i.post("/status", &form).await, 400, "invalid_request");
    }
    // POST only.
    assert_eq!(i.get("/status?trust_mark=x").await.status.as_u16(), 405);
}

#[tokio::test]
async fn listing_names_holders_of_valid_marks_of_a_known_type() {
    let snap = issuer()
        .issued_mark(instance("a", RP, Some(NOW + 60), None))
        .issued_mark(instance("b", RP, None, None))
        .issued_mark(instance(
            "c",
            "https://expired.example.org",
            Some(NOW),
            None,
        ))
        .issued_mark(instance(
            "d",
            "https://revoked.example.org",
            None,
            Some(NOW - 1),
        ))
        .issued_mark(instance("e", "https://leaf.example.org", None, None))
        .build();
    let i = &Issuer::new(snap);
    let list = |q: String| async move {
        let a = i.get(&format!("/listing?{q}")).await;
        assert_eq!(a.status.as_u16(), 200, "{:?}", a.body);
        assert_eq!(a.content_type(), "application/json");
        a.json()
    };
    let t = format!("trust_mark_type={}", enc(TM));
    assert_eq!(
        list(t.clone()).await,
        json!(["https://leaf.example.org", RP]),
        "sorted, distinct, valid only"
    );
    assert_eq!(list(format!("{t}&sub={}", enc(RP))).await, json!([RP]));
    let expired = enc("https://expired.example.org");
    assert_eq!(list(format!("{t}&sub={expired}")).await, json!([]));
    refused(&i.get("/listing").await, 400, "invalid_request");
    refused(
        &i.get(&format!("/listing?{t}&{t}")).await,
        400,
        "invalid_request",
    );
    refused(&i.get("/listing?trust_mark_type=x").await, 404, "not_found");
}

#[tokio::test]
async fn requests_store_new_subjects_as_pending() {
    let q = |sub: &str| format!("/request?sub={}&trust_mark_type={}", enc(sub), enc(TM));
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
    let a = i.get(&q(RP)).await;
    assert_eq!(
        (a.status.as_u16(), a.body.len()),
        (204, 0),
        "entitled already"
    );
    refused(
        &i.get(&q("https://blocked.example.org")).await,
        403,
        "invalid_request",
    );
    assert_eq!(
        i.get(&q("https://pending.example.org"))
            .await
            .status
            .as_u16(),
        202
    );
    for new in ["https://new.example.org", "https://inactive.example.org"] {
        assert_eq!(i.get(&q(new)).await.status.as_u16(), 202, "{new}");
        let snap = i.snap();
        let s = &snap.trust_marks.subjects[&(TM.to_owned(), new.to_owned())];
        assert_eq!(s.status, SubjectStatus::Pending, "{new}");
    }
    // ... and a pending subject gets no mark.
    let pending = format!(
        "/tm?sub={}&trust_mark_type={}",
        enc("https://new.example.org"),
        enc(TM)
    );
    refused(&i.get(&pending).await, 202, "invalid_request");
    refused(&i.get("/request?sub=x").await, 400, "invalid_request");
    refused(
        &i.get(&format!(
            "/request?sub=https%3A%2F%2Fx.org&trust_mark_type={}",
            enc("https://x.org")
        ))
        .await,
        404,
        "not_found",
    );
    // Not an Entity Identifier: refused before anything is asked of the control plane.
    for sub in [
        "x",
        "http://plain.example.org",
        "https://q.example.org/?a=1",
    ] {
        let a = i.get(&q(sub)).await;
        refused(&a, 400, "invalid_request");
        assert!(
            !i.snap()
                .trust_marks
                .subjects
                .contains_key(&(TM.to_owned(), sub.to_owned()))
        );
    }
}

#[tokio::test]
async fn the_list_endpoint_filters_on_valid_marks_issued_here() {
    let op = "https://op.example.org";
    let snap = issuer()
        .subordinate(op)
        .mark_spec("https://other-type.example.org", |_| {})
        .issued_mark(instance("a", RP, None, None))
        .issued_mark(instance("b", op, Some(NOW - 1), None))
        .issued_mark(instance(
            "c",
            "https://not-a-subordinate.example.org",
            None,
            None,
        ))
        .build();
    let i = &Issuer::new(snap);
    let list = |q: String| async move {
        let a = i.get(&format!("/list?{q}")).await;
        assert_eq!(a.status.as_u16(), 200, "{q}: {:?}", a.body);
        a.json()
    };
    assert_eq!(list(String::new()).await, json!([op, RP]));
    assert_eq!(list("trust_marked=true".into()).await, json!([RP]));
    assert_eq!(
        list(format!("trust_mark_type={}", enc(TM))).await,
        json!([RP])
    );
    let other = enc("https://other-type.example.org");
    assert_eq!(list(format!("trust_mark_type={other}")).await, json!([]));
    let both = format!(
        "trust_marked=true&entity_type=openid_relying_party&trust_mark_type={}",
        enc(TM)
    );
    assert_eq!(list(both).await, json!([RP]));
    assert_eq!(
        list("trust_marked=true&entity_type=openid_provider".into()).await,
        json!([])
    );
    assert_eq!(list("trust_marked=false".into()).await, json!([op, RP]));
    // The mark of `op` expired; after the clock moves past RP's none does.
    i.clock.advance(10_000);
    assert_eq!(list("trust_marked=true".into()).await, json!([RP]));
}
