//! `pharos stats …` against the configured database (issue 17, CLI): the same numbers as the
//! Admin API, export to a file, aggregation of a given day, and exit status 64 on bad arguments.

use std::process::Command;

use crate::support::{Backend, TestDb, backends};
use pharos_controlplane::db::Db;
use pharos_controlplane::db::stats::{self as repo, RequestRow};
use pharos_shared::config::Settings;
use serde_json::Value;

/// 2026-03-10T12:00:00Z.
const NOON: i64 = 1_773_144_000;

fn config(db: &TestDb) -> std::path::PathBuf {
    let mut s = Settings::default();
    db.configure(&mut s);
    let storage = match db.backend {
        Backend::Sqlite => format!("  driver: sqlite\n  data_dir: {}\n", s.storage.data_dir),
        Backend::Postgres => format!("  driver: postgres\n  dsn: {}\n", s.storage.dsn),
        Backend::Mysql => format!("  driver: mysql\n  dsn: {}\n", s.storage.dsn),
    };
    let path = db.dir.path().join("config.yaml");
    std::fs::write(
        &path,
        format!("entity_id: https://cli.example\nstorage:\n{storage}"),
    )
    .unwrap();
    path
}

async fn seed(db: &TestDb) {
    let mut s = Settings::default();
    db.configure(&mut s);
    if db.backend == Backend::Sqlite {
        std::fs::create_dir_all(&s.storage.data_dir).unwrap();
    }
    let pool = Db::connect(&s.storage_url(), 2).await.unwrap();
    pool.migrate().await.unwrap();
    let row = |i: i64, endpoint: &str, status: i64, ip: &str| RequestRow {
        ts: NOON + i,
        endpoint: endpoint.into(),
        method: "GET".into(),
        status_code: status,
        duration_us: 1000 * (i + 1),
        client_ip: Some(ip.into()),
        user_agent: Some("cli-test/1".into()),
        ..RequestRow::default()
    };
    let rows = [
        row(0, "fetch", 200, "192.0.2.1"),
        row(1, "fetch", 200, "192.0.2.1"),
        row(2, "list", 404, "192.0.2.2"),
    ];
    repo::insert_requests(&pool, rows.to_vec()).await.unwrap();
    pool.pool().close().await;
}

fn pharos(cfg: &std::path::Path, args: &[&str]) -> (Option<i32>, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pharos"));
    for (k, _) in std::env::vars() {
        if k.starts_with("SVC_") {
            c.env_remove(k);
        }
    }
    let out = c.arg("--config").arg(cfg).args(args).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    (
        out.status.code(),
        text + &String::from_utf8_lossy(&out.stderr),
    )
}

const DAY: [&str; 4] = ["--from", "2026-03-10", "--to", "2026-03-10"];

fn with<'a>(args: &[&'a str]) -> Vec<&'a str> {
    args.iter().copied().chain(DAY).collect()
}

#[tokio::test]
async fn stats_commands_read_the_configured_database() {
    for b in backends() {
        let db = TestDb::new(b).await;
        seed(&db).await;
        let cfg = config(&db);
        let (code, out) = pharos(&cfg, &with(&["stats", "summary", "--format", "json"]));
        assert_eq!(code, Some(0), "{b:?} {out}");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["summary"]["total_requests"], 3, "{v}");
        assert_eq!(v["summary"]["total_errors"], 1);
        assert_eq!(v["summary"]["p50_latency_ms"], 2.0);

        let (code, out) = pharos(&cfg, &with(&["stats", "top", "clients", "--format", "csv"]));
        assert_eq!(code, Some(0), "{out}");
        assert_eq!(out, "value,count\n192.0.2.1,2\n192.0.2.2,1\n");

        let (code, out) = pharos(&cfg, &with(&["stats", "latency", "--endpoint", "fetch"]));
        assert_eq!(code, Some(0), "{out}");
        assert!(
            out.lines()
                .any(|l| l.starts_with("latency.max_ms") && l.ends_with("2.0")),
            "{out}"
        );

        let file = db.dir.path().join("out.csv");
        let f = file.to_str().unwrap();
        let (code, out) = pharos(&cfg, &with(&["stats", "export", "-o", f]));
        assert_eq!(code, Some(0), "{out}");
        let csv = std::fs::read_to_string(&file).unwrap();
        assert_eq!(csv.lines().count(), 4, "{csv}");
        assert!(
            csv.lines()
                .nth(3)
                .unwrap()
                .starts_with("2026-03-10T12:00:02Z,list,GET,404,3,"),
            "{csv}"
        );

        let (code, out) = pharos(&cfg, &["stats", "aggregate", "--date", "2026-03-10"]);
        assert_eq!(code, Some(0), "{out}");
        assert!(out.contains("2026-03-10: 2 aggregate rows"), "{out}");
        let (code, out) = pharos(&cfg, &with(&["stats", "daily", "--format", "json"]));
        assert_eq!(code, Some(0), "{out}");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["daily"][0]["request_count"], 2, "{v}");
        assert_eq!(v["daily"][0]["duration_avg_ms"], 1.5, "{v}");

        // Far past retention from today's point of view: everything goes.
        let (code, out) = pharos(&cfg, &["stats", "purge", "--dry-run"]);
        assert_eq!(code, Some(0), "{out}");
        let (code, out) = pharos(
            &cfg,
            &[
                "stats",
                "timeseries",
                "--interval",
                "day",
                "--format",
                "json",
            ],
        );
        assert_eq!(code, Some(0), "{out}");
    }
}

#[test]
fn bad_arguments_exit_64() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.yaml");
    let data = dir.path().join("data");
    std::fs::write(&cfg, format!("storage:\n  data_dir: {}\n", data.display())).unwrap();
    for args in [
        &["stats", "summary", "--limit", "0"][..],
        &["stats", "summary", "--from", "last week"],
        &["stats", "timeseries", "--interval", "year"],
        &["stats", "top", "planets"],
        &["stats", "summary", "--format", "yaml"],
        &["stats", "export", "--format", "table"],
        &["stats", "aggregate", "--date", "2026-02-30"],
        &["stats", "frobnicate"],
        &["stats"],
    ] {
        let (code, out) = pharos(&cfg, args);
        assert_eq!(code, Some(64), "{args:?}: {out}");
    }
    // Nothing was opened for them.
    assert!(!data.exists());
}
