//! The periodic entity collector: an interval change through the Admin API restarts it (a new
//! `last_updated`), a restarted Pharos serves the stored collection before its first new run
//! ends, and hostile members (a listing that hangs, a 100 MB Entity Configuration, a loop of
//! listings) cost bounded time and are skipped while the rest is collected.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use pharos_shared::jose::{self, Algorithm, Signer, SigningKey};
use pharos_shared::time::{Clock, ManualClock, SystemClock};
use reqwest::Method;
use serde_json::{Value, json};
use tokio::net::TcpListener;

use crate::collection::{build, collection, ids_of, ok, set_collection, superior, wait_for};
use crate::support::{Pharos, TestDb, backends};

#[tokio::test]
async fn interval_changes_restart_the_collector_and_a_restart_serves_the_stored_collection() {
    for b in backends() {
        let clock = ManualClock::new(SystemClock.now());
        let timeout = Duration::from_secs(60);
        let mut fed = build(
            b,
            |s| s.federation.http_timeout = pharos_shared::config::Duration(timeout),
            clock.clone() as Arc<dyn Clock>,
        )
        .await;
        let ta_id = fed.ta.entity_id().to_owned();
        let t0 = clock.now();
        set_collection(
            &fed.ta,
            json!({"allowed_trust_anchors": [ta_id], "interval_seconds": 3600}),
        )
        .await;
        let first = wait_for(&fed.ta, "", |v| v["last_updated"] == t0).await;
        assert_eq!(ids_of(&first), fed.ids(), "{b:?}");

        // A new interval through the Admin API: the collector restarts and collects at once.
        clock.advance(1_000);
        set_collection(
            &fed.ta,
            json!({"allowed_trust_anchors": [ta_id], "interval_seconds": 7200, "pagination_limit": 100}),
        )
        .await;
        let second = wait_for(&fed.ta, "", |v| v["last_updated"] == t0 + 1_000).await;
        assert_eq!(ids_of(&second), fed.ids());

        // A member that never answers makes the next run last until its timeout; a restart
        // serves the stored collection from the first request on.
        let hang = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let hang_id = format!("http://{}", hang.local_addr().unwrap());
        let jwks = fed.leaves[0].entity_configuration().await.claims["jwks"].clone();
        let sub = json!({"entity_id": hang_id, "jwks": jwks});
        ok(&fed.ta, Method::POST, "/subordinates", sub).await;
        clock.advance(1_000);
        fed.ta = fed.ta.restart().await;
        let (s, v) = collection(&fed.ta, "").await;
        assert_eq!(s, 200, "{b:?} {v}");
        assert_eq!(v["last_updated"], t0 + 1_000, "the stored collection: {v}");
        assert_eq!(ids_of(&v), fed.ids());
        drop(hang);
        fed.stop().await;
    }
}

/// A hostile federation member server.
struct Hostile {
    base: String,
    key: SigningKey,
    ta: String,
}

fn configuration(h: &Hostile, name: &str) -> String {
    let id = format!("{}/{name}", h.base);
    let now = SystemClock.now();
    let claims = json!({"iss": id, "sub": id, "iat": now, "exp": now + 3600,
        "jwks": {"keys": [h.key.public_jwk()]}, "authority_hints": [h.ta],
        "metadata": {"federation_entity": {"organization_name": format!("hostile {name}"),
            "federation_list_endpoint": format!("{id}/list"),
            "federation_fetch_endpoint": format!("{id}/fetch")}}});
    jose::sign(
        &h.key,
        "entity-statement+jwt",
        claims.as_object().unwrap(),
        None,
    )
    .unwrap()
}

async fn hostile_ec(State(h): State<Arc<Hostile>>, Path(name): Path<String>) -> Response {
    if name == "huge" {
        // 100 MB, streamed without a length: the fetcher must cut it off, not buffer it.
        let chunk = Bytes::from(vec![b'a'; 1 << 16]);
        let stream = futures_util::stream::iter(
            (0..1600).map(move |_| Ok::<_, std::io::Error>(chunk.clone())),
        );
        return (
            [(header::CONTENT_TYPE, "application/entity-statement+jwt")],
            Body::from_stream(stream),
        )
            .into_response();
    }
    (
        [(header::CONTENT_TYPE, "application/entity-statement+jwt")],
        configuration(&h, &name),
    )
        .into_response()
}

/// The member's Subordinate Statement about `sub` (issue 31: a listed member is collected
/// only when its lister vouches for it).
async fn hostile_fetch(
    State(h): State<Arc<Hostile>>,
    Path(name): Path<String>,
    axum::extract::Query(q): axum::extract::Query<std::collections::HashMap<String, String>>,
) -> Response {
    let now = SystemClock.now();
    let claims = json!({"iss": format!("{}/{name}", h.base), "sub": q["sub"], "iat": now,
        "exp": now + 3600, "jwks": {"keys": [h.key.public_jwk()]}});
    let jws = jose::sign(
        &h.key,
        "entity-statement+jwt",
        claims.as_object().unwrap(),
        None,
    )
    .unwrap();
    (
        [(header::CONTENT_TYPE, "application/entity-statement+jwt")],
        jws,
    )
        .into_response()
}

async fn hostile_list(State(h): State<Arc<Hostile>>, Path(name): Path<String>) -> Response {
    let id = |n: &str| format!("{}/{n}", h.base);
    let body = match name.as_str() {
        "hang" => return std::future::pending().await,
        "loop-a" => json!([id("loop-b"), h.ta, id("loop-a")]),
        "loop-b" => json!([id("loop-a"), id("loop-b")]),
        _ => json!([]),
    };
    (
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

#[tokio::test]
async fn hostile_members_are_skipped_and_the_rest_is_collected() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let ta = Pharos::start_with(
            &db,
            |s| s.federation.http_timeout = pharos_shared::config::Duration(Duration::from_secs(2)),
            Arc::new(SystemClock),
        )
        .await;
        superior(&ta).await;
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let h = Arc::new(Hostile {
            base: format!("http://{}", listener.local_addr().unwrap()),
            key: SigningKey::generate(Algorithm::ES256, 0).unwrap(),
            ta: ta.entity_id().to_owned(),
        });
        let app = Router::new()
            .route("/{name}/.well-known/openid-federation", get(hostile_ec))
            .route("/{name}/list", get(hostile_list))
            .route("/{name}/fetch", get(hostile_fetch))
            .with_state(h.clone());
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        let jwks: Value = json!({"keys": [h.key.public_jwk()]});
        for name in ["hang", "huge", "loop-a", "fine"] {
            let sub = json!({"entity_id": format!("{}/{name}", h.base), "jwks": jwks});
            ok(&ta, Method::POST, "/subordinates", sub).await;
        }
        set_collection(&ta, json!({})).await;
        let (s, v) = collection(&ta, "").await;
        assert_eq!(s, 200, "{b:?} {v}");
        let mut want: Vec<String> = ["fine", "hang", "loop-a", "loop-b"]
            .iter()
            .map(|n| format!("{}/{n}", h.base))
            .collect();
        want.sort();
        assert_eq!(
            ids_of(&v),
            want,
            "the 100 MB one is skipped, the loop collected once"
        );
        server.abort();
        ta.stop().await;
    }
}

#[tokio::test]
async fn collected_entities_feed_the_proactive_resolver() {
    let b = backends()[0];
    let fed = build(b, |_| {}, Arc::new(SystemClock)).await;
    let ta = fed.ta.entity_id().to_owned();
    let store = tempfile::tempdir().unwrap();
    let dir = store.path().display().to_string();
    crate::resolve::enable_resolve(
        &fed.ta,
        json!({"use_entity_collection_allowed_trust_anchors": true,
               "proactive_resolver": {"enabled": true, "response_storage": {"dir": dir}}}),
    )
    .await;
    set_collection(
        &fed.ta,
        json!({"allowed_trust_anchors": [ta], "interval_seconds": 3600}),
    )
    .await;
    // A proactive resolver configured through the Admin API starts with the first resolve
    // request (or at the next start).
    let (s, body) = crate::resolve::resolve(&fed.ta, &fed.leaf(0), &[&ta], &[]).await;
    assert_eq!(s, 200, "{body}");
    // Every collected Entity is resolved in the background and its response stored.
    let anchor_dir = store.path().join("resolve").join(crate::support::enc(&ta));
    let mut subs = Vec::new();
    for _ in 0..400 {
        subs = std::fs::read_dir(&anchor_dir)
            .map(|d| {
                d.filter_map(Result::ok)
                    .filter(|e| e.path().extension().is_some_and(|x| x == "job"))
                    .filter_map(|e| std::fs::read(e.path()).ok())
                    .filter_map(|j| serde_json::from_slice::<Value>(&j).ok())
                    .map(|j| j["sub"].as_str().unwrap().to_owned())
                    .collect()
            })
            .unwrap_or_default();
        subs.sort();
        if subs == fed.ids() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(subs, fed.ids(), "stored resolve responses");
    fed.stop().await;
}
