//! The control plane's one error type, and how the Admin API renders it.
//!
//! Admin errors use the same `{"error","error_description"}` body as the federation endpoints so
//! that operators' scripts need to understand only one shape.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

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

    fn parts(&self) -> (StatusCode, &'static str) {
        match self {
            Self::BadRequest(_) => (StatusCode::BAD_REQUEST, "invalid_request"),
            Self::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
            Self::Conflict(_) => (StatusCode::CONFLICT, "invalid_request"),
            Self::PayloadTooLarge(_) => (StatusCode::PAYLOAD_TOO_LARGE, "invalid_request"),
            Self::Unauthorized(_) => (StatusCode::UNAUTHORIZED, "invalid_client"),
            _ => (StatusCode::INTERNAL_SERVER_ERROR, "server_error"),
        }
    }
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let (status, code) = self.parts();
        let description = if status.is_server_error() {
            // Details of internal failures go to the log, not to the client.
            tracing::error!(error = %self, "admin request failed");
            "internal error".to_string()
        } else {
            self.to_string()
        };
        pharos_dataplane::error::json_error(status, code, &description)
    }
}
