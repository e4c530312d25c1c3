//! The checks' HTTP client against real servers on loopback: answers passed on, the list
//! cache (hits, keys, what is not cached), the size limit, redirects and timeouts.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{any, get};
use pharos_shared::checks::HttpCall;

use super::Outbound;

/// Serves `router` on 127.0.0.1:0 and returns its base URL.
pub(crate) async fn serve(router: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    format!("http://{addr}")
}

fn call(url: String, ttl: Option<u64>) -> HttpCall {
    HttpCall {
        method: "GET".into(),
        url,
        headers: Vec::new(),
        body: None,
        timeout: Duration::from_secs(10),
        cache_ttl: ttl.map(Duration::from_secs),
    }
}

fn counting(hits: &Arc<AtomicUsize>, status: StatusCode, body: &'static str) -> Router {
    let hits = hits.clone();
    Router::new().route(
        "/",
        any(move |h: HeaderMap| {
            let hits = hits.clone();
            async move {
                hits.fetch_add(1, Ordering::SeqCst);
                let who = h
                    .get("x-who")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_owned();
                (status, format!("{body}{who}"))
            }
        }),
    )
}

#[tokio::test]
async fn cached_calls_are_fetched_once_per_key_and_only_when_200() {
    let hits = Arc::new(AtomicUsize::new(0));
    let base = serve(counting(&hits, StatusCode::OK, "[]")).await;
    let out = Outbound::new(1 << 20);
    for _ in 0..3 {
        let a = out.call(call(base.clone(), Some(60))).await.unwrap();
        assert_eq!((a.status, a.body.as_slice()), (200, &b"[]"[..]));
    }
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    // Another header is another key.
    let mut other = call(base.clone(), Some(60));
    other.headers.push(("x-who".into(), "b".into()));
    assert_eq!(out.call(other).await.unwrap().body, b"[]b");
    assert_eq!(hits.load(Ordering::SeqCst), 2);
    // Without a cache_ttl every call goes out.
    out.call(call(base.clone(), None)).await.unwrap();
    out.call(call(base, None)).await.unwrap();
    assert_eq!(hits.load(Ordering::SeqCst), 4);

    let fails = Arc::new(AtomicUsize::new(0));
    let base = serve(counting(&fails, StatusCode::INTERNAL_SERVER_ERROR, "down")).await;
    for _ in 0..2 {
        let a = out.call(call(base.clone(), Some(60))).await.unwrap();
        assert_eq!((a.status, a.body.as_slice()), (500, &b"down"[..]));
    }
    assert_eq!(fails.load(Ordering::SeqCst), 2, "a failure is not cached");
}

#[tokio::test]
async fn limits_hold_size_redirects_and_time() {
    let router = Router::new()
        .route("/big", get(|| async { "x".repeat(2048) }))
        .route("/small", get(|| async { "x".repeat(1024) }))
        .route(
            "/loop",
            get(|| async { (StatusCode::FOUND, [("location", "/loop")]) }),
        )
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(30)).await;
                "late"
            }),
        );
    let base = serve(router).await;
    let out = Outbound::new(1024);
    assert_eq!(
        out.call(call(format!("{base}/small"), None))
            .await
            .unwrap()
            .body
            .len(),
        1024
    );
    let e = out
        .call(call(format!("{base}/big"), None))
        .await
        .unwrap_err();
    assert!(e.contains("larger than 1024"), "{e}");
    let e = out
        .call(call(format!("{base}/loop"), None))
        .await
        .unwrap_err();
    assert!(e.contains("redirect"), "{e}");
    let mut slow = call(format!("{base}/slow"), None);
    slow.timeout = Duration::from_millis(200);
    let e = out.call(slow).await.unwrap_err();
    assert!(e.contains("/slow"), "{e}");
    let e = out
        .call(call("http://127.0.0.1:1/".into(), None))
        .await
        .unwrap_err();
    assert!(e.contains("127.0.0.1:1"), "{e}");
}
