//! Entities that must not enroll (issue 15, acceptance 4) and a burst of enrollments of one
//! entity (acceptance 5). The entities are small HTTP servers on loopback serving an Entity
//! Configuration made by the test: its signature broken, served with the wrong media type,
//! or about another entity. Both endpoints refuse each with `400 invalid_request` and store
//! nothing; 20 simultaneous enrollments of a good one cost one fetch, one row, one event.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::http::header;
use base64::Engine as _;
use pharos_shared::jose::{self, Algorithm, Signer as _, SigningKey};
use serde_json::{Value, json};
use tokio::net::TcpListener;

use crate::enroll::{ask, event_count, history, rows, statement};
use crate::fetch_list::enable;
use crate::support::{Pharos, TestDb, backends};

/// What a fake entity serves at its configuration's address.
#[derive(Clone)]
struct Served {
    content_type: &'static str,
    body: String,
}

/// A fake entity on loopback; counts the fetches of its configuration.
struct Entity {
    id: String,
    fetches: Arc<AtomicUsize>,
}

impl Entity {
    /// Serves what `make` builds for its own entity identifier, after `delay`.
    async fn start(delay: Duration, make: impl FnOnce(&str) -> Served) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let id = format!("http://{}", listener.local_addr().unwrap());
        let served = make(&id);
        let fetches = Arc::new(AtomicUsize::new(0));
        let count = fetches.clone();
        let app = axum::Router::new().route(
            "/.well-known/openid-federation",
            axum::routing::get(move || {
                let (served, count) = (served.clone(), count.clone());
                async move {
                    count.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(delay).await;
                    ([(header::CONTENT_TYPE, served.content_type)], served.body)
                }
            }),
        );
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self { id, fetches }
    }
}

const MEDIA_TYPE: &str = "application/entity-statement+jwt";

/// An Entity Configuration of `about` (iss = sub) naming `superior` in its
/// `authority_hints`, listing and signed with `key`.
fn configuration(key: &SigningKey, about: &str, superior: &str) -> String {
    let metadata = json!({"openid_relying_party": {"client_name": "fake"}});
    configuration_with(key, about, superior, metadata)
}

/// [`configuration`] with `metadata`.
fn configuration_with(key: &SigningKey, about: &str, superior: &str, metadata: Value) -> String {
    let now = pharos_shared::time::Clock::now(&pharos_shared::time::SystemClock);
    let claims = json!({"iss": about, "sub": about, "iat": now, "exp": now + 3600,
        "jwks": {"keys": [key.public_jwk()]}, "authority_hints": [superior],
        "metadata": metadata});
    jose::sign(
        key,
        "entity-statement+jwt",
        claims.as_object().unwrap(),
        None,
    )
    .unwrap()
}

fn key() -> SigningKey {
    SigningKey::generate(Algorithm::ES256, 0).unwrap()
}

/// The three faults of acceptance 4, and a wallet profile fault, each with what its description
/// must mention.
async fn faulty_entities(sup: &str) -> Vec<(Entity, &'static str)> {
    let broken = Entity::start(Duration::ZERO, |id| {
        let jws = configuration(&key(), id, sup);
        // The same signature with one bit flipped: well-formed, and wrong.
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let (input, sig) = jws.rsplit_once('.').unwrap();
        let mut sig = b64.decode(sig).unwrap();
        sig[10] ^= 1;
        Served {
            content_type: MEDIA_TYPE,
            body: format!("{input}.{}", b64.encode(sig)),
        }
    })
    .await;
    let wrong_type = Entity::start(Duration::ZERO, |id| Served {
        content_type: "application/jwt",
        body: configuration(&key(), id, sup),
    })
    .await;
    let other_sub = Entity::start(Duration::ZERO, |_| Served {
        content_type: MEDIA_TYPE,
        body: configuration(&key(), "https://someone-else.example", sup),
    })
    .await;
    // A Credential Issuer naming another issuer (Wallet Architectures §6.2.1).
    let impostor = Entity::start(Duration::ZERO, |id| Served {
        content_type: MEDIA_TYPE,
        body: configuration_with(
            &key(),
            id,
            sup,
            json!({"openid_credential_issuer": {"credential_issuer": "https://pid.example"}}),
        ),
    })
    .await;
    vec![
        (broken, "signature"),
        (wrong_type, "content type"),
        (other_sub, "self-issued"),
        (impostor, "credential_issuer"),
    ]
}

#[tokio::test]
async fn both_endpoints_refuse_bad_configurations_and_store_nothing() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let sup = Pharos::start(&db).await;
        enable(&sup, "fetch", "/fetch", json!({})).await;
        enable(&sup, "enroll", "/enroll", json!({})).await;
        enable(&sup, "enroll_request", "/enroll-request", json!({})).await;
        let entities = faulty_entities(sup.entity_id()).await;
        for (e, mentions) in &entities {
            for path in ["/enroll", "/enroll-request"] {
                let a = ask(&sup, path, &e.id, &[]).await;
                assert_eq!(a.error(), (400, "invalid_request".into()), "{b:?} {path}");
                let d = a.json()["error_description"].as_str().unwrap().to_owned();
                assert!(
                    d.contains("entity configuration") && d.contains(mentions),
                    "{path} {mentions}: {d}"
                );
            }
            assert_eq!(e.fetches.load(Ordering::SeqCst), 2, "{mentions}");
        }
        // Requests that are wrong in themselves never reach an entity.
        for query in ["", "?sub=not-a-url", "?sub=https%3A%2F%2Fa%3Fq%3D1"] {
            let r = sup.get(&format!("/enroll{query}")).await;
            assert_eq!(r.status(), 400, "{query}");
            let v: Value = r.json().await.unwrap();
            assert_eq!(v["error"], "invalid_request");
        }
        let own = ask(&sup, "/enroll", sup.entity_id(), &[]).await;
        assert_eq!(own.error(), (400, "invalid_request".into()));

        assert!(rows(&db).await.is_empty(), "{b:?}");
        assert_eq!(event_count(&db).await, 0);
        // The database says the same after a restart.
        let sup = sup.restart().await;
        assert!(rows(&db).await.is_empty());
        let (_, list) = sup.admin(reqwest::Method::GET, "/subordinates", None).await;
        assert_eq!(list, json!([]));
    }
}

#[tokio::test]
async fn twenty_simultaneous_enrollments_store_one_subordinate_and_one_event() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let sup = Arc::new(Pharos::start(&db).await);
        enable(&sup, "fetch", "/fetch", json!({})).await;
        enable(&sup, "enroll", "/enroll", json!({})).await;
        // Slow to answer, so the requests overlap while its configuration is fetched.
        let e = Entity::start(Duration::from_millis(300), |id| Served {
            content_type: MEDIA_TYPE,
            body: configuration(&key(), id, sup.entity_id()),
        })
        .await;
        let answers = futures_util::future::join_all((0..20).map(|_| {
            let (sup, id) = (sup.clone(), e.id.clone());
            tokio::spawn(async move { ask(&sup, "/enroll", &id, &[]).await })
        }))
        .await;
        for a in answers {
            let a = a.unwrap();
            statement(&sup, &a, &e.id).await;
        }
        assert_eq!(e.fetches.load(Ordering::SeqCst), 1, "{b:?}");
        assert_eq!(rows(&db).await, [(e.id.clone(), "active".to_owned())]);
        assert_eq!(event_count(&db).await, 1);
        let steps = history(&sup, &e.id).await;
        assert_eq!(
            steps,
            [("created".into(), "enroll endpoint".into(), "active".into())]
        );
    }
}

#[tokio::test]
async fn enroll_and_enroll_request_racing_for_one_entity_store_it_once() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let sup = Arc::new(Pharos::start(&db).await);
        enable(&sup, "fetch", "/fetch", json!({})).await;
        enable(&sup, "enroll", "/enroll", json!({})).await;
        enable(&sup, "enroll_request", "/enroll-request", json!({})).await;
        let e = Entity::start(Duration::from_millis(300), |id| Served {
            content_type: MEDIA_TYPE,
            body: configuration(&key(), id, sup.entity_id()),
        })
        .await;
        // Two flights (one per endpoint), each fetching and checking on its own; the writer
        // lock orders their writes and the second finds the row the first stored.
        let answers = futures_util::future::join_all((0..20).map(|n| {
            let (sup, id) = (sup.clone(), e.id.clone());
            let path = if n % 2 == 0 {
                "/enroll"
            } else {
                "/enroll-request"
            };
            tokio::spawn(async move { (path, ask(&sup, path, &id, &[]).await.status) })
        }))
        .await;
        let stored = rows(&db).await;
        assert_eq!(stored.len(), 1, "{b:?} {stored:?}");
        let active = stored[0].1 == "active";
        assert!(active || stored[0].1 == "pending", "{stored:?}");
        for a in answers {
            let (path, status) = a.unwrap();
            let expected = match (path, active) {
                ("/enroll", true) => 201,
                ("/enroll", false) | ("/enroll-request", false) => 202,
                _ => 204,
            };
            assert_eq!(status, expected, "{path} with the entity {}", stored[0].1);
        }
        assert_eq!(event_count(&db).await, 1);
        assert!(e.fetches.load(Ordering::SeqCst) <= 2);
    }
}
