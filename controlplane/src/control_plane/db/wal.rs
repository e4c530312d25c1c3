//! The embedded SQLite in write-ahead-log mode, durable, with group commit.
//!
//! **What is promised**: a write acknowledged by the service survives a power cut.
//!
//! **How**: the database runs in WAL mode. Every pooled connection has `synchronous=FULL`, so
//! a commit on it (statistics, replay records, start-up) returns only after the WAL is fsynced.
//! Federation writes ([`crate::control_plane::Write`]) run one at a time (the writer lock) on a
//! connection of their own, [`Wal::writer`], with `synchronous=NORMAL`: its commit appends the
//! transaction's frames to the WAL without an fsync, and the write is *not yet acknowledged*.
//! A group-commit task then fsyncs the WAL file once ([`Wal::sync`]) for every transaction
//! committed since the last fsync, publishes them, and only then are their requests answered.
//! Frames of one WAL are replayed in order up to the first one that is incomplete, so one
//! fsync makes every earlier commit durable: this is `synchronous=FULL`'s guarantee, with the
//! fsync shared by every write that committed while the previous one ran. In WAL mode,
//! `NORMAL` still syncs the WAL before each checkpoint and the database file after it, so a
//! checkpoint never drops what was acknowledged.
//!
//! **Checkpoints never run on a write's path**: SQLite copies the WAL back into the database
//! file (a checkpoint) by default inside the commit that makes the WAL pass 1,000 pages, so the
//! write that happens to cross that line waits for the copy and its fsyncs, under the writer
//! lock, with every other write queued behind it: a soak of 600 s saw commits of 1 to 18 s and
//! writes answered 408 (BENCHMARKS.md, "Soak", the run of 2026-11-27 00:18 and the two before
//! it). Every connection runs with `wal_autocheckpoint = 0`, and one task ([`crate::control_plane`]'s group commit) asks for a
//! `PASSIVE` checkpoint on a pooled connection once the WAL passes [`CHECKPOINT_AT`], and every
//! [`CHECKPOINT_EVERY`] for the writes that do not pass through the group commit (statistics,
//! replay records). A passive checkpoint never blocks a writer: writers append while it copies.
//!
//! **Why WAL**: readers never block the writer nor wait for it (with the rollback journal a
//! commit locks readers out, and readers starve the writer's commit), and a commit costs one
//! fsync instead of the rollback journal's four.
//!
//! Every writing path begins `BEGIN IMMEDIATE` ([`super::Db::begin`]) or is one autocommit
//! statement, so no transaction ever needs the lock upgrade that SQLite answers `SQLITE_BUSY`
//! without waiting; a writer waits its turn for the busy timeout.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use sqlx::AnyPool;
use sqlx::any::AnyPoolOptions;

/// WAL size past which a checkpoint is asked for: SQLite's own default of 1,000 pages of 4 KiB.
pub const CHECKPOINT_AT: u64 = 1_000 * 4_096;

/// Longest time between two checkpoints while anything was written.
pub const CHECKPOINT_EVERY: Duration = Duration::from_secs(30);

/// The pragma every connection to an SQLite file runs: no checkpoint inside a commit.
pub const NO_AUTOCHECKPOINT: &str = "PRAGMA wal_autocheckpoint = 0";

/// Copies what the WAL holds back into the database file without blocking a writer, on a
/// pooled connection (never the federation writer's). Returns the WAL's frames and those
/// checkpointed (SQLite's `wal_checkpoint` answer).
pub async fn checkpoint(pool: &AnyPool) -> Result<(i64, i64), sqlx::Error> {
    let (_busy, log, done): (i64, i64, i64) = sqlx::query_as("PRAGMA wal_checkpoint(PASSIVE)")
        .fetch_one(pool)
        .await?;
    Ok((log, done))
}

/// The federation writer's connection and the WAL file it appends to.
#[derive(Debug)]
pub struct Wal {
    /// One connection with `synchronous=NORMAL`, for [`crate::control_plane::Write`] only.
    pub writer: AnyPool,
    /// `<database>-wal`.
    path: PathBuf,
    /// The WAL file (device, inode) whose directory entry is known durable.
    dir_synced: Mutex<Option<(u64, u64)>>,
}

impl Wal {
    /// Puts the SQLite database at `url` (already reachable through `pool`) in WAL mode and
    /// opens the federation writer's connection. `None` for an in-memory database, which has
    /// no WAL (and nothing to make durable).
    pub(super) async fn open(url: &str, pool: &AnyPool) -> Result<Option<Self>, sqlx::Error> {
        let file: String =
            sqlx::query_scalar("SELECT file FROM pragma_database_list WHERE name = 'main'")
                .fetch_one(pool)
                .await?;
        if file.is_empty() {
            return Ok(None);
        }
        // Changing the journal mode needs the database to itself; it is persistent, so once
        // is enough, and it is a no-op when already in WAL mode.
        let mode: String = sqlx::query_scalar("PRAGMA journal_mode = WAL")
            .fetch_one(pool)
            .await?;
        if !mode.eq_ignore_ascii_case("wal") {
            tracing::warn!(%mode, "SQLite refused WAL mode; every commit syncs on its own");
            return Ok(None);
        }
        let writer = AnyPoolOptions::new()
            .max_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .acquire_timeout(super::ACQUIRE_TIMEOUT)
            .after_connect(|c, _| {
                Box::pin(async move {
                    sqlx::query("PRAGMA synchronous = NORMAL")
                        .execute(&mut *c)
                        .await?;
                    sqlx::query(NO_AUTOCHECKPOINT).execute(&mut *c).await?;
                    Ok(())
                })
            })
            .connect_lazy(url)?;
        Ok(Some(Self {
            writer,
            path: PathBuf::from(format!("{file}-wal")),
            dir_synced: Mutex::new(None),
        }))
    }

    /// Makes every transaction committed so far durable: fsyncs the WAL file (blocking; run it
    /// on the blocking pool), and its directory once per WAL file, so that a WAL created since
    /// start is found after a power cut. SQLite syncs with `fdatasync` as well. A missing WAL
    /// means the last connection closed, which checkpoints (with syncs) and deletes it: nothing
    /// is left to sync. Returns the WAL's size.
    pub fn sync(&self) -> std::io::Result<u64> {
        use std::os::unix::fs::MetadataExt as _;
        let f = match std::fs::OpenOptions::new().write(true).open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(e),
        };
        f.sync_data()?;
        let m = f.metadata()?;
        let id = (m.dev(), m.ino());
        let mut known = self.dir_synced.lock().unwrap_or_else(|p| p.into_inner());
        if *known != Some(id) {
            if let Some(dir) = self.path.parent() {
                sync_dir(dir)?;
            }
            *known = Some(id);
        }
        Ok(m.len())
    }
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
impl Wal {
    /// A `Wal` whose writer never connects and whose file does not exist (sync is a no-op).
    pub fn for_tests() -> Self {
        sqlx::any::install_default_drivers();
        Self {
            writer: AnyPoolOptions::new()
                .connect_lazy("sqlite::memory:")
                .unwrap_or_else(|e| panic!("lazy pool: {e}")),
            path: PathBuf::from("/nonexistent/pharos-test.db-wal"),
            dir_synced: Mutex::new(None),
        }
    }
}
