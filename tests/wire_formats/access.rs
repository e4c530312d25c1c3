//! Who may ask and how: answers to an authenticated client, the body and rate limits, CORS.

use pharos_shared::time::Clock;
use reqwest::Method;
use serde_json::{Value, json};

use super::harness::*;
use crate::support::{Backend, Pharos, TestDb, enable, jwk};

/// Answers to an authenticated client (`private_key_jwt`), which carry its Entity ID as `aud`
/// and are not cached, and the refusals of client authentication: a trust anchor, a client
/// under it and a server whose endpoints require authentication, on three loopback addresses.
#[tokio::test]
async fn authenticated_answers() {
    let clock = stopped_clock();
    let (_dbs, [ta, client, server]) = on_three_loopbacks(&clock).await;
    let mut w = Wire::new(clock.now());
    w.learn(&ta, "ta").await;
    w.learn(&client, "client").await;
    w.learn(&server, "server").await;
    let (ta_id, c_id, s_id) = (
        ta.entity_id().to_owned(),
        client.entity_id().to_owned(),
        server.entity_id().to_owned(),
    );

    enable(&ta, "fetch", "/fetch", json!({})).await;
    let jwks = client.entity_configuration().await.claims["jwks"].clone();
    let body = json!({"entity_id": c_id, "jwks": jwks});
    ok(&ta, Method::POST, "/subordinates", body).await;
    let hint = json!({"entity_id": ta_id});
    ok(
        &client,
        Method::POST,
        "/entity-configuration/authority-hints",
        hint,
    )
    .await;
    let jwks = ta.entity_configuration().await.claims["jwks"].clone();
    let anchor = json!({"entity_id": ta_id, "jwks": jwks});
    ok(&server, Method::POST, "/trust-anchors", anchor).await;
    for (kind, path) in [
        ("list", "/list"),
        ("fetch", "/fetch"),
        ("historical_keys", "/historical-keys"),
        ("resolve", "/resolve"),
    ] {
        let body = json!({"type": kind, "path": path, "auth_enabled": true,
            "auth_trust_anchors": [ta_id], "config": {}});
        ok(&server, Method::POST, "/federation-endpoints", body).await;
    }
    let body = json!({"entity_id": LEAF, "jwks": {"keys": [jwk("leaf-1", None)]}});
    ok(&server, Method::POST, "/subordinates", body).await;

    let signer = crate::client_auth::signer(&client);
    let next = std::sync::atomic::AtomicU32::new(0);
    let assertion = |f: &dyn Fn(&mut Value)| {
        let n = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let mut c = json!({"iss": c_id, "sub": c_id, "aud": s_id, "iat": clock.now(),
            "exp": clock.now() + 60, "jti": format!("wire-{n}")});
        f(&mut c);
        crate::client_auth::assertion(signer.as_ref(), &c)
    };
    const TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
    let call = async |path: &str, assertion: &str, params: &[(&str, &str)]| {
        let mut form = vec![
            ("client_assertion_type", TYPE),
            ("client_assertion", assertion),
        ];
        form.extend_from_slice(params);
        w.post(&server, path, &form).await
    };

    let answers = w.each(vec![
        (
            format!("POST /fetch sub={LEAF}"),
            call("/fetch", &assertion(&|_| {}), &[("sub", LEAF)]).await,
        ),
        (
            format!("POST /resolve sub={ta_id}&trust_anchor={ta_id}"),
            call(
                "/resolve",
                &assertion(&|_| {}),
                &[("sub", &ta_id), ("trust_anchor", &ta_id)],
            )
            .await,
        ),
        (
            "POST /list".into(),
            call("/list", &assertion(&|_| {}), &[]).await,
        ),
        (
            "POST /historical-keys".into(),
            call("/historical-keys", &assertion(&|_| {}), &[]).await,
        ),
    ]);
    w.snapshot("authenticated_answers", &answers);

    let replayed = assertion(&|_| {});
    call("/list", &replayed, &[]).await;
    let errors = w.each(vec![
        (
            "POST /list (no client assertion)".into(),
            w.post(&server, "/list", &[]).await,
        ),
        ("GET /list".into(), w.get(&server, "/list").await),
        (
            "POST /list (assertion for another audience)".into(),
            call(
                "/list",
                &assertion(&|c| c["aud"] = json!("https://elsewhere.example.org")),
                &[],
            )
            .await,
        ),
        (
            "POST /list (expired assertion)".into(),
            call(
                "/list",
                &assertion(&|c| c["exp"] = json!(clock.now() - 10)),
                &[],
            )
            .await,
        ),
        (
            "POST /list (replayed assertion)".into(),
            call("/list", &replayed, &[]).await,
        ),
        (
            "POST /list (client outside the federation)".into(),
            call(
                "/list",
                &assertion(&|c| {
                    c["iss"] = json!("https://stranger.example.org");
                    c["sub"] = json!("https://stranger.example.org");
                }),
                &[],
            )
            .await,
        ),
    ]);
    w.snapshot("authenticated_errors", &errors);
    for p in [server, client, ta] {
        p.stop().await;
    }
}

/// The refusals every endpoint shares: a body over `server.body_limit`, a form over the form
/// limit, and a client over its rate (`429` with `Retry-After`).
#[tokio::test]
async fn limits() {
    let db = TestDb::new(Backend::Sqlite).await;
    let clock = stopped_clock();
    let p = Pharos::start_with(
        &db,
        |s| {
            s.entity_id = TA.to_owned();
            s.server.rate_limits.enabled = true;
            s.server.rate_limits.trust_mark = pharos_shared::config::RateLimit::new(1, 1, 0);
        },
        clock.clone(),
    )
    .await;
    let w = Wire::new(clock.now());
    enable(&p, "trust_mark_status", "/trust-mark-status", json!({})).await;
    enable(&p, "trust_mark", "/trust-mark", json!({})).await;
    let oversized = |size: usize| {
        p.client
            .post(p.main_url("/trust-mark-status"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("trust_mark={}", "a".repeat(size)))
            .send()
    };
    let mut answers = vec![
        (
            "POST /trust-mark-status (2 MiB body)".to_owned(),
            w.seen(oversized(2 << 20).await.unwrap()).await,
        ),
        (
            "POST /trust-mark-status (100 KiB form)".to_owned(),
            w.seen(oversized(100 << 10).await.unwrap()).await,
        ),
    ];
    let ask =
        "/trust-mark?sub=https%3A%2F%2Fleaf.example.org&trust_mark_type=https%3A%2F%2Fno.example";
    let mut refused = None;
    for _ in 0..5 {
        let r = p.client.get(p.main_url(ask)).send().await.unwrap();
        if r.status() == 429 {
            refused = Some(w.seen(r).await);
            break;
        }
    }
    // The limiter's wait runs on the real clock: the description's number is redacted as
    // `Retry-After` is.
    let mut refused = refused.expect("the rate limit refuses");
    let d = refused["body"]["error_description"].as_str().unwrap();
    let (text, wait) = d.rsplit_once("retry in ").unwrap();
    let seconds = wait.strip_suffix(" s").unwrap();
    assert!(seconds.parse::<u32>().is_ok(), "{d}");
    refused["body"]["error_description"] = format!("{text}retry in [seconds] s").into();
    answers.push(("GET /trust-mark (over the client's rate)".into(), refused));
    w.snapshot("limits", &w.each(answers));
    p.stop().await;
}

/// CORS as browsers see it, on the main port (`server.cors`) and the admin port
/// (`api.admin.cors`): preflights from an allowed and another origin, and the headers of
/// actual answers, successful and refused.
#[tokio::test]
async fn cors() {
    let db = TestDb::new(Backend::Sqlite).await;
    let clock = stopped_clock();
    let plain = reqwest::Client::builder().no_proxy().build().unwrap();
    let p = Pharos::start_separate_admin(
        &db,
        |s| {
            s.entity_id = TA.to_owned();
            s.server.cors.enabled = true;
            s.server.cors.allow_origins = "https://rp.example".into();
            s.server.cors.allow_methods = "GET,POST".into();
            s.server.cors.expose_headers = "ETag".into();
            s.server.cors.max_age = 600;
            s.api.admin.cors.enabled = true;
            s.api.admin.cors.allow_origins = "https://ui.example".into();
            s.api.admin.cors.expose_headers = "X-Request-ID,ETag".into();
        },
        plain.clone(),
    )
    .await;
    let w = Wire::new(clock.now());
    let preflight = async |url: String, origin: &str, method: &str, headers: &str| {
        let mut r = plain
            .request(Method::OPTIONS, url)
            .header("origin", origin)
            .header("access-control-request-method", method);
        if !headers.is_empty() {
            r = r.header("access-control-request-headers", headers);
        }
        w.seen(r.send().await.unwrap()).await
    };
    // Status and headers only: the bodies are the other snapshots' (and this instance's
    // clock is the system's, its signed answers' times not fixed).
    let from = async |method: Method, url: String, origin: &str| {
        let r = plain.request(method, url).header("origin", origin).send();
        w.seen_headers(&r.await.unwrap())
    };
    let ec = p.main_url("/.well-known/openid-federation");
    let mut answers = vec![
        (
            "OPTIONS /.well-known/openid-federation (preflight from https://rp.example)".to_owned(),
            preflight(ec.clone(), "https://rp.example", "GET", "if-none-match").await,
        ),
        (
            "OPTIONS /.well-known/openid-federation (preflight from https://evil.example)".into(),
            preflight(ec.clone(), "https://evil.example", "GET", "").await,
        ),
        (
            "GET /.well-known/openid-federation (from https://rp.example)".into(),
            from(Method::GET, ec.clone(), "https://rp.example").await,
        ),
        (
            "GET /no-such-endpoint (from https://rp.example)".into(),
            from(
                Method::GET,
                p.main_url("/no-such-endpoint"),
                "https://rp.example",
            )
            .await,
        ),
    ];
    let (s, v) = p
        .admin(
            Method::POST,
            "/users",
            Some(json!({"username": "u", "password": "u passphrase"})),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let anchors = p.url("/api/v1/admin/trust-anchors");
    answers.extend([
        (
            "admin OPTIONS /api/v1/admin/trust-anchors (preflight from https://ui.example)".into(),
            preflight(
                anchors.clone(),
                "https://ui.example",
                "PUT",
                "authorization,content-type",
            )
            .await,
        ),
        (
            "admin OPTIONS /api/v1/admin/trust-anchors (preflight from https://evil.example)"
                .into(),
            preflight(anchors.clone(), "https://evil.example", "PUT", "").await,
        ),
        (
            "admin GET /api/v1/admin/trust-anchors (from https://ui.example, no credentials)"
                .into(),
            from(Method::GET, anchors.clone(), "https://ui.example").await,
        ),
    ]);
    let openapi = from(
        Method::GET,
        p.url("/api/v1/admin/openapi.json"),
        "https://ui.example",
    )
    .await;
    answers.push((
        "admin GET /api/v1/admin/openapi.json (from https://ui.example)".into(),
        openapi,
    ));
    w.snapshot("cors", &w.each(answers));
    p.stop().await;
}
