//! Whole-process test harness: a real Pharos on `127.0.0.1:0`, a fresh database per test (SQLite
//! always; PostgreSQL and MariaDB when `SVC_TEST_POSTGRES_DSN` / `SVC_TEST_MYSQL_DSN` are set),
//! real HTTP through reqwest.

#![allow(dead_code)]

pub mod mmdb;
pub mod trust_mark_issuer;

use std::sync::Arc;

use pharos::app::{App, Listeners};
use pharos_shared::config::{Settings, StorageDriver};
use pharos_shared::time::{Clock, SystemClock};
use reqwest::{Method, Response};
use serde_json::{Value, json};
use sqlx::Connection as _;
use tokio::net::TcpListener;

/// Which database a test runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
    Mysql,
}

/// SQLite always; the others when their DSN variable is set. With `PHAROS_REQUIRE_DATABASES`
/// set (as `.ci/run` does) a missing DSN fails the test instead of leaving its database out, so
/// a test written for PostgreSQL or MariaDB cannot pass in CI without running there.
pub fn backends() -> Vec<Backend> {
    let mut b = vec![Backend::Sqlite];
    for (backend, var) in [
        (Backend::Postgres, "SVC_TEST_POSTGRES_DSN"),
        (Backend::Mysql, "SVC_TEST_MYSQL_DSN"),
    ] {
        if std::env::var(var).is_ok_and(|v| !v.is_empty()) {
            b.push(backend);
        } else if std::env::var_os("PHAROS_REQUIRE_DATABASES").is_some() {
            panic!("{var} is not set, and PHAROS_REQUIRE_DATABASES says the tests need it");
        }
    }
    b
}

/// Whether `backend` is configured for this run (see [`backends`]: in CI a missing one fails).
pub fn has_backend(backend: Backend) -> bool {
    backends().contains(&backend)
}

/// A fresh, empty database for one test.
#[derive(Debug)]
pub struct TestDb {
    pub backend: Backend,
    pub dsn: String,
    pub dir: tempfile::TempDir,
}

impl TestDb {
    pub async fn new(backend: Backend) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let name = format!(
            "pharos_t_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
        ) + &format!("_{}", rand_suffix());
        let dsn = match backend {
            Backend::Sqlite => String::new(),
            Backend::Postgres => create_db("SVC_TEST_POSTGRES_DSN", &name).await,
            Backend::Mysql => create_db("SVC_TEST_MYSQL_DSN", &name).await,
        };
        Self { backend, dsn, dir }
    }

    /// Applies this database to a configuration.
    pub fn configure(&self, s: &mut Settings) {
        match self.backend {
            Backend::Sqlite => {
                s.storage.driver = StorageDriver::Sqlite;
                s.storage.data_dir = self.dir.path().join("data").display().to_string();
            }
            Backend::Postgres => {
                s.storage.driver = StorageDriver::Postgres;
                s.storage.dsn = self.dsn.clone();
            }
            Backend::Mysql => {
                s.storage.driver = StorageDriver::Mysql;
                s.storage.dsn = self.dsn.clone();
            }
        }
    }

    /// A connection pool onto the same database, for asserting its contents.
    pub async fn pool(&self) -> pharos_controlplane::db::Db {
        let mut s = Settings::default();
        self.configure(&mut s);
        pharos_controlplane::db::Db::connect(&s.storage_url(), 2)
            .await
            .unwrap()
    }
}

/// Tests send many requests from one loopback address within seconds, which the default
/// `server.rate_limits` would refuse; the tests of the limits switch them on again.
fn unlimited(s: &mut Settings) {
    s.server.rate_limits.enabled = false;
}

static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn rand_suffix() -> u32 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    t.subsec_nanos()
}

async fn create_db(var: &str, name: &str) -> String {
    sqlx::any::install_default_drivers();
    let base = std::env::var(var).unwrap();
    let mut conn = sqlx::AnyConnection::connect(&base).await.unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut conn)
        .await
        .unwrap();
    let _ = conn.close().await;
    let mut url = url::Url::parse(&base).unwrap();
    url.set_path(&format!("/{name}"));
    url.to_string()
}

/// A running Pharos plus an HTTP client.
pub struct Pharos {
    pub app: Option<App>,
    pub base: String,
    /// Base URL of the separate admin port, when started with one.
    pub admin_base: Option<String>,
    /// Basic credentials sent with [`Pharos::admin`] calls.
    pub auth: Option<(String, String)>,
    pub settings: Settings,
    pub client: reqwest::Client,
    pub clock: Arc<dyn Clock>,
}

impl Pharos {
    /// Starts Pharos with default settings on `db`.
    pub async fn start(db: &TestDb) -> Self {
        Self::start_with(db, |_| {}, Arc::new(SystemClock)).await
    }

    /// Starts Pharos with settings adjusted by `f` and the given clock.
    pub async fn start_with(
        db: &TestDb,
        f: impl FnOnce(&mut Settings),
        clock: Arc<dyn Clock>,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut settings = Settings::default();
        settings.entity_id = format!("http://127.0.0.1:{port}");
        settings.server.ip_listen = "127.0.0.1".into();
        settings.server.port = port;
        // Test federations live on loopback: they say so (the default blocks private addresses).
        settings.federation.block_private_addresses = false;
        db.configure(&mut settings);
        unlimited(&mut settings);
        f(&mut settings);
        Self::launch(settings, clock, listener, None).await
    }

    /// As [`Pharos::start_with`], on loopback address `ip` (e.g. `127.0.0.2`) instead of
    /// `127.0.0.1`: instances of one federation on distinct addresses have Entity IDs whose
    /// order does not depend on the ports the system hands out (the wire format snapshots list
    /// entities in Entity ID order).
    pub async fn start_at(
        db: &TestDb,
        ip: &str,
        f: impl FnOnce(&mut Settings),
        clock: Arc<dyn Clock>,
    ) -> Self {
        let listener = TcpListener::bind((ip, 0)).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut settings = Settings::default();
        settings.entity_id = format!("http://{ip}:{port}");
        settings.server.ip_listen = ip.into();
        settings.server.port = port;
        settings.federation.block_private_addresses = false;
        db.configure(&mut settings);
        unlimited(&mut settings);
        f(&mut settings);
        Self::launch(settings, clock, listener, None).await
    }

    /// Starts Pharos listening on every interface (`0.0.0.0:0`), as a fresh `pharos serve` on
    /// a server does, so that clients can reach it through a non-loopback address.
    pub async fn start_on_all_interfaces(db: &TestDb, f: impl FnOnce(&mut Settings)) -> Self {
        let listener = TcpListener::bind("0.0.0.0:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut settings = Settings::default();
        settings.entity_id = format!("http://127.0.0.1:{port}");
        settings.server.ip_listen = "0.0.0.0".into();
        settings.server.port = port;
        db.configure(&mut settings);
        unlimited(&mut settings);
        f(&mut settings);
        let mut p = Self::launch(settings, Arc::new(SystemClock), listener, None).await;
        p.base = format!("http://127.0.0.1:{port}");
        p
    }

    /// Starts Pharos with the Admin API on a separate port (bound here on `127.0.0.1:0`);
    /// `client` talks to both ports (tests pass one that trusts their TLS CA).
    pub async fn start_separate_admin(
        db: &TestDb,
        f: impl FnOnce(&mut Settings),
        client: reqwest::Client,
    ) -> Self {
        let admin = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let admin_port = admin.local_addr().unwrap().port();
        let mut p = Self::start_with_listeners(db, admin_port, f, admin).await;
        p.client = client;
        p
    }

    async fn start_with_listeners(
        db: &TestDb,
        admin_port: u16,
        f: impl FnOnce(&mut Settings),
        admin: TcpListener,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut settings = Settings::default();
        settings.entity_id = format!("http://127.0.0.1:{port}");
        settings.server.ip_listen = "127.0.0.1".into();
        settings.server.port = port;
        settings.api.admin.port = admin_port;
        settings.federation.block_private_addresses = false;
        db.configure(&mut settings);
        unlimited(&mut settings);
        f(&mut settings);
        Self::launch(settings, Arc::new(SystemClock), listener, Some(admin)).await
    }

    async fn launch(
        settings: Settings,
        clock: Arc<dyn Clock>,
        listener: TcpListener,
        admin: Option<TcpListener>,
    ) -> Self {
        let base = format!("http://{}", listener.local_addr().unwrap());
        let admin_base = admin.as_ref().map(|l| {
            let scheme = if settings.api.admin.tls.enabled {
                "https"
            } else {
                "http"
            };
            // "localhost" so that certificate name checks work.
            format!("{scheme}://localhost:{}", l.local_addr().unwrap().port())
        });
        let app = App::start(
            settings.clone(),
            clock.clone(),
            Listeners {
                main: Some(listener),
                admin,
                redirect: None,
            },
        )
        .await
        .unwrap();
        Self {
            app: Some(app),
            base,
            admin_base,
            auth: None,
            settings,
            client: reqwest::Client::builder().no_proxy().build().unwrap(),
            clock,
        }
    }

    /// Stops this instance and starts a new one on the same port and database.
    pub async fn restart(mut self) -> Self {
        if let Some(app) = self.app.take() {
            app.shutdown().await;
        }
        let listener = TcpListener::bind(("127.0.0.1", self.settings.server.port))
            .await
            .unwrap();
        let auth = self.auth.clone();
        let mut p = Self::launch(self.settings.clone(), self.clock.clone(), listener, None).await;
        p.auth = auth;
        p
    }

    pub async fn stop(mut self) {
        if let Some(app) = self.app.take() {
            app.shutdown().await;
        }
    }

    pub fn entity_id(&self) -> &str {
        &self.settings.entity_id
    }

    /// URL on the admin port when there is one, else on the main port.
    pub fn url(&self, path: &str) -> String {
        let base = match &self.admin_base {
            Some(a) if path.starts_with("/api/v1/admin") || path.starts_with("/admin/") => a,
            _ => &self.base,
        };
        format!("{base}{path}")
    }

    /// URL on the main port, whatever the path.
    pub fn main_url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// Sets (or clears) the Basic credentials of later admin calls.
    pub fn login(&mut self, user: &str, password: &str) {
        self.auth = Some((user.to_string(), password.to_string()));
    }

    pub async fn request(&self, method: Method, path: &str, body: Option<&str>) -> Response {
        let mut r = self.client.request(method, self.url(path));
        if path.starts_with("/api/v1/admin")
            && let Some((user, password)) = &self.auth
        {
            r = r.basic_auth(user, Some(password));
        }
        if let Some(b) = body {
            if path.starts_with("/api/v1/admin") {
                r = r.header(reqwest::header::CONTENT_TYPE, "application/json");
            }
            r = r.body(b.to_string());
        }
        r.send().await.unwrap()
    }

    pub async fn get(&self, path: &str) -> Response {
        self.request(Method::GET, path, None).await
    }

    /// An admin call under `/api/v1/admin`; returns status and parsed JSON (Null when empty).
    pub async fn admin(&self, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let body = body.map(|b| b.to_string());
        self.admin_raw(method, path, body.as_deref()).await
    }

    /// Deletes hosted entity `n`, confirmed with its identifier `entity_id`; status and body.
    pub async fn delete_entity(&self, n: i64, entity_id: &str) -> (u16, Value) {
        let path = format!("/entities/{n}?confirm={}", enc(entity_id));
        self.admin(Method::DELETE, &path, None).await
    }

    /// An admin call with a raw body.
    pub async fn admin_raw(&self, method: Method, path: &str, body: Option<&str>) -> (u16, Value) {
        let r = self
            .request(method, &format!("/api/v1/admin{path}"), body)
            .await;
        let status = r.status().as_u16();
        let text = r.text().await.unwrap();
        let v = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        (status, v)
    }

    /// Fetches and verifies our Entity Configuration with its own keys; returns the claims.
    pub async fn entity_configuration(&self) -> pharos_shared::jose::Decoded {
        let r = self.get("/.well-known/openid-federation").await;
        assert_eq!(r.status(), 200);
        assert_eq!(
            r.headers()["content-type"],
            "application/entity-statement+jwt"
        );
        let token = r.text().await.unwrap();
        let unverified = pharos_shared::jose::decode_unverified(&token).unwrap();
        let jwks: pharos_shared::jose::Jwks =
            serde_json::from_value(unverified.claims["jwks"].clone()).unwrap();
        pharos_shared::jose::verify(&token, &jwks).unwrap()
    }
}

/// Percent-encodes an entity identifier for use as one path segment.
pub fn enc(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// An IPv4 address of this machine that is not loopback (the source address of its default
/// route), if it has one: requests sent to it reach a local server from a non-loopback peer.
pub fn non_loopback_address() -> Option<std::net::IpAddr> {
    let s = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    // Connecting a UDP socket sends nothing; it only picks the route and source address.
    s.connect("192.0.2.254:9")
        .or_else(|_| s.connect("8.8.8.8:53"))
        .ok()?;
    let ip = s.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

/// The media type of a raw admin body: JSON unless it is a bare status word.
pub fn content_type(body: &str) -> &'static str {
    if serde_json::from_str::<Value>(body).is_ok() {
        "application/json"
    } else {
        "text/plain"
    }
}

/// A public JWK with this kid and optional exp (the P-256 key of RFC 7517 A.1: Pharos parses
/// key material, so it must be a real point on the curve).
pub fn jwk(kid: &str, exp: Option<i64>) -> Value {
    let mut k = json!({"kty": "EC", "crv": "P-256", "kid": kid,
        "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
        "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"});
    if let Some(e) = exp {
        k["exp"] = json!(e);
    }
    k
}

/// Enables federation endpoint `kind` at `path` through the Admin API.
pub async fn enable(p: &Pharos, kind: &str, path: &str, config: Value) {
    let body = json!({"type": kind, "path": path, "config": config});
    let (s, v) = p
        .admin(Method::POST, "/federation-endpoints", Some(body))
        .await;
    assert_eq!(s, 201, "{v}");
}

/// Polls `check` until it holds; fails after a generous deadline (this asserts that the
/// state is reached, not how fast: the benchmark measures that).
pub async fn eventually<F, Fut>(what: &str, check: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..300 {
        if check().await {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("never happened: {what}");
}
