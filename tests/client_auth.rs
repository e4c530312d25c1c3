//! `private_key_jwt` client authentication against real federations on loopback: a trust
//! anchor, a client that is its subordinate, and a server whose endpoints require
//! authentication with the anchor in its trust anchor repository. One test per rejection.

use std::sync::Arc;

use crate::fetch_list::enable;
use crate::support::{Pharos, TestDb, backends};
use pharos_shared::config::JtiBackend;
use pharos_shared::jose::{self, Algorithm, Signer, SigningKey};
use reqwest::Method;
use serde_json::{Value, json};

const TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// A trust anchor and one client in its federation.
pub struct Federation {
    pub ta: Pharos,
    pub client: Pharos,
}

impl Federation {
    pub async fn start(db_t: &TestDb, db_c: &TestDb) -> Self {
        let ta = Pharos::start(db_t).await;
        let client = Pharos::start(db_c).await;
        enable(&ta, "fetch", "/fetch", json!({})).await;
        let body = json!({"entity_id": ta.entity_id()});
        let (s, v) = client
            .admin(
                Method::POST,
                "/entity-configuration/authority-hints",
                Some(body),
            )
            .await;
        assert_eq!(s, 201, "{v}");
        let jwks = client.entity_configuration().await.claims["jwks"].clone();
        let body = json!({"entity_id": client.entity_id(), "status": "active", "jwks": jwks});
        let (s, v) = ta.admin(Method::POST, "/subordinates", Some(body)).await;
        assert_eq!(s, 201, "{v}");
        Self { ta, client }
    }

    pub async fn stop(self) {
        self.client.stop().await;
        self.ta.stop().await;
    }
}

/// The signing key of a running Pharos.
pub fn signer(p: &Pharos) -> Arc<dyn Signer> {
    p.app
        .as_ref()
        .unwrap()
        .control
        .snapshot()
        .keys
        .signer
        .clone()
}

/// Standard claims of `client` for `server`; `f` adjusts them.
pub fn claims(client: &str, aud: &str, f: impl FnOnce(&mut Value)) -> Value {
    let now = pharos_shared::time::Clock::now(&pharos_shared::time::SystemClock);
    let jti = format!("{now}-{}", rand_suffix());
    let mut c =
        json!({"iss": client, "sub": client, "aud": aud, "iat": now, "exp": now + 60, "jti": jti});
    f(&mut c);
    c
}

fn rand_suffix() -> String {
    SigningKey::generate(Algorithm::ES256, 2048).unwrap().kid()[..12].to_owned()
}

pub fn assertion(signer: &dyn Signer, claims: &Value) -> String {
    jose::sign(signer, "JWT", claims.as_object().unwrap(), None).unwrap()
}

/// POSTs `params` plus the assertion to `path`; status and body.
pub async fn call(
    server: &Pharos,
    path: &str,
    assertion: &str,
    params: &[(&str, &str)],
) -> (u16, String) {
    let mut form = vec![
        ("client_assertion_type", TYPE),
        ("client_assertion", assertion),
    ];
    form.extend_from_slice(params);
    let r = server
        .client
        .post(server.main_url(path))
        .form(&form)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

/// A server trusting `ta` (keys pinned in its repository) with auth-enabled list, fetch,
/// historical keys and resolve endpoints.
pub async fn server(db: &TestDb, ta: &Pharos, jti: JtiBackend) -> Pharos {
    let s = Pharos::start_with(
        db,
        |s| s.storage.endpoint_auth.jti_backend = jti,
        Arc::new(pharos_shared::time::SystemClock),
    )
    .await;
    let jwks = ta.entity_configuration().await.claims["jwks"].clone();
    let (st, v) = s
        .admin(
            Method::POST,
            "/trust-anchors",
            Some(json!({"entity_id": ta.entity_id(), "jwks": jwks})),
        )
        .await;
    assert_eq!(st, 201, "{v}");
    for (kind, path) in [
        ("list", "/list"),
        ("fetch", "/fetch"),
        ("historical_keys", "/historical-keys"),
        ("resolve", "/resolve"),
    ] {
        let body = json!({"type": kind, "path": path, "auth_enabled": true,
            "auth_trust_anchors": [ta.entity_id()], "config": {}});
        let (st, v) = s
            .admin(Method::POST, "/federation-endpoints", Some(body))
            .await;
        assert_eq!(st, 201, "{v}");
    }
    s
}

pub fn error(body: &str) -> String {
    serde_json::from_str::<Value>(body).unwrap()["error"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Runs `check` with a fresh federation and server for every backend.
pub async fn each(check: impl AsyncFn(&Federation, &Pharos)) {
    for b in backends() {
        let (db_t, db_c, db_s) = (
            TestDb::new(b).await,
            TestDb::new(b).await,
            TestDb::new(b).await,
        );
        let f = Federation::start(&db_t, &db_c).await;
        let s = server(&db_s, &f.ta, JtiBackend::Cache).await;
        check(&f, &s).await;
        s.stop().await;
        f.stop().await;
    }
}

/// Expects `status`/`error` for an assertion with claims adjusted by `adjust`, signed by the client.
pub async fn rejected(
    f: &Federation,
    s: &Pharos,
    adjust: impl FnOnce(&mut Value),
    status: u16,
    code: &str,
) {
    let c = claims(f.client.entity_id(), s.entity_id(), adjust);
    let (st, body) = call(s, "/list", &assertion(signer(&f.client).as_ref(), &c), &[]).await;
    assert_eq!((st, error(&body).as_str()), (status, code), "{body}");
}

#[tokio::test]
async fn a_valid_assertion_passes_on_every_endpoint_type() {
    each(async |f, s| {
        let c = || {
            assertion(
                signer(&f.client).as_ref(),
                &claims(f.client.entity_id(), s.entity_id(), |_| {}),
            )
        };
        let (st, body) = call(s, "/list", &c(), &[]).await;
        assert_eq!(st, 200, "{body}");
        let (st, body) = call(s, "/historical-keys", &c(), &[]).await;
        assert_eq!(st, 200, "{body}");
        let (st, _) = call(s, "/fetch", &c(), &[("sub", "https://nobody.example")]).await;
        assert_eq!(st, 404, "fetch ran with the form's own parameters");
        let ta = f.ta.entity_id();
        let (st, body) = call(s, "/resolve", &c(), &[("sub", ta), ("trust_anchor", ta)]).await;
        assert_eq!(st, 200, "{body}");
        let d = jose::decode_unverified(&body).unwrap();
        assert_eq!(
            d.claims["aud"],
            f.client.entity_id(),
            "resolve answers to the client"
        );
        // Without an assertion, or with GET, the endpoint refuses.
        let r = s
            .client
            .post(s.main_url("/list"))
            .form(&[("x", "y")])
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400);
        assert_eq!(s.get("/list").await.status(), 405);
    })
    .await;
}

#[tokio::test]
async fn wrong_audience_is_rejected() {
    each(async |f, s| {
        rejected(
            f,
            s,
            |c| c["aud"] = json!("https://other.example"),
            401,
            "invalid_client",
        )
        .await
    })
    .await;
}

#[tokio::test]
async fn an_extra_audience_is_rejected() {
    each(async |f, s| {
        let aud = s.entity_id().to_owned();
        rejected(
            f,
            s,
            |c| c["aud"] = json!([aud, "https://other.example"]),
            401,
            "invalid_client",
        )
        .await
    })
    .await;
}

#[tokio::test]
async fn an_expired_assertion_is_rejected() {
    each(async |f, s| {
        rejected(
            f,
            s,
            |c| c["exp"] = json!(c["iat"].as_i64().unwrap() - 10),
            401,
            "invalid_client",
        )
        .await
    })
    .await;
}

#[tokio::test]
async fn a_future_iat_is_rejected() {
    each(async |f, s| {
        rejected(
            f,
            s,
            |c| c["iat"] = json!(c["iat"].as_i64().unwrap() + 30),
            401,
            "invalid_client",
        )
        .await
    })
    .await;
}

#[tokio::test]
async fn a_replayed_jti_is_rejected() {
    each(async |f, s| {
        let a = assertion(
            signer(&f.client).as_ref(),
            &claims(f.client.entity_id(), s.entity_id(), |_| {}),
        );
        assert_eq!(call(s, "/list", &a, &[]).await.0, 200);
        let (st, body) = call(s, "/list", &a, &[]).await;
        assert_eq!(
            (st, error(&body).as_str()),
            (401, "invalid_client"),
            "{body}"
        );
    })
    .await;
}
