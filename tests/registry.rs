//! The endpoint registry: creating, moving and disabling endpoints at run time.

use crate::support::{Pharos, TestDb, backends};
use reqwest::Method;
use serde_json::json;

#[tokio::test]
async fn fetch_endpoint_is_published_moved_and_disabled_without_restart() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = Pharos::start(&db).await;
        let key = "federation_fetch_endpoint";

        let (s, rec) = p
            .admin(
                Method::POST,
                "/federation-endpoints",
                Some(json!({"type": "fetch", "path": "/fetch"})),
            )
            .await;
        assert_eq!(s, 201, "{b:?} {rec}");
        assert_eq!(rec["type"], "fetch");
        let ec = p.entity_configuration().await;
        assert_eq!(
            ec.claims["metadata"]["federation_entity"][key],
            format!("{}/fetch", p.entity_id())
        );
        // The path is dispatched (GET is its method; POST is refused with 405).
        let r = p.get("/fetch").await;
        assert_ne!(r.status(), 404);
        let r = p.request(Method::POST, "/fetch", None).await;
        assert_eq!(r.status(), 405);
        assert_eq!(r.headers()["allow"], "GET");

        // Disable: path null removes the URL, but the old path is still served for one lifetime.
        let (s, rec) = p
            .admin(
                Method::PUT,
                "/federation-endpoints/fetch",
                Some(json!({"path": null})),
            )
            .await;
        assert_eq!(s, 200, "{rec}");
        assert!(rec["path"].is_null());
        let ec = p.entity_configuration().await;
        assert!(
            ec.claims["metadata"]["federation_entity"]
                .get(key)
                .is_none()
        );
        let r = p.get("/fetch").await;
        assert_ne!(r.status(), 404, "legacy path still dispatched");

        // An unknown path gets the JSON 404.
        let r = p.get("/nowhere").await;
        assert_eq!(r.status(), 404);
        assert_eq!(r.headers()["content-type"], "application/json");
        let body: serde_json::Value = r.json().await.unwrap();
        assert_eq!(body["error"], "not_found");
        assert!(
            body["error_description"]
                .as_str()
                .unwrap()
                .contains("/nowhere")
        );
        p.stop().await;
    }
}

#[tokio::test]
async fn legacy_path_expires_after_one_entity_configuration_lifetime() {
    let db = TestDb::new(crate::support::Backend::Sqlite).await;
    let clock = pharos_shared::time::ManualClock::new(1_800_000_000);
    let p = Pharos::start_with(&db, |_| {}, clock.clone()).await;
    p.admin_raw(Method::PUT, "/entity-configuration/lifetime", Some("600"))
        .await;
    p.admin(
        Method::POST,
        "/federation-endpoints",
        Some(json!({"type": "list", "path": "/list"})),
    )
    .await;
    let (s, _) = p
        .admin(
            Method::PUT,
            "/federation-endpoints/list",
            Some(json!({"path": "/v2/list"})),
        )
        .await;
    assert_eq!(s, 200);
    let ec = p.entity_configuration().await;
    assert_eq!(
        ec.claims["metadata"]["federation_entity"]["federation_list_endpoint"],
        format!("{}/v2/list", p.entity_id())
    );
    assert_ne!(p.get("/list").await.status(), 404);
    assert_ne!(p.get("/v2/list").await.status(), 404);
    clock.advance(599);
    assert_ne!(
        p.get("/list").await.status(),
        404,
        "still within one lifetime"
    );
    clock.advance(2);
    assert_eq!(
        p.get("/list").await.status(),
        404,
        "expired after one lifetime"
    );
    assert_ne!(p.get("/v2/list").await.status(), 404);
    p.stop().await;
}

#[tokio::test]
async fn auth_enabled_endpoint_publishes_auth_methods_and_requires_post() {
    let db = TestDb::new(crate::support::Backend::Sqlite).await;
    let p = Pharos::start(&db).await;
    let ta = json!({"entity_id": "https://ta.example.org", "jwks": {"keys": [{"kty": "EC", "crv": "P-256", "kid": "k1",
        "x": "gc9HUFprRnKPupCHCSNaMQDzbocH3lMjYn9fm7D90i0", "y": "q0eFTZ_ZwRGwFmtleZUU61g0m48rkCzPeY2TsVn_0H8"}]}});
    assert_eq!(
        p.admin(Method::POST, "/trust-anchors", Some(ta)).await.0,
        201
    );
    let (s, v) = p
        .admin(
            Method::POST,
            "/federation-endpoints",
            Some(json!({"type": "list", "path": "/list", "auth_enabled": true})),
        )
        .await;
    assert_eq!(s, 400, "auth without trust anchors is refused: {v}");
    let (s, rec) = p
        .admin(
            Method::POST,
            "/federation-endpoints",
            Some(
                json!({"type": "list", "path": "/list", "auth_enabled": true,
            "auth_trust_anchors": ["https://ta.example.org"]}),
            ),
        )
        .await;
    assert_eq!(s, 201);
    assert_eq!(
        rec["auth_trust_anchors"][0]["entity_id"],
        "https://ta.example.org"
    );
    let ec = p.entity_configuration().await;
    let fe = &ec.claims["metadata"]["federation_entity"];
    assert_eq!(
        fe["federation_list_endpoint_auth_methods"],
        json!(["private_key_jwt"])
    );
    assert!(
        fe["endpoint_auth_signing_alg_values_supported"]
            .as_array()
            .unwrap()
            .contains(&json!("ES256"))
    );
    assert_eq!(p.get("/list").await.status(), 405);

    // Deleting the trust anchor removes the link (cascade).
    let (s, _) = p
        .admin(
            Method::DELETE,
            &format!(
                "/trust-anchors/{}",
                crate::support::enc("https://ta.example.org")
            ),
            None,
        )
        .await;
    assert_eq!(s, 204);
    let (_, rec) = p
        .admin(Method::GET, "/federation-endpoints/list", None)
        .await;
    assert_eq!(rec["auth_trust_anchors"], json!([]));
    p.stop().await;
}

#[tokio::test]
async fn invalid_enroll_checkers_are_refused_naming_the_field() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = Pharos::start(&db).await;
        let cases = [
            (
                json!({"checker": {"type": "http", "config": {}}}),
                "checker.config",
            ),
            (json!({"checker": {"type": "magic"}}), "checker.type"),
            (
                json!({"checker": {"type": "multiple_and", "config": [
                    {"type": "none"},
                    {"type": "http_list", "config": {"url": "ftp://lists.example"}}
                ]}}),
                "checker.config[1].config.url",
            ),
            (
                json!({"checker_type": "multiple_or", "checker_config": [{"type": "trust_path", "config": {}}]}),
                "checker.config[0].config",
            ),
        ];
        for (kind, path) in [("enroll", "/enroll"), ("enroll_request", "/enroll-request")] {
            for (config, field) in &cases {
                let body = json!({"type": kind, "path": path, "config": config});
                let (s, err) = p
                    .admin(Method::POST, "/federation-endpoints", Some(body))
                    .await;
                assert_eq!(s, 400, "{b:?} {kind} {config}: {err}");
                let why = err["error_description"].as_str().unwrap_or_default();
                assert!(why.contains(field), "{b:?} {kind}: {field} not in {why:?}");
            }
            let (s, _) = p
                .admin(Method::GET, &format!("/federation-endpoints/{kind}"), None)
                .await;
            assert_eq!(s, 404, "{b:?} nothing stored for {kind}");
        }
        // A valid nested checker is stored; changing it to an invalid one is refused and
        // leaves it as it was.
        let good = json!({"checker": {"type": "multiple_or", "config": [
            {"type": "entity_id", "config": {"entity_ids": ["https://leaf.example"]}},
            {"type": "trust_path", "config": {"trust_anchors": ["https://ta.example"]}}
        ]}});
        let body = json!({"type": "enroll", "path": "/enroll", "config": good});
        let (s, rec) = p
            .admin(Method::POST, "/federation-endpoints", Some(body))
            .await;
        assert_eq!(s, 201, "{b:?} {rec}");
        let bad = json!({"config": {"checker": {"type": "cmd", "config": {"path": ""}}}});
        let (s, err) = p
            .admin(Method::PUT, "/federation-endpoints/enroll", Some(bad))
            .await;
        assert_eq!(s, 400, "{b:?} {err}");
        assert!(
            err["error_description"]
                .as_str()
                .unwrap_or_default()
                .contains("checker.config.path")
        );
        let (s, rec) = p
            .admin(Method::GET, "/federation-endpoints/enroll", None)
            .await;
        assert_eq!(s, 200, "{b:?} {rec}");
        assert_eq!(
            rec["config"]["checker"]["type"], "multiple_or",
            "{b:?} {rec}"
        );
    }
}
