//! A busy database is not an outage (issue 31). SQLite has one writer at a time: an Admin API
//! write waits its turn for the lock another connection holds (`BEGIN IMMEDIATE`, busy
//! timeout) and succeeds once it is released; held past the wait it answers 503 with
//! `Retry-After`, never 500. A saturated pool — every connection taken — and a flood of public
//! `/readyz` meanwhile do not open the write breaker: readiness stays, and the next write is
//! accepted at once.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::fetch_list::jwk;
use crate::support::{Backend, Pharos, TestDb};

/// Hang guard of each request: far above any bound Pharos sets.
const GUARD: Duration = Duration::from_secs(60);

/// Posts subordinate `id`; the status, `Retry-After` and body.
async fn create(p: &Pharos, id: &str) -> (u16, Option<String>, Value) {
    let body = json!({"entity_id": id, "jwks": {"keys": [jwk("k1", None)]}});
    let send = p
        .client
        .post(p.url("/api/v1/admin/subordinates"))
        .json(&body)
        .send();
    let r = tokio::time::timeout(GUARD, send).await.unwrap().unwrap();
    let status = r.status().as_u16();
    let retry = r
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    (status, retry, r.json().await.unwrap_or(Value::Null))
}

/// A counter of the `/metrics` scrape (no admin user exists: loopback may scrape).
async fn metric(p: &Pharos, name: &str) -> f64 {
    let text = p.get("/metrics").await.text().await.unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in\n{text}"))
}

#[tokio::test]
async fn a_write_waits_for_the_sqlite_lock_and_a_lock_held_too_long_is_503_not_500() {
    let db = TestDb::new(Backend::Sqlite).await;
    let p = Pharos::start(&db).await;
    let other = db.pool().await;
    let mut holder = other.pool().acquire().await.unwrap();

    // Held past the busy timeout: 503 with Retry-After, nothing stored, no outage.
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut *holder)
        .await
        .unwrap();
    let (s, retry, v) = create(&p, "https://held.example").await;
    assert_eq!(s, 503, "{v}");
    assert_eq!(v["error"], "temporarily_unavailable", "{v}");
    assert!(retry.is_some_and(|r| r.parse::<u64>().is_ok()), "{v}");
    sqlx::query("ROLLBACK").execute(&mut *holder).await.unwrap();
    let held = p.admin(Method::GET, "/subordinates", None).await.1;
    assert!(!held.to_string().contains("held.example"), "{held}");
    // A busy database is not an outage: the next write is accepted at once.
    let (s, _, v) = create(&p, "https://next.example").await;
    assert_eq!(s, 201, "{v}");
    assert_eq!(metric(&p, "pharos_database_outages_total").await, 0.0);

    // Released within the wait: the write waited its turn and succeeds.
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut *holder)
        .await
        .unwrap();
    let release = async {
        // Long enough for the write to be waiting, well within the busy timeout.
        tokio::time::sleep(Duration::from_millis(500)).await;
        sqlx::query("COMMIT").execute(&mut *holder).await.unwrap();
    };
    let ((s, _, v), ()) = tokio::join!(create(&p, "https://waited.example"), release);
    assert_eq!(s, 201, "{v}");
    drop(holder);
    p.stop().await;
}

#[tokio::test]
async fn a_flood_of_readiness_checks_on_a_saturated_pool_is_not_an_outage() {
    let db = TestDb::new(Backend::Sqlite).await;
    let p = Pharos::start_with(
        &db,
        |s| s.storage.max_connections = 2,
        std::sync::Arc::new(pharos_shared::time::SystemClock),
    )
    .await;
    // Every pooled connection taken, as by slow work.
    let pool = p.app.as_ref().unwrap().control.db.pool().clone();
    let mut held = Vec::new();
    while let Ok(Ok(c)) = tokio::time::timeout(Duration::from_millis(300), pool.acquire()).await {
        held.push(c);
    }
    assert!(!held.is_empty());
    assert_eq!(pool.num_idle(), 0);
    let floods = (0..64).map(|_| p.get("/readyz"));
    let answers = tokio::time::timeout(GUARD, futures_util::future::join_all(floods))
        .await
        .unwrap();
    for r in answers {
        assert_eq!(r.status(), StatusCode::OK, "the database answers: ready");
    }
    drop(held);
    assert_eq!(metric(&p, "pharos_database_outages_total").await, 0.0);
    assert_eq!(metric(&p, "pharos_database_unreachable").await, 0.0);
    let (s, _, v) = create(&p, "https://after-the-flood.example").await;
    assert_eq!(s, 201, "{v}");
    p.stop().await;
}
