//! The public endpoints that write or fetch are bounded per client (issue 31): a client over
//! its rate is refused with 429 and `Retry-After`, naming the bound, while other clients (told
//! apart behind a trusted proxy by `X-Forwarded-For`, IPv6 clients by their /64) are served.

use std::sync::Arc;

use pharos_shared::config::RateLimit;
use pharos_shared::time::SystemClock;
use serde_json::{Value, json};

use crate::support::{Backend, Pharos, TestDb, enable};

/// A gauge of the `/metrics` scrape (no admin user exists: loopback may scrape).
async fn metric(p: &Pharos, name: &str) -> f64 {
    let text = p.get("/metrics").await.text().await.unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in\n{text}"))
}

#[tokio::test]
async fn a_client_over_its_rate_gets_429_while_other_clients_are_served() {
    let db = TestDb::new(Backend::Sqlite).await;
    let p = Pharos::start_with(
        &db,
        |s| {
            s.server.trusted_proxies = vec!["127.0.0.1".into()];
            let limits = &mut s.server.rate_limits;
            limits.enabled = true;
            limits.trust_mark_request = RateLimit::new(1, 2, 0);
        },
        Arc::new(SystemClock),
    )
    .await;
    enable(&p, "trust_mark_request", "/trust-mark-request", json!({})).await;
    let ask = |client: &'static str| {
        p.client
            .get(p.main_url(
                "/trust-mark-request?trust_mark_type=https%3A%2F%2Fno.example&sub=https%3A%2F%2Frp.example",
            ))
            .header("x-forwarded-for", client)
            .send()
    };
    // What the endpoint answers when it is not refused (an unknown type).
    let served = ask("192.0.2.1").await.unwrap().status();
    assert_ne!(served, 429);
    assert_eq!(ask("192.0.2.1").await.unwrap().status(), served);
    let refused = ask("192.0.2.1").await.unwrap();
    assert_eq!(refused.status(), 429);
    let retry: u64 = refused.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
    let e: Value = refused.json().await.unwrap();
    assert_eq!(e["error"], "temporarily_unavailable", "{e}");
    let d = e["error_description"].as_str().unwrap();
    assert!(
        d.contains("server.rate_limits.trust_mark_request.per_client"),
        "{d}"
    );
    // Another client behind the same proxy is served.
    assert_eq!(ask("192.0.2.2").await.unwrap().status(), served);
    // IPv6 clients count by their /64: a new address in a spent /64 is refused, another /64 is not.
    assert_eq!(ask("2001:db8:1:1::1").await.unwrap().status(), served);
    assert_eq!(ask("2001:db8:1:1::2").await.unwrap().status(), served);
    assert_eq!(ask("2001:db8:1:1::3").await.unwrap().status(), 429);
    assert_eq!(ask("2001:db8:1:2::1").await.unwrap().status(), served);
    // Four clients remembered; two refusals counted.
    assert_eq!(metric(&p, "pharos_rate_limiter_clients").await, 4.0);
    assert_eq!(
        metric(
            &p,
            "pharos_rate_limited_total{endpoint=\"trust_mark_request\",bound=\"per_client\"}"
        )
        .await,
        2.0
    );
    p.stop().await;
}

/// Issue 38: the port's limits are the port's, not each hosted entity's: a client that spent
/// its rate on one entity's endpoint is refused by another entity's, and served again by
/// neither until its bucket refills.
#[tokio::test]
async fn a_clients_rate_is_counted_across_hosted_entities() {
    let db = TestDb::new(Backend::Sqlite).await;
    let p = Pharos::start_with(
        &db,
        |s| {
            s.server.trusted_proxies = vec!["127.0.0.1".into()];
            let limits = &mut s.server.rate_limits;
            limits.enabled = true;
            limits.trust_mark_request = RateLimit::new(1, 2, 0);
        },
        Arc::new(SystemClock),
    )
    .await;
    let edu = format!("{}/edu", p.entity_id());
    let (s, v) = p
        .admin(
            reqwest::Method::POST,
            "/entities",
            Some(json!({"entity_id": edu})),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let n = v["id"].as_i64().unwrap();
    enable(&p, "trust_mark_request", "/trust-mark-request", json!({})).await;
    let body = json!({"type": "trust_mark_request", "path": "/trust-mark-request", "config": {}});
    let (s, v) = p
        .admin(
            reqwest::Method::POST,
            &format!("/entities/{n}/federation-endpoints"),
            Some(body),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let ask = |prefix: &'static str| {
        p.client
            .get(p.main_url(&format!(
                "{prefix}/trust-mark-request?trust_mark_type=https%3A%2F%2Fno.example&sub=https%3A%2F%2Frp.example"
            )))
            .header("x-forwarded-for", "192.0.2.7")
            .send()
    };
    let served = ask("").await.unwrap().status();
    assert_ne!(served, 429);
    assert_eq!(ask("/edu").await.unwrap().status(), served);
    assert_eq!(ask("/edu").await.unwrap().status(), 429);
    assert_eq!(ask("").await.unwrap().status(), 429);
    p.stop().await;
}
