//! Client authentication, continued: replay across a restart with the db store, clients
//! outside the trusted federation, wrong keys, and trust anchor key changes applying at once.

use pharos_shared::config::JtiBackend;
use pharos_shared::jose::{Algorithm, Signer, SigningKey};
use reqwest::Method;
use serde_json::json;

use crate::client_auth::{
    Federation, assertion, call, claims, each, error, rejected, server, signer,
};
use crate::support::{Pharos, TestDb, backends, enc, eventually};

#[tokio::test]
async fn a_replayed_jti_is_rejected_after_a_restart_with_the_db_store() {
    for b in backends() {
        let (db_t, db_c, db_s) = (
            TestDb::new(b).await,
            TestDb::new(b).await,
            TestDb::new(b).await,
        );
        let f = Federation::start(&db_t, &db_c).await;
        let s = server(&db_s, &f.ta, JtiBackend::Db).await;
        let c = claims(f.client.entity_id(), s.entity_id(), |_| {});
        let a = assertion(signer(&f.client).as_ref(), &c);
        assert_eq!(call(&s, "/list", &a, &[]).await.0, 200);
        let s = s.restart().await;
        let (st, body) = call(&s, "/list", &a, &[]).await;
        assert_eq!(
            (st, error(&body).as_str()),
            (401, "invalid_client"),
            "{b:?} {body}"
        );
        // A fresh jti still passes.
        let c = claims(f.client.entity_id(), s.entity_id(), |_| {});
        assert_eq!(
            call(&s, "/list", &assertion(signer(&f.client).as_ref(), &c), &[])
                .await
                .0,
            200
        );
        s.stop().await;
        f.stop().await;
    }
}

#[tokio::test]
async fn an_unknown_client_is_rejected() {
    each(async |_, s| {
        let key = SigningKey::generate(Algorithm::ES256, 2048).unwrap();
        let c = claims("http://127.0.0.1:9", s.entity_id(), |_| {});
        let (st, body) = call(s, "/list", &assertion(&key, &c), &[]).await;
        assert_eq!(
            (st, error(&body).as_str()),
            (401, "invalid_client"),
            "{body}"
        );
    })
    .await;
}

#[tokio::test]
async fn a_client_of_another_federation_is_rejected() {
    each(async |_, s| {
        let b = crate::support::backends()[0];
        let (db_t, db_c) = (TestDb::new(b).await, TestDb::new(b).await);
        let other = Federation::start(&db_t, &db_c).await;
        let c = claims(other.client.entity_id(), s.entity_id(), |_| {});
        let (st, body) = call(
            s,
            "/list",
            &assertion(signer(&other.client).as_ref(), &c),
            &[],
        )
        .await;
        assert_eq!(
            (st, error(&body).as_str()),
            (401, "invalid_client"),
            "{body}"
        );
        assert!(body.contains("not a member"), "{body}");
        other.stop().await;
    })
    .await;
}

#[tokio::test]
async fn an_assertion_signed_with_a_wrong_key_is_rejected() {
    each(async |f, s| {
        let key = SigningKey::generate(Algorithm::ES256, 2048).unwrap();
        let c = claims(f.client.entity_id(), s.entity_id(), |_| {});
        let (st, body) = call(s, "/list", &assertion(&key, &c), &[]).await;
        assert_eq!(
            (st, error(&body).as_str()),
            (401, "invalid_client"),
            "{body}"
        );
        assert!(body.contains("signature"), "{body}");
    })
    .await;
}

async fn set_anchor_keys(s: &Pharos, ta: &str, jwks: serde_json::Value) {
    let body = json!({"entity_id": ta, "jwks": jwks});
    let path = format!("/trust-anchors/{}", enc(ta));
    let (st, v) = s.admin(Method::PUT, &path, Some(body)).await;
    assert_eq!(st, 200, "{v}");
}

#[tokio::test]
async fn a_trust_anchor_key_change_applies_to_the_very_next_request() {
    each(async |f, s| {
        let ta = f.ta.entity_id();
        let good = f.ta.entity_configuration().await.claims["jwks"].clone();
        let wrong =
            json!({"keys": [SigningKey::generate(Algorithm::ES256, 2048).unwrap().public_jwk()]});
        let fresh = || {
            assertion(
                signer(&f.client).as_ref(),
                &claims(f.client.entity_id(), s.entity_id(), |_| {}),
            )
        };
        assert_eq!(call(s, "/list", &fresh(), &[]).await.0, 200);
        set_anchor_keys(s, ta, wrong).await;
        let (st, body) = call(s, "/list", &fresh(), &[]).await;
        assert_eq!(
            (st, error(&body).as_str()),
            (401, "invalid_client"),
            "{body}"
        );
        set_anchor_keys(s, ta, good).await;
        assert_eq!(call(s, "/list", &fresh(), &[]).await.0, 200);
    })
    .await;
}

#[tokio::test]
async fn an_authenticated_trigger_targets_the_client_itself() {
    each(async |f, s| {
        let client = f.client.entity_id();
        let jwks = f.client.entity_configuration().await.claims["jwks"].clone();
        let body = json!({"entity_id": client, "status": "active", "jwks": jwks});
        assert_eq!(
            s.admin(Method::POST, "/subordinates", Some(body)).await.0,
            201
        );
        let body = json!({"type": "jwks_update_trigger", "path": "/jwks-trigger",
            "auth_enabled": true, "auth_trust_anchors": [f.ta.entity_id()]});
        let (st, v) = s
            .admin(Method::POST, "/federation-endpoints", Some(body))
            .await;
        assert_eq!(st, 201, "{v}");
        // A `sub` in the body is ignored: the target is the authenticated client.
        let c = claims(client, s.entity_id(), |_| {});
        let a = assertion(signer(&f.client).as_ref(), &c);
        let (st, body) = call(s, "/jwks-trigger", &a, &[("sub", "https://x.example")]).await;
        assert_eq!(st, 200, "{body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v, json!({"sub": client, "changed": false}));
        let path = format!("/subordinates/{}/history", enc(client));
        let (_, h) = s.admin(Method::GET, &path, None).await;
        assert_eq!(h["events"][0]["type"], "jwks_update_triggered");
        assert_eq!(h["events"][0]["actor"], client);
    })
    .await;
}

#[tokio::test]
async fn an_anchor_added_through_the_admin_api_is_seeded_and_trusted_without_restart() {
    for b in backends() {
        let (db_t, db_c, db_s) = (
            TestDb::new(b).await,
            TestDb::new(b).await,
            TestDb::new(b).await,
        );
        let f = Federation::start(&db_t, &db_c).await;
        let s = Pharos::start(&db_s).await;
        let ta = f.ta.entity_id();
        let body = json!({"entity_id": ta, "enable_jwks_update": true, "key_poll_interval": 3600});
        let (st, v) = s.admin(Method::POST, "/trust-anchors", Some(body)).await;
        assert_eq!(st, 201, "{v}");
        let body = json!({"type": "list", "path": "/list", "auth_enabled": true,
            "auth_trust_anchors": [ta]});
        assert_eq!(
            s.admin(Method::POST, "/federation-endpoints", Some(body))
                .await
                .0,
            201
        );
        // The running refresher seeds the keys. A tick is driven here to make it prompt, but
        // the refresher's own task may have taken the poll first: the test waits for the
        // outcome, not for either tick.
        let app = s.app.as_ref().unwrap();
        app.refreshers.tick(app.control.now()).await;
        let seeded_in = || async {
            app.control.snapshot().trust_anchors.by_id[ta]
                .jwks
                .is_some()
        };
        eventually("the anchor's keys are seeded", seeded_in).await;
        let snap = app.control.snapshot();
        let seeded = snap.trust_anchors.by_id[ta].jwks.clone().unwrap();
        let published = f.ta.entity_configuration().await.claims["jwks"].clone();
        assert_eq!(serde_json::to_value(&seeded).unwrap(), published);
        let c = claims(f.client.entity_id(), s.entity_id(), |_| {});
        let (st, body) = call(&s, "/list", &assertion(signer(&f.client).as_ref(), &c), &[]).await;
        assert_eq!(st, 200, "{body}");
        s.stop().await;
        f.stop().await;
    }
}

#[tokio::test]
async fn missing_exp_or_jti_is_a_bad_request() {
    each(async |f, s| {
        rejected(
            f,
            s,
            |c| drop(c.as_object_mut().unwrap().remove("exp")),
            400,
            "invalid_request",
        )
        .await;
        rejected(
            f,
            s,
            |c| drop(c.as_object_mut().unwrap().remove("jti")),
            400,
            "invalid_request",
        )
        .await;
    })
    .await;
}

/// An assertion that does not verify with the keys the client's own Entity Configuration
/// publishes is refused before any trust chain is resolved: the superior its authority_hints
/// name is never contacted. A well-signed assertion of the same client does walk up to it
/// (which is how the test knows it would see the contact).
#[tokio::test]
async fn a_forged_assertion_is_refused_before_the_federation_is_walked() {
    let contacts = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let superior = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let superior_id = format!("http://{}", superior.local_addr().unwrap());
    let seen = contacts.clone();
    tokio::spawn(async move {
        while let Ok((sock, _)) = superior.accept().await {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            drop(sock);
        }
    });
    each(async |f, s| {
        contacts.store(0, std::sync::atomic::Ordering::SeqCst);
        // A second client whose only superior is the counting listener.
        let db = TestDb::new(crate::support::Backend::Sqlite).await;
        let stranger = Pharos::start(&db).await;
        let (st, v) = stranger
            .admin(
                Method::POST,
                "/entity-configuration/authority-hints",
                Some(json!({"entity_id": superior_id})),
            )
            .await;
        assert_eq!(st, 201, "{v}");
        let forged = SigningKey::generate(Algorithm::ES256, 2048).unwrap();
        let c = claims(stranger.entity_id(), s.entity_id(), |_| {});
        let (st, body) = call(s, "/list", &assertion(&forged, &c), &[]).await;
        assert_eq!(
            (st, error(&body).as_str()),
            (401, "invalid_client"),
            "{body}"
        );
        assert!(body.contains("signature"), "{body}");
        assert_eq!(contacts.load(std::sync::atomic::Ordering::SeqCst), 0);
        // Correctly signed: the chain is walked (and fails at the silent superior).
        let c = claims(stranger.entity_id(), s.entity_id(), |_| {});
        let (st, body) = call(s, "/list", &assertion(signer(&stranger).as_ref(), &c), &[]).await;
        assert_eq!(
            (st, error(&body).as_str()),
            (401, "invalid_client"),
            "{body}"
        );
        assert!(contacts.load(std::sync::atomic::Ordering::SeqCst) > 0);
        // A client of the trusted federation still passes.
        let c = claims(f.client.entity_id(), s.entity_id(), |_| {});
        assert_eq!(
            call(s, "/list", &assertion(signer(&f.client).as_ref(), &c), &[])
                .await
                .0,
            200
        );
        stranger.stop().await;
    })
    .await;
}
