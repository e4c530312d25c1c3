//! Federation error responses: `{"error","error_description"}` with the status the
//! specification names for each code.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use pharos_runtime::error_body::json_error;

/// An error answer of a federation endpoint.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{code}: {description}")]
pub struct FedError {
    /// HTTP status.
    pub status: StatusCode,
    /// Error code from the specification's registry (or the reference service's custom ones).
    pub code: &'static str,
    /// Human-readable explanation.
    pub description: String,
}

impl FedError {
    /// Any error with an explicit status.
    pub fn new(status: StatusCode, code: &'static str, description: impl Into<String>) -> Self {
        Self {
            status,
            code,
            description: description.into(),
        }
    }

    /// 400 `invalid_request`.
    pub fn invalid_request(d: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request", d)
    }

    /// 404 `not_found`.
    pub fn not_found(d: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", d)
    }

    /// 500 `server_error`; the detail is logged, not shown.
    pub fn server_error(detail: impl std::fmt::Display) -> Self {
        tracing::error!(error = %detail, "federation request failed");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            "internal error",
        )
    }
}

impl IntoResponse for FedError {
    fn into_response(self) -> Response {
        json_error(self.status, self.code, &self.description)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::header;

    #[test]
    fn unavailable_answers_say_when_to_retry_and_others_do_not() {
        let busy = FedError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "temporarily_unavailable",
            "busy",
        )
        .into_response();
        assert_eq!(busy.headers()[header::RETRY_AFTER], "1");
        assert_eq!(busy.headers()[header::CACHE_CONTROL], "no-store");
        let missing = FedError::not_found("no such entity").into_response();
        assert!(!missing.headers().contains_key(header::RETRY_AFTER));
    }
}
