//! Statistics over time and under load (issue 17, acceptance 2–4): aggregation and purge at
//! 02:00 UTC and the start-up backfill driven by an injected clock, the final flush at
//! shutdown, dropped records when the buffer is full, and `/metrics`.

use std::collections::HashMap;

use crate::stats::{NOW, flush, send, stats_on};
use crate::support::{Pharos, TestDb, backends, enc, jwk};
use pharos_controlplane::db::Db;
use pharos_controlplane::db::stats::{self as repo, DailyRow, RequestRow};
use pharos_controlplane::leadership::Fence;
use pharos_shared::time::{Clock as _, ManualClock};
use reqwest::Method;
use serde_json::json;
use sqlx::Row as _;

const DAY: i64 = 86_400;

fn record(ts: i64, endpoint: &str, status: i64, duration_us: i64) -> RequestRow {
    RequestRow {
        ts,
        endpoint: endpoint.into(),
        method: "GET".into(),
        status_code: status,
        duration_us,
        ..RequestRow::default()
    }
}

async fn count(db: &Db, sql: &'static str) -> i64 {
    sqlx::query(db.sql(sql))
        .fetch_one(db.pool())
        .await
        .unwrap()
        .get(0)
}

async fn days(db: &Db) -> Vec<i64> {
    repo::aggregated_days(db, 0, i64::MAX).await.unwrap()
}

#[tokio::test]
async fn backfill_at_start_then_aggregation_and_purge_at_two() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let today = NOW - NOW % DAY;
        // A database with history: records 100 days ago (past the 90-day retention), 3 days
        // and 1 day ago, and an aggregate 400 days old (past the 365-day retention).
        {
            let pool = migrated_pool(&db, b).await;
            let rows = [
                record(today - 100 * DAY + 60, "fetch", 200, 1000),
                record(today - 3 * DAY + 60, "fetch", 200, 1000),
                record(today - 3 * DAY + 120, "fetch", 200, 3000),
                record(today - 3 * DAY + 180, "fetch", 404, 500),
                record(today - DAY + 60, "list", 200, 7000),
            ];
            repo::insert_requests(&pool, rows.to_vec()).await.unwrap();
            let old = DailyRow {
                day: today - 400 * DAY,
                endpoint: "fetch".into(),
                status_code: 200,
                request_count: 1,
                top_user_agents: "[]".into(),
                top_countries: "[]".into(),
                top_clients: "[]".into(),
                top_params: "[]".into(),
                ..DailyRow::default()
            };
            repo::replace_day(&pool, old.day, &[old], &Fence::any_replica())
                .await
                .unwrap();
            pool.pool().close().await;
        }
        let clock = ManualClock::new(NOW);
        let p = Pharos::start_with(&db, stats_on(&db), clock.clone()).await;
        let agg = p.app.as_ref().unwrap().stats.aggregator.clone().unwrap();
        // The task's first tick backfills; a tick at the same time waits for it and adds nothing.
        agg.tick(NOW).await.unwrap();
        let pool = db.pool().await;
        assert_eq!(
            days(&pool).await,
            [today - 400 * DAY, today - 3 * DAY, today - DAY],
            "{b:?}"
        );
        let (s, v) = p
            .admin(
                Method::GET,
                "/stats/daily?from=2026-03-07&to=2026-03-07",
                None,
            )
            .await;
        assert_eq!(s, 200, "{v}");
        let daily = v["daily"].as_array().unwrap();
        assert_eq!(daily.len(), 2, "{v}");
        assert_eq!(daily[0]["status_code"], 200);
        assert_eq!(daily[0]["request_count"], 2);
        assert_eq!(daily[0]["duration_p50_ms"], 1.0);
        assert_eq!(daily[0]["duration_p99_ms"], 3.0);
        assert_eq!(daily[0]["duration_avg_ms"], 2.0);
        assert_eq!(
            (
                daily[1]["status_code"].clone(),
                daily[1]["error_count"].clone()
            ),
            (json!(404), json!(1))
        );

        // Today's traffic; nothing happens before 02:00 tomorrow.
        known_traffic_without_fetch(&p).await;
        assert_eq!(flush(&p).await, 2);
        clock.set(today + DAY + 2 * 3600 - 1);
        agg.tick(clock.now()).await.unwrap();
        assert!(!days(&pool).await.contains(&today));
        assert_eq!(repo::count_requests(&pool).await.unwrap(), 7);
        // 02:00 UTC: today is aggregated, records older than 90 days and aggregates older than
        // 365 days are purged.
        clock.set(today + DAY + 2 * 3600);
        agg.tick(clock.now()).await.unwrap();
        assert_eq!(
            days(&pool).await,
            [today - 3 * DAY, today - DAY, today],
            "{b:?}"
        );
        assert_eq!(repo::count_requests(&pool).await.unwrap(), 6);
        assert_eq!(
            count(
                &pool,
                "SELECT COUNT(*) FROM stats_daily WHERE day = 1773100800"
            )
            .await,
            1
        );
        p.stop().await;
    }
}

async fn known_traffic_without_fetch(p: &Pharos) {
    for _ in 0..2 {
        let s = send(p, "/.well-known/openid-federation", "alpha/1", None).await;
        assert_eq!(s, 200);
    }
}

#[tokio::test]
async fn shutdown_flushes_what_is_buffered() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = Pharos::start_with(&db, stats_on(&db), ManualClock::new(NOW)).await;
        for _ in 0..4 {
            send(&p, "/.well-known/openid-federation", "alpha/1", None).await;
        }
        // The flush interval is an hour: only the shutdown writes them.
        let p = p.restart().await;
        let pool = db.pool().await;
        assert_eq!(repo::count_requests(&pool).await.unwrap(), 4, "{b:?}");
        let (_, v) = p.admin(Method::GET, "/stats/summary", None).await;
        assert_eq!(v["summary"]["total_requests"], 4);
        p.stop().await;
    }
}

/// The samples of a `/metrics` scrape, by metric name and labels.
pub(crate) async fn scrape(p: &Pharos) -> HashMap<String, f64> {
    let r = p
        .client
        .get(p.url("/metrics"))
        .basic_auth("prom", Some("scrape secret"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let ct = r.headers()["content-type"].to_str().unwrap().to_string();
    assert!(ct.starts_with("application/openmetrics-text"), "{ct}");
    let text = r.text().await.unwrap();
    let lines = text.lines().map(|l| Ok(l.to_string()));
    let parsed = prometheus_parse::Scrape::parse(lines).unwrap();
    let mut out = HashMap::new();
    for s in parsed.samples {
        let mut labels: Vec<String> = s.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        labels.sort();
        let v = match s.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => v,
            prometheus_parse::Value::Histogram(h) => h.last().map_or(0.0, |c| c.count),
            prometheus_parse::Value::Summary(_) => continue,
        };
        out.insert(format!("{}{{{}}}", s.metric, labels.join(",")), v);
    }
    out
}

pub(crate) async fn add_scraper(p: &mut Pharos) {
    let body = json!({"username": "prom", "password": "scrape secret"});
    let (s, v) = p.admin(Method::POST, "/users", Some(body)).await;
    assert_eq!(s, 201, "{v}");
    p.login("prom", "scrape secret");
}

/// Issue 38: a hosted entity's requests are series of their own, labelled with its number;
/// the default entity's keep their labels (no `entity`), so existing queries still match.
#[tokio::test]
async fn metrics_name_the_hosted_entity_that_answered() {
    let db = TestDb::new(crate::support::Backend::Sqlite).await;
    let mut p = Pharos::start(&db).await;
    add_scraper(&mut p).await;
    let edu = format!("{}/edu", p.entity_id());
    let (s, v) = p
        .admin(Method::POST, "/entities", Some(json!({"entity_id": edu})))
        .await;
    assert_eq!(s, 201, "{v}");
    let n = v["id"].as_i64().unwrap();
    send(&p, "/.well-known/openid-federation", "a", None).await;
    for _ in 0..2 {
        send(&p, "/edu/.well-known/openid-federation", "a", None).await;
    }
    send(&p, "/edu/nope", "a", None).await;
    // Its fetch: the first request is routed and signs, the next ones are answered from its
    // publication point (with the series its route keeps); each one is counted once.
    let body = json!({"type": "fetch", "path": "/fetch", "config": {}});
    let at = format!("/entities/{n}/federation-endpoints");
    let (s, v) = p.admin(Method::POST, &at, Some(body)).await;
    assert_eq!(s, 201, "{v}");
    let leaf = "https://leaf.edu.example";
    let body = json!({"entity_id": leaf, "jwks": {"keys": [jwk("leaf-1", None)]}});
    let at = format!("/entities/{n}/subordinates");
    let (s, v) = p.admin(Method::POST, &at, Some(body)).await;
    assert_eq!(s, 201, "{v}");
    let fetch = format!("/edu/fetch?sub={}", enc(leaf));
    for _ in 0..3 {
        assert_eq!(p.get(&fetch).await.status(), 200);
    }
    // Moved: the new path counts in its own series; the old one, served for a while longer
    // by the router, still in its own.
    let body = json!({"path": "/f2"});
    let at = format!("/entities/{n}/federation-endpoints/fetch");
    let (s, v) = p.admin(Method::PUT, &at, Some(body)).await;
    assert_eq!(s, 200, "{v}");
    let moved = format!("/edu/f2?sub={}", enc(leaf));
    for _ in 0..2 {
        assert_eq!(p.get(&moved).await.status(), 200);
    }
    assert_eq!(p.get(&fetch).await.status(), 200);
    let m = scrape(&p).await;
    assert_eq!(
        m["pharos_http_requests_total{endpoint=.well-known/openid-federation,status=200}"], 1.0,
        "{m:?}"
    );
    let theirs = format!("endpoint=edu/.well-known/openid-federation,entity={n}");
    assert_eq!(
        m[&format!("pharos_http_requests_total{{{theirs},status=200}}")],
        2.0,
        "{m:?}"
    );
    assert_eq!(
        m[&format!("pharos_http_request_duration_seconds{{{theirs}}}")],
        2.0,
        "{m:?}"
    );
    assert_eq!(
        m[&format!("pharos_http_requests_total{{endpoint=unmatched,entity={n},status=404}}")],
        1.0,
        "{m:?}"
    );
    for (endpoint, count) in [("edu/fetch", 4.0), ("edu/f2", 2.0)] {
        let theirs = format!("endpoint={endpoint},entity={n}");
        assert_eq!(
            m[&format!("pharos_http_requests_total{{{theirs},status=200}}")],
            count,
            "{m:?}"
        );
        assert_eq!(
            m[&format!("pharos_http_request_duration_seconds{{{theirs}}}")],
            count,
            "{m:?}"
        );
    }
    // Deleted: its series leave `/metrics` with it; the default entity's stay.
    let (s, v) = p.delete_entity(n, &edu).await;
    assert_eq!(s, 204, "{v}");
    let m = scrape(&p).await;
    let label = [format!("entity={n},"), format!("entity={n}}}")];
    let left: Vec<&String> = m
        .keys()
        .filter(|k| label.iter().any(|l| k.contains(l.as_str())))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    assert_eq!(
        m["pharos_http_requests_total{endpoint=.well-known/openid-federation,status=200}"], 1.0,
        "{m:?}"
    );
    p.stop().await;
}

#[tokio::test]
async fn metrics_count_the_requests_sent_with_statistics_off() {
    let db = TestDb::new(crate::support::Backend::Sqlite).await;
    let mut p = Pharos::start(&db).await;
    add_scraper(&mut p).await;
    // Behind the Admin API's authentication.
    let r = p.client.get(p.url("/metrics")).send().await.unwrap();
    assert_eq!(r.status(), 401);
    for _ in 0..3 {
        send(&p, "/.well-known/openid-federation", "a", None).await;
    }
    send(&p, "/nope/1", "a", None).await;
    send(&p, "/nope/2", "a", None).await;
    let m = scrape(&p).await;
    let ec = "endpoint=.well-known/openid-federation";
    assert_eq!(
        m[&format!("pharos_http_requests_total{{{ec},status=200}}")],
        3.0,
        "{m:?}"
    );
    // Unregistered paths share one label.
    assert_eq!(
        m["pharos_http_requests_total{endpoint=unmatched,status=404}"], 2.0,
        "{m:?}"
    );
    assert_eq!(
        m[&format!("pharos_http_request_duration_seconds{{{ec}}}")],
        3.0,
        "{m:?}"
    );
    assert_eq!(m["pharos_stats_records_dropped_total{}"], 0.0);
    assert!(m["pharos_snapshot_generation{}"] >= 1.0);
    assert!(
        m.contains_key("pharos_db_pool_connections{state=idle}"),
        "{m:?}"
    );
    assert_eq!(
        m["pharos_refresh_failures_total{kind=subordinate_keys}"], 0.0,
        "{m:?}"
    );

    // Cache hits and misses: the first fetch of a subject signs (miss), the second is served
    // from the signed statement (hit).
    crate::support::enable(&p, "fetch", "/fetch", json!({})).await;
    let sub = "https://leaf.example.org";
    let body = json!({"entity_id": sub, "jwks": {"keys": [crate::support::jwk("k1", None)]}});
    let (s, v) = p.admin(Method::POST, "/subordinates", Some(body)).await;
    assert_eq!(s, 201, "{v}");
    let fetch = format!("/fetch?sub={}", crate::support::enc(sub));
    for _ in 0..2 {
        assert_eq!(p.get(&fetch).await.status(), 200);
    }
    let m = scrape(&p).await;
    assert_eq!(
        m["pharos_cache_requests_total{cache=fetch,result=miss}"], 1.0,
        "{m:?}"
    );
    assert_eq!(
        m["pharos_cache_requests_total{cache=fetch,result=hit}"], 1.0,
        "{m:?}"
    );
    assert_eq!(
        m["pharos_cache_requests_total{cache=resolve,result=hit}"], 0.0,
        "{m:?}"
    );
    p.stop().await;
}

#[tokio::test]
async fn a_full_buffer_drops_the_oldest_and_counts_them() {
    let db = TestDb::new(crate::support::Backend::Sqlite).await;
    let on = stats_on(&db);
    let mut p = Pharos::start_with(
        &db,
        |s| {
            on(s);
            s.stats.buffer.size = 1;
            s.stats.buffer.flush_threshold = 1.0;
        },
        ManualClock::new(NOW),
    )
    .await;
    add_scraper(&mut p).await;
    const N: usize = 400;
    let sent = futures_util::future::join_all((0..20).map(|_| async {
        for _ in 0..N / 20 {
            send(&p, "/.well-known/openid-federation", "a", None).await;
        }
    }));
    sent.await;
    flush(&p).await;
    let m = scrape(&p).await;
    let dropped = m["pharos_stats_records_dropped_total{}"];
    let pool = db.pool().await;
    let stored = repo::count_requests(&pool).await.unwrap();
    // Every request is either stored or counted as dropped, and a one-record buffer under
    // concurrent load drops.
    assert_eq!(
        stored as f64 + dropped,
        N as f64,
        "stored {stored}, dropped {dropped}"
    );
    assert!(dropped > 0.0, "{m:?}");
    let ec = "endpoint=.well-known/openid-federation";
    assert_eq!(
        m[&format!("pharos_http_requests_total{{{ec},status=200}}")],
        N as f64
    );
    p.stop().await;
}

/// Every stored record, in stored order.
async fn stored(pool: &Db) -> Vec<RequestRow> {
    let mut rows = Vec::new();
    repo::for_each_batch(pool, i64::MIN, i64::MAX, |b| {
        rows.extend(b.iter().map(|r| r.to_row()));
        Ok(())
    })
    .await
    .unwrap();
    rows
}

async fn migrated_pool(db: &TestDb, b: crate::support::Backend) -> Db {
    let mut s = pharos_shared::config::Settings::default();
    db.configure(&mut s);
    if b == crate::support::Backend::Sqlite {
        std::fs::create_dir_all(&s.storage.data_dir).unwrap();
    }
    let pool = Db::connect(&s.storage_url(), 2).await.unwrap();
    pool.migrate().await.unwrap();
    pool
}

/// A batch whose document would pass the size a database accepts in one statement (2,000
/// distinct 4 kB query strings) is split, and stored whole: every record once, none twice.
#[tokio::test]
async fn a_large_batch_is_split_and_stored_whole() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let pool = migrated_pool(&db, b).await;
        let n: i64 = 2000;
        let rows: Vec<RequestRow> = (0..n)
            .map(|i| RequestRow {
                query_params: Some(format!("{{\"sub\":\"{i:04}{}\"}}", "x".repeat(4096))),
                ..record(NOW + i, "fetch", 200, i)
            })
            .collect();
        assert_eq!(
            repo::insert_requests(&pool, rows.clone()).await.unwrap(),
            n as u64
        );
        let batches = count(&pool, "SELECT COUNT(*) FROM stats_batches").await;
        assert!(batches >= 2, "{b:?}: {batches} batch(es)");
        let mut back = stored(&pool).await;
        back.sort_by_key(|r| r.ts);
        assert_eq!(back, rows, "{b:?}");
        assert_eq!(repo::count_requests(&pool).await.unwrap(), n);
    }
}

/// Records an older version stored one per row in `stats_requests` are moved into batches at
/// start (the daily job's first tick) and still reported; the old table is left empty.
#[tokio::test]
async fn records_stored_one_per_row_are_moved_into_batches() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let pool = migrated_pool(&db, b).await;
        let n = 8192 + 10;
        for chunk in (0..n).collect::<Vec<i64>>().chunks(500) {
            let values =
                vec!["(1, ?, 'fetch', 'GET', 200, ?, '192.0.2.1', 'old/1', 0, 10)"; chunk.len()];
            let sql = format!(
                "INSERT INTO stats_requests (entity, ts, endpoint, method, status_code, duration_us, \
                 client_ip, user_agent, request_size, response_size) VALUES {}",
                values.join(",")
            );
            let mut q = sqlx::query(pool.sql_built(sql));
            for i in chunk {
                q = q.bind(NOW - 60 + i % 50).bind(*i);
            }
            q.execute(pool.pool()).await.unwrap();
        }
        let agg = pharos_controlplane::stats::aggregate::Aggregator::new(
            pool.clone(),
            pharos_shared::config::StatsRetention::default(),
        );
        agg.tick(NOW).await.unwrap();
        assert_eq!(count(&pool, "SELECT COUNT(*) FROM stats_requests").await, 0);
        assert_eq!(repo::count_requests(&pool).await.unwrap(), n, "{b:?}");
        let back = stored(&pool).await;
        assert!(
            back.iter()
                .all(|r| r.user_agent.as_deref() == Some("old/1"))
        );
        let mut durations: Vec<i64> = back.iter().map(|r| r.duration_us).collect();
        durations.sort();
        assert_eq!(durations, (0..n).collect::<Vec<_>>());
        // A second start finds nothing more to move.
        assert_eq!(
            repo::convert_legacy_rows(&pool, &Fence::any_replica())
                .await
                .unwrap(),
            0
        );
    }
}
