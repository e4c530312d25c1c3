use std::time::Duration;

use axum::Router;
use axum::http::header;
use axum::response::{IntoResponse, Redirect};
use axum::routing::get;

use super::*;

fn settings(max: u64, block: bool) -> FederationSettings {
    FederationSettings {
        block_private_addresses: block,
        http_timeout: pharos_shared::config::Duration::from_secs(2),
        max_response_bytes: max,
        ..FederationSettings::default()
    }
}

/// A local server: `/ok` an entity statement, `/html` the wrong type, `/big` 4 KiB, `/loop`
/// redirects forever, `/slow` never answers in time.
async fn server() -> String {
    let ok = || async { ([(header::CONTENT_TYPE, CONTENT_TYPE)], "a.b.c\n").into_response() };
    let app = Router::new()
        .route("/ok", get(ok))
        .route("/.well-known/openid-federation", get(ok))
        .route("/html", get(|| async { "a.b.c" }))
        .route(
            "/big",
            get(|| async { ([(header::CONTENT_TYPE, CONTENT_TYPE)], "x".repeat(4096)) }),
        )
        .route("/loop", get(|| async { Redirect::temporary("/loop") }))
        .route("/hop", get(|| async { Redirect::temporary("/ok") }))
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(30)).await;
                "late"
            }),
        );
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(l, app).await });
    format!("http://{addr}")
}

#[tokio::test]
async fn fetches_entity_statements_and_enforces_type_size_and_redirects() {
    let base = server().await;
    let f = HttpFetcher::new(&settings(1024, false));
    assert_eq!(f.get(&format!("{base}/ok")).await.unwrap(), "a.b.c");
    assert_eq!(
        f.entity_configuration(&format!("{base}/")).await.unwrap(),
        "a.b.c"
    );
    assert_eq!(f.get(&format!("{base}/hop")).await.unwrap(), "a.b.c");
    let err = |r: Result<String>| r.unwrap_err().to_string();
    assert!(err(f.get(&format!("{base}/html")).await).contains("content type"));
    assert!(err(f.get(&format!("{base}/big")).await).contains("larger than"));
    assert!(err(f.get(&format!("{base}/loop")).await).contains("redirect"));
    assert!(err(f.get(&format!("{base}/nope")).await).contains("404"));
    assert!(err(f.get("ftp://example.org/x").await).contains("http(s)"));
}

#[tokio::test(start_paused = false)]
async fn times_out() {
    let base = server().await;
    let mut s = settings(1024, false);
    s.http_timeout = pharos_shared::config::Duration(Duration::from_millis(200));
    let f = HttpFetcher::new(&s);
    assert!(f.get(&format!("{base}/slow")).await.is_err());
}

/// A caller sees "no answer" for a closed port and for a timeout alike, never the cause
/// (refused, reset, timed out), which would let it scan ports through the resolver.
#[tokio::test]
async fn transport_errors_are_generic() {
    let base = server().await;
    let mut s = settings(1024, false);
    s.http_timeout = pharos_shared::config::Duration(Duration::from_millis(200));
    let f = HttpFetcher::new(&s);
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let refused = f.get(&format!("http://{closed}/x")).await.unwrap_err();
    let slow = f.get(&format!("{base}/slow")).await.unwrap_err();
    assert!(
        refused
            .to_string()
            .ends_with(&format!("http://{closed}/x: no answer")),
        "{refused}"
    );
    assert!(
        slow.to_string()
            .ends_with(&format!("{base}/slow: no answer")),
        "{slow}"
    );
}

#[tokio::test]
async fn blocking_refuses_loopback_literals_and_names() {
    let base = server().await;
    let f = HttpFetcher::new(&settings(1024, true));
    let e = f.get(&format!("{base}/ok")).await.unwrap_err().to_string();
    assert!(e.contains("non-public"), "{e}");
    let port = base.rsplit(':').next().unwrap();
    let e = f
        .get(&format!("http://localhost:{port}/ok"))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("non-public"), "{e}");
}

#[test]
fn classifies_addresses() {
    for a in [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "::1",
        "fd00::1",
        "fe80::1",
        "::ffff:127.0.0.1",
        // Ranges and IPv6 forms a first version missed (issue 22).
        "198.18.0.1",
        "198.19.255.254",
        "240.0.0.1",
        "255.255.255.254",
        "192.0.0.8",
        "64:ff9b::a00:1",
        "64:ff9b::7f00:1",
        "64:ff9b:1::1",
        "2002:a00:1::1",
        "2002:7f00:1::",
        "::a00:1",
        "::7f00:1",
        "2001::1",
        "2001:db8::1",
    ] {
        assert!(is_non_public(a.parse().unwrap()), "{a}");
    }
    for a in [
        "8.8.8.8",
        "2001:4860:4860::8888",
        "::ffff:1.1.1.1",
        "64:ff9b::808:808",
        "2002:808:808::1",
        "198.20.0.1",
    ] {
        assert!(!is_non_public(a.parse().unwrap()), "{a}");
    }
}

#[test]
fn builds_federation_urls() {
    assert_eq!(
        configuration_url("https://a.example/"),
        "https://a.example/.well-known/openid-federation"
    );
    assert_eq!(
        fetch_url("https://ta.example/fetch?x=1", "https://leaf.example/a b").unwrap(),
        "https://ta.example/fetch?x=1&sub=https%3A%2F%2Fleaf.example%2Fa+b"
    );
}
