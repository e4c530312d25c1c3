//! Bad Admin API input gets the documented status and error body and changes nothing.

use crate::support::{Pharos, TestDb, backends, enc};
use reqwest::Method;
use serde_json::{Value, json};

/// Everything the Admin API can show, for before/after comparisons.
async fn state(p: &Pharos) -> Value {
    let mut all = serde_json::Map::new();
    for path in [
        "/federation-endpoints",
        "/trust-anchors",
        "/entity-configuration/metadata",
        "/entity-configuration/authority-hints",
        "/entity-configuration/additional-claims",
        "/entity-configuration/lifetime",
    ] {
        all.insert(path.into(), p.admin(Method::GET, path, None).await.1);
    }
    Value::Object(all)
}

fn assert_error(status: u16, body: &Value, want: u16, code: &str) {
    assert_eq!(status, want, "{body}");
    assert_eq!(body["error"], code, "{body}");
    assert!(
        body["error_description"]
            .as_str()
            .is_some_and(|d| !d.is_empty())
    );
}

#[tokio::test]
async fn bad_input_is_rejected_and_changes_nothing() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = Pharos::start(&db).await;
        p.admin(
            Method::POST,
            "/federation-endpoints",
            Some(json!({"type": "fetch", "path": "/fetch"})),
        )
        .await;
        p.admin(
            Method::POST,
            "/trust-anchors",
            Some(json!({"entity_id": "https://ta.example.org", "enable_jwks_update": true})),
        )
        .await;
        p.admin(
            Method::POST,
            "/entity-configuration/additional-claims",
            Some(json!({"claim": "x", "value": 1})),
        )
        .await;
        let before = state(&p).await;

        // Malformed JSON.
        let (s, v) = p
            .admin_raw(Method::POST, "/federation-endpoints", Some("{not json"))
            .await;
        assert_error(s, &v, 400, "invalid_request");
        let (s, v) = p
            .admin_raw(Method::PUT, "/entity-configuration/metadata", Some("[1,"))
            .await;
        assert_error(s, &v, 400, "invalid_request");
        // Unknown endpoint type.
        let (s, v) = p
            .admin(
                Method::POST,
                "/federation-endpoints",
                Some(json!({"type": "teleport", "path": "/t"})),
            )
            .await;
        assert_error(s, &v, 400, "invalid_request");
        let (s, v) = p
            .admin(Method::GET, "/federation-endpoints/teleport", None)
            .await;
        assert_error(s, &v, 400, "invalid_request");
        // Invalid config for the type.
        let (s, v) = p
            .admin(
                Method::POST,
                "/federation-endpoints",
                Some(json!({"type": "list", "path": "/l", "config": "{oops"})),
            )
            .await;
        assert_error(s, &v, 400, "invalid_request");
        let (s, v) = p.admin(Method::POST, "/federation-endpoints", Some(json!({"type": "resolve", "path": "/r", "config": {"proactive_resolver": {"enabled": true}}}))).await;
        assert_error(s, &v, 400, "invalid_request");
        // Reserved or malformed paths.
        let (s, v) = p
            .admin(
                Method::POST,
                "/federation-endpoints",
                Some(json!({"type": "list", "path": "/.well-known/openid-federation"})),
            )
            .await;
        assert_error(s, &v, 400, "invalid_request");
        let (s, v) = p
            .admin(
                Method::POST,
                "/federation-endpoints",
                Some(json!({"type": "list", "path": "list"})),
            )
            .await;
        assert_error(s, &v, 400, "invalid_request");
        // Unknown auth trust anchor.
        let (s, v) = p.admin(Method::POST, "/federation-endpoints", Some(json!({"type": "list", "path": "/l", "auth_enabled": true, "auth_trust_anchors": ["https://nobody.example"]}))).await;
        assert_error(s, &v, 400, "invalid_request");
        // Duplicates.
        let (s, v) = p
            .admin(
                Method::POST,
                "/federation-endpoints",
                Some(json!({"type": "fetch", "path": "/other"})),
            )
            .await;
        assert_error(s, &v, 409, "invalid_request");
        let (s, v) = p
            .admin(
                Method::POST,
                "/federation-endpoints",
                Some(json!({"type": "list", "path": "/fetch"})),
            )
            .await;
        assert_error(s, &v, 409, "invalid_request");
        let (s, v) = p
            .admin(
                Method::POST,
                "/trust-anchors",
                Some(json!({"entity_id": "https://ta.example.org", "enable_jwks_update": true})),
            )
            .await;
        assert_error(s, &v, 409, "invalid_request");
        let (s, v) = p
            .admin(
                Method::POST,
                "/entity-configuration/additional-claims",
                Some(json!({"claim": "x", "value": 2})),
            )
            .await;
        assert_error(s, &v, 409, "invalid_request");
        // Missing entities.
        let (s, v) = p
            .admin(Method::GET, "/federation-endpoints/list", None)
            .await;
        assert_error(s, &v, 404, "not_found");
        let (s, v) = p
            .admin(
                Method::PUT,
                "/federation-endpoints/list",
                Some(json!({"path": "/l"})),
            )
            .await;
        assert_error(s, &v, 404, "not_found");
        let (s, v) = p
            .admin(
                Method::DELETE,
                &format!("/trust-anchors/{}", enc("https://nobody.example")),
                None,
            )
            .await;
        assert_error(s, &v, 404, "not_found");
        let (s, v) = p
            .admin(
                Method::PUT,
                "/federation-endpoints/fetch/auth-trust-anchors",
                Some(json!(["https://nobody.example"])),
            )
            .await;
        assert_error(s, &v, 404, "not_found");
        let (s, v) = p
            .admin(
                Method::GET,
                "/entity-configuration/authority-hints/99",
                None,
            )
            .await;
        assert_error(s, &v, 404, "not_found");
        // Invalid values.
        let (s, v) = p
            .admin(
                Method::POST,
                "/trust-anchors",
                Some(json!({"entity_id": "not a url", "enable_jwks_update": true})),
            )
            .await;
        assert_error(s, &v, 400, "invalid_request");
        let (s, v) = p
            .admin(
                Method::POST,
                "/trust-anchors",
                Some(json!({"entity_id": "https://x.example"})),
            )
            .await;
        assert_error(s, &v, 400, "invalid_request");
        let (s, v) = p
            .admin_raw(Method::PUT, "/entity-configuration/lifetime", Some("-5"))
            .await;
        assert_error(s, &v, 400, "invalid_request");
        let (s, v) = p
            .admin(
                Method::POST,
                "/entity-configuration/additional-claims",
                Some(json!({"claim": "iss", "value": "x"})),
            )
            .await;
        assert_error(s, &v, 400, "invalid_request");
        let (s, v) = p
            .admin(
                Method::PUT,
                "/entity-configuration/metadata",
                Some(json!({"federation_entity": 5})),
            )
            .await;
        assert_error(s, &v, 400, "invalid_request");

        assert_eq!(state(&p).await, before, "{b:?}: nothing changed");
        // And nothing changed in the database either (a restart shows the same).
        let p = p.restart().await;
        assert_eq!(
            state(&p).await,
            before,
            "{b:?}: nothing changed after restart"
        );
        p.stop().await;
    }
}
