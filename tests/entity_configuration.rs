//! The signed Entity Configuration on a fresh instance.

use crate::support::{Pharos, TestDb, backends};
use reqwest::Method;
use serde_json::json;

#[tokio::test]
async fn fresh_instance_publishes_a_verifiable_entity_configuration() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = Pharos::start(&db).await;
        let before = p.clock.now();
        let ec = p.entity_configuration().await;
        assert_eq!(ec.header["typ"], "entity-statement+jwt", "{b:?}");
        assert_eq!(ec.header["alg"], "ES256");
        let kid = ec.header["kid"].as_str().unwrap();
        let keys = ec.claims["jwks"]["keys"].as_array().unwrap();
        assert!(
            keys.iter().any(|k| k["kid"] == kid),
            "signing key is published"
        );
        assert!(
            keys.iter().all(|k| k.get("d").is_none()),
            "no private material"
        );
        assert_eq!(ec.claims["iss"], p.entity_id());
        assert_eq!(ec.claims["sub"], p.entity_id());
        let iat = ec.claims["iat"].as_i64().unwrap();
        assert!(iat >= before - 1 && iat <= p.clock.now() + 1);
        assert_eq!(ec.claims["exp"].as_i64().unwrap(), iat + 86_400);
        assert!(ec.claims.get("authority_hints").is_none());
        assert!(ec.claims["metadata"]["federation_entity"].is_object());
        p.stop().await;
    }
}

#[tokio::test]
async fn admin_changes_show_in_the_next_entity_configuration() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = Pharos::start(&db).await;
        let (s, _) = p
            .admin(
                Method::PUT,
                "/entity-configuration/metadata/federation_entity",
                Some(json!({"organization_name": "Pharos Test", "homepage_uri": "https://example.org", "contacts": ["ops@example.org"]})),
            )
            .await;
        assert_eq!(s, 200);
        let (s, _) = p
            .admin(
                Method::POST,
                "/entity-configuration/authority-hints",
                Some(json!({"entity_id": "https://ta.example.org"})),
            )
            .await;
        assert_eq!(s, 201);
        let (s, _) = p
            .admin(
                Method::POST,
                "/entity-configuration/additional-claims",
                Some(json!({"claim": "x_note", "value": {"a": 1}, "crit": true})),
            )
            .await;
        assert_eq!(s, 201);
        let (s, v) = p
            .admin_raw(Method::PUT, "/entity-configuration/lifetime", Some("3600"))
            .await;
        assert_eq!((s, v), (200, json!(3600)));

        let ec = p.entity_configuration().await;
        let fe = &ec.claims["metadata"]["federation_entity"];
        assert_eq!(fe["organization_name"], "Pharos Test");
        assert_eq!(
            ec.claims["authority_hints"],
            json!(["https://ta.example.org"])
        );
        assert_eq!(ec.claims["x_note"], json!({"a": 1}));
        assert_eq!(ec.claims["crit"], json!(["x_note"]));
        assert_eq!(
            ec.claims["exp"].as_i64().unwrap() - ec.claims["iat"].as_i64().unwrap(),
            3600
        );
        // The unsigned preview agrees with what is signed.
        let (s, preview) = p.admin(Method::GET, "/entity-configuration", None).await;
        assert_eq!(s, 200);
        assert_eq!(preview["metadata"], ec.claims["metadata"]);
        p.stop().await;
    }
}

/// Every algorithm an operator can configure signs a verifiable Entity Configuration.
#[tokio::test]
async fn each_configured_algorithm_signs_a_verifiable_entity_configuration() {
    for alg in ["ES256", "ES384", "ES512", "PS256", "RS256", "EdDSA"] {
        let db = TestDb::new(crate::support::Backend::Sqlite).await;
        let p = Pharos::start_with(
            &db,
            |s| s.signing.alg = alg.parse().unwrap(),
            std::sync::Arc::new(pharos_shared::time::SystemClock),
        )
        .await;
        let ec = p.entity_configuration().await;
        assert_eq!(ec.header["alg"], alg);
        let kid = ec.header["kid"].as_str().unwrap().to_string();
        let jwk = ec.claims["jwks"]["keys"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["kid"] == kid.as_str())
            .unwrap()
            .as_object()
            .unwrap()
            .clone();
        // kid is the RFC 7638 thumbprint of the published key.
        assert_eq!(pharos_shared::jose::thumbprint(&jwk).unwrap(), kid, "{alg}");
        p.stop().await;
    }
}
