//! Hostile peers (issue 22): a resolver asked about entities served by loopback peers that
//! hang, trickle, flood, redirect in loops, lie about the media type, or serve statements that
//! must not verify (`alg: none`, HS256 keyed with the public key, an unknown `crit`, expired
//! or future statements), `authority_hints` cycles and a 100-level chain. Each request must
//! finish (a generous `tokio::time::timeout` is the hang guard, not a performance assertion),
//! answer the specification's error format with a cause the caller can act on, and change
//! nothing in the resolver's database. The key refreshers meet the same peers: subordinates
//! through the key update trigger, configured trust anchors through the anchor key refresher
//! (each refresh ends, is counted in `pharos_refresh_failures_total`, stored keys stay).
//!
//! Transport attacks are raw TCP servers (they do what no HTTP framework would let them);
//! statement attacks are one small axum app serving a whole fake federation, one entity per
//! path prefix (`http://127.0.0.1:<port>/e<n>`), so that a chain of any length needs one port.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::IntoResponse;
use base64::Engine as _;
use pharos_shared::jose::{self, Algorithm, Signer as _, SigningKey};
use pharos_shared::time::{Clock, SystemClock};
use serde_json::{Map, Value, json};
use sha2::Digest as _;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::resolve::{enable_resolve, resolve};
use crate::support::{Pharos, TestDb, backends};

const MEDIA_TYPE: &str = "application/entity-statement+jwt";

/// The hang guard around each resolve: far above `http_timeout`, only there so that a
/// regression fails the test instead of hanging it.
const GUARD: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------------------
// Transport attacks: raw TCP peers.

/// What a raw peer does after reading a request.
#[derive(Clone, Copy)]
enum Raw {
    /// Never answers (holds the connection open).
    Hang,
    /// Sends headers promising a body, then one byte a second.
    Trickle,
    /// Sends 100 MB without a `Content-Length` (so only streaming can cut it off).
    Flood,
    /// Sends 100 MB announced by its `Content-Length`.
    FloodDeclared,
    /// Redirects to itself for ever.
    RedirectLoop,
    /// A well-formed body with `Content-Type: application/json`.
    WrongMediaType,
}

/// Starts a raw peer; its entity identifier is `http://127.0.0.1:<port>`.
async fn raw_peer(kind: Raw) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let id = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            tokio::spawn(serve_raw(sock, kind));
        }
    });
    id
}

async fn serve_raw(mut sock: TcpStream, kind: Raw) {
    // Read the request head (a GET has no body).
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match sock.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let head =
        |extra: &str| format!("HTTP/1.1 200 OK\r\nContent-Type: {MEDIA_TYPE}\r\n{extra}\r\n");
    match kind {
        Raw::Hang => tokio::time::sleep(Duration::from_secs(3600)).await,
        Raw::Trickle => {
            if sock
                .write_all(head("Content-Length: 100000\r\n").as_bytes())
                .await
                .is_err()
            {
                return;
            }
            loop {
                if sock.write_all(b"a").await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
        Raw::Flood | Raw::FloodDeclared => {
            const TOTAL: usize = 100 * 1024 * 1024;
            let extra = match kind {
                Raw::FloodDeclared => format!("Content-Length: {TOTAL}\r\n"),
                _ => "Connection: close\r\n".to_owned(),
            };
            if sock.write_all(head(&extra).as_bytes()).await.is_err() {
                return;
            }
            let block = vec![b'a'; 64 * 1024];
            for _ in 0..TOTAL / block.len() {
                if sock.write_all(&block).await.is_err() {
                    return;
                }
            }
        }
        Raw::RedirectLoop => {
            let r = "HTTP/1.1 302 Found\r\nLocation: /.well-known/openid-federation\r\n\
                     Content-Length: 0\r\n\r\n";
            let _ = sock.write_all(r.as_bytes()).await;
        }
        Raw::WrongMediaType => {
            let body = "eyJhbGciOiJFUzI1NiJ9.e30.c2ln";
            let r = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            let _ = sock.write_all(r.as_bytes()).await;
        }
    }
}

// ---------------------------------------------------------------------------------------
// Statement attacks: a fake federation on one port.

/// How an entity's own Entity Configuration is spoiled.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Spoil {
    None,
    /// `alg: none` with the empty signature the JWS rules prescribe for it.
    AlgNone,
    /// `alg: none` with some signature bytes, so that only the algorithm check refuses it.
    AlgNoneSigned,
    Hs256WithPublicKey,
    UnknownCrit,
    /// Signed, but with `typ: jwt` instead of `entity-statement+jwt`.
    WrongTyp,
    Expired,
    Future,
}

#[derive(Clone)]
struct FakeEntity {
    key: Arc<SigningKey>,
    hints: Vec<usize>,
    spoil: Spoil,
    /// Keys listed in its `jwks` besides its signing key (an announced rotation).
    extra: Vec<Value>,
}

struct Federation {
    base: String,
    entities: Mutex<HashMap<usize, FakeEntity>>,
}

impl Federation {
    fn id(&self, n: usize) -> String {
        format!("{}/e{n}", self.base)
    }

    fn entity(&self, n: usize) -> Option<FakeEntity> {
        self.entities.lock().unwrap().get(&n).cloned()
    }

    /// Adds (or replaces) entity `n`, with `hints` as its authority_hints.
    fn set(&self, n: usize, hints: Vec<usize>, spoil: Spoil) {
        let key = match self.entity(n) {
            Some(e) => e.key,
            None => Arc::new(SigningKey::generate(Algorithm::ES256, 0).unwrap()),
        };
        self.entities.lock().unwrap().insert(
            n,
            FakeEntity {
                key,
                hints,
                spoil,
                extra: Vec::new(),
            },
        );
    }

    /// Entity `n`'s Entity Configuration is spoiled by `spoil` from now on.
    fn set_spoil(&self, n: usize, spoil: Spoil) {
        if let Some(e) = self.entities.lock().unwrap().get_mut(&n) {
            e.spoil = spoil;
        }
    }

    /// Entity `n` announces `keys` next to its signing key from now on.
    fn announce(&self, n: usize, keys: Vec<Value>) {
        if let Some(e) = self.entities.lock().unwrap().get_mut(&n) {
            e.extra = keys;
        }
    }

    fn configuration(&self, n: usize) -> Option<String> {
        let e = self.entity(n)?;
        let id = self.id(n);
        let now = SystemClock.now();
        let (iat, exp) = match e.spoil {
            Spoil::Expired => (now - 7200, now - 3600),
            Spoil::Future => (now + 3600, now + 7200),
            _ => (now, now + 3600),
        };
        let mut keys = vec![serde_json::to_value(e.key.public_jwk()).unwrap()];
        keys.extend(e.extra.iter().cloned());
        let mut claims = json!({"iss": id, "sub": id, "iat": iat, "exp": exp,
            "jwks": {"keys": keys},
            "metadata": {"federation_entity": {
                "federation_fetch_endpoint": format!("{id}/fetch")}}});
        if !e.hints.is_empty() {
            let hints: Vec<String> = e.hints.iter().map(|h| self.id(*h)).collect();
            claims["authority_hints"] = json!(hints);
        }
        let claims = claims.as_object().unwrap().clone();
        Some(match e.spoil {
            Spoil::AlgNone => unsigned(
                &json!({"alg": "none", "typ": "entity-statement+jwt",
                "kid": e.key.kid()}),
                &claims,
                b"",
            ),
            Spoil::AlgNoneSigned => unsigned(
                &json!({"alg": "none", "typ": "entity-statement+jwt",
                "kid": e.key.kid()}),
                &claims,
                b"not a signature",
            ),
            Spoil::Hs256WithPublicKey => {
                // The classic confusion: an HMAC keyed with the (public) key the verifier
                // knows, under the kid of the real key.
                let header =
                    json!({"alg": "HS256", "typ": "entity-statement+jwt", "kid": e.key.kid()});
                let secret = serde_json::to_vec(e.key.public_jwk()).unwrap();
                let input = signing_input(&header, &claims);
                let mac = hmac_sha256(&secret, input.as_bytes());
                format!("{input}.{}", b64(&mac))
            }
            Spoil::UnknownCrit => {
                let extra = json!({"crit": ["urn:example:never-understood"],
                    "urn:example:never-understood": true});
                jose::sign(
                    &*e.key,
                    "entity-statement+jwt",
                    &claims,
                    Some(extra.as_object().unwrap()),
                )
                .unwrap()
            }
            Spoil::WrongTyp => jose::sign(&*e.key, "jwt", &claims, None).unwrap(),
            _ => jose::sign(&*e.key, "entity-statement+jwt", &claims, None).unwrap(),
        })
    }

    /// Entity `n`'s Subordinate Statement about `sub` (one of this federation's entities).
    fn statement(&self, n: usize, sub: &str) -> Option<String> {
        let e = self.entity(n)?;
        let m: usize = sub
            .strip_prefix(&format!("{}/e", self.base))?
            .parse()
            .ok()?;
        let s = self.entity(m)?;
        let now = SystemClock.now();
        let claims = json!({"iss": self.id(n), "sub": sub, "iat": now, "exp": now + 3600,
            "jwks": {"keys": [s.key.public_jwk()]}});
        Some(
            jose::sign(
                &*e.key,
                "entity-statement+jwt",
                claims.as_object().unwrap(),
                None,
            )
            .unwrap(),
        )
    }
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn signing_input(header: &Value, claims: &Map<String, Value>) -> String {
    format!(
        "{}.{}",
        b64(&serde_json::to_vec(header).unwrap()),
        b64(&serde_json::to_vec(claims).unwrap())
    )
}

fn unsigned(header: &Value, claims: &Map<String, Value>, sig: &[u8]) -> String {
    format!("{}.{}", signing_input(header, claims), b64(sig))
}

/// HMAC-SHA256 (RFC 2104), written out so that the test needs no MAC crate.
fn hmac_sha256(key: &[u8], msg: &[u8]) -> Vec<u8> {
    let mut k = if key.len() > 64 {
        sha2::Sha256::digest(key).to_vec()
    } else {
        key.to_vec()
    };
    k.resize(64, 0);
    let pad = |b: u8| k.iter().map(|x| x ^ b).collect::<Vec<u8>>();
    let inner = sha2::Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(msg)
        .finalize();
    sha2::Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize()
        .to_vec()
}

async fn fake_configuration(
    State(f): State<Arc<Federation>>,
    Path(n): Path<String>,
) -> axum::response::Response {
    let n: Option<usize> = n.strip_prefix('e').and_then(|s| s.parse().ok());
    match n.and_then(|n| f.configuration(n)) {
        Some(jws) => ([(header::CONTENT_TYPE, MEDIA_TYPE)], jws).into_response(),
        None => axum::http::StatusCode::NOT_FOUND.into_response(),
    }
}

async fn fake_fetch(
    State(f): State<Arc<Federation>>,
    Path(n): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> axum::response::Response {
    let n: Option<usize> = n.strip_prefix('e').and_then(|s| s.parse().ok());
    let sub = q.get("sub").cloned().unwrap_or_default();
    match n.and_then(|n| f.statement(n, &sub)) {
        Some(jws) => ([(header::CONTENT_TYPE, MEDIA_TYPE)], jws).into_response(),
        None => axum::http::StatusCode::NOT_FOUND.into_response(),
    }
}

/// Starts an empty fake federation.
async fn federation() -> Arc<Federation> {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let f = Arc::new(Federation {
        base: format!("http://{}", listener.local_addr().unwrap()),
        entities: Mutex::new(HashMap::new()),
    });
    let app = axum::Router::new()
        .route(
            "/{n}/.well-known/openid-federation",
            axum::routing::get(fake_configuration),
        )
        .route("/{n}/fetch", axum::routing::get(fake_fetch))
        .with_state(f.clone());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    f
}

// ---------------------------------------------------------------------------------------
// The resolver under attack.

/// Rows of every table that holds state (statistics excepted), read from the database.
async fn state(db: &TestDb) -> Vec<(&'static str, i64)> {
    use sqlx::Row as _;
    const TABLES: &[&str] = &[
        "subordinates",
        "subordinate_events",
        "trust_anchors",
        "signing_keys",
        "federation_endpoints",
        "settings",
        "authority_hints",
        "collected_entities",
        "jtis_used",
        "issued_trust_marks",
    ];
    let d = db.pool().await;
    let mut out = Vec::new();
    for t in TABLES {
        let sql = format!("SELECT COUNT(*) FROM {t}");
        let n: i64 = sqlx::query(sqlx::AssertSqlSafe(sql))
            .fetch_one(d.pool())
            .await
            .unwrap()
            .get(0);
        out.push((*t, n));
    }
    d.pool().close().await;
    out
}

/// A resolver with a short `http_timeout` on `db`, its resolve endpoint at `/resolve`.
async fn resolver(db: &TestDb) -> Pharos {
    let p = Pharos::start_with(
        db,
        |s| {
            s.federation.http_timeout =
                pharos_shared::config::Duration(Duration::from_millis(1500));
        },
        Arc::new(SystemClock),
    )
    .await;
    // Hostile anchors are strangers: this resolver is opened to any anchor explicitly.
    enable_resolve(&p, json!({"allow_any_trust_anchor": true})).await;
    p
}

/// Resolves `sub` under `anchor` inside the hang guard; status, `error`, `error_description`.
async fn attack(p: &Pharos, sub: &str, anchor: &str) -> (u16, String, String) {
    let (s, body) = tokio::time::timeout(GUARD, resolve(p, sub, &[anchor], &[]))
        .await
        .unwrap_or_else(|_| panic!("resolving {sub} did not finish"));
    let v: Value = serde_json::from_str(&body).unwrap_or_else(|_| panic!("{s} {body}"));
    (
        s,
        v["error"].as_str().unwrap_or_default().to_owned(),
        v["error_description"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    )
}

#[tokio::test]
async fn transport_attacks_end_in_a_clear_error_and_change_nothing() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = resolver(&db).await;
        let before = state(&db).await;
        let anchor = "https://anchor.example";
        let cases = [
            (Raw::Hang, "no answer"),
            (Raw::Trickle, "no answer"),
            (Raw::Flood, "larger than 1048576 bytes"),
            (Raw::FloodDeclared, "larger than 1048576 bytes"),
            (Raw::RedirectLoop, "too many redirects"),
            (Raw::WrongMediaType, "content type \"application/json\""),
        ];
        for (kind, cause) in cases {
            let peer = raw_peer(kind).await;
            let (s, error, description) = attack(&p, &peer, anchor).await;
            assert_eq!((s, error.as_str()), (404, "not_found"), "{b:?} {peer}");
            assert!(
                description.contains(cause),
                "{b:?} {cause:?} in {description:?}"
            );
        }
        assert_eq!(state(&db).await, before, "{b:?}");
        // Still serving.
        p.entity_configuration().await;
        p.stop().await;
    }
}

#[tokio::test]
async fn statements_that_must_not_verify_are_refused_and_change_nothing() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = resolver(&db).await;
        let f = federation().await;
        // e0 is the anchor, e1 its subordinate.
        f.set(0, vec![], Spoil::None);
        f.set(1, vec![0], Spoil::None);
        let (anchor, sub) = (f.id(0), f.id(1));
        // The control: the honest federation resolves, so the refusals below are the spoils'.
        let (s, body) = tokio::time::timeout(GUARD, resolve(&p, &sub, &[&anchor], &[]))
            .await
            .unwrap();
        assert_eq!(s, 200, "{b:?} {body}");
        let before = state(&db).await;

        let cases = [
            (Spoil::AlgNone, "signature must be non-empty"),
            (Spoil::AlgNoneSigned, "none"),
            (Spoil::Hs256WithPublicKey, "HS256"),
            (Spoil::UnknownCrit, "crit"),
            (Spoil::Expired, "exp"),
            (Spoil::Future, "iat"),
        ];
        for (n, (spoil, cause)) in cases.into_iter().enumerate() {
            // A fresh subject each time: nothing is answered from a cache.
            let n = n + 10;
            f.set(n, vec![0], spoil);
            let (s, error, description) = attack(&p, &f.id(n), &anchor).await;
            assert_eq!(
                (s, error.as_str()),
                (400, "invalid_trust_chain"),
                "{b:?} {spoil:?}: {description}"
            );
            assert!(
                description.contains(cause),
                "{b:?} {spoil:?}: {cause:?} in {description:?}"
            );
        }
        assert_eq!(state(&db).await, before, "{b:?}");
        p.stop().await;
    }
}

#[tokio::test]
async fn authority_hint_cycles_and_deep_chains_end_in_a_clear_error() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = resolver(&db).await;
        let f = federation().await;
        f.set(0, vec![], Spoil::None);
        let anchor = f.id(0);
        let before = state(&db).await;

        // 1 -> 2 -> 3 -> 1: never reaches the anchor.
        f.set(1, vec![2], Spoil::None);
        f.set(2, vec![3], Spoil::None);
        f.set(3, vec![1], Spoil::None);
        let (s, error, description) = attack(&p, &f.id(1), &anchor).await;
        assert_eq!((s, error.as_str()), (400, "invalid_trust_chain"), "{b:?}");
        assert!(description.contains("loop"), "{b:?} {description}");

        // 100 -> 99 -> ... -> 1 -> anchor: a hundred levels.
        for n in 1..=100 {
            f.set(
                100 + n,
                vec![if n == 1 { 0 } else { 100 + n - 1 }],
                Spoil::None,
            );
        }
        let (s, error, description) = attack(&p, &f.id(200), &anchor).await;
        assert_eq!((s, error.as_str()), (400, "invalid_trust_chain"), "{b:?}");
        assert!(description.contains("levels"), "{b:?} {description}");
        // The deepest chain still in bounds resolves: the refusal above is the depth's.
        let (s, body) = resolve(&p, &f.id(102), &[&anchor], &[]).await;
        assert_eq!(s, 200, "{b:?} {body}");

        assert_eq!(state(&db).await, before, "{b:?}");
        p.stop().await;
    }
}

#[tokio::test]
async fn enrollment_refuses_hostile_entities_and_stores_nothing() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = resolver(&db).await;
        crate::support::enable(&p, "enroll", "/enroll", json!({})).await;
        let before = state(&db).await;
        let mut subjects = Vec::new();
        for kind in [
            Raw::Hang,
            Raw::Trickle,
            Raw::Flood,
            Raw::RedirectLoop,
            Raw::WrongMediaType,
        ] {
            subjects.push(raw_peer(kind).await);
        }
        let f = federation().await;
        for (n, spoil) in [
            Spoil::AlgNone,
            Spoil::AlgNoneSigned,
            Spoil::Hs256WithPublicKey,
            Spoil::UnknownCrit,
            Spoil::Expired,
            Spoil::Future,
        ]
        .into_iter()
        .enumerate()
        {
            f.set(n, vec![], spoil);
            subjects.push(f.id(n));
        }
        for sub in &subjects {
            let a = tokio::time::timeout(GUARD, crate::enroll::ask(&p, "/enroll", sub, &[]))
                .await
                .unwrap_or_else(|_| panic!("enrolling {sub} did not finish"));
            let v: Value = serde_json::from_str(&a.body).unwrap_or_else(|_| panic!("{}", a.body));
            assert_eq!(
                (a.status, v["error"].as_str()),
                (400, Some("invalid_request")),
                "{b:?} {sub}: {}",
                a.body
            );
            assert!(
                v["error_description"]
                    .as_str()
                    .is_some_and(|d| d.contains("entity configuration")),
                "{b:?} {sub}: {}",
                a.body
            );
        }
        assert_eq!(state(&db).await, before, "{b:?}");
        p.stop().await;
    }
}

/// A fresh public key, as a JWK.
fn new_key() -> Value {
    let k = SigningKey::generate(Algorithm::ES256, 0).unwrap();
    serde_json::to_value(k.public_jwk()).unwrap()
}

/// `POST /jwks-trigger` for `sub` inside the hang guard; status and body.
async fn trigger(p: &Pharos, sub: &str) -> (u16, Value) {
    let sent = p
        .client
        .post(p.main_url("/jwks-trigger"))
        .json(&json!({"sub": sub}))
        .send();
    let r = tokio::time::timeout(GUARD, sent)
        .await
        .unwrap_or_else(|_| panic!("the trigger for {sub} did not finish"))
        .unwrap();
    let s = r.status().as_u16();
    (s, r.json().await.unwrap_or(Value::Null))
}

/// The kids of `sub`'s keys in the statement our fetch endpoint serves.
async fn served_kids(p: &Pharos, sub: &str) -> Vec<String> {
    let r = p
        .get(&format!("/fetch?sub={}", crate::support::enc(sub)))
        .await;
    assert_eq!(r.status(), 200);
    let d = jose::decode_unverified(&r.text().await.unwrap()).unwrap();
    let mut k: Vec<String> = d.claims["jwks"]["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kid"].as_str().unwrap().to_owned())
        .collect();
    k.sort();
    k
}

#[tokio::test]
async fn key_refresh_from_hostile_subordinates_changes_nothing() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = resolver(&db).await;
        crate::support::enable(&p, "fetch", "/fetch", json!({})).await;
        crate::support::enable(&p, "jwks_update_trigger", "/jwks-trigger", json!({})).await;
        let f = federation().await;
        let spoils = [
            Spoil::AlgNone,
            Spoil::AlgNoneSigned,
            Spoil::Hs256WithPublicKey,
            Spoil::UnknownCrit,
            Spoil::Expired,
            Spoil::Future,
        ];
        // Subordinates 0..=6 of the fake federation (0: the control), and the raw peers.
        let mut subs = Vec::new();
        for n in 0..=spoils.len() {
            f.set(n, vec![], Spoil::None);
            subs.push(f.id(n));
        }
        for kind in [
            Raw::Hang,
            Raw::Trickle,
            Raw::Flood,
            Raw::RedirectLoop,
            Raw::WrongMediaType,
        ] {
            subs.push(raw_peer(kind).await);
        }
        for (n, sub) in subs.iter().enumerate() {
            let keys = match f.entity(n) {
                Some(e) if n <= spoils.len() => json!({"keys": [e.key.public_jwk()]}),
                _ => json!({"keys": [crate::support::jwk("k1", None)]}),
            };
            let body = json!({"entity_id": sub, "status": "active", "jwks": keys});
            let (s, v) = p
                .admin(reqwest::Method::POST, "/subordinates", Some(body))
                .await;
            assert_eq!(s, 201, "{v}");
        }
        // The control: an honest announcement of a new key is taken.
        f.announce(0, vec![new_key()]);
        assert_eq!(
            trigger(&p, &subs[0]).await,
            (200, json!({"sub": subs[0], "changed": true}))
        );
        assert_eq!(served_kids(&p, &subs[0]).await.len(), 2);

        let before = state(&db).await;
        for (i, spoil) in spoils.into_iter().enumerate() {
            let n = i + 1;
            let kids = served_kids(&p, &subs[n]).await;
            f.announce(n, vec![new_key()]);
            f.set_spoil(n, spoil);
            let (s, v) = trigger(&p, &subs[n]).await;
            assert!(
                s >= 400 && v["error"].is_string(),
                "{b:?} {spoil:?}: {s} {v}"
            );
            assert_eq!(served_kids(&p, &subs[n]).await, kids, "{b:?} {spoil:?}");
        }
        for sub in &subs[spoils.len() + 1..] {
            let kids = served_kids(&p, sub).await;
            let (s, v) = trigger(&p, sub).await;
            assert!(s >= 400 && v["error"].is_string(), "{b:?} {sub}: {s} {v}");
            assert_eq!(served_kids(&p, sub).await, kids, "{b:?} {sub}");
        }
        // Refused refreshes leave history events at most; no keys, no subordinates change.
        let after = state(&db).await;
        let without_events = |v: &[(&'static str, i64)]| {
            v.iter()
                .filter(|(t, _)| *t != "subordinate_events")
                .cloned()
                .collect::<Vec<_>>()
        };
        assert_eq!(without_events(&after), without_events(&before), "{b:?}");
        p.stop().await;
    }
}

/// A sample of the `/metrics` scrape: the value of the line starting with `series` (name and
/// labels as the exposition writes them).
async fn sample(p: &Pharos, series: &str) -> f64 {
    let text = p.get("/metrics").await.text().await.unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0.0)
}

/// The kids of trust anchor `id`'s stored keys, as the Admin API shows them.
async fn anchor_kids(p: &Pharos, id: &str) -> Vec<String> {
    let path = format!("/trust-anchors/{}", crate::support::enc(id));
    let (s, v) = p.admin(reqwest::Method::GET, &path, None).await;
    assert_eq!(s, 200, "{v}");
    let mut k: Vec<String> = v["jwks"]["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kid"].as_str().unwrap().to_owned())
        .collect();
    k.sort();
    k
}

#[tokio::test]
async fn hostile_trust_anchors_cannot_change_their_stored_keys() {
    const FAILURES: &str = "pharos_refresh_failures_total{kind=\"anchor_keys\"}";
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = resolver(&db).await;
        let f = federation().await;
        let spoils = [
            Spoil::AlgNone,
            Spoil::AlgNoneSigned,
            Spoil::Hs256WithPublicKey,
            Spoil::WrongTyp,
            Spoil::UnknownCrit,
            Spoil::Expired,
            Spoil::Future,
        ];
        // Anchor 0 (the control) honestly announces a second key; anchors 1.. announce one
        // in a spoiled configuration; the raw peers hang, trickle, flood or lie.
        let mut anchors = Vec::new();
        for n in 0..=spoils.len() {
            f.set(n, vec![], Spoil::None);
            f.announce(n, vec![new_key()]);
            anchors.push(f.id(n));
        }
        for (i, spoil) in spoils.into_iter().enumerate() {
            f.set_spoil(i + 1, spoil);
        }
        for kind in [
            Raw::Hang,
            Raw::Trickle,
            Raw::Flood,
            Raw::FloodDeclared,
            Raw::RedirectLoop,
            Raw::WrongMediaType,
        ] {
            anchors.push(raw_peer(kind).await);
        }
        let hostile = anchors.len() - 1;
        let before_failures = sample(&p, FAILURES).await;
        let mut stored = Vec::new();
        for (n, id) in anchors.iter().enumerate() {
            let keys = match f.entity(n) {
                Some(e) if n <= spoils.len() => json!({"keys": [e.key.public_jwk()]}),
                _ => json!({"keys": [crate::support::jwk("k1", None)]}),
            };
            let body = json!({"entity_id": id, "jwks": keys, "enable_jwks_update": true,
                "key_poll_interval": 3600});
            let (s, v) = p
                .admin(reqwest::Method::POST, "/trust-anchors", Some(body))
                .await;
            assert_eq!(s, 201, "{v}");
            stored.push(anchor_kids(&p, id).await);
        }
        // The running refresher polls every new anchor at once (adding one publishes, which
        // wakes it). Wait, inside the hang guard, until each hostile anchor's refresh has
        // ended in a counted failure and the control's has stored its announced key.
        tokio::time::timeout(GUARD, async {
            loop {
                let failed = sample(&p, FAILURES).await - before_failures;
                if failed >= hostile as f64 && anchor_kids(&p, &anchors[0]).await.len() == 2 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("{b:?}: the anchor refreshes did not all end"));
        for (id, kids) in anchors.iter().zip(&stored).skip(1) {
            assert_eq!(&anchor_kids(&p, id).await, kids, "{b:?} {id}");
        }
        p.stop().await;
    }
}
