//! CORS preflights on the main and the admin port (issue 3, acceptance 4), request ids, and the
//! body-size limit on both ports.

use crate::support::{Backend, Pharos, TestDb};
use reqwest::Method;

async fn preflight(c: &reqwest::Client, url: &str, origin: &str) -> reqwest::Response {
    c.request(Method::OPTIONS, url)
        .header("Origin", origin)
        .header("Access-Control-Request-Method", "PUT")
        .header(
            "Access-Control-Request-Headers",
            "authorization,content-type",
        )
        .send()
        .await
        .unwrap()
}

fn header<'a>(r: &'a reqwest::Response, name: &str) -> &'a str {
    r.headers()
        .get(name)
        .map(|v| v.to_str().unwrap())
        .unwrap_or("")
}

#[tokio::test]
async fn preflights_get_each_ports_configured_headers() {
    let db = TestDb::new(Backend::Sqlite).await;
    let plain = reqwest::Client::builder().no_proxy().build().unwrap();
    let p = Pharos::start_separate_admin(
        &db,
        |s| {
            s.server.cors.enabled = true;
            s.server.cors.allow_origins = "https://rp.example".into();
            s.server.cors.allow_methods = "GET,POST".into();
            s.server.cors.max_age = 600;
            // Credentials need listed origins ("*" with credentials is refused at start).
            s.api.admin.cors.enabled = true;
            s.api.admin.cors.allow_origins = "https://ui.example".into();
            s.api.admin.cors.expose_headers = "X-Request-ID".into();
        },
        plain.clone(),
    )
    .await;

    // Admin port, with a user present: the preflight is answered before authentication.
    let (s, _) = p
        .admin(
            Method::POST,
            "/users",
            Some(serde_json::json!({"username": "u", "password": "u passphrase"})),
        )
        .await;
    assert_eq!(s, 201);
    let r = preflight(
        &plain,
        &p.url("/api/v1/admin/trust-anchors"),
        "https://ui.example",
    )
    .await;
    assert!(r.status().is_success(), "{}", r.status());
    assert_eq!(
        header(&r, "access-control-allow-origin"),
        "https://ui.example"
    );
    assert_eq!(header(&r, "access-control-allow-credentials"), "true");
    let methods = header(&r, "access-control-allow-methods");
    assert!(
        methods.contains("PUT") && methods.contains("OPTIONS"),
        "{methods}"
    );
    assert!(header(&r, "access-control-allow-headers").contains("authorization"));
    assert_eq!(header(&r, "access-control-max-age"), "3600");
    // An actual admin response carries the exposed header and a request id.
    let r = plain
        .get(p.url("/api/v1/admin/openapi.json"))
        .header("Origin", "https://ui.example")
        .send()
        .await
        .unwrap();
    assert_eq!(header(&r, "access-control-expose-headers"), "x-request-id");
    assert!(!header(&r, "x-request-id").is_empty());

    // Main port: its own, different rules.
    let url = p.main_url("/.well-known/openid-federation");
    let r = preflight(&plain, &url, "https://rp.example").await;
    assert!(r.status().is_success(), "{}", r.status());
    assert_eq!(
        header(&r, "access-control-allow-origin"),
        "https://rp.example"
    );
    assert_eq!(header(&r, "access-control-allow-methods"), "GET,POST");
    assert_eq!(header(&r, "access-control-max-age"), "600");
    assert_eq!(header(&r, "access-control-allow-credentials"), "");
    let r = preflight(&plain, &url, "https://evil.example").await;
    assert_eq!(header(&r, "access-control-allow-origin"), "");
    p.stop().await;
}

#[tokio::test]
async fn request_id_is_echoed_and_oversized_bodies_get_413_json_on_both_ports() {
    let db = TestDb::new(Backend::Sqlite).await;
    let plain = reqwest::Client::builder().no_proxy().build().unwrap();
    let p = Pharos::start_separate_admin(&db, |s| s.server.body_limit = 1024, plain.clone()).await;
    let r = plain
        .get(p.main_url("/healthz"))
        .header("X-Request-ID", "abc-123")
        .send()
        .await
        .unwrap();
    assert_eq!(header(&r, "x-request-id"), "abc-123");
    let r = plain.get(p.main_url("/healthz")).send().await.unwrap();
    let id = header(&r, "x-request-id").to_string();
    assert_eq!(id.len(), 36, "generated id {id:?}");

    let big = format!("{{\"entity_id\":\"{}\"}}", "x".repeat(4096));
    for url in [
        p.url("/api/v1/admin/trust-anchors"),
        p.main_url("/.well-known/openid-federation"),
    ] {
        let r = plain.post(&url).body(big.clone()).send().await.unwrap();
        assert_eq!(r.status(), 413, "{url}");
        let v: serde_json::Value = r.json().await.unwrap();
        assert_eq!(v["error"], "invalid_request", "{url}: {v}");
    }
    // Chunked (no Content-Length) oversize body on an admin route: cut off while reading.
    let addr = p
        .admin_base
        .clone()
        .unwrap()
        .replace("http://localhost:", "127.0.0.1:");
    let raw = chunked_post(&addr, "/api/v1/admin/trust-anchors", &big).await;
    assert!(raw.starts_with("HTTP/1.1 413"), "{raw}");
    assert!(raw.contains("\"error\":\"invalid_request\""), "{raw}");
    p.stop().await;
}

async fn chunked_post(addr: &str, path: &str, body: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut req = format!(
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    );
    for c in body.as_bytes().chunks(512) {
        req.push_str(&format!(
            "{:x}\r\n{}\r\n",
            c.len(),
            std::str::from_utf8(c).unwrap()
        ));
    }
    req.push_str("0\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out).await;
    String::from_utf8_lossy(&out).into_owned()
}
