//! Types with their owner and issuers, global owners and issuers, and what the Entity
//! Configuration publishes of them.

use reqwest::Method;
use serde_json::json;

use super::*;
use crate::support::{backends, enc};

#[tokio::test]
async fn types_owners_and_issuers_and_the_entity_configuration() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = start(&db).await;
        let owner_key = key();
        let t = create_type(
            &p,
            json!({"trust_mark_type": T, "description": "certified",
                "trust_mark_owner": {"entity_id": OWNER, "jwks": jwks(&owner_key)},
                "trust_mark_issuers": [{"issuer": ISS1}, {"issuer": ISS2}, {"issuer": ISS1}]}),
        )
        .await;
        assert_eq!(t["owner"]["entity_id"], OWNER, "{b:?}");
        assert_eq!(t["issuers"].as_array().unwrap().len(), 2);
        let id = t["id"].as_i64().unwrap();

        // Refusals: duplicate, missing or numeric type, private owner key, bad issuer.
        let cases = [
            (json!({"trust_mark_type": T}), 409),
            (json!({"description": "x"}), 400),
            (json!({"trust_mark_type": "17"}), 400),
            (
                json!({"trust_mark_type": "https://t2", "trust_mark_owner": {"entity_id": OWNER,
                    "jwks": {"keys": [{"kty": "EC", "kid": "p", "d": "secret"}]}}}),
                400,
            ),
            (
                json!({"trust_mark_type": "https://t2", "trust_mark_issuers": [{"issuer": "not a url"}]}),
                400,
            ),
            (
                json!({"trust_mark_type": "https://t2", "trust_mark_owner": {"owner_id": 999}}),
                400,
            ),
        ];
        for (body, want) in cases {
            let (s, v) = p
                .admin(Method::POST, "/trust-marks/types", Some(body.clone()))
                .await;
            assert_eq!(
                (s, v["error"].as_str()),
                (want, Some("invalid_request")),
                "{body} → {v}"
            );
        }
        let (_, all) = p.admin(Method::GET, "/trust-marks/types", None).await;
        assert_eq!(all.as_array().unwrap().len(), 1, "nothing stored: {all}");

        // By id and by URL-encoded type.
        let (s, by_id) = p
            .admin(Method::GET, &format!("/trust-marks/types/{id}"), None)
            .await;
        assert_eq!(s, 200);
        let (_, by_name) = p
            .admin(Method::GET, &format!("/trust-marks/types/{}", enc(T)), None)
            .await;
        assert_eq!(by_id, by_name);

        // Published in the signed Entity Configuration.
        let ec = p.entity_configuration().await.claims;
        assert_eq!(ec["trust_mark_issuers"][T], json!([ISS1, ISS2]), "{b:?}");
        assert_eq!(ec["trust_mark_owners"][T]["sub"], OWNER);
        assert_eq!(ec["trust_mark_owners"][T]["jwks"], jwks(&owner_key));

        // Issuers of the type.
        let base = format!("/trust-marks/types/{}", enc(T));
        let (s, v) = p
            .admin(
                Method::POST,
                &format!("{base}/issuers"),
                Some(json!({"issuer": "https://tmi3.example"})),
            )
            .await;
        assert_eq!((s, v.as_array().unwrap().len()), (201, 3));
        let (s, _) = p
            .admin(
                Method::DELETE,
                &format!("{base}/issuers/{}", enc(ISS1)),
                None,
            )
            .await;
        assert_eq!(s, 204);
        let (_, v) = p.admin(Method::GET, &format!("{base}/issuers"), None).await;
        assert_eq!(v.as_array().unwrap().len(), 2);
        let (s, v) = p
            .admin(
                Method::PUT,
                &format!("{base}/issuers"),
                Some(json!([{"issuer": ISS1}])),
            )
            .await;
        assert_eq!((s, v[0]["issuer"].as_str()), (200, Some(ISS1)));
        let ec = p.entity_configuration().await.claims;
        assert_eq!(ec["trust_mark_issuers"][T], json!([ISS1]));

        // Owner of the type.
        let (s, o) = p.admin(Method::GET, &format!("{base}/owner"), None).await;
        assert_eq!((s, o["entity_id"].as_str()), (200, Some(OWNER)));
        let owner_id = o["id"].as_i64().unwrap();
        assert_eq!(
            p.admin(Method::DELETE, &format!("{base}/owner"), None)
                .await
                .0,
            204
        );
        assert_eq!(
            p.admin(Method::GET, &format!("{base}/owner"), None).await.0,
            404
        );
        assert!(
            p.entity_configuration()
                .await
                .claims
                .get("trust_mark_owners")
                .is_none()
        );
        let (s, _) = p
            .admin(
                Method::PUT,
                &format!("{base}/owner"),
                Some(json!({"owner_id": owner_id})),
            )
            .await;
        assert_eq!(s, 200);

        // Global owners.
        let (_, owners) = p.admin(Method::GET, "/trust-marks/owners", None).await;
        assert_eq!(owners[0]["types"][0]["trust_mark_type"], T, "{owners}");
        let k2 = key();
        let (s, o2) = p
            .admin(
                Method::POST,
                "/trust-marks/owners",
                Some(json!({"entity_id": "https://owner2.example", "jwks": jwks(&k2)})),
            )
            .await;
        assert_eq!(s, 201, "{o2}");
        let dup = json!({"entity_id": "https://owner2.example", "jwks": jwks(&k2)});
        assert_eq!(
            p.admin(Method::POST, "/trust-marks/owners", Some(dup))
                .await
                .0,
            409
        );
        let o2id = o2["id"].as_i64().unwrap();
        let (s, v) = p
            .admin_raw(
                Method::POST,
                &format!("/trust-marks/owners/{o2id}/types"),
                Some(&id.to_string()),
            )
            .await;
        assert_eq!((s, v[0]["trust_mark_type"].as_str()), (201, Some(T)));
        let (_, v) = p
            .admin(
                Method::GET,
                &format!("/trust-marks/owners/{}/types", enc(OWNER)),
                None,
            )
            .await;
        assert_eq!(v, json!([]));
        let ec = p.entity_configuration().await.claims;
        assert_eq!(ec["trust_mark_owners"][T]["sub"], "https://owner2.example");
        let (s, _) = p
            .admin(
                Method::DELETE,
                &format!("/trust-marks/owners/{o2id}/types/{}", enc(T)),
                None,
            )
            .await;
        assert_eq!(s, 204);
        assert_eq!(
            p.admin(Method::DELETE, &format!("/trust-marks/owners/{o2id}"), None)
                .await
                .0,
            204
        );
        assert_eq!(
            p.admin(Method::GET, &format!("/trust-marks/owners/{o2id}"), None)
                .await
                .0,
            404
        );

        // Global issuers.
        let (_, issuers) = p.admin(Method::GET, "/trust-marks/issuers", None).await;
        assert_eq!(issuers.as_array().unwrap().len(), 3, "{issuers}");
        let (s, v) = p
            .admin(
                Method::PUT,
                &format!("/trust-marks/issuers/{}/types", enc(ISS2)),
                Some(json!([T])),
            )
            .await;
        assert_eq!((s, v[0]["id"].as_i64()), (200, Some(id)));
        let (_, v) = p.admin(Method::GET, &format!("{base}/issuers"), None).await;
        assert_eq!(v.as_array().unwrap().len(), 2);
        assert_eq!(
            p.admin(
                Method::DELETE,
                &format!("/trust-marks/issuers/{}", enc(ISS1)),
                None
            )
            .await
            .0,
            204
        );
        let ec = p.entity_configuration().await.claims;
        assert_eq!(ec["trust_mark_issuers"][T], json!([ISS2]));

        // Deleting the type.
        assert_eq!(p.admin(Method::DELETE, &base, None).await.0, 204);
        assert_eq!(p.admin(Method::GET, &base, None).await.0, 404);
        assert!(
            p.entity_configuration()
                .await
                .claims
                .get("trust_mark_issuers")
                .is_none()
        );
        p.stop().await;
    }
}
