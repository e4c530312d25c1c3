//! Admin API for subordinates: records, status, history and keys, on every database.

use crate::fetch_list::{add, jwk};
use crate::support::{Pharos, TestDb, backends, content_type, enc};
use reqwest::Method;
use serde_json::{Value, json};

/// An admin call with an `X-Actor` header.
async fn as_actor(p: &Pharos, method: Method, path: &str, body: &str, actor: &str) -> (u16, Value) {
    let r = p
        .client
        .request(method, p.url(&format!("/api/v1/admin{path}")))
        .header("X-Actor", actor)
        .header("content-type", content_type(body))
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let s = r.status().as_u16();
    (s, r.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn create_read_update_delete_and_re_add() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = Pharos::start(&db).await;
        let e = "https://leaf.example.org/path";
        let rec = add(
            &p,
            e,
            json!({"description": "a leaf", "registered_entity_types": ["openid_relying_party"]}),
        )
        .await;
        assert_eq!(rec["status"], "active", "{b:?}");
        assert_eq!(rec["jwks"]["keys"][0]["kid"], "k1");
        assert_eq!(
            rec["registered_entity_types"],
            json!(["openid_relying_party"])
        );
        let id = rec["id"].as_i64().unwrap();

        // Errors of create.
        let cases = [
            (
                json!({"entity_id": e, "jwks": {"keys": [jwk("x", None)]}}),
                409,
            ),
            (json!({"entity_id": "https://nokeys.example"}), 400),
            (
                json!({"entity_id": "https://nokeys.example", "jwks": {"keys": []}}),
                400,
            ),
            (json!({"entity_id": "not a url", "status": "pending"}), 400),
            (json!({"status": "pending"}), 400),
            (
                json!({"entity_id": "https://x.example", "status": "deleted"}),
                400,
            ),
            (
                json!({"entity_id": "https://x.example", "jwks": {"keys": [{"kty": "EC"}]}}),
                400,
            ),
            (
                json!({"entity_id": "https://x.example", "jwks": {"keys": [jwk("a", None), jwk("a", None)]}}),
                400,
            ),
            (
                json!({"entity_id": "https://x.example", "jwks": {"keys": [{"kty": "EC", "kid": "p", "d": "secret"}]}}),
                400,
            ),
        ];
        for (body, want) in cases {
            let (s, v) = p
                .admin(Method::POST, "/subordinates", Some(body.clone()))
                .await;
            assert_eq!(s, want, "{body} → {v}");
            assert_eq!(v["error"], "invalid_request");
        }
        let (s, _) = p
            .admin_raw(Method::POST, "/subordinates", Some("{not json"))
            .await;
        assert_eq!(s, 400);
        let (s, v) = p
            .admin(
                Method::POST,
                "/subordinates",
                Some(json!({"entity_id": "https://pending.example", "status": "pending"})),
            )
            .await;
        assert_eq!(
            (s, v["status"].as_str()),
            (201, Some("pending")),
            "pending needs no keys"
        );

        // Read by numeric id and by URL-encoded entity id; unknown → 404.
        let (s, by_id) = p
            .admin(Method::GET, &format!("/subordinates/{id}"), None)
            .await;
        assert_eq!(s, 200);
        let (_, by_eid) = p
            .admin(Method::GET, &format!("/subordinates/{}", enc(e)), None)
            .await;
        assert_eq!(by_id, by_eid);
        let (s, v) = p.admin(Method::GET, "/subordinates/99999", None).await;
        assert_eq!((s, v["error"].as_str()), (404, Some("not_found")));

        // List and filters.
        let (_, all) = p.admin(Method::GET, "/subordinates", None).await;
        assert_eq!(all.as_array().unwrap().len(), 2);
        let (_, v) = p
            .admin(Method::GET, "/subordinates?status=pending", None)
            .await;
        assert_eq!(v[0]["entity_id"], "https://pending.example");
        let (_, v) = p
            .admin(
                Method::GET,
                "/subordinates?entity_type=openid_relying_party",
                None,
            )
            .await;
        assert_eq!(v.as_array().unwrap().len(), 1);
        let (s, _) = p
            .admin(Method::GET, "/subordinates?status=bogus", None)
            .await;
        assert_eq!(s, 400);

        // PATCH and PUT update only the given fields.
        let (s, v) = p
            .admin(
                Method::PATCH,
                &format!("/subordinates/{id}"),
                Some(json!({"enable_jwks_update": true, "jwks_poll_interval": 90})),
            )
            .await;
        assert_eq!(s, 200, "{v}");
        assert_eq!(
            (
                v["enable_jwks_update"].clone(),
                v["jwks_poll_interval"].clone(),
                v["description"].clone()
            ),
            (json!(true), json!(90), json!("a leaf"))
        );
        let (s, v) = p.admin(Method::PUT, &format!("/subordinates/{id}"), Some(json!({"description": "renamed", "registered_entity_types": ["openid_provider"]}))).await;
        assert_eq!(s, 200);
        assert_eq!(
            (
                v["description"].clone(),
                v["registered_entity_types"].clone()
            ),
            (json!("renamed"), json!(["openid_provider"]))
        );
        assert_eq!(
            p.admin(
                Method::PATCH,
                &format!("/subordinates/{id}"),
                Some(json!({"jwks_poll_interval": -1}))
            )
            .await
            .0,
            400
        );
        assert_eq!(
            p.admin(Method::PATCH, "/subordinates/424242", Some(json!({})))
                .await
                .0,
            404
        );

        // Delete is hard; re-adding the same entity works.
        assert_eq!(
            p.admin(Method::DELETE, &format!("/subordinates/{id}"), None)
                .await
                .0,
            204
        );
        assert_eq!(
            p.admin(Method::GET, &format!("/subordinates/{id}"), None)
                .await
                .0,
            404
        );
        assert_eq!(
            p.admin(Method::DELETE, &format!("/subordinates/{id}"), None)
                .await
                .0,
            404
        );
        let again = add(&p, e, json!({})).await;
        assert_ne!(again["id"], json!(id));
        let (_, h) = p
            .admin(
                Method::GET,
                &format!("/subordinates/{}/history", enc(e)),
                None,
            )
            .await;
        assert_eq!(
            h["pagination"]["total"], 1,
            "history of the deleted row is gone"
        );
        p.stop().await;
    }
}

#[tokio::test]
async fn status_changes_are_recorded_with_the_actor_and_history_pages() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = Pharos::start(&db).await;
        let e = "https://leaf.example.org";
        add(&p, e, json!({})).await;
        let path = format!("/subordinates/{}", enc(e));
        for st in ["pending", "blocked", "inactive", "active"] {
            let (s, v) = as_actor(&p, Method::PUT, &format!("{path}/status"), st, "alice").await;
            assert_eq!((s, v["status"].as_str()), (200, Some(st)), "{b:?}");
        }
        let (s, v) = as_actor(
            &p,
            Method::PUT,
            &format!("{path}/status"),
            "deleted",
            "alice",
        )
        .await;
        assert_eq!((s, v["error"].as_str()), (400, Some("invalid_request")));
        assert_eq!(
            p.admin_raw(Method::PUT, "/subordinates/777/status", Some("active"))
                .await
                .0,
            404
        );
        // active without keys is refused.
        let (s, _) = p
            .admin(
                Method::POST,
                "/subordinates",
                Some(json!({"entity_id": "https://nokeys.example", "status": "pending"})),
            )
            .await;
        assert_eq!(s, 201);
        let (s, v) = p
            .admin_raw(
                Method::PUT,
                &format!("/subordinates/{}/status", enc("https://nokeys.example")),
                Some("active"),
            )
            .await;
        assert_eq!(s, 400, "{v}");

        let (s, h) = p.admin(Method::GET, &format!("{path}/history"), None).await;
        assert_eq!(s, 200);
        assert_eq!(
            h["pagination"],
            json!({"total": 5, "limit": 50, "offset": 0})
        );
        let ev = &h["events"][0];
        assert_eq!(ev["type"], "status_updated");
        assert_eq!(ev["status"], "active");
        assert_eq!(ev["message"], "status changed from inactive to active");
        assert_eq!(ev["actor"], "alice");
        assert_eq!(h["events"][4]["type"], "created");
        let (_, h) = p
            .admin(
                Method::GET,
                &format!("{path}/history?type=status_updated&limit=2&offset=1"),
                None,
            )
            .await;
        assert_eq!(
            h["pagination"],
            json!({"total": 4, "limit": 2, "offset": 1})
        );
        assert_eq!(
            h["events"][0]["message"],
            "status changed from blocked to inactive"
        );
        assert_eq!(h["events"].as_array().unwrap().len(), 2);
        let (_, h) = p
            .admin(Method::GET, &format!("{path}/history?limit=1000"), None)
            .await;
        assert_eq!(h["pagination"]["limit"], 100);
        let (_, h) = p
            .admin(Method::GET, &format!("{path}/history?from=1&to=2"), None)
            .await;
        assert_eq!(h["pagination"]["total"], 0);
        assert_eq!(
            p.admin(Method::GET, &format!("{path}/history?limit=0"), None)
                .await
                .0,
            400
        );
        assert_eq!(
            p.admin(Method::GET, "/subordinates/999/history", None)
                .await
                .0,
            404
        );
        p.stop().await;
    }
}

#[tokio::test]
async fn jwks_routes_keep_every_key_and_record_events() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = Pharos::start(&db).await;
        let rec = add(&p, "https://leaf.example.org", json!({})).await;
        let path = format!("/subordinates/{}/jwks", rec["id"]);
        let (s, v) = p.admin(Method::GET, &path, None).await;
        assert_eq!((s, v["keys"].as_array().unwrap().len()), (200, 1), "{b:?}");
        let (s, v) = p.admin(Method::POST, &path, Some(jwk("k2", Some(1)))).await;
        assert_eq!((s, v["keys"].as_array().unwrap().len()), (201, 2));
        assert_eq!(
            p.admin(Method::POST, &path, Some(jwk("k2", None))).await.0,
            409
        );
        assert_eq!(
            p.admin(Method::POST, &path, Some(json!({"kty": "EC"})))
                .await
                .0,
            400
        );
        let (s, v) = p
            .admin(Method::PUT, &path, Some(json!({"keys": [jwk("k3", None)]})))
            .await;
        assert_eq!((s, v["keys"][0]["kid"].as_str()), (200, Some("k3")));
        assert_eq!(
            p.admin(Method::PUT, &path, Some(json!({"keys": [{"kid": "x"}]})))
                .await
                .0,
            400
        );
        assert_eq!(
            p.admin(Method::DELETE, &format!("{path}/k3"), None).await.0,
            204
        );
        assert_eq!(
            p.admin(Method::DELETE, &format!("{path}/absent"), None)
                .await
                .0,
            204
        );
        assert_eq!(
            p.admin(Method::GET, "/subordinates/404/jwks", None).await.0,
            404
        );
        let (_, v) = p.admin(Method::GET, &path, None).await;
        assert_eq!(v, json!({"keys": []}));
        let (_, h) = p
            .admin(
                Method::GET,
                &format!("/subordinates/{}/history", rec["id"]),
                None,
            )
            .await;
        let types: Vec<&str> = h["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["type"].as_str().unwrap())
            .collect();
        assert_eq!(
            types,
            ["jwk_removed", "jwks_replaced", "jwk_added", "created"]
        );
        p.stop().await;
    }
}

#[tokio::test]
async fn subordinates_survive_a_restart() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = Pharos::start(&db).await;
        let e = "https://leaf.example.org";
        add(
            &p,
            e,
            json!({"registered_entity_types": ["openid_provider"]}),
        )
        .await;
        p.admin(
            Method::PUT,
            &format!("/subordinates/{}/constraints", enc(e)),
            Some(json!({"max_path_length": 1})),
        )
        .await;
        p.admin_raw(Method::PUT, "/subordinates/lifetime", Some("4242"))
            .await;
        let before = p
            .admin(
                Method::GET,
                &format!("/subordinates/{}/statement", enc(e)),
                None,
            )
            .await
            .1;
        let p = p.restart().await;
        let (s, after) = p
            .admin(
                Method::GET,
                &format!("/subordinates/{}/statement", enc(e)),
                None,
            )
            .await;
        assert_eq!(s, 200, "{b:?}");
        assert_eq!(after["constraints"], before["constraints"]);
        assert_eq!(
            after["exp"].as_i64().unwrap() - after["iat"].as_i64().unwrap(),
            4242
        );
        assert_eq!(
            p.admin(Method::GET, "/subordinates/lifetime", None).await.1,
            json!(4242)
        );
        p.stop().await;
    }
}
