//! Interoperability: an independent client, `@openid-federation/core` (TypeScript, run with the
//! machine's Node.js), resolves trust chains served by Pharos. `.ci/run` installs it with
//! `npm ci` in `tests/interop/`; the test does the same when it is missing. Without Node.js the
//! test prints a notice and passes, unless `PHAROS_REQUIRE_NODE=1` (set by `.ci/run`), which
//! turns its absence into a failure so CI cannot pass without running it.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use crate::support::{Pharos, TestDb, backends};

fn interop_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/interop")
}

/// Whether Node.js is available; prints the skip notice when it is not, and fails the test
/// instead when `PHAROS_REQUIRE_NODE=1`.
pub fn node_available() -> bool {
    let ok = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var("PHAROS_REQUIRE_NODE").map_or(true, |v| v != "1"),
            "node is required (PHAROS_REQUIRE_NODE=1): apt-get install nodejs npm"
        );
        eprintln!("NOTICE: node not found; the @openid-federation/core interop test is skipped");
    }
    ok
}

/// Runs `resolve.mjs` (installing the client first when needed) on a blocking thread, so the
/// Pharos instances in this runtime keep serving; returns its JSON output.
pub async fn node_resolve(entity_id: &str, anchor: &str) -> Value {
    let (entity_id, anchor) = (entity_id.to_owned(), anchor.to_owned());
    tokio::task::spawn_blocking(move || {
        let dir = interop_dir();
        if !dir.join("node_modules/@openid-federation/core").exists() {
            let st = Command::new("npm")
                .args(["ci", "--no-audit", "--no-fund"])
                .current_dir(&dir)
                .status()
                .unwrap();
            assert!(st.success(), "npm ci failed in {}", dir.display());
        }
        let out = Command::new("node")
            .args(["resolve.mjs", &entity_id, &anchor])
            .current_dir(&dir)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "{text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_str(&text).unwrap()
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn openid_federation_core_resolves_a_pharos_trust_anchor() {
    if !node_available() {
        return;
    }
    let db = TestDb::new(backends()[0]).await;
    let t = Pharos::start(&db).await;
    let v = node_resolve(t.entity_id(), t.entity_id()).await;
    assert_eq!(v["chains"], 1, "{v}");
    assert_eq!(v["lengths"][0], 1, "{v}");
    t.stop().await;
}
