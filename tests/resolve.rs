//! The resolve endpoint against real Pharos instances on loopback: parameters, anchor
//! restrictions, errors, pinned keys, and the proactive resolver answering from disk after a
//! restart with the upstream stopped.

use std::time::Duration;

use crate::support::{Pharos, TestDb, backends, enc};
use pharos_shared::jose::{self, Jwks};
use reqwest::Method;
use serde_json::{Value, json};

/// Creates the resolve endpoint at `/resolve` with `config`.
pub async fn enable_resolve(p: &Pharos, config: Value) {
    let (s, rec) = p
        .admin(
            Method::POST,
            "/federation-endpoints",
            Some(json!({"type": "resolve", "path": "/resolve", "config": config})),
        )
        .await;
    assert_eq!(s, 201, "{rec}");
}

/// `GET /resolve?sub=..&trust_anchor=..` (each anchor repeated); status and body.
pub async fn resolve(p: &Pharos, sub: &str, anchors: &[&str], types: &[&str]) -> (u16, String) {
    let mut q = format!("sub={}", enc(sub));
    for a in anchors {
        q.push_str(&format!("&trust_anchor={}", enc(a)));
    }
    for t in types {
        q.push_str(&format!("&entity_type={}", enc(t)));
    }
    let r = p.get(&format!("/resolve?{q}")).await;
    let status = r.status().as_u16();
    if status == 200 {
        assert_eq!(
            r.headers()["content-type"],
            "application/resolve-response+jwt"
        );
    }
    (status, r.text().await.unwrap())
}

/// Verifies a resolve response with the resolver's published keys and returns its claims.
pub async fn verified(resolver: &Pharos, token: &str) -> serde_json::Map<String, Value> {
    let ec = resolver.entity_configuration().await;
    let keys: Jwks = serde_json::from_value(ec.claims["jwks"].clone()).unwrap();
    let d = jose::verify(token, &keys).unwrap();
    jose::check_typ(&d, "resolve-response+jwt").unwrap();
    assert!(d.header["kid"].is_string());
    assert_eq!(d.claims["iss"], resolver.entity_id());
    d.claims
}

/// The `error` member of an error body.
pub fn error_code(body: &str) -> String {
    let v: Value = serde_json::from_str(body).unwrap();
    v["error"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn resolves_an_anchor_and_reports_errors_per_the_specification() {
    for b in backends() {
        let (db_t, db_r) = (TestDb::new(b).await, TestDb::new(b).await);
        let t = Pharos::start(&db_t).await;
        let r = Pharos::start(&db_r).await;
        let ta = t.entity_id().to_owned();
        enable_resolve(&r, json!({"allowed_trust_anchors": [ta]})).await;

        let (s, body) = resolve(&r, &ta, &[&ta], &[]).await;
        assert_eq!(s, 200, "{b:?} {body}");
        let c = verified(&r, &body).await;
        assert_eq!(c["sub"], ta.as_str());
        assert_eq!(c["trust_chain"].as_array().unwrap().len(), 1);
        let ec = jose::decode_unverified(c["trust_chain"][0].as_str().unwrap()).unwrap();
        assert_eq!(c["exp"], ec.claims["exp"]);
        assert!(c["metadata"]["federation_entity"].is_object());
        assert!(c.get("aud").is_none() && c.get("trust_marks").is_none());

        // Entity types filter the metadata.
        let (s, body) = resolve(&r, &ta, &[&ta], &["openid_provider"]).await;
        assert_eq!(s, 200);
        assert_eq!(verified(&r, &body).await["metadata"], json!({}));

        let r400 = r.get(&format!("/resolve?trust_anchor={}", enc(&ta))).await;
        assert_eq!(r400.status(), 400);
        assert_eq!(error_code(&r400.text().await.unwrap()), "invalid_request");
        let r400 = r.get(&format!("/resolve?sub={}", enc(&ta))).await;
        assert_eq!(r400.status(), 400);

        let (s, body) = resolve(&r, &ta, &["https://other.example"], &[]).await;
        assert_eq!(
            (s, error_code(&body).as_str()),
            (404, "invalid_trust_anchor")
        );

        // A subject with no path to the anchor.
        let (s, body) = resolve(&r, r.entity_id(), &[&ta], &[]).await;
        assert_eq!(
            (s, error_code(&body).as_str()),
            (400, "invalid_trust_chain")
        );

        // A subject that cannot be fetched.
        let (s, body) = resolve(&r, "http://127.0.0.1:9", &[&ta], &[]).await;
        assert_eq!(
            (s, error_code(&body).as_str()),
            (404, "not_found"),
            "{body}"
        );
        r.stop().await;
        t.stop().await;
    }
}

#[tokio::test]
async fn pinned_anchor_keys_are_enforced() {
    for b in backends() {
        let (db_t, db_r) = (TestDb::new(b).await, TestDb::new(b).await);
        let t = Pharos::start(&db_t).await;
        let r = Pharos::start(&db_r).await;
        let ta = t.entity_id().to_owned();
        enable_resolve(&r, json!({})).await;
        // Pin the resolver's own keys for the anchor: the anchor's EC no longer verifies.
        let wrong = r.entity_configuration().await.claims["jwks"].clone();
        let (s, rec) = r
            .admin(
                Method::POST,
                "/trust-anchors",
                Some(json!({"entity_id": ta, "jwks": wrong})),
            )
            .await;
        assert_eq!(s, 201, "{rec}");
        let (s, body) = resolve(&r, &ta, &[&ta], &[]).await;
        assert_eq!(
            (s, error_code(&body).as_str()),
            (400, "invalid_trust_chain")
        );
        assert!(body.contains("pinned"), "{body}");
        r.stop().await;
        t.stop().await;
    }
}

#[tokio::test]
async fn a_restarted_proactive_resolver_answers_from_disk_with_the_upstream_stopped() {
    for b in backends() {
        let (db_t, db_r) = (TestDb::new(b).await, TestDb::new(b).await);
        let store = tempfile::tempdir().unwrap();
        let t = Pharos::start(&db_t).await;
        let r = Pharos::start(&db_r).await;
        let ta = t.entity_id().to_owned();
        let dir = store.path().display().to_string();
        enable_resolve(
            &r,
            json!({"allowed_trust_anchors": [ta], "proactive_resolver": {"enabled": true,
                   "response_storage": {"dir": dir, "store_json": true}}}),
        )
        .await;
        let (s, live) = resolve(&r, &ta, &[&ta], &[]).await;
        assert_eq!(s, 200, "{live}");
        // The answer fed the proactive resolver, which writes the response files.
        let anchor_dir = store.path().join("resolve").join(enc(&ta));
        let mut written = false;
        for _ in 0..200 {
            let n = std::fs::read_dir(&anchor_dir).map_or(0, |d| d.count());
            if n >= 3 {
                written = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        assert!(written, "response files in {}", anchor_dir.display());

        t.stop().await;
        let r = r.restart().await;
        let (s, stored) = resolve(&r, &ta, &[&ta], &[]).await;
        assert_eq!(s, 200, "{b:?} {stored}");
        let (a, c) = (verified(&r, &live).await, verified(&r, &stored).await);
        assert_eq!(a["trust_chain"], c["trust_chain"]);
        assert_eq!(a["metadata"], c["metadata"]);
        r.stop().await;
    }
}

#[tokio::test]
async fn anchors_can_come_from_the_entity_collection_endpoint() {
    for b in backends() {
        let (db_t, db_r) = (TestDb::new(b).await, TestDb::new(b).await);
        let t = Pharos::start(&db_t).await;
        let r = Pharos::start(&db_r).await;
        let ta = t.entity_id().to_owned();
        enable_resolve(
            &r,
            json!({"use_entity_collection_allowed_trust_anchors": true}),
        )
        .await;
        // No entity collection endpoint yet: no anchor is allowed.
        let (s, body) = resolve(&r, &ta, &[&ta], &[]).await;
        assert_eq!(
            (s, error_code(&body).as_str()),
            (404, "invalid_trust_anchor")
        );
        let body = json!({"type": "entity_collection", "path": "/collection",
                          "config": {"allowed_trust_anchors": [ta]}});
        let (s, v) = r
            .admin(Method::POST, "/federation-endpoints", Some(body))
            .await;
        assert_eq!(s, 201, "{v}");
        let (s, body) = resolve(&r, &ta, &["https://other.example", &ta], &[]).await;
        assert_eq!(s, 200, "{b:?} {body}");
        r.stop().await;
        t.stop().await;
    }
}

#[tokio::test]
async fn a_warm_answer_never_outlives_the_configuration_it_was_made_under() {
    for b in backends() {
        let (db_t, db_r) = (TestDb::new(b).await, TestDb::new(b).await);
        let t = Pharos::start(&db_t).await;
        let r = Pharos::start(&db_r).await;
        let ta = t.entity_id().to_owned();
        enable_resolve(&r, json!({"allowed_trust_anchors": [ta]})).await;
        let (s, first) = resolve(&r, &ta, &[&ta], &[]).await;
        assert_eq!(s, 200, "{b:?} {first}");
        // Warm: the same bytes again (no new signature per request).
        let (s, again) = resolve(&r, &ta, &[&ta], &[]).await;
        assert_eq!((s, &again), (200, &first));
        // The anchor is no longer allowed: the warm answer must not be served any more.
        let (s, rec) = r
            .admin(
                Method::PUT,
                "/federation-endpoints/resolve",
                Some(json!({"type": "resolve", "path": "/resolve",
                            "config": {"allowed_trust_anchors": ["https://other.example"]}})),
            )
            .await;
        assert_eq!(s, 200, "{rec}");
        let (s, body) = resolve(&r, &ta, &[&ta], &[]).await;
        assert_eq!(
            (s, error_code(&body).as_str()),
            (404, "invalid_trust_anchor")
        );
        r.stop().await;
        t.stop().await;
    }
}

/// Issue 31: with no anchors listed, resolve walks only towards the trust anchor repository
/// (and this entity); a stranger's anchor is refused before the subject is fetched, and
/// `allow_any_trust_anchor` opens it explicitly.
#[tokio::test]
async fn unlisted_anchors_are_refused_without_a_fetch_unless_configured() {
    for b in backends() {
        let (db_t, db_r) = (TestDb::new(b).await, TestDb::new(b).await);
        let t = Pharos::start(&db_t).await;
        let r = Pharos::start(&db_r).await;
        let ta = t.entity_id().to_owned();
        enable_resolve(&r, json!({})).await;
        let (subject, fetched) = crate::collection::counting_peer().await;
        for sub in [subject.as_str(), ta.as_str()] {
            let (s, body) = resolve(&r, sub, &[&ta], &[]).await;
            assert_eq!(
                (s, error_code(&body).as_str()),
                (404, "invalid_trust_anchor"),
                "{b:?} {body}"
            );
            assert!(body.contains("trust anchor repository"), "{body}");
        }
        assert_eq!(fetched.load(std::sync::atomic::Ordering::SeqCst), 0);

        // Opened explicitly.
        let open = json!({"path": "/resolve", "config": {"allow_any_trust_anchor": true}});
        let (s, v) = r
            .admin(Method::PUT, "/federation-endpoints/resolve", Some(open))
            .await;
        assert_eq!(s, 200, "{v}");
        let (s, body) = resolve(&r, &ta, &[&ta], &[]).await;
        assert_eq!(s, 200, "{b:?} {body}");

        // Closed again, the anchor in the repository.
        let closed = json!({"path": "/resolve", "config": {}});
        let (s, v) = r
            .admin(Method::PUT, "/federation-endpoints/resolve", Some(closed))
            .await;
        assert_eq!(s, 200, "{v}");
        let (s, _) = resolve(&r, &ta, &[&ta], &["openid_provider"]).await;
        assert_eq!(s, 404);
        let keys = t.entity_configuration().await.claims["jwks"].clone();
        let (s, rec) = r
            .admin(
                Method::POST,
                "/trust-anchors",
                Some(json!({"entity_id": ta, "jwks": keys})),
            )
            .await;
        assert_eq!(s, 201, "{rec}");
        let (s, body) = resolve(&r, &ta, &[&ta], &["openid_provider"]).await;
        assert_eq!(s, 200, "{b:?} {body}");
        r.stop().await;
        t.stop().await;
    }
}

/// Made-up `entity_type` values (issue 31): a flood of them must not make one signed answer,
/// resolution and cache entry each. The answer to "made-up + federation_entity" is the answer
/// to "federation_entity", so both are served from one signed response: the same bytes, with
/// the `iat` of the first, even a second later.
#[tokio::test]
async fn made_up_entity_types_share_the_answer_of_the_types_the_subject_has() {
    let (db_t, db_r) = (
        TestDb::new(crate::support::Backend::Sqlite).await,
        TestDb::new(crate::support::Backend::Sqlite).await,
    );
    let t = Pharos::start(&db_t).await;
    let r = Pharos::start(&db_r).await;
    let ta = t.entity_id().to_owned();
    enable_resolve(&r, json!({"allowed_trust_anchors": [ta]})).await;

    let (s, first) = resolve(&r, &ta, &[&ta], &["federation_entity"]).await;
    assert_eq!(s, 200, "{first}");
    let c = verified(&r, &first).await;
    assert!(c["metadata"]["federation_entity"].is_object());
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let (s, second) = resolve(&r, &ta, &[&ta], &["federation_entity", "x-7f3a"]).await;
    assert_eq!(s, 200, "{second}");
    assert_eq!(second, first, "a made-up type made a response of its own");

    // Only made-up types: no metadata, and one shared answer for any such set.
    let (s, a) = resolve(&r, &ta, &[&ta], &["x-1"]).await;
    assert_eq!(s, 200, "{a}");
    assert_eq!(verified(&r, &a).await["metadata"], json!({}));
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let (s, b) = resolve(&r, &ta, &[&ta], &["x-2", "x-3"]).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b, a, "made-up types made a response of their own");
    r.stop().await;
    t.stop().await;
}
