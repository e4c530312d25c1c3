//! Everything set through the Admin API survives a restart.

use crate::support::{Pharos, TestDb, backends, enc};
use reqwest::Method;
use serde_json::json;

#[tokio::test]
async fn admin_state_survives_restart() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = Pharos::start(&db).await;
        let ta_id = "https://ta.example.org";
        let ta = json!({"entity_id": ta_id, "enable_jwks_update": true, "key_poll_interval": 120});
        assert_eq!(
            p.admin(Method::POST, "/trust-anchors", Some(ta)).await.0,
            201,
            "{b:?}"
        );
        let ep = json!({"type": "resolve", "path": "/resolve", "config": "{\"grace_period\": 60}",
            "auth_enabled": true, "auth_trust_anchors": [ta_id]});
        assert_eq!(
            p.admin(Method::POST, "/federation-endpoints", Some(ep))
                .await
                .0,
            201
        );
        assert_eq!(
            p.admin(
                Method::PUT,
                "/entity-configuration/metadata",
                Some(json!({"federation_entity": {"organization_name": "Org"}}))
            )
            .await
            .0,
            200
        );
        assert_eq!(
            p.admin(
                Method::POST,
                "/entity-configuration/authority-hints",
                Some(json!({"entity_id": "https://sup.example.org", "description": "parent"}))
            )
            .await
            .0,
            201
        );
        assert_eq!(
            p.admin(Method::PUT, "/entity-configuration/additional-claims", Some(json!([{"claim": "x_a", "value": 1}, {"claim": "x_b", "value": "b", "crit": true}]))).await.0,
            200
        );
        assert_eq!(
            p.admin_raw(Method::PUT, "/entity-configuration/lifetime", Some("7200"))
                .await
                .0,
            200
        );
        let before = p.entity_configuration().await;
        let (_, endpoints_before) = p.admin(Method::GET, "/federation-endpoints", None).await;

        let p = p.restart().await;
        let after = p.entity_configuration().await;
        assert_eq!(
            after.header["kid"], before.header["kid"],
            "same signing key"
        );
        assert_eq!(after.claims["jwks"], before.claims["jwks"]);
        assert_eq!(after.claims["metadata"], before.claims["metadata"]);
        assert_eq!(
            after.claims["authority_hints"],
            json!(["https://sup.example.org"])
        );
        assert_eq!(after.claims["x_a"], 1);
        assert_eq!(after.claims["crit"], json!(["x_b"]));
        assert_eq!(
            after.claims["exp"].as_i64().unwrap() - after.claims["iat"].as_i64().unwrap(),
            7200
        );
        let (_, endpoints_after) = p.admin(Method::GET, "/federation-endpoints", None).await;
        assert_eq!(endpoints_after, endpoints_before);
        assert_eq!(endpoints_after[0]["config"]["grace_period"], 60);
        let (s, ta) = p
            .admin(Method::GET, &format!("/trust-anchors/{}", enc(ta_id)), None)
            .await;
        assert_eq!(s, 200);
        assert_eq!(ta["key_poll_interval"], 120);
        assert_eq!(ta["enable_jwks_update"], true);
        p.stop().await;
    }
}
