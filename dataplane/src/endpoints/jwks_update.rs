//! The jwks_update_trigger and jwks_update endpoints (Pharos extensions, reference §1.13,
//! §1.14). Both change state, so the data plane only checks the request's form and forwards it
//! as a command; the control plane fetches, verifies, commits and publishes, then replies.

use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use pharos_shared::command::{Command, CommandError};
use pharos_shared::key_update::JWK_SET_CONTENT_TYPE;
use serde_json::Value;

use crate::DataPlane;
use crate::error::FedError;

/// Largest accepted body (a signed JWK Set, or a small form or JSON document).
pub const MAX_BODY: usize = 256 * 1024;

/// A command's refusal as a federation error response.
pub fn fed_error(e: CommandError) -> FedError {
    let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    FedError::new(status, e.code, e.description)
}

async fn body(req: Request) -> Result<bytes::Bytes, FedError> {
    axum::body::to_bytes(req.into_body(), MAX_BODY)
        .await
        .map_err(|e| FedError::invalid_request(format!("cannot read the body: {e}")))
}

/// jwks_update_trigger without client authentication: the target is `sub` from a JSON body,
/// a form body, or the query.
pub async fn trigger_unauthenticated(dp: &DataPlane, req: Request) -> Response {
    let json = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.trim_start().starts_with("application/json"));
    let query = req.uri().query().unwrap_or("").to_owned();
    let bytes = match body(req).await {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    let from_pairs = |b: &[u8]| {
        form_urlencoded::parse(b)
            .find(|(k, _)| k == "sub")
            .map(|(_, v)| v.into_owned())
    };
    let sub = if json {
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(v) => v.get("sub").and_then(Value::as_str).map(str::to_owned),
            Err(e) => {
                return FedError::invalid_request(format!("body is not JSON: {e}")).into_response();
            }
        }
    } else {
        from_pairs(&bytes).or_else(|| from_pairs(query.as_bytes()))
    };
    match sub.filter(|s| !s.is_empty()) {
        Some(sub) => trigger(dp, sub, None).await,
        None => FedError::invalid_request("required parameter 'sub' not given").into_response(),
    }
}

/// jwks_update_trigger for `sub`; `actor` is the authenticated client, if any.
pub async fn trigger(dp: &DataPlane, sub: String, actor: Option<String>) -> Response {
    let target = sub.clone();
    let r = dp
        .commands
        .call(|reply| Command::JwksUpdateTrigger { sub, actor, reply })
        .await;
    match r {
        Ok(changed) => {
            let body = serde_json::json!({ "sub": target, "changed": changed }).to_string();
            let mut resp = (StatusCode::OK, body).into_response();
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            resp
        }
        Err(e) => fed_error(e).into_response(),
    }
}

/// jwks_update: `Content-Type` exactly `application/jwk-set+jwt` (415 otherwise), a
/// non-empty body; the signed JWK Set itself is checked by the control plane. `204` on success.
pub async fn push(dp: &DataPlane, req: Request) -> Response {
    let ct = req
        .headers()
        .get(header::CONTENT_TYPE)
        .map(|v| v.as_bytes());
    if ct != Some(JWK_SET_CONTENT_TYPE.as_bytes()) {
        return FedError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "invalid_request",
            format!("Content-Type must be {JWK_SET_CONTENT_TYPE}"),
        )
        .into_response();
    }
    let bytes = match body(req).await {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    let token = match std::str::from_utf8(&bytes) {
        Ok(t) if !t.trim().is_empty() => t.trim().to_owned(),
        _ => return FedError::invalid_request("the body must be a signed JWK Set").into_response(),
    };
    match dp
        .commands
        .call(|reply| Command::JwksUpdate { token, reply })
        .await
    {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => fed_error(e).into_response(),
    }
}
