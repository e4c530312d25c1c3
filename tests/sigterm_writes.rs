//! SIGTERM during writes (issue 22, failing parts): the real `pharos serve` binary on SQLite,
//! Admin API creates from several clients at once, SIGTERM in the middle of them. After a
//! restart on the same data directory every write that was answered 2xx is in the database:
//! an acknowledgement is only sent after the commit, and shutdown drains, never drops, it.

use std::collections::BTreeSet;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pharos_shared::config::{Settings, StorageDriver};
use serde_json::json;
use sqlx::Row as _;

use crate::support::jwk;

/// Hang guard only: no request or shutdown may take anywhere near this long.
const GUARD: Duration = Duration::from_secs(120);

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts `pharos serve` on `port` with its data in `data`; returns once `/healthz` answers.
async fn serve(data: &std::path::Path, port: u16, stderr: &std::path::Path) -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pharos"));
    for (k, _) in std::env::vars() {
        if k.starts_with("SVC_") || k == "RUST_LOG" {
            cmd.env_remove(k);
        }
    }
    let mut child = cmd
        .arg("serve")
        .env("SVC_ENTITY_ID", format!("http://127.0.0.1:{port}"))
        .env("SVC_SERVER_IP_LISTEN", "127.0.0.1")
        .env("SVC_SERVER_PORT", port.to_string())
        .env("SVC_STORAGE_DATA_DIR", data)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(stderr).unwrap())
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
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!(
        "pharos did not start: {}",
        std::fs::read_to_string(stderr).unwrap_or_default()
    );
}

fn sigterm(child: &Child) {
    let ok = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -TERM failed");
}

/// Waits (off the runtime's threads) for the process to exit; its exit status.
async fn exited(mut child: Child) -> std::process::ExitStatus {
    tokio::time::timeout(
        GUARD,
        tokio::task::spawn_blocking(move || child.wait().unwrap()),
    )
    .await
    .expect("pharos did not exit after SIGTERM")
    .unwrap()
}

#[tokio::test]
async fn every_acknowledged_write_survives_a_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let port = free_port();
    let child = serve(&data, port, &dir.path().join("first.log")).await;
    let base = format!("http://127.0.0.1:{port}/api/v1/admin/subordinates");

    let acked = Arc::new(Mutex::new(BTreeSet::new()));
    let mut writers = Vec::new();
    for w in 0..6 {
        let (acked, base) = (acked.clone(), base.clone());
        writers.push(tokio::spawn(async move {
            let c = reqwest::Client::builder().no_proxy().build().unwrap();
            for n in 0.. {
                let id = format!("https://w{w}-n{n}.example");
                let body = json!({"entity_id": id, "jwks": {"keys": [jwk("k1", None)]}});
                let sent = c
                    .post(&base)
                    .header("content-type", "application/json")
                    .body(body.to_string())
                    .send();
                match tokio::time::timeout(GUARD, sent).await {
                    Ok(Ok(r)) if r.status().is_success() => {
                        acked.lock().unwrap().insert(id);
                    }
                    // Refused while shutting down (or the connection closed): not acknowledged.
                    Ok(Ok(_)) | Ok(Err(_)) => return,
                    Err(_) => panic!("a write did not finish"),
                }
            }
        }));
    }
    // Let writes be under way, then SIGTERM in the middle of them.
    loop {
        if acked.lock().unwrap().len() >= 30 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    sigterm(&child);
    let status = exited(child).await;
    assert!(status.success(), "exit status after SIGTERM: {status:?}");
    for w in writers {
        tokio::time::timeout(GUARD, w).await.unwrap().unwrap();
    }
    let acked = acked.lock().unwrap().clone();

    // Restart on the same data: it starts, and every acknowledged write is stored.
    let child = serve(&data, port, &dir.path().join("second.log")).await;
    let mut s = Settings::default();
    s.storage.driver = StorageDriver::Sqlite;
    s.storage.data_dir = data.display().to_string();
    let db = pharos_controlplane::db::Db::connect(&s.storage_url(), 1)
        .await
        .unwrap();
    let stored: BTreeSet<String> = sqlx::query("SELECT entity_id FROM subordinates")
        .fetch_all(db.pool())
        .await
        .unwrap()
        .iter()
        .map(|r| r.get::<String, _>(0))
        .collect();
    db.pool().close().await;
    let lost: Vec<_> = acked.difference(&stored).collect();
    assert!(lost.is_empty(), "acknowledged but not stored: {lost:?}");
    assert!(acked.len() >= 30);
    sigterm(&child);
    assert!(exited(child).await.success());
}
