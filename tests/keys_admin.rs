//! Admin API of the signing keys: rotation policy, `/kms`, scheduled algorithm change, and
//! API-managed public keys (including the rotate route the reference service gets wrong).

use pharos_shared::jose::{Algorithm, Signer, SigningKey};
use reqwest::Method;
use serde_json::{Value, json};

use crate::keys::{H, T0, find, historical, kids, start, tick};
use crate::support::{TestDb, backends};

fn public_jwk() -> Value {
    let k = SigningKey::generate(Algorithm::ES256, 0).unwrap();
    let mut jwk = k.public_jwk().clone();
    jwk.remove("kid");
    Value::Object(jwk)
}

#[tokio::test]
async fn rotation_policy_is_served_at_both_paths_with_duration_strings() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let (p, _clock) = start(&db).await;
        let (s, v) = p.admin(Method::GET, "/keys/rotation", None).await;
        assert_eq!(s, 200);
        assert_eq!(
            v,
            json!({"enabled": false, "interval": 600000, "overlap": 3600,
                   "key_announcement_lead_time": 0,
                   "key_announcement_lead_time_ec_multiplier": 0.0})
        );
        let (s, v) = p
            .admin(
                Method::PUT,
                "/kms/rotation",
                Some(json!({"interval": "168h", "overlap": 7200})),
            )
            .await;
        assert_eq!(s, 200, "{b:?} {v}");
        assert_eq!(v["interval"], 604_800);
        assert_eq!(v["key_announcement_lead_time"], 0);
        let (s, v) = p
            .admin(
                Method::PATCH,
                "/keys/rotation",
                Some(json!({"key_announcement_lead_time": "2d", "key_announcement_lead_time_ec_multiplier": 1.5})),
            )
            .await;
        assert_eq!(s, 200, "{v}");
        assert_eq!(v["interval"], 604_800, "PATCH keeps other fields");
        assert_eq!(v["key_announcement_lead_time"], 172_800);
        let (_, again) = p.admin(Method::GET, "/kms/rotation", None).await;
        assert_eq!(again, v);
        let (_, kms) = p.admin(Method::GET, "/kms", None).await;
        assert_eq!(kms["kms"], "db");
        assert_eq!(kms["alg"], "ES256");
        assert_eq!(kms["rsa_key_len"], 2048);
        assert_eq!(kms["rotation"], v);
        for bad in [
            json!({"interval": "soon"}),
            json!({"interval": "1h", "overlap": "2h"}),
            json!({"overlap": -5}),
            json!({"key_announcement_lead_time_ec_multiplier": -1}),
            json!({"intervall": 5}),
        ] {
            let (s, e) = p
                .admin(Method::PATCH, "/keys/rotation", Some(bad.clone()))
                .await;
            assert_eq!(s, 400, "{bad}");
            assert_eq!(e["error"], "invalid_request");
        }
        p.stop().await;
    }
}

#[tokio::test]
async fn algorithm_change_is_announced_a_lead_time_ahead() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let (p, clock) = start(&db).await;
        let k0 = p.entity_configuration().await.header["kid"]
            .as_str()
            .unwrap()
            .to_string();
        let (s, _) = p.admin_raw(Method::PUT, "/kms/alg", Some("HS256")).await;
        assert_eq!(s, 400);
        let (s, v) = p.admin_raw(Method::PUT, "/kms/alg", Some("ES384")).await;
        assert_eq!(s, 200, "{b:?} {v}");
        // Default lead time with a 24 h EC lifetime: max(5 × 24 h, 24 h).
        let at = T0 + 5 * 86_400;
        assert_eq!(v["pending_alg"], "ES384");
        assert_eq!(v["alg_change_at"], at);
        assert_eq!(v["alg"], "ES256");

        let ec = p.entity_configuration().await;
        assert_eq!(ec.header["alg"], "ES256");
        let keys = &ec.claims["jwks"]["keys"];
        let new = keys
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["alg"] == "ES384")
            .unwrap();
        assert_eq!(new["nbf"], at);
        assert_eq!(find(keys, &k0).unwrap()["exp"], at + H);

        tick(&p, &clock, at - 1).await;
        assert_eq!(p.entity_configuration().await.header["alg"], "ES256");
        tick(&p, &clock, at).await;
        let ec = p.entity_configuration().await;
        assert_eq!(ec.header["alg"], "ES384", "{b:?}");
        assert_eq!(ec.header["kid"], new["kid"]);
        let (_, kms) = p.admin(Method::GET, "/kms", None).await;
        assert_eq!(kms["alg"], "ES384");
        assert!(kms.get("pending_alg").is_none(), "{kms}");
        tick(&p, &clock, at + H).await;
        assert!(!kids(&p.entity_configuration().await).contains(&k0));
        p.stop().await;
    }
}

/// Issue 35, acceptance 3: moving from ES256 to ML-DSA-65 with a lead time (injected clock). The
/// ML-DSA key is published in `jwks` (an `AKP` key with `pub`) before it signs; at the switch
/// it signs the Entity Configuration (verified with the published keys); the ES256 key keeps
/// verifying for the overlap and then moves to the historical keys, signed by the new key.
#[tokio::test]
async fn a_move_from_es256_to_ml_dsa_65_publishes_first_then_signs() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let (p, clock) = start(&db).await;
        let k0 = p.entity_configuration().await.header["kid"]
            .as_str()
            .unwrap()
            .to_string();
        let (s, v) = p
            .admin_raw(Method::PUT, "/kms/alg", Some("ML-DSA-65"))
            .await;
        assert_eq!(s, 200, "{b:?} {v}");
        let at = T0 + 5 * 86_400;
        assert_eq!(
            (&v["pending_alg"], &v["alg_change_at"]),
            (&json!("ML-DSA-65"), &json!(at))
        );

        // Published now, not signing yet.
        let ec = p.entity_configuration().await;
        assert_eq!(ec.header["alg"], "ES256");
        let keys = ec.claims["jwks"]["keys"].clone();
        let new = keys
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["alg"] == "ML-DSA-65")
            .unwrap()
            .clone();
        assert_eq!(new["kty"], "AKP");
        assert_eq!(
            new["pub"].as_str().unwrap().len(),
            2603,
            "1,952 bytes in base64url"
        );
        assert_eq!(new["nbf"], at);
        tick(&p, &clock, at - 1).await;
        assert_eq!(p.entity_configuration().await.header["alg"], "ES256");

        // The switch: the ML-DSA key signs; the ES256 key verifies until the overlap ends.
        tick(&p, &clock, at).await;
        let ec = p.entity_configuration().await;
        assert_eq!(
            (&ec.header["alg"], &ec.header["kid"]),
            (&json!("ML-DSA-65"), &new["kid"]),
            "{b:?}"
        );
        assert!(kids(&ec).contains(&k0));
        tick(&p, &clock, at + H).await;
        let ec = p.entity_configuration().await;
        assert!(!kids(&ec).contains(&k0));
        let h = historical(&p).await;
        assert_eq!(h.header["alg"], "ML-DSA-65");
        let old = find(&h.claims["keys"], &k0).unwrap();
        assert_eq!(
            (&old["alg"], &old["exp"]),
            (&json!("ES256"), &json!(at + H))
        );
        p.stop().await;
    }
}

/// Reference §13 item 6: rotating an API-managed key must find the old key and publish the new
/// one (lighthouse wrote to a different key store).
#[tokio::test]
async fn api_managed_keys_are_published_rotated_and_revoked() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let (p, clock) = start(&db).await;
        let (s, a) = p
            .admin(
                Method::POST,
                "/entity-configuration/keys",
                Some(json!({"key": public_jwk()})),
            )
            .await;
        assert_eq!(s, 201, "{b:?} {a}");
        let ka = a["kid"].as_str().unwrap().to_string();
        assert_eq!(ka.len(), 43, "kid defaults to the thumbprint");
        assert!(kids(&p.entity_configuration().await).contains(&ka));
        let (s, _) = p
            .admin(
                Method::POST,
                "/entity-configuration/keys",
                Some(json!({"key": a["key"]})),
            )
            .await;
        assert_eq!(s, 409);
        let mut other = public_jwk();
        other["kid"] = json!("x");
        let (s, _) = p
            .admin(
                Method::POST,
                "/entity-configuration/keys",
                Some(json!({"kid": "y", "key": other})),
            )
            .await;
        assert_eq!(s, 400, "kid mismatch");
        let mut private = public_jwk();
        private["d"] = json!("AAAA");
        let (s, _) = p
            .admin(
                Method::POST,
                "/entity-configuration/keys",
                Some(json!({"key": private})),
            )
            .await;
        assert_eq!(s, 400, "private key material");

        // Rotate: the new key is published, the old one ends nbf + overlap later.
        let nbf = T0 + 100;
        let (s, n) = p
            .admin(
                Method::POST,
                &format!("/entity-configuration/keys/{ka}"),
                Some(json!({"key": public_jwk(), "nbf": nbf})),
            )
            .await;
        assert_eq!(s, 201, "{n}");
        let kb = n["kid"].as_str().unwrap().to_string();
        let ec = p.entity_configuration().await;
        assert!(kids(&ec).contains(&kb) && kids(&ec).contains(&ka), "{b:?}");
        assert_eq!(
            find(&ec.claims["jwks"]["keys"], &ka).unwrap()["exp"],
            nbf + H
        );
        let (s, _) = p
            .admin(
                Method::POST,
                "/entity-configuration/keys/nope",
                Some(json!({"key": public_jwk()})),
            )
            .await;
        assert_eq!(s, 404);
        let (s, _) = p
            .admin(
                Method::PUT,
                "/entity-configuration/keys/nope",
                Some(json!({"exp": 5})),
            )
            .await;
        assert_eq!(s, 404);

        // Past the old key's end it moves to the historical keys.
        tick(&p, &clock, nbf + H).await;
        assert!(!kids(&p.entity_configuration().await).contains(&ka));
        let h = historical(&p).await;
        assert_eq!(find(&h.claims["keys"], &ka).unwrap()["exp"], nbf + H);

        let (s, _) = p
            .admin(
                Method::DELETE,
                &format!("/entity-configuration/keys/{kb}?revoke=true&reason=superseded"),
                None,
            )
            .await;
        assert_eq!(s, 204);
        let h = historical(&p).await;
        let revoked = find(&h.claims["keys"], &kb).unwrap();
        assert_eq!(revoked["revoked"]["reason"], "superseded");
        assert!(revoked["exp"].is_i64(), "historical keys always carry exp");
        let (_, list) = p
            .admin(Method::GET, "/entity-configuration/keys", None)
            .await;
        assert_eq!(list.as_array().unwrap().len(), 2);
        let (s, _) = p
            .admin(Method::DELETE, "/entity-configuration/keys/nope", None)
            .await;
        assert_eq!(s, 204);
        let (s, _) = p
            .admin(
                Method::DELETE,
                &format!("/entity-configuration/keys/{ka}"),
                None,
            )
            .await;
        assert_eq!(s, 204);
        let (_, list) = p
            .admin(Method::GET, "/entity-configuration/keys", None)
            .await;
        assert_eq!(list.as_array().unwrap().len(), 1);
        p.stop().await;
    }
}
