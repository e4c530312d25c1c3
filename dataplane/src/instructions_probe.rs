//! A fixed request mix through the router in process, for instruction counts under callgrind
//! (exact and repeatable where req/s on a shared machine is not). Ignored in normal runs:
//!
//! ```sh
//! cargo test --release -p pharos-dataplane --lib --no-run
//! PROBE=fetch PROBE_N=10000 valgrind --tool=callgrind target/release/deps/pharos_dataplane-… \
//!     --ignored --exact instructions_probe::probe
//! ```
//!
//! Per request = (count with `PROBE_N=10000` − count with `PROBE_N=0`) / 10000; `PROBE` is
//! `fetch` (cached statements of 1,000 subordinates in turn), `ec` or `list`.

#![allow(clippy::unwrap_used)] // a failing unwrap is a failing probe

use axum::body::Body;
use axum::http::Request;
use pharos_shared::endpoint::EndpointType;
use tower::ServiceExt as _;

use crate::test_support::{SnapshotBuilder, data_plane};

async fn hit(router: &axum::Router, uri: &str) -> usize {
    let req = Request::builder().uri(uri).body(Body::empty()).unwrap();
    let resp = router.clone().oneshot(req).await.unwrap();
    assert!(resp.status().is_success(), "{uri}");
    axum::body::to_bytes(resp.into_body(), usize::MAX)
        .await
        .unwrap()
        .len()
}

#[tokio::test]
#[ignore = "a measurement, run under callgrind by hand"]
async fn probe() {
    let n: usize = std::env::var("PROBE_N").map_or(0, |v| v.parse().unwrap());
    let what = std::env::var("PROBE").unwrap_or_else(|_| "fetch".into());
    let mut snap = SnapshotBuilder::new()
        .endpoint(EndpointType::Fetch, "/fetch")
        .endpoint(EndpointType::List, "/list");
    for i in 0..1000 {
        snap = snap.subordinate(&format!("https://rp{i}.example.org"));
    }
    let (dp, _publisher) = data_plane(snap.build());
    let router = crate::router(dp);
    let uris: Vec<String> = (0..1000)
        .map(|i| format!("/fetch?sub=https%3A%2F%2Frp{i}.example.org"))
        .collect();
    for u in &uris {
        hit(&router, u).await;
    }
    hit(&router, "/.well-known/openid-federation").await;
    hit(&router, "/list").await;
    let mut bytes = 0;
    for u in uris.iter().cycle().take(n) {
        bytes += match what.as_str() {
            "fetch" => hit(&router, u).await,
            "ec" => hit(&router, "/.well-known/openid-federation").await,
            _ => hit(&router, "/list").await,
        };
    }
    assert!(n == 0 || bytes > 0);
}
