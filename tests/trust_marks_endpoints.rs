//! The Trust Mark Issuer's federation endpoints end to end: a mark obtained at the trust_mark
//! endpoint verifies with our Entity Configuration's keys, the status endpoint follows it
//! through expiry (injected clock) and revocation, the listing names its holder, and a
//! trust_mark_request leaves a pending subject with its history row.

use pharos_shared::jose::{self, Jwks};
use pharos_shared::time::ManualClock;
use pharos_shared::trust_mark_issuer::SubjectStatus;
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::Row;

use std::sync::Arc;

use pharos_shared::time::{Clock, SystemClock};

use crate::fetch_list::{add, enable};
use crate::support::trust_mark_issuer::TestIssuer;
use crate::support::{Pharos, TestDb, backends, enc};

pub(crate) const NOW: i64 = 1_900_000_000;
pub(crate) const TM: &str = "https://marks.example.org/member";
pub(crate) const LEAF: &str = "https://leaf.example.org";

/// Entities on loopback are fetched (a trust_mark_request fetches its subject).
pub(crate) fn loopback(s: &mut pharos_shared::config::Settings) {
    s.federation.block_private_addresses = false;
}

pub(crate) fn control(p: &Pharos) -> &pharos_controlplane::control_plane::ControlPlane {
    &p.app.as_ref().unwrap().control
}

/// Creates an issuance spec of `tm_type` (`lifetime` seconds, extra claim `level: 2`) with
/// `subject` active, through the Admin API.
pub(crate) async fn seed(p: &Pharos, tm_type: &str, lifetime: i64, subject: &str) {
    let spec = json!({"trust_mark_type": tm_type, "lifetime": lifetime,
        "additional_claims": {"level": 2}});
    let (s, v) = p
        .admin(Method::POST, "/trust-marks/issuance-spec", Some(spec))
        .await;
    assert_eq!(s, 201, "{v}");
    let path = format!("/trust-marks/issuance-spec/{}/subjects", enc(tm_type));
    let body = json!({"entity_id": subject, "status": "active"});
    let (s, v) = p.admin(Method::POST, &path, Some(body)).await;
    assert_eq!(s, 201, "{v}");
}

/// Blocks `subject` through the Admin API's status route (which revokes its marks).
async fn block(p: &Pharos, tm_type: &str, subject: &str) {
    let path = format!(
        "/trust-marks/issuance-spec/{}/subjects/{}/status",
        enc(tm_type),
        enc(subject)
    );
    let (s, v) = p.admin_raw(Method::PUT, &path, Some("blocked")).await;
    assert_eq!(s, 200, "{v}");
}

pub(crate) fn query(sub: &str) -> String {
    let q: String = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("sub", sub)
        .append_pair("trust_mark_type", TM)
        .finish();
    q
}

/// The verified status claims for `mark` (keys from our Entity Configuration).
pub(crate) async fn status(p: &Pharos, mark: &str, keys: &Jwks) -> Value {
    let r = p
        .client
        .post(p.main_url("/trust-mark-status"))
        .form(&[("trust_mark", mark)])
        .send()
        .await
        .unwrap();
    let code = r.status();
    let content_type = r.headers()["content-type"].clone();
    let body = r.text().await.unwrap();
    assert_eq!(code, 200, "{body}");
    assert_eq!(content_type, "application/trust-mark-status-response+jwt");
    let d = jose::verify(&body, keys).unwrap();
    assert_eq!(d.header["typ"], "trust-mark-status-response+jwt");
    assert_eq!(d.claims["trust_mark"], mark);
    d.claims["status"].clone()
}

#[tokio::test]
async fn a_mark_is_issued_verified_listed_expires_and_is_revoked() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let clock = ManualClock::new(NOW);
        let p = Pharos::start_with(&db, loopback, clock.clone()).await;
        for (kind, path) in [
            ("trust_mark", "/trust-mark"),
            ("trust_mark_status", "/trust-mark-status"),
            ("trust_mark_listing", "/trust-mark-listing"),
            ("trust_mark_request", "/trust-mark-request"),
            ("list", "/list"),
        ] {
            enable(&p, kind, path, json!({})).await;
        }
        seed(&p, TM, 3600, LEAF).await;
        add(&p, LEAF, json!({})).await;
        add(&p, "https://other.example.org", json!({})).await;

        let r = p.get(&format!("/trust-mark?{}", query(LEAF))).await;
        assert_eq!(r.status(), 200, "{b:?}");
        assert_eq!(r.headers()["content-type"], "application/trust-mark+jwt");
        let mark = r.text().await.unwrap();
        let ec = p.entity_configuration().await;
        let keys: Jwks = serde_json::from_value(ec.claims["jwks"].clone()).unwrap();
        let d = jose::verify(&mark, &keys).unwrap();
        assert_eq!(d.header["typ"], "trust-mark+jwt");
        let c = &d.claims;
        assert_eq!(
            (&c["iss"], &c["sub"]),
            (&json!(p.entity_id()), &json!(LEAF))
        );
        assert_eq!((&c["trust_mark_type"], &c["id"]), (&json!(TM), &json!(TM)));
        assert_eq!((&c["iat"], &c["exp"]), (&json!(NOW), &json!(NOW + 3600)));
        assert_eq!(c["level"], 2, "the spec's extra claim");
        let jti = c["jti"].as_str().unwrap();
        assert!(control(&p).snapshot().trust_marks.issued.contains_key(jti));

        assert_eq!(status(&p, &mark, &keys).await, "active", "{b:?}");
        let listing = p
            .get(&format!(
                "/trust-mark-listing?trust_mark_type={}",
                crate::support::enc(TM)
            ))
            .await;
        assert_eq!(listing.json::<Value>().await.unwrap(), json!([LEAF]));
        let list = p.get("/list?trust_marked=true").await;
        assert_eq!(list.json::<Value>().await.unwrap(), json!([LEAF]), "{b:?}");

        clock.set(NOW + 3600);
        assert_eq!(status(&p, &mark, &keys).await, "expired");
        clock.set(NOW + 10);
        block(&p, TM, LEAF).await;
        assert_eq!(status(&p, &mark, &keys).await, "revoked", "{b:?}");
        let list = p.get("/list?trust_marked=true").await;
        assert_eq!(list.json::<Value>().await.unwrap(), json!([]), "revoked");
        let r = p.get(&format!("/trust-mark?{}", query(LEAF))).await;
        assert_eq!(r.status(), 403);

        // A request (of an entity: its configuration verifies) leaves a pending subject and a
        // history row.
        let entity = TestIssuer::start(clock.clone(), 60).await;
        let new = entity.entity_id.as_str();
        let r = p.get(&format!("/trust-mark-request?{}", query(new))).await;
        assert_eq!(r.status(), 202, "{b:?}");
        let snap = control(&p).snapshot();
        let s = &snap.trust_marks.subjects[&(TM.to_owned(), new.to_owned())];
        assert_eq!(s.status, SubjectStatus::Pending);
        let cp = control(&p);
        let row = sqlx::query(
            cp.db
                .sql("SELECT type, status, actor FROM trust_mark_events WHERE subject = ?"),
        )
        .bind(new)
        .fetch_one(cp.db.pool())
        .await
        .unwrap();
        assert_eq!(row.try_get::<String, _>("type").unwrap(), "requested");
        assert_eq!(row.try_get::<String, _>("status").unwrap(), "pending");
        assert_eq!(row.try_get::<Option<String>, _>("actor").unwrap(), None);
        let r = p.get(&format!("/trust-mark?{}", query(new))).await;
        assert_eq!(r.status(), 202, "pending: no mark yet");
        p.stop().await;
    }
}

/// PUT …/subjects/{subject}/status as `actor`; the status code.
async fn decide(p: &Pharos, subject: &str, status: &str, actor: &str) -> u16 {
    let path = format!(
        "/trust-marks/issuance-spec/{}/subjects/{}/status",
        enc(TM),
        enc(subject)
    );
    crate::trust_marks_admin::as_actor(p, Method::PUT, &path, status, actor)
        .await
        .0
}

/// The subject's history as (type, status, actor), newest first.
async fn history(p: &Pharos, subject: &str) -> Vec<(String, String, String)> {
    let path = format!(
        "/trust-marks/issuance-spec/{}/subjects/{}/history",
        enc(TM),
        enc(subject)
    );
    let (s, h) = p.admin(Method::GET, &path, None).await;
    assert_eq!(s, 200, "{h}");
    let field = |e: &Value, k: &str| e[k].as_str().unwrap_or("").to_owned();
    h["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (field(e, "type"), field(e, "status"), field(e, "actor")))
        .collect()
}

#[tokio::test]
async fn a_request_is_approved_or_declined_by_an_administrator_and_history_says_who() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let p = Pharos::start_with(&db, loopback, clock.clone()).await;
        enable(&p, "trust_mark", "/trust-mark", json!({})).await;
        enable(&p, "trust_mark_request", "/trust-mark-request", json!({})).await;
        seed(&p, TM, 3600, LEAF).await;
        let approved = TestIssuer::start(clock.clone(), 60).await;
        let declined = TestIssuer::start(clock, 60).await;
        let (yes, no) = (approved.entity_id.as_str(), declined.entity_id.as_str());
        for who in [yes, no] {
            let r = p.get(&format!("/trust-mark-request?{}", query(who))).await;
            assert_eq!(r.status(), 202, "{b:?}: pending");
            let r = p.get(&format!("/trust-mark?{}", query(who))).await;
            assert_eq!(r.status(), 202, "{b:?}: no mark while pending");
        }
        // Approve: the entity obtains the mark; asking again is 204 (already entitled).
        assert_eq!(decide(&p, yes, "active", "alice").await, 200);
        let r = p.get(&format!("/trust-mark?{}", query(yes))).await;
        assert_eq!(r.status(), 200, "{b:?}");
        assert_eq!(r.headers()["content-type"], "application/trust-mark+jwt");
        let r = p.get(&format!("/trust-mark-request?{}", query(yes))).await;
        assert_eq!(r.status(), 204);
        // Decline: no mark (404, the entity does not hold it).
        assert_eq!(decide(&p, no, "inactive", "bob").await, 200);
        let r = p.get(&format!("/trust-mark?{}", query(no))).await;
        assert_eq!(r.status(), 404, "{b:?}");
        let e: Value = r.json().await.unwrap();
        assert_eq!(e["error"], "not_found");
        // Each step in the history, with its actor (the anonymous request has none).
        let step = |t: &str, s: &str, a: &str| (t.to_owned(), s.to_owned(), a.to_owned());
        assert_eq!(
            history(&p, yes).await,
            [
                step("status_updated", "active", "alice"),
                step("requested", "pending", "")
            ],
            "{b:?}"
        );
        assert_eq!(
            history(&p, no).await,
            [
                step("status_updated", "inactive", "bob"),
                step("requested", "pending", "")
            ]
        );
        p.stop().await;
    }
}

#[tokio::test]
async fn oversized_bodies_get_the_error_format_and_change_nothing() {
    let db = TestDb::new(backends()[0]).await;
    let p = Pharos::start(&db).await;
    enable(&p, "trust_mark_status", "/trust-mark-status", json!({})).await;
    enable(&p, "trust_mark_request", "/trust-mark-request", json!({})).await;
    seed(&p, TM, 3600, LEAF).await;
    let post = |path: &'static str, body: String| {
        p.client
            .post(p.main_url(path))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
    };
    // Above server.body_limit (1 MiB): 413; above the form limit (64 KiB): 400.
    for (size, code) in [(2 << 20, 413), (100 << 10, 400)] {
        let r = post(
            "/trust-mark-status",
            format!("trust_mark={}", "a".repeat(size)),
        )
        .await
        .unwrap();
        assert_eq!(r.status(), code);
        let e: Value = r.json().await.unwrap();
        assert!(
            e["error"].is_string() && e["error_description"].is_string(),
            "{e}"
        );
    }
    // The request endpoint (GET without client authentication) refuses an oversized body
    // before anything else looks at it.
    let padding = "x".repeat(2 << 20);
    let body = format!(
        "sub=https%3A%2F%2Fnew.example&trust_mark_type={}&p={padding}",
        enc(TM)
    );
    let r = post("/trust-mark-request", body).await.unwrap();
    assert_eq!(r.status(), 413);
    let snap = control(&p).snapshot();
    assert_eq!(snap.trust_marks.subjects.len(), 1, "no subject stored");
    p.stop().await;
}
