//! Backups lose nothing (issue 33): a backup taken while the service runs and writes, restored
//! with the database encryption key onto a fresh machine, serves the same Entity Configuration
//! keys and the same subordinates, with statements that verify with those keys.
//!
//! SQLite is copied with `pharos backup` (the real binary, while the service runs); PostgreSQL
//! and MariaDB with their own tools, as `docs/deployment.md` says (`pg_dump` / `psql`,
//! `mariadb-dump` / `mariadb`). A restore without the key does not start: the key is part of
//! the backup, kept apart from the database.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pharos_shared::config::Settings;
use pharos_shared::jose::{self, Jwks};
use pharos_shared::time::SystemClock;
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::Row as _;

use crate::support::{Backend, Pharos, TestDb, backends, enable, enc, jwk};

/// The database encryption key (`signing.db_encryption_key_file`), hex.
const KEY_HEX: &str = "5f1d2c3b4a59687766554433221100ffeeddccbbaa99887766554433221100ab";

/// Hang guard only.
const GUARD: Duration = Duration::from_secs(120);

/// A command line tool's path, if on `PATH`.
fn which(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}

/// The first of `tools` found; a test whose database is configured must not skip for want of
/// its dump tool.
fn tool(tools: &[&str]) -> PathBuf {
    tools
        .iter()
        .find_map(|t| which(t))
        .unwrap_or_else(|| panic!("none of {tools:?} on PATH, and the database is configured"))
}

/// Runs `cmd`, panicking with its output unless it succeeds.
async fn run(cmd: &mut tokio::process::Command, what: &str) -> std::process::Output {
    cmd.stdin(std::process::Stdio::null());
    let out = tokio::time::timeout(GUARD, cmd.output())
        .await
        .unwrap_or_else(|_| panic!("{what}: no end"))
        .unwrap();
    assert!(
        out.status.success(),
        "{what} failed ({}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `pharos backup FILE` for the database `s` configures, with the environment cleared of the
/// caller's `SVC_` settings.
fn pharos_backup(s: &Settings, file: &Path) -> tokio::process::Command {
    let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_pharos"));
    for (k, _) in std::env::vars() {
        if k.starts_with("SVC_") || k == "RUST_LOG" {
            c.env_remove(k);
        }
    }
    let driver = match s.storage.driver {
        pharos_shared::config::StorageDriver::Sqlite => "sqlite",
        pharos_shared::config::StorageDriver::Postgres => "postgres",
        pharos_shared::config::StorageDriver::Mysql => "mysql",
    };
    c.arg("backup")
        .arg(file)
        .env("SVC_STORAGE_DRIVER", driver)
        .env("SVC_STORAGE_DATA_DIR", &s.storage.data_dir)
        .env("SVC_STORAGE_DSN", &s.storage.dsn);
    c
}

/// Starts Pharos on `db` with the encryption key in `key_file` (or none).
async fn start(db: &TestDb, key_file: Option<&Path>) -> Pharos {
    let key = key_file.map(|k| k.display().to_string());
    Pharos::start_with(
        db,
        |s| {
            if let Some(k) = key {
                s.signing.db_encryption_key_file = k;
            }
        },
        Arc::new(SystemClock),
    )
    .await
}

/// Our Entity Configuration's keys, sorted by kid, and the kid it is signed with.
async fn ec_keys(p: &Pharos) -> (Vec<Value>, String) {
    let ec = p.entity_configuration().await;
    let mut keys = ec.claims["jwks"]["keys"].as_array().unwrap().clone();
    keys.sort_by_key(|k| k["kid"].as_str().unwrap_or_default().to_owned());
    (keys, ec.header["kid"].as_str().unwrap().to_owned())
}

/// Subordinate entity identifiers stored in `db`.
async fn stored(db: &TestDb) -> BTreeSet<String> {
    let pool = db.pool().await;
    let ids = sqlx::query("SELECT entity_id FROM subordinates")
        .fetch_all(pool.pool())
        .await
        .unwrap()
        .iter()
        .map(|r| r.get::<String, _>("entity_id"))
        .collect();
    pool.pool().close().await;
    ids
}

/// Takes a backup of `db` (served by `p`) with the dialect's tool into `dir`; the file.
async fn take_backup(db: &TestDb, p: &Pharos, dir: &Path) -> PathBuf {
    match db.backend {
        Backend::Sqlite => {
            let file = dir.join("pharos-backup.db");
            let out = run(&mut pharos_backup(&p.settings, &file), "pharos backup").await;
            assert!(
                String::from_utf8_lossy(&out.stdout).contains("backup written"),
                "{out:?}"
            );
            file
        }
        Backend::Postgres => {
            // `pharos backup` names the tool instead.
            let file = dir.join("refused.db");
            let out = pharos_backup(&p.settings, &file).output().await.unwrap();
            assert_eq!(out.status.code(), Some(64), "{out:?}");
            assert!(String::from_utf8_lossy(&out.stderr).contains("pg_dump"));
            assert!(!file.exists());
            let file = dir.join("pharos.sql");
            run(
                tokio::process::Command::new(tool(&["pg_dump"]))
                    .args(["--no-owner", "--no-privileges", "--file"])
                    .arg(&file)
                    .arg(&db.dsn),
                "pg_dump",
            )
            .await;
            file
        }
        Backend::Mysql => {
            let file = dir.join("refused.db");
            let out = pharos_backup(&p.settings, &file).output().await.unwrap();
            assert_eq!(out.status.code(), Some(64), "{out:?}");
            assert!(String::from_utf8_lossy(&out.stderr).contains("mariadb-dump"));
            let file = dir.join("pharos.sql");
            let mut c = mysql_command(&["mariadb-dump", "mysqldump"], &db.dsn);
            c.arg("--single-transaction")
                .arg("--result-file")
                .arg(&file);
            c.arg(mysql_database(&db.dsn));
            run(&mut c, "mariadb-dump").await;
            file
        }
    }
}

/// A MariaDB client tool with the DSN's host, port, user and password.
fn mysql_command(tools: &[&str], dsn: &str) -> tokio::process::Command {
    let url = url::Url::parse(dsn).unwrap();
    let mut c = tokio::process::Command::new(tool(tools));
    c.arg(format!("--host={}", url.host_str().unwrap_or("127.0.0.1")))
        .arg(format!("--port={}", url.port().unwrap_or(3306)))
        .arg(format!("--user={}", url.username()));
    if let Some(pw) = url.password() {
        c.env("MYSQL_PWD", pw);
    }
    c
}

fn mysql_database(dsn: &str) -> String {
    url::Url::parse(dsn)
        .unwrap()
        .path()
        .trim_start_matches('/')
        .to_owned()
}

/// Restores `file` into the fresh, empty database `fresh`, as its dialect's guide says.
async fn restore(fresh: &TestDb, file: &Path) {
    match fresh.backend {
        Backend::Sqlite => {
            let data = fresh.dir.path().join("data");
            pharos_controlplane::private_files::create_dir(&data).unwrap();
            // `install -m 0600 backup.db data_dir/pharos.db` on the new machine.
            let bytes = std::fs::read(file).unwrap();
            pharos_controlplane::private_files::write_new(&data.join("pharos.db"), &bytes).unwrap();
        }
        Backend::Postgres => {
            run(
                tokio::process::Command::new(tool(&["psql"]))
                    .args(["--quiet", "--set", "ON_ERROR_STOP=1", "--file"])
                    .arg(file)
                    .arg(&fresh.dsn),
                "psql",
            )
            .await;
        }
        Backend::Mysql => {
            let mut c = mysql_command(&["mariadb", "mysql"], &fresh.dsn);
            c.arg(mysql_database(&fresh.dsn))
                .stdin(std::fs::File::open(file).unwrap());
            let out = tokio::time::timeout(GUARD, c.output())
                .await
                .unwrap()
                .unwrap();
            assert!(out.status.success(), "mariadb restore: {out:?}");
        }
    }
}

#[tokio::test]
async fn a_backup_under_writes_restores_the_same_keys_and_subordinates_elsewhere() {
    for backend in backends() {
        let machine = tempfile::tempdir().unwrap();
        let key_file = machine.path().join("db-encryption.key");
        pharos_controlplane::private_files::write_new(&key_file, KEY_HEX.as_bytes()).unwrap();
        let db = TestDb::new(backend).await;
        let p = start(&db, Some(&key_file)).await;
        enable(&p, "fetch", "/fetch", json!({})).await;
        // Two signing keys of ours (sealed with the key), and subordinates.
        let (s, v) = p.admin(Method::POST, "/kms/rotate", None).await;
        assert!((200..300).contains(&s), "{v}");
        // And a public key held elsewhere, published by us (the `api` key set).
        let external =
            pharos_shared::jose::SigningKey::generate(pharos_shared::jose::Algorithm::ES256, 0)
                .unwrap();
        let mut public = pharos_shared::jose::Signer::public_jwk(&external).clone();
        public.remove("kid");
        let body = json!({"key": Value::Object(public)});
        let (s, v) = p
            .admin(Method::POST, "/entity-configuration/keys", Some(body))
            .await;
        assert_eq!(s, 201, "{v}");
        for n in 0..5 {
            let body = json!({"entity_id": format!("https://before-{n}.example"),
                "jwks": {"keys": [jwk(&format!("b{n}"), None)]}});
            let (s, v) = p.admin(Method::POST, "/subordinates", Some(body)).await;
            assert_eq!(s, 201, "{v}");
        }
        let (keys_before, signing_kid) = ec_keys(&p).await;
        assert!(keys_before.len() >= 3, "{keys_before:?}");

        // Writers keep creating subordinates while the backup is taken.
        let acked = Arc::new(Mutex::new(BTreeSet::new()));
        let attempted = Arc::new(Mutex::new(BTreeSet::new()));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut writers = Vec::new();
        for w in 0..4 {
            let (acked, attempted, stop) = (acked.clone(), attempted.clone(), stop.clone());
            let url = p.url("/api/v1/admin/subordinates");
            let client = p.client.clone();
            writers.push(tokio::spawn(async move {
                for n in 0.. {
                    if stop.load(std::sync::atomic::Ordering::Acquire) {
                        return;
                    }
                    let id = format!("https://w{w}-n{n}.example");
                    let body = json!({"entity_id": id, "jwks": {"keys": [jwk("k1", None)]}});
                    attempted.lock().unwrap().insert(id.clone());
                    let r = client
                        .post(&url)
                        .header("content-type", "application/json")
                        .body(body.to_string())
                        .send()
                        .await
                        .unwrap();
                    // 503 is "busy, retry" (not acknowledged, not stored); nothing else.
                    match r.status().as_u16() {
                        201 => {
                            acked.lock().unwrap().insert(id);
                        }
                        503 => {}
                        s => panic!("{s}: {}", r.text().await.unwrap_or_default()),
                    }
                }
            }));
        }
        while acked.lock().unwrap().len() < 10 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let acked_before_backup = acked.lock().unwrap().clone();
        let file = take_backup(&db, &p, machine.path()).await;
        let during = acked.lock().unwrap().len();
        stop.store(true, std::sync::atomic::Ordering::Release);
        for w in writers {
            tokio::time::timeout(GUARD, w).await.unwrap().unwrap();
        }
        let attempted = attempted.lock().unwrap().clone();
        if backend == Backend::Sqlite {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "the backup holds private keys");
            // A second backup into the same file is refused and leaves it as it was.
            let before = std::fs::read(&file).unwrap();
            let out = pharos_backup(&p.settings, &file).output().await.unwrap();
            assert_eq!(out.status.code(), Some(64), "{out:?}");
            assert_eq!(std::fs::read(&file).unwrap(), before);
        }
        p.stop().await;

        // A fresh machine: an empty database, the backup and the key file copied over.
        let new_machine = tempfile::tempdir().unwrap();
        let fresh = TestDb::new(backend).await;
        restore(&fresh, &file).await;
        let restored = stored(&fresh).await;
        let missing: Vec<_> = acked_before_backup.difference(&restored).collect();
        assert!(
            missing.is_empty(),
            "{backend:?}: acknowledged before the backup began but not in it: {missing:?}"
        );
        for n in 0..5 {
            assert!(restored.contains(&format!("https://before-{n}.example")));
        }
        // Whatever else it holds was written (by a writer, not made up): a consistent copy.
        for id in &restored {
            assert!(
                id.starts_with("https://before-") || attempted.contains(id),
                "{backend:?}: {id}"
            );
        }
        eprintln!(
            "{backend:?}: {} acknowledged before the backup, {during} by its end, {} in it",
            acked_before_backup.len(),
            restored.len()
        );

        // Without the key the restored database does not start: its private keys are sealed.
        let mut settings = Settings::default();
        fresh.configure(&mut settings);
        settings.entity_id = "http://127.0.0.1:1".into();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let started = pharos::app::App::start(
            settings,
            Arc::new(SystemClock),
            pharos::app::Listeners {
                main: Some(listener),
                admin: None,
                redirect: None,
            },
        )
        .await;
        let Err(e) = started else {
            panic!("{backend:?}: a restore without the encryption key started");
        };
        eprintln!("{backend:?}: without the key: {e}");

        // With the key copied over, the same keys and the same subordinates are served.
        let new_key = new_machine.path().join("db-encryption.key");
        std::fs::copy(&key_file, &new_key).unwrap();
        let q = start(&fresh, Some(&new_key)).await;
        let (keys_after, kid_after) = ec_keys(&q).await;
        assert_eq!(
            keys_after, keys_before,
            "{backend:?}: Entity Configuration keys"
        );
        assert_eq!(kid_after, signing_kid, "{backend:?}: signing key");
        let jwks: Jwks = serde_json::from_value(json!({"keys": keys_before})).unwrap();
        for (i, id) in restored.iter().enumerate() {
            // Every statement of a few; all of the ones from before the writes.
            if !(id.starts_with("https://before-") || i % 7 == 0) {
                continue;
            }
            let r = q.get(&format!("/fetch?sub={}", enc(id))).await;
            assert_eq!(r.status(), 200, "{backend:?}: {id}");
            let d = jose::verify(&r.text().await.unwrap(), &jwks).unwrap();
            assert_eq!(d.header["kid"], signing_kid.as_str());
            assert_eq!(d.claims["sub"], id.as_str());
        }
        q.stop().await;
    }
}
