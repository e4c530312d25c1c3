//! The database lost while running (issue 22, acceptance 4): Pharos talks to PostgreSQL
//! through a TCP proxy that the test cuts (every connection closed, new ones dropped at once)
//! and restores. During the outage the data plane answers from its last snapshot — the Entity
//! Configuration and the fetch endpoint 200 on every request — Admin API writes answer 503 in
//! the specification's error format, and `/readyz` says not ready. After the restore, with no
//! restart, writes succeed and `/readyz` is ready again; the database holds exactly the writes
//! that were acknowledged, nothing half-written.
//!
//! Once the outage is known (a write or the readiness check ran into it), a breaker answers
//! writes — Admin API writes, signed key pushes, key update triggers — 503 at once instead of
//! after the pool's 10 s acquire timeout each, until the database answers again.
//!
//! Needs `SVC_TEST_POSTGRES_DSN` (CI sets it and requires it); elsewhere, without it, the test says so
//! and passes.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use sqlx::Row as _;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::enroll::ask;
use crate::fetch_list::{enable, jwk};
use crate::jwks_refresh::{
    assert_statement_has, federation, published, push, rotate, signed_jwks, trigger,
};
use crate::support::{Backend, Pharos, TestDb, enc};

/// Hang guard of each request: far above any bound Pharos sets, only there so that a
/// regression (a request waiting for ever on the database) fails instead of hanging.
const GUARD: Duration = Duration::from_secs(60);

/// A TCP proxy to `upstream` that can be cut (its listener closed, so new connections are
/// refused as by a stopped server, and every relayed connection closed) and restored (the
/// same port listened on again).
struct Proxy {
    port: u16,
    upstream: String,
    accept: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Bumped on every cut: each relayed connection watches it and closes.
    cuts: watch::Sender<u64>,
}

impl Proxy {
    async fn start(upstream: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (cuts, _) = watch::channel(0u64);
        let p = Self {
            port,
            upstream,
            accept: std::sync::Mutex::new(None),
            cuts,
        };
        p.serve(listener);
        p
    }

    fn serve(&self, listener: TcpListener) {
        let (upstream, cuts) = (self.upstream.clone(), self.cuts.clone());
        let task = tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let mut cut = cuts.subscribe();
                let upstream = upstream.clone();
                tokio::spawn(async move {
                    let Ok(mut server) = TcpStream::connect(&upstream).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                        _ = cut.changed() => {}
                    }
                    // Dropping both ends closes the connection on both sides.
                });
            }
        });
        *self.accept.lock().unwrap() = Some(task);
    }

    /// Refuses new connections and closes every relayed one until [`Proxy::restore`].
    fn cut(&self) {
        if let Some(t) = self.accept.lock().unwrap().take() {
            t.abort();
        }
        self.cuts.send_modify(|n| *n += 1);
    }

    async fn restore(&self) {
        let listener = TcpListener::bind(("127.0.0.1", self.port)).await.unwrap();
        self.serve(listener);
    }
}

/// `dsn` with its host and port replaced by the proxy's.
fn through(dsn: &str, port: u16) -> String {
    let mut u = url::Url::parse(dsn).unwrap();
    u.set_host(Some("127.0.0.1")).unwrap();
    u.set_port(Some(port)).unwrap();
    u.to_string()
}

/// `host:port` of a DSN.
fn address(dsn: &str) -> String {
    let u = url::Url::parse(dsn).unwrap();
    format!(
        "{}:{}",
        u.host_str().unwrap(),
        u.port_or_known_default().unwrap_or(5432)
    )
}

async fn guarded<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(GUARD, f)
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish"))
}

/// Creates subordinate `id`; the status and body.
async fn create(p: &Pharos, id: &str) -> (u16, Value) {
    let body = json!({"entity_id": id, "jwks": {"keys": [jwk("k1", None)]}});
    guarded(
        "a write",
        p.admin(Method::POST, "/subordinates", Some(body)),
    )
    .await
}

async fn status(p: &Pharos, path: &str) -> u16 {
    guarded(path, p.get(path)).await.status().as_u16()
}

/// Whether PostgreSQL is configured; says so when it is not.
fn postgres_configured() -> bool {
    if crate::support::has_backend(crate::support::Backend::Postgres) {
        return true;
    }
    eprintln!("SVC_TEST_POSTGRES_DSN is not set: the database outage test is skipped");
    false
}

/// Polls `/readyz` until it answers `want`; its last body.
async fn readyz_until(p: &Pharos, want: u16) -> String {
    guarded("readyz", async {
        loop {
            let r = p.get("/readyz").await;
            let s = r.status().as_u16();
            let body = r.text().await.unwrap();
            if s == want {
                return body;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
}

/// A counter or gauge of the `/metrics` scrape (no admin user exists: loopback may scrape).
async fn metric(p: &Pharos, name: &str) -> f64 {
    let text = guarded("metrics", p.get("/metrics"))
        .await
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in\n{text}"))
}

#[tokio::test]
async fn a_lost_database_is_survived_and_recovered_from_without_restart() {
    if !postgres_configured() {
        return;
    }
    let mut db = TestDb::new(Backend::Postgres).await;
    let direct = db.dsn.clone();
    let proxy = Proxy::start(address(&direct)).await;
    db.dsn = through(&direct, proxy.port);
    let p = Pharos::start(&db).await;
    enable(&p, "fetch", "/fetch", json!({})).await;
    enable(&p, "enroll", "/enroll", json!({})).await;
    // An entity that asks to enroll during the outage (its own database is elsewhere).
    let leaf_db = TestDb::new(Backend::Sqlite).await;
    let leaf = Pharos::start(&leaf_db).await;
    crate::enroll::names_superior(&leaf, &p).await;
    let (s, v) = create(&p, "https://before.example").await;
    assert_eq!(s, 201, "{v}");
    assert_eq!(status(&p, "/readyz").await, 200);
    let fetch = format!("/fetch?sub={}", enc("https://before.example"));
    assert_eq!(status(&p, &fetch).await, 200);

    proxy.cut();
    let mut refused = Vec::new();
    for round in 0..2 {
        for _ in 0..10 {
            assert_eq!(
                status(&p, "/.well-known/openid-federation").await,
                200,
                "round {round}"
            );
            assert_eq!(status(&p, &fetch).await, 200, "round {round}");
        }
        let id = format!("https://during-{round}.example");
        let (s, v) = create(&p, &id).await;
        assert_eq!(s, 503, "{v}");
        assert_eq!(v["error"], "temporarily_unavailable", "{v}");
        assert!(v["error_description"].is_string(), "{v}");
        refused.push(id);
        assert_eq!(status(&p, "/readyz").await, 503, "round {round}");
    }
    // An enrollment (a data-plane command that writes) is refused the same way.
    let a = guarded("an enrollment", ask(&p, "/enroll", leaf.entity_id(), &[])).await;
    let v: Value = serde_json::from_str(&a.body).unwrap();
    assert_eq!(
        (a.status, v["error"].as_str()),
        (503, Some("temporarily_unavailable")),
        "{}",
        a.body
    );
    // Reads of the Admin API need the database too: an error in the same form, never a hang.
    let (s, v) = guarded("a read", p.admin(Method::GET, "/subordinates", None)).await;
    assert_eq!(
        (s, v["error"].as_str()),
        (503, Some("temporarily_unavailable"))
    );

    proxy.restore().await;
    // The pool reconnects on its own: once the readiness check sees the database (which also
    // closes the write breaker), the next write succeeds, no restart.
    readyz_until(&p, 200).await;
    let (s, v) = create(&p, "https://after.example").await;
    assert_eq!(s, 201, "{v}");
    assert_eq!(status(&p, "/readyz").await, 200);
    let after = format!("/fetch?sub={}", enc("https://after.example"));
    assert_eq!(status(&p, &after).await, 200);
    let a = guarded("an enrollment", ask(&p, "/enroll", leaf.entity_id(), &[])).await;
    assert_eq!(a.status, 201, "{}", a.body);

    // Exactly the acknowledged writes are stored (read directly, not through the proxy).
    let d = pharos_controlplane::db::Db::connect(&direct, 1)
        .await
        .unwrap();
    let rows: Vec<String> = sqlx::query("SELECT entity_id FROM subordinates ORDER BY entity_id")
        .fetch_all(d.pool())
        .await
        .unwrap()
        .iter()
        .map(|r| r.get::<String, _>(0))
        .collect();
    let mut expected = vec![
        "https://after.example".to_owned(),
        "https://before.example".to_owned(),
        leaf.entity_id().to_owned(),
    ];
    expected.sort();
    assert_eq!(rows, expected);
    // Each stored subordinate with the history event written in the same transaction.
    let with_events: i64 =
        sqlx::query("SELECT COUNT(DISTINCT subordinate_id) FROM subordinate_events")
            .fetch_one(d.pool())
            .await
            .unwrap()
            .get(0);
    assert_eq!(with_events, 3, "refused: {refused:?}");
    p.stop().await;
    leaf.stop().await;
}

#[tokio::test]
async fn a_known_outage_refuses_writes_and_key_updates_at_once() {
    if !postgres_configured() {
        return;
    }
    // A superior on PostgreSQL through the proxy, its subordinate leaf on SQLite.
    let mut db_s = TestDb::new(Backend::Postgres).await;
    let direct = db_s.dsn.clone();
    let proxy = Proxy::start(address(&direct)).await;
    db_s.dsn = through(&direct, proxy.port);
    let db_l = TestDb::new(Backend::Sqlite).await;
    let (sup, leaf) = federation(&db_s, &db_l, false).await;
    let sub = leaf.entity_id().to_owned();
    let before = published(&leaf).await;
    // The leaf rotates; a push signed by its old key (stored at the superior) carries the new.
    let old = rotate(&leaf).await;
    let after = published(&leaf).await;
    let now = sup.clock.now();
    let claims = json!({"iss": sub, "sub": sub, "iat": now, "exp": now + 600, "keys": after.keys});
    let pushed = signed_jwks(old.as_ref(), claims);
    let ct = "application/jwk-set+jwt";
    assert_eq!(metric(&sup, "pharos_database_unreachable").await, 0.0);

    proxy.cut();
    // The readiness check finds the outage and opens the breaker.
    let body = readyz_until(&sup, 503).await;
    assert!(body.contains("writes refused"), "{body}");
    // Parallel writes all answer 503 at once: none waits for the pool's acquire timeout (10 s,
    // so eight of them one behind another on the writer lock would take 80 s).
    let started = std::time::Instant::now();
    let writes = (0..8).map(|i| {
        let sup = &sup;
        async move {
            let body = json!({"entity_id": format!("https://parallel-{i}.example"),
                "jwks": {"keys": [jwk("k1", None)]}});
            let r = sup
                .client
                .post(sup.url("/api/v1/admin/subordinates"))
                .json(&body)
                .send()
                .await
                .unwrap();
            let retry = r.headers().get("retry-after").cloned();
            (r.status().as_u16(), retry, r.json::<Value>().await.unwrap())
        }
    });
    let answers = guarded("parallel writes", futures_util::future::join_all(writes)).await;
    let took = started.elapsed();
    for (s, retry, v) in &answers {
        assert_eq!(*s, 503, "{v}");
        assert_eq!(v["error"], "temporarily_unavailable", "{v}");
        assert!(retry.is_some(), "503 without Retry-After: {v}");
    }
    assert!(
        took < pharos_controlplane::db::ACQUIRE_TIMEOUT,
        "8 writes during a known outage took {took:?}"
    );
    // A signed key push and a key update trigger are refused alike, and change nothing.
    assert_eq!(push(&sup, ct, pushed.clone()).await, 503);
    let (s, v) = guarded("a trigger", trigger(&sup, json!({"sub": sub}))).await;
    assert_eq!(
        (s, v["error"].as_str()),
        (503, Some("temporarily_unavailable"))
    );
    // The data plane keeps serving the last snapshot: the leaf's statement as it was.
    assert_statement_has(&sup, &leaf, &before).await;

    proxy.restore().await;
    readyz_until(&sup, 200).await;
    assert_eq!(metric(&sup, "pharos_database_unreachable").await, 0.0);
    assert!(metric(&sup, "pharos_database_outages_total").await >= 1.0);
    // Nothing from the outage was stored; the same push now succeeds.
    assert_statement_has(&sup, &leaf, &before).await;
    assert_eq!(push(&sup, ct, pushed).await, 204);
    assert_statement_has(&sup, &leaf, &after).await;
    let (s, v) = create(&sup, "https://after-outage.example").await;
    assert_eq!(s, 201, "{v}");
    let d = pharos_controlplane::db::Db::connect(&direct, 1)
        .await
        .unwrap();
    let parallel: i64 =
        sqlx::query("SELECT COUNT(*) FROM subordinates WHERE entity_id LIKE 'https://parallel-%'")
            .fetch_one(d.pool())
            .await
            .unwrap()
            .get(0);
    assert_eq!(parallel, 0);
    sup.stop().await;
    leaf.stop().await;
}
