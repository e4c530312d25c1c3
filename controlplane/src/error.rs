//! The control plane's internal error type: start-up, repositories, background jobs.
//!
//! It is not an HTTP response: the Admin API converts it to [`crate::admin::error::ApiError`]
//! through one exhaustive mapping, so a new variant cannot silently become a 500.

/// Everything that can go wrong in the control plane. Each variant says what happened; the
/// Admin API chooses its status and words in one exhaustive match
/// ([`crate::admin::error::ApiError`]'s `From`).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A row with the same unique key exists (`what`: which kind of row).
    #[error("{what} already exists")]
    AlreadyExists {
        /// The kind of row, as an operator calls it.
        what: &'static str,
    },
    /// A request's `If-Match` does not hold for the resource as stored: it was changed since
    /// the client read it (`exists`), or it names a resource that does not exist. Nothing was
    /// written.
    #[error("{}", if *exists {
        "the resource was changed since it was read (If-Match does not hold); nothing was written: read it again"
    } else {
        "If-Match names a resource that does not exist; nothing was written"
    })]
    IfMatchFailed {
        /// Whether the resource exists (with another tag).
        exists: bool,
    },
    /// A key rotation policy the planner cannot honour (the rule it breaks).
    #[error("{0}")]
    RotationPolicy(&'static str),
    /// A revocation reason that is not one of those `allowed`.
    #[error("reason must be one of {}", allowed.join(", "))]
    RevocationReason {
        /// The reasons there are.
        allowed: &'static [&'static str],
    },
    /// The signing key is the static `signing.filesystem.key_file`: it cannot be rotated or
    /// its algorithm changed.
    #[error("the signing key is a static key_file; it cannot be rotated or changed")]
    StaticKey,
    /// An algorithm a PKCS#11 token cannot generate keys for.
    #[error("algorithm {0} is not supported with signing.kms pkcs11 (use ES256, ES384 or ES512)")]
    TokenAlgorithm(pharos_shared::jose::Algorithm),
    /// The configured `entity_id` is the identifier of another hosted entity (`entity`): the
    /// default entity cannot take it at start.
    #[error(
        "entity_id {entity_id} is hosted as entity {entity}: delete that entity or configure another entity_id"
    )]
    EntityIdHosted {
        /// The configured identifier.
        entity_id: String,
        /// The hosted entity that has it.
        entity: i64,
    },
    /// A hosted entity that cannot be placed on the public port (its identifier is no entity
    /// identifier, or it collides with what is served there: `why` names the other).
    #[error("{entity_id} cannot be hosted: {why}")]
    EntityPlacement {
        /// The identifier asked for.
        entity_id: String,
        /// What it collides with.
        why: String,
    },
    /// A database URL whose scheme is none of SQLite, MySQL/MariaDB and PostgreSQL.
    #[error("unsupported database scheme {0:?}")]
    DatabaseScheme(String),
    /// A file the operator named (a CLI `--output`) could not be written.
    #[error("{flag} {}: {source}", path.display())]
    OutputFile {
        /// The option that named it.
        flag: &'static str,
        /// The file.
        path: std::path::PathBuf,
        /// Why it could not be written.
        source: std::io::Error,
    },
    /// The database failed.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// A migration failed.
    #[error("migration error: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// A shared-crate operation (keys, JOSE, configuration) failed.
    #[error(transparent)]
    Shared(#[from] pharos_shared::Error),
    /// A leader-only job's write refused by its fence: this replica no longer leads under the
    /// generation the job began with (see [`crate::leadership::Fence`]). Rolled back; the
    /// current leader does the work.
    #[error("fenced: {0}")]
    Fenced(String),
    /// Anything else that is our fault (500 `server_error`).
    #[error("{0}")]
    Internal(String),
}

/// Result alias for the control plane.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// Maps a database error, turning unique-constraint violations into conflicts.
    pub fn from_db(e: sqlx::Error, what: &'static str) -> Self {
        if let sqlx::Error::Database(d) = &e
            && matches!(d.kind(), sqlx::error::ErrorKind::UniqueViolation)
        {
            return Self::AlreadyExists { what };
        }
        Self::Database(e)
    }

    /// Whether this is the database being unreachable (connection refused or lost, pool
    /// acquire timed out, server shutting down) or busy (SQLite's write lock held past its
    /// busy timeout) rather than a fault of the request or of ours: the Admin API answers these
    /// 503 with `Retry-After` so that clients retry, as the outage or the other writer will pass.
    pub fn is_unavailable(&self) -> bool {
        match self {
            Self::Database(e) => db_unavailable(e),
            _ => false,
        }
    }

    /// Whether this is SQLite busy with another writer ([`db_busy`]): unavailable, but not an
    /// outage (the write breaker stays closed).
    pub fn is_busy(&self) -> bool {
        match self {
            Self::Database(e) => db_busy(e),
            _ => false,
        }
    }
}

/// [`Error::is_unavailable`] for a bare sqlx error.
pub fn db_unavailable(e: &sqlx::Error) -> bool {
    db_connection_lost(e) || matches!(e, sqlx::Error::PoolTimedOut) || db_busy(e)
}

/// The connection to the database failed or was lost, or the server is going away: an outage,
/// which opens the write breaker ([`crate::db::Breaker`]). A pool timeout is not one by itself
/// (a saturated pool times out too; [`crate::db::Db::note`] checks), nor is a busy database.
pub fn db_connection_lost(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(d) => d.code().is_some_and(|c| unavailable_code(&c)),
        _ => false,
    }
}

/// SQLite answered `SQLITE_BUSY` or `SQLITE_LOCKED`: another connection (a writer of this
/// process or of another one on the same file) held the lock for longer than the busy timeout.
pub fn db_busy(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(d) => {
            d.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some()
                && d.code().is_some_and(|c| sqlite_busy_code(&c))
        }
        _ => false,
    }
}

/// PostgreSQL SQLSTATE class 08 (connection exception) and 57P01..57P03 (the server shutting
/// down or not yet accepting), MySQL/MariaDB 1053 (shutdown in progress), 2006 and 2013
/// (server gone, connection lost).
fn unavailable_code(code: &str) -> bool {
    code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03" | "1053" | "2006" | "2013")
}

/// SQLite's extended result code (as sqlx reports it) is `SQLITE_BUSY` (5) or `SQLITE_LOCKED`
/// (6), or one of their extended codes (`SQLITE_BUSY_RECOVERY` 261, `SQLITE_BUSY_SNAPSHOT`
/// 517, `SQLITE_BUSY_TIMEOUT` 773, `SQLITE_LOCKED_SHAREDCACHE` 262, …): the low byte is the
/// primary code.
fn sqlite_busy_code(code: &str) -> bool {
    code.parse::<i32>()
        .is_ok_and(|c| c > 0 && matches!(c & 0xff, 5 | 6))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_busy_and_locked_codes_are_busy() {
        for code in ["5", "6", "261", "517", "773", "262", "518"] {
            assert!(sqlite_busy_code(code), "{code}");
        }
        // SQLITE_ERROR, SQLITE_CONSTRAINT_UNIQUE (2067), SQLITE_IOERR (10), SQLITE_FULL (13).
        for code in ["1", "2067", "10", "13", "0", "-5", "busy", ""] {
            assert!(!sqlite_busy_code(code), "{code}");
        }
    }

    /// A real busy error: one connection holds the write lock, another with no busy timeout
    /// begins a write.
    #[tokio::test]
    async fn a_busy_sqlite_database_is_unavailable_but_not_lost() {
        use sqlx::ConnectOptions as _;
        use sqlx::sqlite::SqliteConnectOptions;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("busy.db");
        let opts = SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(true)
            .busy_timeout(std::time::Duration::ZERO);
        let mut holder = opts.connect().await.unwrap();
        sqlx::query("CREATE TABLE t (x INTEGER)")
            .execute(&mut holder)
            .await
            .unwrap();
        sqlx::query("BEGIN IMMEDIATE")
            .execute(&mut holder)
            .await
            .unwrap();
        let mut other = opts.connect().await.unwrap();
        let e = sqlx::query("BEGIN IMMEDIATE")
            .execute(&mut other)
            .await
            .unwrap_err();
        assert!(db_busy(&e), "{e:?}");
        assert!(db_unavailable(&e), "{e:?}");
        assert!(!db_connection_lost(&e), "{e:?}");
        let e = Error::Database(e);
        assert!(e.is_unavailable() && e.is_busy());
        // Other errors are neither.
        let e = sqlx::query("SELECT * FROM missing")
            .execute(&mut other)
            .await
            .unwrap_err();
        assert!(!db_busy(&e) && !db_unavailable(&e), "{e:?}");
        sqlx::query("COMMIT").execute(&mut holder).await.unwrap();
    }
}
