//! The trust mark, its status response and the trust mark list, with their errors.

use pharos_shared::time::Clock;
use reqwest::Method;
use serde_json::json;

use super::harness::*;
use crate::support::{Backend, TestDb, enable, enc};

/// The trust mark, trust mark status and trust mark list endpoints, and their errors.
#[tokio::test]
async fn trust_marks() {
    let db = TestDb::new(Backend::Sqlite).await;
    let clock = stopped_clock();
    let p = start_fixed(&db, TA, &clock).await;
    let mut w = Wire::new(clock.now());
    w.learn(&p, "ta").await;
    for (kind, path) in [
        ("trust_mark", "/trust-mark"),
        ("trust_mark_status", "/trust-mark-status"),
        ("trust_mark_listing", "/trust-mark-listing"),
        ("list", "/list"),
    ] {
        enable(&p, kind, path, json!({})).await;
    }
    let spec = json!({"trust_mark_type": TM, "lifetime": 3600,
        "additional_claims": {"level": 2}});
    ok(&p, Method::POST, "/trust-marks/issuance-spec", spec).await;
    let subjects = format!("/trust-marks/issuance-spec/{}/subjects", enc(TM));
    for (subject, status) in [
        (LEAF, "active"),
        ("https://other.example.org", "active"),
        ("https://pending.example.org", "pending"),
        ("https://blocked.example.org", "blocked"),
    ] {
        let body = json!({"entity_id": subject, "status": status});
        ok(&p, Method::POST, &subjects, body).await;
    }
    let ask = |sub: &str, tm: &str| {
        let q: String = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("sub", sub)
            .append_pair("trust_mark_type", tm)
            .finish();
        format!("/trust-mark?{q}")
    };
    let r = p.get(&ask(LEAF, TM)).await;
    assert_eq!(r.status(), 200);
    let mark = r.text().await.unwrap();
    let r = p.get(&ask("https://other.example.org", TM)).await;
    assert_eq!(r.status(), 200);
    let other = r.text().await.unwrap();

    let issued = w.each(vec![(
        format!("GET /trust-mark?sub={LEAF}&trust_mark_type={TM}"),
        w.get(&p, &ask(LEAF, TM)).await,
    )]);
    w.snapshot("trust_mark", &issued);

    let mut errors = Vec::new();
    for (request, path) in [
        (
            format!("GET /trust-mark?sub={LEAF}"),
            format!("/trust-mark?sub={}", enc(LEAF)),
        ),
        (
            format!("GET /trust-mark?trust_mark_type={TM}"),
            format!("/trust-mark?trust_mark_type={}", enc(TM)),
        ),
        (
            format!("GET /trust-mark?sub={LEAF}&trust_mark_type=https://unknown.example.org/tm"),
            ask(LEAF, "https://unknown.example.org/tm"),
        ),
        (
            format!("GET /trust-mark?sub=https://stranger.example.org&trust_mark_type={TM}"),
            ask("https://stranger.example.org", TM),
        ),
        (
            format!("GET /trust-mark?sub=https://pending.example.org&trust_mark_type={TM}"),
            ask("https://pending.example.org", TM),
        ),
        (
            format!("GET /trust-mark?sub=https://blocked.example.org&trust_mark_type={TM}"),
            ask("https://blocked.example.org", TM),
        ),
    ] {
        errors.push((request, w.get(&p, &path).await));
    }
    errors.push((
        "POST /trust-mark".into(),
        w.post(&p, "/trust-mark", &[("sub", LEAF), ("trust_mark_type", TM)])
            .await,
    ));
    w.snapshot("trust_mark_errors", &w.each(errors));

    // Status: active, then revoked (the subject blocked), and the endpoint's errors.
    let active = w
        .post(&p, "/trust-mark-status", &[("trust_mark", &mark)])
        .await;
    let path = format!("{subjects}/{}/status", enc("https://other.example.org"));
    let (s, v) = p.admin_raw(Method::PUT, &path, Some("blocked")).await;
    assert_eq!(s, 200, "{v}");
    let revoked = w
        .post(&p, "/trust-mark-status", &[("trust_mark", &other)])
        .await;
    w.snapshot(
        "trust_mark_status",
        &w.each(vec![
            ("POST /trust-mark-status (an active mark)".into(), active),
            ("POST /trust-mark-status (a revoked mark)".into(), revoked),
        ]),
    );
    let foreign = {
        let mut parts: Vec<&str> = mark.split('.').collect();
        parts[2] = "AAAA";
        parts.join(".")
    };
    let errors = w.each(vec![
        (
            "POST /trust-mark-status (no trust_mark)".into(),
            w.post(&p, "/trust-mark-status", &[]).await,
        ),
        (
            "POST /trust-mark-status trust_mark=not-a-jwt".into(),
            w.post(&p, "/trust-mark-status", &[("trust_mark", "not-a-jwt")])
                .await,
        ),
        (
            "POST /trust-mark-status (a mark with a bad signature)".into(),
            w.post(&p, "/trust-mark-status", &[("trust_mark", &foreign)])
                .await,
        ),
        (
            "GET /trust-mark-status".into(),
            w.get(&p, "/trust-mark-status").await,
        ),
    ]);
    w.snapshot("trust_mark_status_errors", &errors);

    // The trust mark list (holders of a type) and the list endpoint's trust mark filters.
    let listing = |q: &str| format!("/trust-mark-listing?{q}");
    let tm = format!("trust_mark_type={}", enc(TM));
    let mut answers = Vec::new();
    for (request, path) in [
        (
            format!("GET /trust-mark-listing?trust_mark_type={TM}"),
            listing(&tm),
        ),
        (
            format!("GET /trust-mark-listing?trust_mark_type={TM}&sub={LEAF}"),
            listing(&format!("{tm}&sub={}", enc(LEAF))),
        ),
        (
            format!(
                "GET /trust-mark-listing?trust_mark_type={TM}&sub=https://stranger.example.org"
            ),
            listing(&format!("{tm}&sub={}", enc("https://stranger.example.org"))),
        ),
        ("GET /trust-mark-listing".into(), listing("")),
        (
            "GET /trust-mark-listing?trust_mark_type=https://unknown.example.org/tm".into(),
            listing("trust_mark_type=https%3A%2F%2Funknown.example.org%2Ftm"),
        ),
        (
            "GET /list?trust_marked=true".into(),
            "/list?trust_marked=true".into(),
        ),
        (
            format!("GET /list?trust_mark_type={TM}"),
            format!("/list?{tm}"),
        ),
    ] {
        answers.push((request, w.get(&p, &path).await));
    }
    w.snapshot("trust_mark_list", &w.each(answers));
    p.stop().await;
}
