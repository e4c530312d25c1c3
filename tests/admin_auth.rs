//! Admin users and HTTP Basic authentication (issue 3, acceptance 1 and 2).

use crate::support::{Pharos, TestDb, backends};
use reqwest::Method;
use serde_json::json;

async fn unauthenticated_status(p: &Pharos) -> (u16, serde_json::Value, Option<String>) {
    let r = p
        .client
        .get(p.url("/api/v1/admin/trust-anchors"))
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let challenge = r
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_string());
    (status, r.json().await.unwrap_or_default(), challenge)
}

#[tokio::test]
async fn first_user_locks_the_api_and_basic_auth_is_enforced() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let mut p = Pharos::start(&db).await;
        // Bootstrap: no user, open.
        assert_eq!(p.admin(Method::GET, "/trust-anchors", None).await.0, 200);
        let (s, user) = p
            .admin(
                Method::POST,
                "/users",
                Some(json!({"username": "alice", "password": "correct horse", "display_name": "Alice"})),
            )
            .await;
        assert_eq!(s, 201, "{b:?} {user}");
        assert_eq!(user["username"], "alice");
        assert_eq!(user["display_name"], "Alice");
        assert_eq!(user["disabled"], false);
        assert!(
            user["created_at"].as_str().unwrap().ends_with('Z'),
            "{user}"
        );
        assert!(user.get("password_hash").is_none() && user.get("password").is_none());

        // Locked at once: the same unauthenticated request is now refused.
        let (s, body, challenge) = unauthenticated_status(&p).await;
        assert_eq!(s, 401, "{b:?}");
        assert_eq!(body["error"], "invalid_client");
        assert_eq!(body["error_description"], "missing credentials");
        assert_eq!(challenge.as_deref(), Some("Basic realm=\"admin\""));

        p.login("alice", "correct horse");
        assert_eq!(p.admin(Method::GET, "/trust-anchors", None).await.0, 200);
        let (s, list) = p.admin(Method::GET, "/users", None).await;
        assert_eq!(s, 200);
        assert_eq!(list.as_array().unwrap().len(), 1);
        assert!(!list.to_string().contains("argon2"), "hash leaked: {list}");

        p.login("alice", "wrong");
        let (s, body) = p.admin(Method::GET, "/trust-anchors", None).await;
        assert_eq!((s, body["error"].as_str()), (401, Some("invalid_client")));
        assert_eq!(body["error_description"], "invalid credentials");
        p.login("mallory", "correct horse");
        assert_eq!(p.admin(Method::GET, "/trust-anchors", None).await.0, 401);

        // A second user, then disabled: refused even with the right password.
        p.login("alice", "correct horse");
        let (s, _) = p
            .admin(
                Method::POST,
                "/users",
                Some(json!({"username": "bob", "password": "bob passphrase"})),
            )
            .await;
        assert_eq!(s, 201);
        let (s, _) = p
            .admin(
                Method::POST,
                "/users",
                Some(json!({"username": "bob", "password": "another passphrase"})),
            )
            .await;
        assert_eq!(s, 409);
        let (s, _) = p
            .admin(Method::POST, "/users", Some(json!({"username": "carol"})))
            .await;
        assert_eq!(s, 400);
        let (s, bob) = p
            .admin(Method::PUT, "/users/bob", Some(json!({"disabled": true})))
            .await;
        assert_eq!((s, &bob["disabled"]), (200, &json!(true)));
        p.login("bob", "bob passphrase");
        assert_eq!(p.admin(Method::GET, "/trust-anchors", None).await.0, 401);
        // Password change takes effect; the old one stops working.
        p.login("alice", "correct horse");
        let (s, _) = p
            .admin(
                Method::PUT,
                "/users/alice",
                Some(json!({"password": "new passphrase"})),
            )
            .await;
        assert_eq!(s, 200);
        assert_eq!(p.admin(Method::GET, "/users", None).await.0, 401);
        p.login("alice", "new passphrase");
        assert_eq!(p.admin(Method::GET, "/users/alice", None).await.0, 200);
        assert_eq!(p.admin(Method::GET, "/users/nobody", None).await.0, 404);

        // Deleting every user reopens the API.
        assert_eq!(p.admin(Method::DELETE, "/users/bob", None).await.0, 204);
        assert_eq!(p.admin(Method::DELETE, "/users/alice", None).await.0, 204);
        p.auth = None;
        assert_eq!(unauthenticated_status(&p).await.0, 200, "{b:?}");
        p.stop().await;
    }
}

#[tokio::test]
async fn stored_hash_is_argon2id_and_is_rehashed_when_parameters_change() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let mut p = Pharos::start(&db).await;
        let (s, _) = p
            .admin(
                Method::POST,
                "/users",
                Some(json!({"username": "ops", "password": "ops passphrase"})),
            )
            .await;
        assert_eq!(s, 201);
        let pool = db.pool().await;
        let hash = || async {
            let row = sqlx::query(pool.sql("SELECT password_hash FROM users WHERE username = ?"))
                .bind("ops")
                .fetch_one(pool.pool())
                .await
                .unwrap();
            sqlx::Row::get::<String, _>(&row, "password_hash")
        };
        let first = hash().await;
        assert!(
            first.starts_with("$argon2id$v=19$m=65536,t=1,p=4$"),
            "{first}"
        );

        p.settings.api.admin.password_hashing.time = 2;
        p.settings.api.admin.password_hashing.memory_kib = 8192;
        p.login("ops", "ops passphrase");
        let p = p.restart().await;
        assert_eq!(p.admin(Method::GET, "/users", None).await.0, 200);
        let second = hash().await;
        assert!(
            second.starts_with("$argon2id$v=19$m=8192,t=2,p=4$"),
            "{second}"
        );
        // Still the same password.
        assert_eq!(p.admin(Method::GET, "/users", None).await.0, 200);
        p.stop().await;
    }
}

#[tokio::test]
async fn users_routes_follow_users_enabled_and_admin_enabled_removes_everything() {
    let db = TestDb::new(crate::support::Backend::Sqlite).await;
    let p = Pharos::start_with(
        &db,
        |s| s.api.admin.users_enabled = false,
        std::sync::Arc::new(pharos_shared::time::SystemClock),
    )
    .await;
    assert_eq!(p.admin(Method::GET, "/users", None).await.0, 404);
    assert_eq!(p.admin(Method::GET, "/trust-anchors", None).await.0, 200);
    p.stop().await;

    let db = TestDb::new(crate::support::Backend::Sqlite).await;
    let p = Pharos::start_with(
        &db,
        |s| s.api.admin.enabled = false,
        std::sync::Arc::new(pharos_shared::time::SystemClock),
    )
    .await;
    for path in [
        "/api/v1/admin/trust-anchors",
        "/api/v1/admin/openapi.json",
        "/admin/api/v1/docs",
    ] {
        assert_eq!(p.get(path).await.status(), 404, "{path}");
    }
    assert_eq!(p.get("/.well-known/openid-federation").await.status(), 200);
    p.stop().await;
}
