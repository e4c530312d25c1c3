//! The Admin API's error type: what an operator's request gets back when it fails.
//!
//! Separate from the control plane's internal [`crate::Error`] (start-up, background jobs,
//! repositories) so that the HTTP mapping is decided in one place: every internal error is
//! converted by an exhaustive `match` below — adding a variant anywhere fails to compile until
//! its status is chosen — and client errors never become 500. Bodies use the federation
//! endpoints' `{"error","error_description"}` shape so that scripts need to understand one form.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// A failed Admin API request.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
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
    /// `If-Match` does not hold for the resource as stored (412 `invalid_request`): another
    /// client changed it since this one read it; nothing was written.
    #[error("{0}")]
    PreconditionFailed(String),
    /// `api.admin.require_if_match` is on and the write carries no `If-Match` (428
    /// `invalid_request`).
    #[error("{0}")]
    PreconditionRequired(String),
    /// Missing or wrong admin credentials (401 `invalid_client`).
    #[error("{0}")]
    Unauthorized(String),
    /// A write from a web page of another origin (403 `invalid_request`): cross-site request
    /// forgery protection.
    #[error("{0}")]
    Forbidden(String),
    /// A body of another media type than the route reads (415 `invalid_request`).
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// Too many failed logins from this client (429 `invalid_client`, `Retry-After` seconds).
    #[error("{message}")]
    TooManyRequests {
        /// What happened.
        message: String,
        /// Seconds until the client may try again.
        retry_after: u64,
    },
    /// Busy: the password verifier's queue is full, or SQLite's write lock is held by another
    /// writer past the busy timeout (503 `temporarily_unavailable`, retry in a second).
    #[error("{0}")]
    Unavailable(String),
    /// The database is unreachable (503 `temporarily_unavailable`, retry in a second); the
    /// response carries [`DatabaseDown`] so that the Admin API's middleware tells the write
    /// breaker ([`crate::db::Breaker`], which checks a pool timeout before it opens).
    #[error("{0}")]
    DatabaseUnavailable(String),
    /// Our fault (500 `server_error`); the detail goes to the log, never to the client.
    #[error("{0}")]
    Internal(String),
}

/// Marks a response that failed because the database is unreachable.
#[derive(Debug, Clone, Copy)]
pub struct DatabaseDown;

/// Result alias of Admin API handlers.
pub type ApiResult<T> = std::result::Result<T, ApiError>;

impl ApiError {
    /// HTTP status and federation error code.
    pub fn parts(&self) -> (StatusCode, &'static str) {
        match self {
            Self::BadRequest(_) => (StatusCode::BAD_REQUEST, "invalid_request"),
            Self::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
            Self::Conflict(_) => (StatusCode::CONFLICT, "invalid_request"),
            Self::PayloadTooLarge(_) => (StatusCode::PAYLOAD_TOO_LARGE, "invalid_request"),
            Self::PreconditionFailed(_) => (StatusCode::PRECONDITION_FAILED, "invalid_request"),
            Self::PreconditionRequired(_) => (StatusCode::PRECONDITION_REQUIRED, "invalid_request"),
            Self::Unauthorized(_) => (StatusCode::UNAUTHORIZED, "invalid_client"),
            Self::Forbidden(_) => (StatusCode::FORBIDDEN, "invalid_request"),
            Self::UnsupportedMediaType(_) => {
                (StatusCode::UNSUPPORTED_MEDIA_TYPE, "invalid_request")
            }
            Self::TooManyRequests { .. } => (StatusCode::TOO_MANY_REQUESTS, "invalid_client"),
            Self::Unavailable(_) | Self::DatabaseUnavailable(_) => {
                (StatusCode::SERVICE_UNAVAILABLE, "temporarily_unavailable")
            }
            Self::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "server_error"),
        }
    }
}

impl From<crate::Error> for ApiError {
    fn from(e: crate::Error) -> Self {
        use crate::Error as E;
        match e {
            e
            @ (E::AlreadyExists { .. } | E::EntityIdHosted { .. } | E::EntityPlacement { .. }) => {
                Self::Conflict(e.to_string())
            }
            e @ E::IfMatchFailed { .. } => Self::PreconditionFailed(e.to_string()),
            e @ (E::RotationPolicy(_)
            | E::RevocationReason { .. }
            | E::StaticKey
            | E::TokenAlgorithm(_)
            | E::DatabaseScheme(_)
            | E::OutputFile { .. }) => Self::BadRequest(e.to_string()),
            E::Shared(s) => s.into(),
            // Leader-only work never answers a request; if one ever did, another replica
            // leads now and a retry is right.
            E::Fenced(m) => Self::Unavailable(m),
            // Another writer holds SQLite's lock past the busy timeout: retry, but the
            // database is not down (no breaker).
            e if e.is_busy() => {
                tracing::warn!(error = %e, "admin request refused: the database is busy");
                Self::Unavailable("the database is busy with another write; try again".into())
            }
            e if e.is_unavailable() => {
                tracing::warn!(error = %e, "admin request refused: the database is unreachable");
                Self::DatabaseUnavailable("the database is unreachable; try again later".into())
            }
            e @ (E::Database(_) | E::Migrate(_) | E::Internal(_)) => Self::Internal(e.to_string()),
        }
    }
}

impl From<pharos_shared::Error> for ApiError {
    fn from(e: pharos_shared::Error) -> Self {
        use pharos_shared::Error as E;
        match e {
            // Validation of what the operator sent: an algorithm name, a rotation policy, a
            // metadata policy, metadata checked against a policy, a chain or anchor named.
            e @ (E::Config(_)
            | E::InvalidPolicy(_)
            | E::InvalidMetadata(_)
            | E::InvalidTrustChain(_)
            | E::InvalidTrustAnchor(_)) => Self::BadRequest(e.to_string()),
            // Our keys, our signatures and our outbound fetches: handlers that take keys or
            // tokens from the request check them and answer 400 themselves before these.
            e @ (E::Key(_) | E::Jws(_) | E::Fetch(_)) => Self::Internal(e.to_string()),
        }
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(e: sqlx::Error) -> Self {
        crate::Error::from(e).into()
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code) = self.parts();
        let retry_after = match &self {
            Self::TooManyRequests { retry_after, .. } => Some(*retry_after),
            Self::Unavailable(_) | Self::DatabaseUnavailable(_) => Some(1),
            _ => None,
        };
        let description = if status == StatusCode::INTERNAL_SERVER_ERROR {
            tracing::error!(error = %self, "admin request failed");
            "internal error".to_string()
        } else {
            self.to_string()
        };
        let down = matches!(self, Self::DatabaseUnavailable(_));
        let mut r = pharos_runtime::error_body::json_error(status, code, &description);
        if down {
            r.extensions_mut().insert(DatabaseDown);
        }
        if let Some(secs) = retry_after {
            r.headers_mut()
                .insert(axum::http::header::RETRY_AFTER, secs.into());
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(e: impl Into<ApiError>) -> u16 {
        e.into().parts().0.as_u16()
    }

    #[test]
    fn an_unreachable_database_is_503_and_other_database_errors_500() {
        use crate::Error as E;
        assert_eq!(status(E::Database(sqlx::Error::PoolTimedOut)), 503);
        assert_eq!(status(E::Database(sqlx::Error::PoolClosed)), 503);
        let io = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert_eq!(status(E::Database(sqlx::Error::Io(io))), 503);
        assert_eq!(status(sqlx::Error::PoolTimedOut), 503);
        assert_eq!(status(E::Database(sqlx::Error::RowNotFound)), 500);
        assert_eq!(status(E::Internal("x".into())), 500);
    }

    #[test]
    fn client_errors_keep_their_status() {
        use crate::Error as E;
        assert_eq!(status(E::RotationPolicy("x")), 400);
        assert_eq!(status(E::RevocationReason { allowed: &[] }), 400);
        assert_eq!(status(E::StaticKey), 400);
        assert_eq!(status(E::DatabaseScheme("x".into())), 400);
        assert_eq!(status(E::AlreadyExists { what: "x" }), 409);
        assert_eq!(status(E::IfMatchFailed { exists: true }), 412);
        assert_eq!(status(E::IfMatchFailed { exists: false }), 412);
        assert_eq!(status(ApiError::PreconditionRequired("x".into())), 428);
        assert_eq!(status(ApiError::NotFound("x".into())), 404);
        assert_eq!(status(ApiError::PayloadTooLarge("x".into())), 413);
        assert_eq!(status(ApiError::Unauthorized("x".into())), 401);
    }

    #[test]
    fn validation_errors_of_the_shared_crate_are_400() {
        use pharos_shared::Error as E;
        assert_eq!(status(E::Config(vec!["bad alg".into()])), 400);
        assert_eq!(status(E::InvalidPolicy("x".into())), 400);
        assert_eq!(status(E::InvalidMetadata("x".into())), 400);
        assert_eq!(status(E::InvalidTrustChain("x".into())), 400);
        assert_eq!(status(E::InvalidTrustAnchor("x".into())), 400);
        assert_eq!(
            status(crate::Error::Shared(E::InvalidPolicy("x".into()))),
            400
        );
    }

    #[test]
    fn our_failures_are_500_without_detail() {
        use pharos_shared::Error as E;
        assert_eq!(status(E::Key("x".into())), 500);
        assert_eq!(status(E::Jws("x".into())), 500);
        assert_eq!(status(E::Fetch("x".into())), 500);
        assert_eq!(status(crate::Error::Internal("x".into())), 500);
        // A database fault that is not an outage (an unreachable database is 503, tested above).
        assert_eq!(status(sqlx::Error::Protocol("x".into())), 500);
        let r = ApiError::Internal("secret detail".into()).into_response();
        assert_eq!(r.status(), 500);
    }
}
