//! Writes are never refused and never lost (issue 33): many Admin API writes at once — new
//! subordinates, status changes and metadata edits — are all acknowledged (2xx, never a busy
//! 5xx), each is served by the federation endpoints as soon as it is acknowledged, and every
//! one is stored after a restart. On SQLite the writes share fsyncs (group commit) in WAL mode.

use reqwest::Method;
use serde_json::json;

use crate::fetch_list::jwk;
use crate::support::{Backend, Pharos, TestDb, backends, enable, enc};

/// Writers at once.
const WRITERS: usize = 16;
/// Writes per writer.
const ROUNDS: usize = 6;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_admin_writes_are_all_acknowledged_published_and_stored_after_restart() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = Pharos::start(&db).await;
        enable(&p, "fetch", "/fetch", json!({})).await;
        for w in 0..WRITERS {
            let body = json!({"entity_id": format!("https://edit-{w}.example"),
                "jwks": {"keys": [jwk("e", None)]}});
            let (s, v) = p.admin(Method::POST, "/subordinates", Some(body)).await;
            assert_eq!(s, 201, "{b:?} {v}");
        }
        let p = std::sync::Arc::new(p);
        let writers = (0..WRITERS).map(|w| {
            let p = p.clone();
            tokio::spawn(async move {
                let edit = enc(&format!("https://edit-{w}.example"));
                let mut last_name = None;
                for r in 0..ROUNDS {
                    let id = format!("https://w{w}-{r}.example");
                    let body = json!({"entity_id": id, "jwks": {"keys": [jwk("k", None)]}});
                    let (s, v) = p.admin(Method::POST, "/subordinates", Some(body)).await;
                    assert_eq!(s, 201, "{id}: {v}");
                    // Acknowledged, so published: the fetch endpoint serves its statement.
                    let f = p.get(&format!("/fetch?sub={}", enc(&id))).await;
                    assert_eq!(f.status(), 200, "{id} not served after its 201");
                    let name = format!("edit {w} {r}");
                    let md = json!({"openid_relying_party": {"client_name": name}});
                    let path = format!("/subordinates/{edit}/metadata");
                    let (s, v) = p.admin(Method::PUT, &path, Some(md)).await;
                    assert_eq!(s, 200, "{path}: {v}");
                    last_name = Some(name);
                    let status = if r % 2 == 0 { "blocked" } else { "active" };
                    let path = format!("/subordinates/{edit}/status");
                    let (s, v) = p.admin_raw(Method::PUT, &path, Some(status)).await;
                    assert!((200..300).contains(&s), "{path} {status}: {s} {v}");
                }
                last_name
            })
        });
        let mut names = Vec::new();
        for w in writers {
            names.push(w.await.unwrap());
        }
        let p = std::sync::Arc::into_inner(p).expect("writers done");
        let p = p.restart().await;
        let (s, list) = p.admin(Method::GET, "/subordinates", None).await;
        assert_eq!(s, 200, "{list}");
        let listed = list.to_string();
        for (w, name) in names.iter().enumerate() {
            for r in 0..ROUNDS {
                let id = format!("https://w{w}-{r}.example");
                assert!(listed.contains(&id), "{b:?}: {id} lost after restart");
            }
            let edit = enc(&format!("https://edit-{w}.example"));
            let (s, md) = p
                .admin(Method::GET, &format!("/subordinates/{edit}/metadata"), None)
                .await;
            assert_eq!(s, 200, "{md}");
            let name = name.clone().unwrap();
            assert_eq!(md["openid_relying_party"]["client_name"], name, "{b:?}");
            // ROUNDS is even: the last acknowledged status is `active`.
            let (s, sub) = p
                .admin(Method::GET, &format!("/subordinates/{edit}"), None)
                .await;
            assert_eq!(s, 200, "{sub}");
            assert_eq!(sub["status"], "active", "{b:?} {sub}");
        }
        if b == Backend::Sqlite {
            let pool = db.pool().await;
            let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
                .fetch_one(pool.pool())
                .await
                .unwrap();
            assert_eq!(mode, "wal");
            pool.pool().close().await;
        }
        p.stop().await;
    }
}
