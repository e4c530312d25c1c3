//! `pharos backup FILE`: a consistent copy of the embedded SQLite database, taken while the
//! service runs.
//!
//! A file copy of a live SQLite database can capture a half-written page set (a commit in
//! progress, a journal not yet rolled back, WAL frames not yet checkpointed) and restore as a
//! corrupt or older database. `VACUUM INTO` instead copies inside one read transaction: the
//! result is the database as of one commit, whatever writers do meanwhile, and it is a
//! self-contained file (no journal or WAL beside it). It takes a read lock only, so the service
//! keeps serving; with the rollback journal a writer that wants to commit waits (within its
//! busy timeout) while the copy runs, in WAL mode not at all.
//!
//! The copy holds every stored private key (sealed when `signing.db_encryption_key*` is set),
//! so it is created with mode 0600 before SQLite writes into it, and an existing file is never
//! overwritten: a backup must not replace an older one by accident, nor be written into a file
//! another user created and may read.
//!
//! PostgreSQL and MariaDB have their own online dump tools (`pg_dump`, `mariadb-dump`); the
//! command names them instead of guessing at a copy of its own.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use pharos_shared::config::{Settings, StorageDriver};

/// Exit status for a request this command cannot do with this configuration (EX_USAGE).
pub const EXIT_USAGE: u8 = 64;

/// `pharos backup` arguments.
#[derive(Debug, Args)]
pub struct BackupArgs {
    /// The new file to write the copy to; it must not exist.
    pub file: PathBuf,
}

/// Why a backup was not written.
#[derive(Debug)]
pub enum Refusal {
    /// Not the embedded database: the dialect's own tool is the way (exit 64).
    NotSqlite(&'static str),
    /// The target exists, or no database is there to copy (exit 64).
    Usage(String),
    /// The copy failed (exit 1).
    Failed(String),
}

/// What `pharos backup` says for a server database: which tool takes the backup instead.
pub fn server_database_advice(driver: StorageDriver) -> Option<&'static str> {
    match driver {
        StorageDriver::Sqlite => None,
        StorageDriver::Postgres => Some(
            "pharos backup copies the embedded SQLite database; this configuration uses \
             PostgreSQL: take an online backup with pg_dump (see docs/deployment.md, \"Backups\")",
        ),
        StorageDriver::Mysql => Some(
            "pharos backup copies the embedded SQLite database; this configuration uses \
             MySQL/MariaDB: take an online backup with mariadb-dump --single-transaction (see \
             docs/deployment.md, \"Backups\")",
        ),
    }
}

/// Runs `pharos backup` with `settings`: prints one line on success (stdout) or failure
/// (stderr) and returns the exit status.
pub fn run(settings: &Settings, args: BackupArgs) -> ExitCode {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("pharos backup: cannot start runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(backup(settings, &args.file)) {
        Ok(bytes) => {
            println!("backup written to {} ({bytes} bytes)", args.file.display());
            ExitCode::SUCCESS
        }
        Err(Refusal::NotSqlite(msg)) => {
            eprintln!("pharos backup: {msg}");
            ExitCode::from(EXIT_USAGE)
        }
        Err(Refusal::Usage(msg)) => {
            eprintln!("pharos backup: {msg}");
            ExitCode::from(EXIT_USAGE)
        }
        Err(Refusal::Failed(msg)) => {
            eprintln!("pharos backup: {msg}");
            ExitCode::FAILURE
        }
    }
}

/// Writes a consistent copy of the configured SQLite database to the new file `target`; its
/// size in bytes.
pub async fn backup(settings: &Settings, target: &Path) -> Result<u64, Refusal> {
    if let Some(advice) = server_database_advice(settings.storage.driver) {
        return Err(Refusal::NotSqlite(advice));
    }
    let source = Path::new(&settings.storage.data_dir).join("pharos.db");
    // The database must be there already: opening it read-write but never creating it, so a
    // wrong data_dir is an error and not an empty "backup" of a database made up on the spot.
    if !source.is_file() {
        return Err(Refusal::Usage(format!(
            "no database at {} (storage.data_dir)",
            source.display()
        )));
    }
    // Created here, 0600 and new, before SQLite writes into it: VACUUM INTO accepts an empty
    // file, and from then on the copy is never readable by others.
    crate::private_files::write_new(target, b"").map_err(|e| {
        Refusal::Usage(if e.kind() == std::io::ErrorKind::AlreadyExists {
            format!(
                "{} exists; a backup never overwrites a file",
                target.display()
            )
        } else {
            format!("cannot create {}: {e}", target.display())
        })
    })?;
    match copy_into(&source, target).await {
        Ok(bytes) => Ok(bytes),
        Err(e) => {
            // The file is ours (created above): a half-written copy must not pass for a backup.
            let _ = std::fs::remove_file(target);
            Err(Refusal::Failed(format!(
                "copying {} to {} failed: {e}",
                source.display(),
                target.display()
            )))
        }
    }
}

/// `VACUUM INTO` from `source` into the empty file `target`, then makes the copy durable (SQLite
/// writes the copy without syncing it).
async fn copy_into(source: &Path, target: &Path) -> Result<u64, String> {
    use sqlx::ConnectOptions as _;
    use sqlx::Connection as _;
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(source)
        .create_if_missing(false)
        // A writer holding the lock delays the copy's read transaction; wait for it as the
        // service's own connections do.
        .busy_timeout(std::time::Duration::from_secs(30));
    let mut conn = options.connect().await.map_err(|e| e.to_string())?;
    let target_str = target
        .to_str()
        .ok_or_else(|| format!("{} is not a UTF-8 path", target.display()))?;
    let copied = sqlx::query("VACUUM INTO ?")
        .bind(target_str)
        .execute(&mut conn)
        .await
        .map_err(|e| e.to_string());
    let _ = conn.close().await;
    copied?;
    let f = std::fs::File::open(target).map_err(|e| e.to_string())?;
    f.sync_all().map_err(|e| e.to_string())?;
    let bytes = f.metadata().map_err(|e| e.to_string())?.len();
    // The new directory entry too, so that the file is there after a power cut.
    if let Some(dir) = target.parent().filter(|d| !d.as_os_str().is_empty())
        && let Ok(d) = std::fs::File::open(dir)
    {
        let _ = d.sync_all();
    }
    Ok(bytes)
}

#[cfg(all(test, unix))]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    fn settings(dir: &Path) -> Settings {
        let mut s = Settings::default();
        s.storage.driver = StorageDriver::Sqlite;
        s.storage.data_dir = dir.display().to_string();
        s
    }

    #[tokio::test]
    async fn copies_the_database_0600_and_never_overwrites() {
        let tmp = tempfile::tempdir().unwrap();
        let s = settings(tmp.path());
        let db = crate::db::Db::connect(&s.storage_url(), 1).await.unwrap();
        sqlx::query("CREATE TABLE t (v TEXT)")
            .execute(&db.pool)
            .await
            .unwrap();
        sqlx::query("INSERT INTO t VALUES ('kept')")
            .execute(&db.pool)
            .await
            .unwrap();
        let target = tmp.path().join("copy.db");
        let bytes = backup(&s, &target).await.unwrap();
        assert!(bytes > 0);
        let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let copy = crate::db::Db::connect(&format!("sqlite://{}", target.display()), 1)
            .await
            .unwrap();
        let v: String = sqlx::query_scalar("SELECT v FROM t")
            .fetch_one(&copy.pool)
            .await
            .unwrap();
        assert_eq!(v, "kept");
        copy.pool.close().await;
        // A second backup into the same file is refused, and the first copy stays as it was.
        let before = std::fs::read(&target).unwrap();
        assert!(matches!(
            backup(&s, &target).await,
            Err(Refusal::Usage(m)) if m.contains("exists")
        ));
        assert_eq!(std::fs::read(&target).unwrap(), before);
        db.pool.close().await;
    }

    #[tokio::test]
    async fn no_database_and_server_databases_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let mut s = settings(&tmp.path().join("nowhere"));
        let target = tmp.path().join("copy.db");
        assert!(matches!(
            backup(&s, &target).await,
            Err(Refusal::Usage(m)) if m.contains("no database")
        ));
        assert!(!target.exists());
        assert!(!tmp.path().join("nowhere").exists());
        for (driver, tool) in [
            (StorageDriver::Postgres, "pg_dump"),
            (StorageDriver::Mysql, "mariadb-dump"),
        ] {
            s.storage.driver = driver;
            assert!(matches!(
                backup(&s, &target).await,
                Err(Refusal::NotSqlite(m)) if m.contains(tool)
            ));
        }
        assert!(!target.exists());
    }
}
