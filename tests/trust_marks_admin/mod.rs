//! Admin API of the Trust Mark Issuer (issue 14): types with owner and issuers, global owners
//! and issuers, issuance specs (lifetimes, extra claims, eligibility, delegation checked when
//! stored), subjects with status and extra claims, and the history with its actors, on every
//! database. Refused input leaves nothing stored.

use std::sync::Arc;

use pharos_shared::jose::{Algorithm, Signer, SigningKey};
use pharos_shared::time::SystemClock;
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{Pharos, TestDb, content_type};

mod specs;
mod subjects;
mod types;

pub const T: &str = "https://tm.example/certified";
pub const OWNER: &str = "https://owner.example";
pub const ISS1: &str = "https://tmi1.example";
pub const ISS2: &str = "https://tmi2.example";
pub const LEAF: &str = "https://leaf.example/a";
pub const LEAF2: &str = "https://leaf2.example";

/// An admin call with an `X-Actor` header and a raw body.
pub async fn as_actor(p: &Pharos, m: Method, path: &str, body: &str, actor: &str) -> (u16, Value) {
    let r = p
        .client
        .request(m, p.url(&format!("/api/v1/admin{path}")))
        .header("X-Actor", actor)
        .header("content-type", content_type(body))
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let s = r.status().as_u16();
    (s, r.json().await.unwrap_or(Value::Null))
}

pub fn key() -> SigningKey {
    SigningKey::generate(Algorithm::ES256, 2048).unwrap()
}

pub fn jwks(k: &SigningKey) -> Value {
    json!({"keys": [k.public_jwk()]})
}

pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

pub async fn start(db: &TestDb) -> Pharos {
    Pharos::start_with(db, |s| s.server.body_limit = 8192, Arc::new(SystemClock)).await
}

pub async fn create_type(p: &Pharos, body: Value) -> Value {
    let (s, v) = p
        .admin(Method::POST, "/trust-marks/types", Some(body))
        .await;
    assert_eq!(s, 201, "{v}");
    v
}
