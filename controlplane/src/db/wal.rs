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
//! **Why WAL**: readers never block the writer nor wait for it (with the rollback journal a
//! commit locks readers out, and readers starve the writer's commit), and a commit costs one
//! fsync instead of the rollback journal's four.
//!
//! Every writing path begins `BEGIN IMMEDIATE` ([`super::Db::begin`]) or is one autocommit
//! statement, so no transaction ever needs the lock upgrade that SQLite answers `SQLITE_BUSY`
//! without waiting; a writer waits its turn for the busy timeout.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use sqlx::AnyPool;
use sqlx::any::AnyPoolOptions;

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
    /// is left to sync.
    pub fn sync(&self) -> std::io::Result<()> {
        use std::os::unix::fs::MetadataExt as _;
        let f = match std::fs::OpenOptions::new().write(true).open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
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
        Ok(())
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
