//! Trust mark eligibility decided by entity checkers, end to end: the issuer fetches the
//! subject's Entity Configuration over loopback, verifies it, runs the spec's checker (an
//! operator's `http` service or an `entity_id` list) and hands out a mark that verifies with
//! its keys, or answers the checker's denial; `db_or_check` / `db_and_check` combine the
//! stored subjects with the checker, and a blocked subject stays blocked.

use axum::Router;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use pharos_shared::jose::{self, Jwks};
use pharos_shared::time::ManualClock;
use reqwest::Method;
use serde_json::{Value, json};

use crate::fetch_list::enable;
use crate::support::trust_mark_issuer::TestIssuer;
use crate::support::{Pharos, TestDb, backends, enc};

const NOW: i64 = 1_900_000_000;

/// A spec of `tm_type` with `eligibility` and the given stored subjects.
async fn spec(p: &Pharos, tm_type: &str, eligibility: Value, subjects: &[(&str, &str)]) {
    let body = json!({"trust_mark_type": tm_type, "lifetime": 3600,
        "eligibility_config": eligibility});
    let (s, v) = p
        .admin(Method::POST, "/trust-marks/issuance-spec", Some(body))
        .await;
    assert_eq!(s, 201, "{v}");
    for (entity, status) in subjects {
        let path = format!("/trust-marks/issuance-spec/{}/subjects", enc(tm_type));
        let body = json!({"entity_id": entity, "status": status});
        let (s, v) = p.admin(Method::POST, &path, Some(body)).await;
        assert_eq!(s, 201, "{v}");
    }
}

/// Asks for a mark; on 200 checks that it verifies with the issuer's keys and names `sub`.
async fn obtain(p: &Pharos, keys: &Jwks, tm_type: &str, sub: &str) -> (u16, Value) {
    let q = format!(
        "/trust-mark?sub={}&trust_mark_type={}",
        enc(sub),
        enc(tm_type)
    );
    let r = p.get(&q).await;
    let status = r.status().as_u16();
    let body = r.text().await.unwrap();
    if status != 200 {
        return (status, serde_json::from_str(&body).unwrap_or(Value::Null));
    }
    let d = jose::verify(&body, keys).unwrap();
    assert_eq!(d.header["typ"], "trust-mark+jwt");
    assert_eq!(
        (
            d.claims["sub"].as_str(),
            d.claims["trust_mark_type"].as_str()
        ),
        (Some(sub), Some(tm_type))
    );
    (status, Value::Null)
}

/// An operator service admitting only `member` (by the `X-Entity-ID` header).
async fn membership_service(member: String) -> String {
    let app = Router::new().route(
        "/check",
        post(move |h: HeaderMap| {
            let member = member.clone();
            async move {
                let who = h.get("x-entity-id").and_then(|v| v.to_str().ok());
                if who == Some(member.as_str()) {
                    (StatusCode::NO_CONTENT, String::new())
                } else {
                    (StatusCode::FORBIDDEN, "not a member".to_owned())
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/check", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

#[tokio::test]
async fn checkers_decide_who_obtains_a_mark() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let clock = ManualClock::new(NOW);
        let loopback = |s: &mut pharos_shared::config::Settings| {
            s.federation.block_private_addresses = false;
        };
        let p = Pharos::start_with(&db, loopback, clock.clone()).await;
        enable(&p, "trust_mark", "/trust-mark", json!({})).await;
        let keys: Jwks =
            serde_json::from_value(p.entity_configuration().await.claims["jwks"].clone()).unwrap();
        // Two entities serving self-signed Entity Configurations on loopback.
        let member = TestIssuer::start(clock.clone(), 60).await;
        let outsider = TestIssuer::start(clock.clone(), 60).await;
        let (a, o) = (member.entity_id.as_str(), outsider.entity_id.as_str());
        let listed = json!({"type": "entity_id", "config": {"entity_ids": [a]}});

        // check_only with an operator service.
        let url = membership_service(a.to_owned()).await;
        let by_service = "https://marks.example.org/by-service";
        let checker = json!({"type": "http", "config": {"url": url, "body_mode": "entity_id"}});
        spec(
            &p,
            by_service,
            json!({"mode": "check_only", "checker": checker}),
            &[],
        )
        .await;
        assert_eq!(obtain(&p, &keys, by_service, a).await.0, 200, "{b:?}");
        let (s, err) = obtain(&p, &keys, by_service, o).await;
        assert_eq!(
            (s, &err["error"]),
            (403, &json!("forbidden")),
            "{b:?} {err}"
        );
        assert_eq!(err["error_description"], "not a member");
        // An entity without an Entity Configuration cannot be checked.
        let (s, _) = obtain(&p, &keys, by_service, "http://127.0.0.1:1").await;
        assert_eq!(s, 400, "{b:?}");

        // check_only with a list: the checker's own denial.
        let by_list = "https://marks.example.org/by-list";
        spec(
            &p,
            by_list,
            json!({"mode": "check_only", "checker": listed}),
            &[],
        )
        .await;
        assert_eq!(obtain(&p, &keys, by_list, a).await.0, 200, "{b:?}");
        let (s, err) = obtain(&p, &keys, by_list, o).await;
        assert_eq!(
            (s, &err["error"]),
            (400, &json!("invalid_request")),
            "{b:?} {err}"
        );

        // db_or_check: stored active, or the checker.
        let either = "https://marks.example.org/either";
        let stored = [(o, "active")];
        spec(
            &p,
            either,
            json!({"mode": "db_or_check", "checker": listed}),
            &stored,
        )
        .await;
        assert_eq!(obtain(&p, &keys, either, o).await.0, 200, "{b:?} stored");
        assert_eq!(obtain(&p, &keys, either, a).await.0, 200, "{b:?} checked");
        // Blocking the checked entity outweighs its checker.
        let path = format!("/trust-marks/issuance-spec/{}/subjects", enc(either));
        let body = json!({"entity_id": a, "status": "blocked"});
        let (s, v) = p.admin(Method::POST, &path, Some(body)).await;
        assert_eq!(s, 201, "{v}");
        assert_eq!(obtain(&p, &keys, either, a).await.0, 403, "{b:?} blocked");

        // db_and_check: stored active and the checker.
        let both = "https://marks.example.org/both";
        let stored = [(a, "active"), (o, "active")];
        spec(
            &p,
            both,
            json!({"mode": "db_and_check", "checker": listed}),
            &stored,
        )
        .await;
        assert_eq!(obtain(&p, &keys, both, a).await.0, 200, "{b:?}");
        assert_eq!(
            obtain(&p, &keys, both, o).await.0,
            400,
            "{b:?} checker refuses"
        );
        let (s, err) = obtain(&p, &keys, both, "https://nobody.example").await;
        assert_eq!(
            (s, &err["error"]),
            (404, &json!("not_found")),
            "{b:?} not stored"
        );

        // Every mark handed out was recorded: 5 issued above.
        let rows = issued(&p).await;
        assert_eq!(rows, 5, "{b:?}");
    }
}

async fn issued(p: &Pharos) -> i64 {
    use sqlx::Row;
    let db = &p.app.as_ref().unwrap().control.db;
    sqlx::query("SELECT COUNT(*) AS n FROM issued_trust_marks")
        .fetch_one(db.pool())
        .await
        .unwrap()
        .try_get::<i64, _>("n")
        .unwrap()
}
