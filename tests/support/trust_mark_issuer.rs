//! A stand-in Trust Mark Issuer on loopback, for tests of the marks a Pharos holds: it serves
//! its self-signed Entity Configuration (with `federation_trust_mark_endpoint`) and a trust
//! mark endpoint that issues short-lived marks it signs, on the test's clock. Tests make it
//! fail, change the lifetime it issues and count what it issued. A Pharos issuer can take
//! its place in a test that only needs `entity_id` and an issuer's keys.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use pharos_shared::jose::{self, Algorithm, Jwks, Signer, SigningKey};
use pharos_shared::time::Clock;
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// The running issuer; stops when dropped.
pub struct TestIssuer {
    /// Its entity identifier (`http://127.0.0.1:<port>`).
    pub entity_id: String,
    state: Arc<IssuerState>,
    task: tokio::task::JoinHandle<()>,
}

struct IssuerState {
    entity_id: String,
    key: SigningKey,
    clock: Arc<dyn Clock>,
    lifetime: AtomicI64,
    failing: AtomicBool,
    /// The subject is blocked: marks are refused and the status endpoint says `revoked`.
    revoked: AtomicBool,
    issued: AtomicUsize,
    /// Claims that override the usual ones in served marks (tests of refused marks).
    tampered: std::sync::Mutex<Value>,
    /// It publishes a Trust Marked Entities Listing instead of a status endpoint.
    listing: bool,
    /// The listing no longer names the subject (marks are still issued and `active`).
    unlisted: AtomicBool,
}

impl TestIssuer {
    /// Starts an issuer whose marks live `lifetime` seconds of `clock`.
    pub async fn start(clock: Arc<dyn Clock>, lifetime: i64) -> Self {
        Self::serve(clock, lifetime, false).await
    }

    /// Like [`Self::start`], but publishing a Trust Marked Entities Listing
    /// (`/trust-mark-listing`) instead of a status endpoint.
    pub async fn start_listing(clock: Arc<dyn Clock>, lifetime: i64) -> Self {
        Self::serve(clock, lifetime, true).await
    }

    async fn serve(clock: Arc<dyn Clock>, lifetime: i64, listing: bool) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let entity_id = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(IssuerState {
            entity_id: entity_id.clone(),
            key: SigningKey::generate(Algorithm::ES256, 0).unwrap(),
            clock,
            lifetime: AtomicI64::new(lifetime),
            failing: AtomicBool::new(false),
            revoked: AtomicBool::new(false),
            issued: AtomicUsize::new(0),
            tampered: std::sync::Mutex::new(json!({})),
            listing,
            unlisted: AtomicBool::new(false),
        });
        let app = Router::new()
            .route("/.well-known/openid-federation", get(configuration))
            .route("/trust-mark", get(trust_mark))
            .route("/trust-mark-status", axum::routing::post(status))
            .route("/trust-mark-listing", get(listed))
            .with_state(state.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            entity_id,
            state,
            task,
        }
    }

    /// Makes the trust mark endpoint answer 500 (or work again).
    pub fn set_failing(&self, failing: bool) {
        self.state.failing.store(failing, Ordering::SeqCst);
    }

    /// Blocks the subjects (as an issuer's operator does): the status endpoint answers
    /// `revoked` for every mark and the trust mark endpoint refuses with 404 (or works again).
    pub fn set_revoked(&self, revoked: bool) {
        self.state.revoked.store(revoked, Ordering::SeqCst);
    }

    /// Makes the listing leave the subject out (or name it again); marks stay `active`.
    pub fn set_unlisted(&self, unlisted: bool) {
        self.state.unlisted.store(unlisted, Ordering::SeqCst);
    }

    /// Lifetime of the marks issued from now on.
    pub fn set_lifetime(&self, secs: i64) {
        self.state.lifetime.store(secs, Ordering::SeqCst);
    }

    /// Claims that override the usual ones in the marks it serves from now on (`{}` = none).
    pub fn tamper(&self, overrides: Value) {
        *self.state.tampered.lock().unwrap() = overrides;
    }

    /// Marks issued so far.
    pub fn issued(&self) -> usize {
        self.state.issued.load(Ordering::SeqCst)
    }

    /// Its public keys.
    pub fn jwks(&self) -> Jwks {
        Jwks {
            keys: vec![self.state.key.public_jwk().clone()],
        }
    }

    /// A mark of `tm_type` for `sub` with these claims overriding the usual ones, signed
    /// with header `typ` (tests of refused marks).
    pub fn sign(&self, typ: &str, tm_type: &str, sub: &str, overrides: Value) -> String {
        let mut claims = self.state.claims(tm_type, sub);
        for (k, v) in overrides.as_object().unwrap() {
            claims.insert(k.clone(), v.clone());
        }
        jose::sign(&self.state.key, typ, &claims, None).unwrap()
    }
}

impl Drop for TestIssuer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl IssuerState {
    fn claims(&self, tm_type: &str, sub: &str) -> serde_json::Map<String, Value> {
        let now = self.clock.now();
        let n = self.issued.fetch_add(1, Ordering::SeqCst);
        let claims = json!({"iss": self.entity_id, "sub": sub, "trust_mark_type": tm_type,
            "iat": now, "exp": now + self.lifetime.load(Ordering::SeqCst), "jti": format!("m{n}")});
        claims.as_object().unwrap().clone()
    }
}

fn jwt(media_type: &'static str, body: String) -> Response {
    ([(header::CONTENT_TYPE, media_type)], body).into_response()
}

async fn configuration(State(s): State<Arc<IssuerState>>) -> Response {
    let now = s.clock.now();
    let (name, path) = if s.listing {
        ("federation_trust_mark_list_endpoint", "trust-mark-listing")
    } else {
        ("federation_trust_mark_status_endpoint", "trust-mark-status")
    };
    let claims = json!({"iss": s.entity_id, "sub": s.entity_id, "iat": now, "exp": now + 86_400,
        "jwks": {"keys": [s.key.public_jwk()]},
        "metadata": {"federation_entity": {
            "federation_trust_mark_endpoint": format!("{}/trust-mark", s.entity_id),
            name: format!("{}/{path}", s.entity_id)}}});
    let token = jose::sign(
        &s.key,
        "entity-statement+jwt",
        claims.as_object().unwrap(),
        None,
    );
    jwt("application/entity-statement+jwt", token.unwrap())
}

async fn trust_mark(
    State(s): State<Arc<IssuerState>>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if s.failing.load(Ordering::SeqCst) {
        let body = json!({"error": "server_error", "error_description": "down for the test"});
        return (StatusCode::INTERNAL_SERVER_ERROR, axum::Json(body)).into_response();
    }
    if s.revoked.load(Ordering::SeqCst) {
        let body = json!({"error": "not_found", "error_description": "the subject is blocked"});
        return (StatusCode::NOT_FOUND, axum::Json(body)).into_response();
    }
    let (Some(tm_type), Some(sub)) = (q.get("trust_mark_type"), q.get("sub")) else {
        let body = json!({"error": "invalid_request", "error_description": "missing parameter"});
        return (StatusCode::BAD_REQUEST, axum::Json(body)).into_response();
    };
    let mut claims = s.claims(tm_type, sub);
    let tampered = s.tampered.lock().unwrap().clone();
    for (k, v) in tampered.as_object().unwrap() {
        claims.insert(k.clone(), v.clone());
    }
    let token = jose::sign(&s.key, "trust-mark+jwt", &claims, None).unwrap();
    jwt("application/trust-mark+jwt", token)
}

/// The status endpoint (§8.4): `active`, or `revoked` once the subjects are blocked.
async fn status(
    State(s): State<Arc<IssuerState>>,
    axum::Form(f): axum::Form<HashMap<String, String>>,
) -> Response {
    let Some(mark) = f.get("trust_mark") else {
        let body = json!({"error": "invalid_request", "error_description": "no trust_mark"});
        return (StatusCode::BAD_REQUEST, axum::Json(body)).into_response();
    };
    let status = if s.revoked.load(Ordering::SeqCst) {
        "revoked"
    } else {
        "active"
    };
    let claims = json!({"iss": s.entity_id, "iat": s.clock.now(), "trust_mark": mark,
        "status": status});
    let token = jose::sign(
        &s.key,
        "trust-mark-status-response+jwt",
        claims.as_object().unwrap(),
        None,
    )
    .unwrap();
    jwt("application/trust-mark-status-response+jwt", token)
}

/// The Trust Marked Entities Listing (§8.5): the asked `sub`, unless unlisted.
async fn listed(
    State(s): State<Arc<IssuerState>>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let subs: Vec<&String> = q
        .get("sub")
        .filter(|_| !s.unlisted.load(Ordering::SeqCst))
        .into_iter()
        .collect();
    axum::Json(json!(subs)).into_response()
}
