//! The jwks_update_trigger and jwks_update endpoints (Pharos extensions of the federation
//! endpoints, compatible with lighthouse 0.22). Both change state, so they end in a command to the control plane, which fetches or
//! verifies against the stored keys, commits and publishes, then replies. Everything that needs
//! no database is checked here first — the request's form, the pushed token's form and claims,
//! whether the snapshot knows the subordinate — so that untrusted input that is bound to be
//! refused never occupies the control plane.

use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use pharos_shared::key_update::{JWK_SET_CONTENT_TYPE, parse_signed_jwks};
use pharos_shared::subordinate::SubordinateStatus;
use serde_json::Value;

use crate::DataPlane;
use crate::error::FedError;
use pharos_runtime::command::{Command, PushError, TriggerError};

/// Largest accepted body (a signed JWK Set, or a small form or JSON document).
pub const MAX_BODY: usize = 256 * 1024;

/// Whether the current snapshot has `sub` as an active or pending subordinate, the only ones
/// whose keys may be refreshed or pushed. The control plane checks again against the database;
/// this spares it the requests that name anything else.
fn known(dp: &DataPlane, sub: &str) -> Result<(), Unknown> {
    let snap = dp.snapshot_ref();
    match snap.subordinates.get(sub).map(|s| s.status) {
        Some(SubordinateStatus::Active | SubordinateStatus::Pending) => Ok(()),
        Some(_) => Err(Unknown::NotActiveOrPending),
        None => Err(Unknown::NotStored),
    }
}

/// Why [`known`] refused a subordinate.
enum Unknown {
    NotStored,
    NotActiveOrPending,
}

impl From<Unknown> for TriggerError {
    fn from(u: Unknown) -> Self {
        match u {
            Unknown::NotStored => Self::UnknownSubordinate,
            Unknown::NotActiveOrPending => Self::NotActiveOrPending,
        }
    }
}

impl From<Unknown> for PushError {
    fn from(u: Unknown) -> Self {
        match u {
            Unknown::NotStored => Self::UnknownSubordinate,
            Unknown::NotActiveOrPending => Self::NotActiveOrPending,
        }
    }
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
    let from_pairs = |b: &[u8]| super::query::first(b, "sub");
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
    if let Err(e) = known(dp, &sub) {
        return FedError::from(TriggerError::from(e)).into_response();
    }
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
        Err(e) => FedError::from(e).into_response(),
    }
}

/// jwks_update: `Content-Type` exactly `application/jwk-set+jwt` (415 otherwise), a
/// non-empty body holding a well-formed signed JWK Set of a known subordinate (checked here);
/// its signature is checked by the control plane against the stored keys. `204` on success.
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
    match push_token(dp, token).await {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => FedError::from(e).into_response(),
    }
}

/// Checks the token's form and its subordinate, then hands it to the control plane.
async fn push_token(dp: &DataPlane, token: String) -> Result<(), PushError> {
    let pushed =
        parse_signed_jwks(&token, dp.now()).map_err(|e| PushError::Invalid(e.to_string()))?;
    known(dp, &pushed.sub)?;
    dp.commands
        .call(|reply| Command::JwksUpdate { pushed, reply })
        .await
}
