//! A full disk under the proactive resolver's response storage (issue 22, failing parts): the
//! resolve endpoint keeps answering live, the store's writes fail and are logged, nothing
//! crashes. Needs a tiny tmpfs (mounting needs root); skipped with a notice elsewhere.

use std::io::Write;
use std::process::Command;

use crate::resolve::{enable_resolve, resolve};
use crate::support::{Backend, Pharos, TestDb};
use serde_json::json;

/// A 64 KiB tmpfs at `dir`, filled to the last byte; unmounted on drop.
struct FullDisk(std::path::PathBuf);

impl FullDisk {
    fn mount(dir: &std::path::Path) -> Option<Self> {
        std::fs::create_dir_all(dir).ok()?;
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
            .arg(dir)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            return None;
        }
        let disk = Self(dir.to_path_buf());
        let mut f = std::fs::File::create(dir.join("filler")).ok()?;
        let chunk = [0u8; 4096];
        while f.write_all(&chunk).is_ok() {}
        let _ = f.sync_all();
        Some(disk)
    }
}

impl Drop for FullDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[tokio::test]
async fn a_full_disk_under_the_proactive_store_costs_only_the_stored_copies() {
    let store = tempfile::tempdir().unwrap();
    let mnt = store.path().join("full");
    let Some(_disk) = FullDisk::mount(&mnt) else {
        eprintln!("SKIP: cannot mount a tmpfs here (needs root)");
        return;
    };
    // Nothing more fits.
    assert!(std::fs::write(mnt.join("probe"), [0u8; 8192]).is_err());
    let (db_t, db_r) = (
        TestDb::new(Backend::Sqlite).await,
        TestDb::new(Backend::Sqlite).await,
    );
    let t = Pharos::start(&db_t).await;
    let r = Pharos::start(&db_r).await;
    let ta = t.entity_id().to_owned();
    enable_resolve(
        &r,
        json!({"allowed_trust_anchors": [ta], "proactive_resolver": {"enabled": true,
               "response_storage": {"dir": mnt.display().to_string(), "store_json": true}}}),
    )
    .await;
    for _ in 0..20 {
        let (s, body) = resolve(&r, &ta, &[&ta], &[]).await;
        assert_eq!(s, 200, "{body}");
    }
    // The proactive resolver had time to try (and fail) its writes; still serving.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let (s, body) = resolve(&r, &ta, &[&ta], &[]).await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(r.get("/healthz").await.status(), 200);
    // The store did try: its directory exists, but no response made it to the disk.
    fn files(d: &std::path::Path, out: &mut Vec<(String, u64)>) {
        for e in std::fs::read_dir(d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                files(&p, out);
            } else if p.file_name().is_some_and(|n| n != "filler") {
                out.push((p.display().to_string(), e.metadata().map_or(0, |m| m.len())));
            }
        }
    }
    let mut written = Vec::new();
    files(&mnt, &mut written);
    assert!(mnt.join("resolve").is_dir(), "the store never tried");
    assert!(written.iter().all(|(_, len)| *len == 0), "{written:?}");
    r.stop().await;
    t.stop().await;
}
