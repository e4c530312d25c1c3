//! `kill -9` during a write storm (issue 33): the real `pharos serve` binary on SQLite,
//! PostgreSQL and MariaDB, several Admin API clients creating subordinates and editing their metadata at
//! once, SIGKILL at a random moment, several rounds. After each restart every write that was
//! answered 2xx before the kill is stored: an acknowledgement is sent only after its commit is
//! durable, whatever the journal mode (rollback journal or WAL with group commit), so no
//! shutdown code is needed for it to hold.

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use sqlx::Row as _;

use crate::support::{Backend, TestDb, backends, enc, jwk};

/// Hang guard only: no request, start or exit may take anywhere near this long.
const GUARD: Duration = Duration::from_secs(120);

/// Rounds of storm, kill and restart per database.
const ROUNDS: usize = 4;

/// Concurrent Admin API clients.
const WRITERS: usize = 6;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts `pharos serve` on `port` for `db` (data in `data` for SQLite); returns once
/// `/readyz` answers 200.
async fn serve(db: &TestDb, data: &std::path::Path, port: u16, log: &std::path::Path) -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pharos"));
    for (k, _) in std::env::vars() {
        if k.starts_with("SVC_") || k == "RUST_LOG" {
            cmd.env_remove(k);
        }
    }
    cmd.arg("serve")
        .env("SVC_ENTITY_ID", format!("http://127.0.0.1:{port}"))
        .env("SVC_SERVER_IP_LISTEN", "127.0.0.1")
        .env("SVC_SERVER_PORT", port.to_string())
        .env("SVC_SERVER_RATE_LIMITS_ENABLED", "false")
        .env("SVC_STORAGE_DATA_DIR", data);
    match db.backend {
        Backend::Sqlite => cmd.env("SVC_STORAGE_DRIVER", "sqlite"),
        Backend::Postgres => cmd
            .env("SVC_STORAGE_DRIVER", "postgres")
            .env("SVC_STORAGE_DSN", &db.dsn),
        Backend::Mysql => cmd
            .env("SVC_STORAGE_DRIVER", "mysql")
            .env("SVC_STORAGE_DSN", &db.dsn),
    };
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap();
    let c = reqwest::Client::builder().no_proxy().build().unwrap();
    for _ in 0..600 {
        if c.get(format!("http://127.0.0.1:{port}/readyz"))
            .send()
            .await
            .is_ok_and(|r| r.status() == 200)
        {
            return child;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!(
                "pharos exited at start ({status}): {}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!(
        "pharos did not start: {}",
        std::fs::read_to_string(log).unwrap_or_default()
    );
}

/// SIGKILL, and waits (off the runtime's threads) until the process is gone.
async fn kill9(mut child: Child) {
    let ok = Command::new("kill")
        .args(["-KILL", &child.id().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -KILL failed");
    tokio::time::timeout(
        GUARD,
        tokio::task::spawn_blocking(move || child.wait().unwrap()),
    )
    .await
    .expect("pharos did not die of SIGKILL")
    .unwrap();
}

/// A small generator for the kill moments (xorshift), seeded from the clock; the seed is
/// printed so that a failing run can be repeated with `KILL9_SEED`.
struct Moments(u64);

impl Moments {
    fn new() -> Self {
        let seed = std::env::var("KILL9_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .subsec_nanos() as u64
                    | 1
            });
        eprintln!("kill -9 moments: KILL9_SEED={seed}");
        Self(seed)
    }

    /// A delay between `lo` and `hi` milliseconds.
    fn next_ms(&mut self, lo: u64, hi: u64) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        lo + x % (hi - lo)
    }
}

/// What the writers were told: creates answered 2xx, and per edited subordinate the highest
/// sequence number whose edit was answered 2xx and the highest one sent at all.
#[derive(Default, Clone)]
struct Acked {
    created: BTreeSet<String>,
    edited: BTreeMap<String, (u64, u64)>,
}

/// The subordinate writer `w` edits.
fn edited(w: usize) -> String {
    format!("https://edited-{w}.example")
}

/// The sequence number in an edited subordinate's stored metadata.
fn stored_seq(metadata: Option<String>) -> u64 {
    let Some(m) = metadata else { return 0 };
    let v: Value = serde_json::from_str(&m).unwrap();
    v["openid_relying_party"]["client_name"]
        .as_str()
        .and_then(|s| s.strip_prefix("seq "))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// One writer: alternately creates a new subordinate and edits its own one's metadata, until
/// the service stops answering.
async fn writer(base: String, w: usize, round: usize, acked: Arc<Mutex<Acked>>) {
    let c = reqwest::Client::builder().no_proxy().build().unwrap();
    let mine = edited(w);
    for n in 0.. {
        let (url, method, body, key) = if n % 2 == 0 {
            let id = format!("https://w{w}-r{round}-n{n}.example");
            let body = json!({"entity_id": id, "jwks": {"keys": [jwk("k1", None)]}});
            (
                format!("{base}/subordinates"),
                reqwest::Method::POST,
                body,
                Err(id),
            )
        } else {
            let seq = {
                let mut a = acked.lock().unwrap();
                let e = a.edited.entry(mine.clone()).or_default();
                e.1 += 1;
                e.1
            };
            let body = json!({"client_name": format!("seq {seq}")});
            let url = format!(
                "{base}/subordinates/{}/metadata/openid_relying_party",
                enc(&mine)
            );
            (url, reqwest::Method::PUT, body, Ok(seq))
        };
        let sent = c
            .request(method, url)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send();
        match tokio::time::timeout(GUARD, sent).await {
            Ok(Ok(r)) if r.status().is_success() => {
                let mut a = acked.lock().unwrap();
                match key {
                    Err(id) => {
                        a.created.insert(id);
                    }
                    Ok(seq) => {
                        let e = a.edited.entry(mine.clone()).or_default();
                        e.0 = e.0.max(seq);
                    }
                }
            }
            // Refused (busy, say): not acknowledged; the storm goes on.
            Ok(Ok(_)) => {}
            // The process is gone.
            Ok(Err(_)) => return,
            Err(_) => panic!("a write did not finish"),
        }
    }
}

/// Every acknowledged write of `acked` is in `db`.
async fn check(db: &TestDb, acked: &Acked, round: usize) {
    let pool = db.pool().await;
    let rows = sqlx::query("SELECT entity_id, metadata FROM subordinates")
        .fetch_all(pool.pool())
        .await
        .unwrap();
    pool.pool().close().await;
    let stored: BTreeMap<String, Option<String>> = rows
        .iter()
        .map(|r| (r.get("entity_id"), r.get("metadata")))
        .collect();
    let lost: Vec<&String> = acked
        .created
        .iter()
        .filter(|id| !stored.contains_key(*id))
        .collect();
    assert!(
        lost.is_empty(),
        "{:?} round {round}: created, acknowledged, not stored: {lost:?}",
        db.backend
    );
    for (id, (acked_seq, sent_seq)) in &acked.edited {
        let seq = stored_seq(stored.get(id).cloned().flatten());
        assert!(
            seq >= *acked_seq && seq <= *sent_seq,
            "{:?} round {round}: {id} stores edit {seq}; acknowledged up to {acked_seq}, sent up to {sent_seq}",
            db.backend
        );
    }
}

#[tokio::test]
async fn every_acknowledged_write_survives_kill_9_at_random_moments() {
    let mut moments = Moments::new();
    for backend in backends() {
        let db = TestDb::new(backend).await;
        let data = db.dir.path().join("data");
        let port = free_port();
        let base = format!("http://127.0.0.1:{port}/api/v1/admin");
        let mut child = serve(&db, &data, port, &db.dir.path().join("start.log")).await;
        let c = reqwest::Client::builder().no_proxy().build().unwrap();
        for w in 0..WRITERS {
            let body = json!({"entity_id": edited(w), "jwks": {"keys": [jwk("k1", None)]}});
            let r = c
                .post(format!("{base}/subordinates"))
                .header("content-type", "application/json")
                .body(body.to_string())
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 201);
        }
        let acked = Arc::new(Mutex::new(Acked::default()));
        let mut per_round = Vec::new();
        for round in 0..ROUNDS {
            let before = acked.lock().unwrap().created.len();
            let writers: Vec<_> = (0..WRITERS)
                .map(|w| tokio::spawn(writer(base.clone(), w, round, acked.clone())))
                .collect();
            // At least one write of this round acknowledged, then a random moment later.
            while acked.lock().unwrap().created.len() == before {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            tokio::time::sleep(Duration::from_millis(moments.next_ms(50, 1500))).await;
            kill9(child).await;
            for w in writers {
                tokio::time::timeout(GUARD, w).await.unwrap().unwrap();
            }
            let log = db.dir.path().join(format!("round-{round}.log"));
            child = serve(&db, &data, port, &log).await;
            // A copy: the writers are done, and no lock is held across the checks.
            let a = acked.lock().unwrap().clone();
            per_round.push(a.created.len() - before);
            check(&db, &a, round).await;
        }
        // The restarted service answers the edits too, not only the database.
        let a = acked.lock().unwrap().clone();
        for (id, (acked_seq, _)) in &a.edited {
            let url = format!(
                "{base}/subordinates/{}/metadata/openid_relying_party",
                enc(id)
            );
            let v: Value = c.get(url).send().await.unwrap().json().await.unwrap();
            let name = v["client_name"].as_str().unwrap_or_default();
            let seq: u64 = name.trim_start_matches("seq ").parse().unwrap_or(0);
            assert!(seq >= *acked_seq, "{backend:?}: {id}: {v}");
        }
        let edits: u64 = a.edited.values().map(|e| e.0).sum();
        eprintln!(
            "{backend:?}: creates acknowledged per round {per_round:?}, edits acknowledged {edits}"
        );
        kill9(child).await;
    }
}
