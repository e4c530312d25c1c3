//! The control plane's internal error type: start-up, repositories, background jobs.
//!
//! It is not an HTTP response: the Admin API converts it to [`crate::admin::error::ApiError`]
//! through one exhaustive mapping, so a new variant cannot silently become a 500.

/// Everything that can go wrong in the control plane.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The request is malformed or fails validation (400 `invalid_request`).
    #[error("{0}")]
    BadRequest(String),
    /// The addressed resource does not exist (404 `not_found`).
    #[error("{0}")]
    NotFound(String),
    /// The resource already exists (409 `invalid_request`, as the reference service answers).
    #[error("{0}")]
    Conflict(String),
    /// The request body exceeds `server.body_limit` (413 `invalid_request`).
    #[error("{0}")]
    PayloadTooLarge(String),
    /// Missing or wrong admin credentials (401 `invalid_client`).
    #[error("{0}")]
    Unauthorized(String),
    /// The database failed.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// A migration failed.
    #[error("migration error: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// A shared-crate operation (keys, JOSE, configuration) failed.
    #[error(transparent)]
    Shared(#[from] pharos_shared::Error),
    /// Anything else that is our fault (500 `server_error`).
    #[error("{0}")]
    Internal(String),
}

/// Result alias for the control plane.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// Maps a database error, turning unique-constraint violations into conflicts.
    pub fn from_db(e: sqlx::Error, what: &str) -> Self {
        if let sqlx::Error::Database(d) = &e
            && matches!(d.kind(), sqlx::error::ErrorKind::UniqueViolation)
        {
            return Self::Conflict(format!("{what} already exists"));
        }
        Self::Database(e)
    }

    /// Whether this is the database being unreachable (connection refused or lost, pool
    /// acquire timed out, server shutting down) rather than a fault of the request or of ours:
    /// the Admin API answers these 503 so that clients retry, as the outage will pass.
    pub fn is_unavailable(&self) -> bool {
        match self {
            Self::Database(e) => db_unavailable(e),
            _ => false,
        }
    }
}

/// [`Error::is_unavailable`] for a bare sqlx error.
pub fn db_unavailable(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(d) => d.code().is_some_and(|c| unavailable_code(&c)),
        _ => false,
    }
}

/// PostgreSQL SQLSTATE class 08 (connection exception) and 57P01..57P03 (the server shutting
/// down or not yet accepting), MySQL/MariaDB 1053 (shutdown in progress), 2006 and 2013
/// (server gone, connection lost).
fn unavailable_code(code: &str) -> bool {
    code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03" | "1053" | "2006" | "2013")
}
