//! Several replicas on one PostgreSQL database (issue 19, acceptance 1 and 2): a write through
//! one replica is visible on the others, a replica whose listener connection was cut catches
//! up, a replica starting beside a busy one builds its snapshot once and misses no write
//! (issue 24), and a client assertion used on one replica is refused on another.
//!
//! Leadership (issue 33): a leader paused with SIGSTOP is replaced once its lease expires, and
//! its job's write after it resumes is refused by the fence.
//!
//! Clustering needs PostgreSQL or MariaDB (the configuration check refuses SQLite), so these
//! run when `SVC_TEST_POSTGRES_DSN` / `SVC_TEST_MYSQL_DSN` are set; with
//! `PHAROS_REQUIRE_DATABASES` (as `.ci/run` sets it) a missing DSN fails them.

use std::sync::Arc;
use std::time::Duration;

use pharos_shared::config::JtiBackend;
use pharos_shared::time::SystemClock;
use reqwest::Method;
use serde_json::json;

use crate::client_auth::{Federation, assertion, call, claims, error, signer};
use crate::support::{
    Backend, Pharos, TestDb, backends, enable, enc, eventually, has_backend, jwk,
};

const ENTITY_ID: &str = "https://federation.example.org";

/// `n` replicas on `db`, started one after the other (the first seeds the signing key).
async fn replicas(db: &TestDb, n: usize) -> Vec<Pharos> {
    let mut out = Vec::new();
    for i in 0..n {
        out.push(replica(db, i).await);
    }
    for p in &out {
        eventually("ready", || async { p.get("/readyz").await.status() == 200 }).await;
    }
    out
}

/// Replica number `i` on `db`, returned once it serves (not necessarily ready).
async fn replica(db: &TestDb, i: usize) -> Pharos {
    Pharos::start_with(
        db,
        |s| {
            s.entity_id = ENTITY_ID.into();
            s.cluster.enabled = true;
            s.cluster.instance_id = format!("replica-{i}");
            s.storage.endpoint_auth.jti_backend = JtiBackend::Db;
        },
        Arc::new(SystemClock),
    )
    .await
}

/// Snapshots `p` built from the whole database so far (`/metrics`; no admin user exists, so
/// loopback may scrape).
async fn full_builds(p: &Pharos) -> f64 {
    const SERIES: &str = "pharos_snapshot_full_builds_total ";
    let text = p.get("/metrics").await.text().await.unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(SERIES)?.parse().ok())
        .unwrap_or_else(|| panic!("no {SERIES} in\n{text}"))
}

async fn listed(p: &Pharos, entity: &str) -> bool {
    let r = p.get("/list").await;
    r.status() == 200 && r.text().await.unwrap().contains(entity)
}

async fn add(p: &Pharos, entity: &str) {
    let body = json!({"entity_id": entity, "jwks": {"keys": [jwk("k1", None)]}});
    let (s, v) = p.admin(Method::POST, "/subordinates", Some(body)).await;
    assert_eq!(s, 201, "{v}");
}

fn postgres() -> bool {
    has_backend(Backend::Postgres)
}

#[tokio::test]
async fn a_write_on_one_replica_is_visible_on_the_others_and_a_cut_listener_catches_up_from_the_log()
 {
    // Without the DSN this fails under PHAROS_REQUIRE_DATABASES (`has_backend`), as in CI.
    if !postgres() {
        return;
    }
    let db = TestDb::new(Backend::Postgres).await;
    let r = replicas(&db, 3).await;
    let (a, b, c) = (&r[0], &r[1], &r[2]);

    writes_travel(a, b, c).await;

    // A's listener connection is cut: it reconnects, reads what it missed from the change log
    // (no second full build) and is ready again; writes made meanwhile on B are there.
    let origin = a.app.as_ref().unwrap().control.origin;
    let name = pharos_controlplane::control_plane::cluster::listener_name(origin);
    let pool = db.pool().await;
    let cut = || async {
        let (killed,): (i64,) = sqlx::query_as(
            "SELECT COUNT(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE application_name = $1) AS t",
        )
        .bind(&name)
        .fetch_one(pool.pool())
        .await
        .unwrap();
        assert_eq!(killed, 1, "A's listener connection");
    };
    cut().await;
    let later = "https://leaf-2.example.org";
    add(b, later).await;
    add(c, "https://leaf-2b.example.org").await;
    eventually("A caught up", || listed(a, later)).await;
    eventually("A caught up with C", || {
        listed(a, "https://leaf-2b.example.org")
    })
    .await;
    eventually("A ready", || async {
        a.get("/readyz").await.status() == 200
    })
    .await;
    assert_eq!(
        full_builds(a).await,
        1.0,
        "the start only: the cut cost a delta"
    );
    // And it keeps listening afterwards.
    let third = "https://leaf-3.example.org";
    add(c, third).await;
    eventually("A follows again", || listed(a, third)).await;

    // Cut again, and the log loses generations A has not seen (as pruning does to a replica
    // far behind): only a full reload catches up, whether A notices on reconnecting or at the
    // next notification.
    cut().await;
    sqlx::query("UPDATE cluster_generation SET generation = generation + 5 WHERE id = 1")
        .execute(pool.pool())
        .await
        .unwrap();
    let fourth = "https://leaf-4.example.org";
    add(b, fourth).await;
    eventually("A caught up after the pruned log", || listed(a, fourth)).await;
    eventually("A reloaded everything", || async {
        full_builds(a).await == 2.0
    })
    .await;
    eventually("A ready again", || async {
        a.get("/readyz").await.status() == 200
    })
    .await;
    let fifth = "https://leaf-5.example.org";
    add(c, fifth).await;
    eventually("A follows after the full reload", || listed(a, fifth)).await;
    assert_eq!(
        full_builds(a).await,
        2.0,
        "one full reload, then deltas again"
    );

    for p in r {
        p.stop().await;
    }
}

#[tokio::test]
async fn a_write_on_one_replica_is_visible_on_the_others_on_mariadb() {
    // Without the DSN this fails under PHAROS_REQUIRE_DATABASES (`has_backend`), as in CI.
    if !has_backend(Backend::Mysql) {
        return;
    }
    let db = TestDb::new(Backend::Mysql).await;
    let r = replicas(&db, 3).await;
    writes_travel(&r[0], &r[1], &r[2]).await;
    for p in r {
        p.stop().await;
    }
}

#[tokio::test]
async fn a_replica_starting_beside_a_busy_one_builds_its_snapshot_once_and_misses_no_write() {
    // PostgreSQL LISTEN, MariaDB's change log.
    for b in backends().into_iter().filter(|b| *b != Backend::Sqlite) {
        starting_beside_a_busy_replica(b).await;
    }
}

/// Replica B starts while A adds subordinates one after the other: B builds its snapshot from
/// the database once (it used to build it again when its listener connected, doubling the
/// start of a large registry), and every subordinate A added before, during and after B's
/// start is listed on B.
async fn starting_beside_a_busy_replica(backend: Backend) {
    let db = TestDb::new(backend).await;
    let a = replica(&db, 0).await;
    enable(&a, "list", "/list", json!({})).await;
    let mut added = Vec::new();
    for i in 0..20 {
        added.push(format!("https://before-{i}.example.org"));
        add(&a, added.last().unwrap()).await;
    }
    let started = std::sync::atomic::AtomicBool::new(false);
    let (b, during) = tokio::join!(
        async {
            let b = replica(&db, 1).await;
            started.store(true, std::sync::atomic::Ordering::SeqCst);
            b
        },
        async {
            let mut during = Vec::new();
            while !started.load(std::sync::atomic::Ordering::SeqCst) {
                during.push(format!("https://during-{}.example.org", during.len()));
                add(&a, during.last().unwrap()).await;
            }
            during
        },
    );
    assert!(!during.is_empty(), "no write while B started");
    added.extend(during);
    added.push("https://after.example.org".into());
    add(&a, added.last().unwrap()).await;
    for entity in &added {
        eventually("listed on B", || listed(&b, entity)).await;
    }
    eventually("B ready", || async {
        b.get("/readyz").await.status() == 200
    })
    .await;
    assert_eq!(full_builds(&b).await, 1.0, "{backend:?}: built once");
    a.stop().await;
    b.stop().await;
}

/// A registry change and a subordinate added through `a` reach `b` and `c`; a status change
/// through `b` reaches `a` and `c`.
async fn writes_travel(a: &Pharos, b: &Pharos, c: &Pharos) {
    // A registry change and a subordinate through A reach B and C.
    enable(a, "list", "/list", json!({})).await;
    enable(a, "fetch", "/fetch", json!({})).await;
    let leaf = "https://leaf-1.example.org";
    add(a, leaf).await;
    for p in [b, c] {
        eventually("subordinate listed on B and C", || listed(p, leaf)).await;
        let r = p.get(&format!("/fetch?sub={}", enc(leaf))).await;
        assert_eq!(r.status(), 200);
    }
    // A change of one subordinate (status) travels alone and is applied there too.
    let (s, v) = b
        .admin_raw(
            Method::PUT,
            &format!("/subordinates/{}/status", enc(leaf)),
            Some("blocked"),
        )
        .await;
    assert!((200..300).contains(&s), "{v}");
    for p in [a, c] {
        eventually("blocked on A and C", || async { !listed(p, leaf).await }).await;
    }
}

#[tokio::test]
async fn a_client_assertion_used_on_one_replica_is_refused_on_another() {
    for b in cluster_backends() {
        replayed_assertion(b).await;
    }
}

async fn replayed_assertion(backend: Backend) {
    let (db_t, db_c, db) = (
        TestDb::new(Backend::Sqlite).await,
        TestDb::new(Backend::Sqlite).await,
        TestDb::new(backend).await,
    );
    let f = Federation::start(&db_t, &db_c).await;
    let r = replicas(&db, 2).await;
    let (a, b) = (&r[0], &r[1]);
    let jwks = f.ta.entity_configuration().await.claims["jwks"].clone();
    let (s, v) = a
        .admin(
            Method::POST,
            "/trust-anchors",
            Some(json!({"entity_id": f.ta.entity_id(), "jwks": jwks})),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let body = json!({"type": "list", "path": "/list", "auth_enabled": true,
        "auth_trust_anchors": [f.ta.entity_id()], "config": {}});
    let (s, v) = a
        .admin(Method::POST, "/federation-endpoints", Some(body))
        .await;
    assert_eq!(s, 201, "{v}");
    eventually("endpoint on B", || async {
        b.client
            .post(b.main_url("/list"))
            .form(&[("x", "y")])
            .send()
            .await
            .unwrap()
            .status()
            != 404
    })
    .await;

    let c = claims(f.client.entity_id(), ENTITY_ID, |_| {});
    let used = assertion(signer(&f.client).as_ref(), &c);
    assert_eq!(call(a, "/list", &used, &[]).await.0, 200);
    let (st, body) = call(b, "/list", &used, &[]).await;
    assert_eq!(
        (st, error(&body).as_str()),
        (401, "invalid_client"),
        "{body}"
    );
    // A fresh assertion passes on B.
    let c = claims(f.client.entity_id(), ENTITY_ID, |_| {});
    let fresh = assertion(signer(&f.client).as_ref(), &c);
    assert_eq!(call(b, "/list", &fresh, &[]).await.0, 200);

    for p in r {
        p.stop().await;
    }
    f.stop().await;
}

#[tokio::test]
async fn killing_the_leader_moves_rotation_to_another_replica_and_it_is_done_once() {
    // PostgreSQL advisory lock and MariaDB GET_LOCK.
    for b in backends().into_iter().filter(|b| *b != Backend::Sqlite) {
        failover(b).await;
    }
}

async fn failover(backend: Backend) {
    use pharos_shared::time::ManualClock;
    const T0: i64 = 1_900_000_000;
    const H: i64 = 3_600;
    let db = TestDb::new(backend).await;
    let clock = ManualClock::new(T0);
    let mut r = Vec::new();
    for i in 0..3 {
        let p = Pharos::start_with(
            &db,
            |s| {
                s.entity_id = ENTITY_ID.into();
                s.cluster.enabled = true;
                s.cluster.instance_id = format!("replica-{i}");
                s.cluster.leader_lease = pharos_shared::config::Duration::from_secs(2);
                s.storage.endpoint_auth.jti_backend = JtiBackend::Db;
            },
            clock.clone(),
        )
        .await;
        r.push(p);
    }
    let leaders = |r: &[Pharos]| {
        r.iter()
            .filter(|p| p.app.as_ref().unwrap().leadership.is_leader())
            .count()
    };
    eventually("one leader", || async { leaders(&r) == 1 }).await;
    let (s, v) = r[0]
        .admin(
            Method::PUT,
            "/keys/rotation",
            Some(json!({"enabled": true, "interval": "48h", "overlap": "2h",
                        "key_announcement_lead_time": "6h"})),
        )
        .await;
    assert_eq!(s, 200, "{v}");
    let pool = db.pool().await;
    let keys = || async {
        let (n,): (i64,) =
            sqlx::query_as("SELECT COUNT(*) FROM signing_keys WHERE key_set = 'federation'")
                .fetch_one(pool.pool())
                .await
                .unwrap();
        n
    };
    assert_eq!(keys().await, 1);

    // The leader dies; another replica takes over the key schedule.
    let i = r
        .iter()
        .position(|p| p.app.as_ref().unwrap().leadership.is_leader())
        .unwrap();
    r.remove(i).stop().await;
    eventually("a new leader", || async { leaders(&r) == 1 }).await;

    // The announcement of the successor key is due: every replica's key task is woken (their
    // timers run on the real clock), and only the leader's acts.
    clock.set(T0 + 42 * H);
    for _ in 0..3 {
        for p in &r {
            p.app.as_ref().unwrap().control.key_events.notify_one();
        }
        eventually("successor announced", || async { keys().await >= 2 }).await;
    }
    // Both replicas publish it, and there is one successor in the database.
    for p in &r {
        eventually("successor published", || async {
            p.app
                .as_ref()
                .unwrap()
                .control
                .snapshot()
                .keys
                .published
                .len()
                == 2
        })
        .await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(keys().await, 2, "one key transition, not one per replica");
    for p in r {
        p.stop().await;
    }
}

/// The PostgreSQL and MariaDB backends of this run (clustering needs one of them). With
/// `PHAROS_REQUIRE_DATABASES` set, as `.ci/run` does, a missing DSN fails the test here
/// (`support::backends`) instead of leaving its database out.
fn cluster_backends() -> Vec<Backend> {
    backends()
        .into_iter()
        .filter(|b| *b != Backend::Sqlite)
        .collect()
}

/// A `pharos serve` process, killed (SIGKILL works on a stopped process too) when dropped, so
/// a failing test never leaves a paused replica behind.
struct Process {
    child: std::process::Child,
    port: u16,
    log: std::path::PathBuf,
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Process {
    /// Replica `name` of `db` as a separate process (a process of its own can be paused
    /// with SIGSTOP without pausing the test), with a lease of 4 s and a JTI cleanup every
    /// second (the leader-only job this test watches); returns once it is ready.
    async fn start(db: &TestDb, name: &str, dir: &std::path::Path) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let log = dir.join(format!("{name}.log"));
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_pharos"));
        for (k, _) in std::env::vars() {
            if k.starts_with("SVC_") || k == "RUST_LOG" {
                cmd.env_remove(k);
            }
        }
        let driver = match db.backend {
            Backend::Mysql => "mysql",
            _ => "postgres",
        };
        let child = cmd
            .arg("serve")
            .env("SVC_ENTITY_ID", ENTITY_ID)
            .env("SVC_SERVER_IP_LISTEN", "127.0.0.1")
            .env("SVC_SERVER_PORT", port.to_string())
            .env("SVC_STORAGE_DRIVER", driver)
            .env("SVC_STORAGE_DSN", &db.dsn)
            .env("SVC_STORAGE_DATA_DIR", dir.join(name))
            .env("SVC_STORAGE_ENDPOINT_AUTH_JTI_BACKEND", "db")
            .env("SVC_STORAGE_ENDPOINT_AUTH_JTI_CLEANUP_INTERVAL", "1s")
            .env("SVC_CLUSTER_ENABLED", "true")
            .env("SVC_CLUSTER_INSTANCE_ID", name)
            .env("SVC_CLUSTER_LEADER_LEASE", "4s")
            .env("RUST_LOG", "info")
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let p = Self { child, port, log };
        let ready = || async {
            p.http()
                .get(format!("http://127.0.0.1:{}/readyz", p.port))
                .send()
                .await
                .is_ok_and(|r| r.status() == 200)
        };
        for _ in 0..600 {
            if ready().await {
                return p;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("{name} never became ready:\n{}", p.logged());
    }

    fn http(&self) -> reqwest::Client {
        reqwest::Client::builder().no_proxy().build().unwrap()
    }

    fn logged(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// `series` of its `/metrics` (no admin user exists, so loopback may scrape).
    async fn metric(&self, series: &str) -> Option<f64> {
        let r = self
            .http()
            .get(format!("http://127.0.0.1:{}/metrics", self.port))
            .send()
            .await
            .ok()?;
        let text = r.text().await.ok()?;
        let prefix = format!("{series} ");
        text.lines()
            .find_map(|l| l.strip_prefix(prefix.as_str())?.trim().parse().ok())
    }

    fn signal(&self, sig: &str) {
        let ok = std::process::Command::new("kill")
            .args([sig, &self.child.id().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill {sig} failed");
    }
}

#[tokio::test]
async fn a_paused_leader_is_replaced_within_the_lease_and_its_write_after_resuming_is_refused() {
    for b in cluster_backends() {
        paused_leader(b).await;
    }
}

/// Issue 33, acceptance 3: replica A leads; its JTI cleanup is caught in the middle of its
/// transaction (the test holds a row lock its DELETE waits for), and A is paused there with
/// SIGSTOP. B takes the lease over once it expires by the database's clock, with a higher
/// generation. The lock is released and A resumed: A's DELETE completes, and its fence refuses
/// the commit (A's `/metrics` counts the refused write), while B goes on leading and its own
/// cleanup deletes the row.
async fn paused_leader(backend: Backend) {
    let db = TestDb::new(backend).await;
    let dir = tempfile::tempdir().unwrap();
    let a = Process::start(&db, "replica-a", dir.path()).await;
    eventually("A leads", || async {
        a.metric("pharos_leader").await == Some(1.0)
    })
    .await;
    let b = Process::start(&db, "replica-b", dir.path()).await;
    assert_eq!(b.metric("pharos_leader").await, Some(0.0), "one leader");
    let a_generation = a.metric("pharos_leader_generation").await.unwrap();

    // An expired JTI record, locked by the test: A's cleanup (every second) waits for it in
    // the middle of its transaction. Retried when A deleted it before the lock was taken.
    let pool = db.pool().await;
    let mut lock = None;
    for n in 0..50 {
        let jti = format!("fence-probe-{n}");
        sqlx::query(
            pool.sql("INSERT INTO jtis_used (jti, expires_at, created_at) VALUES (?, 1, 1)"),
        )
        .bind(&jti)
        .execute(pool.pool())
        .await
        .unwrap();
        let mut tx = pool.pool().begin().await.unwrap();
        let held = sqlx::query(pool.sql("SELECT jti FROM jtis_used WHERE jti = ? FOR UPDATE"))
            .bind(&jti)
            .fetch_optional(&mut *tx)
            .await
            .unwrap();
        if held.is_some() {
            lock = Some((tx, jti));
            break;
        }
    }
    let (mut lock, jti) = lock.expect("the probe row was always deleted before it was locked");
    // A statement waiting for the row this test locked (only the leader's cleanup deletes
    // expired records). PostgreSQL names the blocker; MariaDB's lock tables do not list the
    // waiting transaction (10.11 leaves it out of INNODB_TRX), so there a DELETE of this
    // nearly empty table still running after half a second is the one waiting.
    let waiting = match backend {
        Backend::Mysql => "SELECT COUNT(*) FROM information_schema.PROCESSLIST \
             WHERE DB = DATABASE() AND INFO LIKE '%DELETE FROM jtis_used%' AND TIME_MS > 500"
            .to_owned(),
        _ => {
            let (mine,): (i32,) = sqlx::query_as("SELECT pg_backend_pid()")
                .fetch_one(&mut *lock)
                .await
                .unwrap();
            format!(
                "SELECT COUNT(*) FROM pg_stat_activity \
                 WHERE {mine} = ANY(pg_blocking_pids(pid)) AND query LIKE '%DELETE FROM jtis_used%'"
            )
        }
    };
    let cleanups_waiting = || async {
        let (n,): (i64,) = sqlx::query_as(sqlx::AssertSqlSafe(waiting.as_str()))
            .fetch_one(pool.pool())
            .await
            .unwrap();
        n
    };
    // A cleanup runs every second; on a loaded machine a minute is allowed, and a failure
    // shows both replicas' logs.
    let mut seen = false;
    for _ in 0..1200 {
        if cleanups_waiting().await >= 1 {
            seen = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        seen,
        "{backend:?}: no cleanup waits for the probe row\nA:\n{}\nB:\n{}",
        a.logged(),
        b.logged()
    );
    // Only the leader cleans up: the waiting DELETE is A's (on a machine so loaded that A
    // lost its lease meanwhile, the test's premise is gone, and it says so).
    assert_eq!(a.metric("pharos_leader").await, Some(1.0), "A still leads");
    assert_eq!(b.metric("pharos_leader").await, Some(0.0), "B does not");

    a.signal("-STOP");
    // B takes over once A's lease expires (A cannot renew it while paused).
    eventually("B leads", || async {
        b.metric("pharos_leader").await == Some(1.0)
    })
    .await;
    let b_generation = b.metric("pharos_leader_generation").await.unwrap();
    assert!(
        b_generation > a_generation,
        "{b_generation} > {a_generation}"
    );

    // Release the row, then resume A: its DELETE goes through, its commit must not.
    lock.rollback().await.unwrap();
    a.signal("-CONT");
    eventually("A's write refused by its fence", || async {
        a.metric("pharos_leader_fenced_writes_total").await >= Some(1.0)
    })
    .await;
    eventually("A no longer leads", || async {
        a.metric("pharos_leader").await == Some(0.0)
    })
    .await;
    // Each change of hands is counted where it happened (PharosLeaderFlapping alerts on them).
    let changes = |change: &str| format!(r#"pharos_leader_changes_total{{change="{change}"}}"#);
    assert_eq!(a.metric(&changes("acquired")).await, Some(1.0));
    assert_eq!(a.metric(&changes("lost")).await, Some(1.0));
    assert_eq!(b.metric(&changes("acquired")).await, Some(1.0));
    assert_eq!(b.metric(&changes("lost")).await, Some(0.0));
    assert!(
        a.logged().contains("leader-only write refused"),
        "{}",
        a.logged()
    );
    // B still leads under its generation, and its cleanup removes the row A could not.
    let present = || async {
        let (n,): (i64,) = sqlx::query_as(pool.sql("SELECT COUNT(*) FROM jtis_used WHERE jti = ?"))
            .bind(&jti)
            .fetch_one(pool.pool())
            .await
            .unwrap();
        n
    };
    eventually("B's cleanup deleted the probe", || async {
        present().await == 0
    })
    .await;
    assert_eq!(b.metric("pharos_leader").await, Some(1.0));
    assert_eq!(
        b.metric("pharos_leader_generation").await,
        Some(b_generation)
    );
    assert_eq!(
        b.metric("pharos_leader_fenced_writes_total").await,
        Some(0.0)
    );
    drop(a);
    drop(b);
}

/// A GET on `p`'s main port for host `federation.example.org` (the replicas' entity host):
/// the status.
async fn on_host(p: &Pharos, path: &str) -> u16 {
    p.client
        .get(p.main_url(path))
        .header(reqwest::header::HOST, "federation.example.org")
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// Issue 38: a hosted entity created on one replica is served by the others, its changes
/// made through any replica reach them all, and deleting it takes it off every replica.
#[tokio::test]
async fn a_hosted_entity_created_on_one_replica_is_served_by_the_others() {
    for backend in cluster_backends() {
        let db = TestDb::new(backend).await;
        let r = replicas(&db, 2).await;
        let (a, b) = (&r[0], &r[1]);
        let edu = format!("{ENTITY_ID}/edu");
        let (s, v) = a
            .admin(Method::POST, "/entities", Some(json!({"entity_id": edu})))
            .await;
        assert_eq!(s, 201, "{backend:?}: {v}");
        let n = v["id"].as_i64().unwrap();
        eventually("B serves the new entity", || async {
            on_host(b, "/edu/.well-known/openid-federation").await == 200
        })
        .await;
        // A change through B (its endpoint, a subordinate) is served by A.
        let fetch = json!({"type": "fetch", "path": "/fetch", "config": {}});
        let (s, v) = b
            .admin(
                Method::POST,
                &format!("/entities/{n}/federation-endpoints"),
                Some(fetch),
            )
            .await;
        assert_eq!(s, 201, "{backend:?}: {v}");
        let leaf = "https://leaf.edu.example.org";
        let body = json!({"entity_id": leaf, "jwks": {"keys": [jwk("k1", None)]}});
        let (s, v) = b
            .admin(
                Method::POST,
                &format!("/entities/{n}/subordinates"),
                Some(body),
            )
            .await;
        assert_eq!(s, 201, "{backend:?}: {v}");
        let fetch_leaf = format!("/edu/fetch?sub={}", enc(leaf));
        eventually("A serves B's subordinate of the entity", || async {
            on_host(a, &fetch_leaf).await == 200
        })
        .await;
        // The default entity of either replica is untouched.
        assert_eq!(on_host(a, &format!("/fetch?sub={}", enc(leaf))).await, 404);
        // Deleted through A, it leaves B too.
        let (s, v) = a.delete_entity(n, &edu).await;
        assert_eq!(s, 204, "{backend:?}: {v}");
        eventually("B no longer serves it", || async {
            on_host(b, "/edu/.well-known/openid-federation").await == 404
        })
        .await;
        for p in r {
            p.stop().await;
        }
    }
}
