//! The trust mark status endpoint (spec §8.4, final text): what we say about a Trust Mark we
//! issued. POST only, form parameter `trust_mark`.
//!
//! - not a JWT, or `typ` not `trust-mark+jwt`: 400 `invalid_request` (not a trust mark at all);
//! - `iss` not us, or the signature fails with our published and historical keys: 200, status
//!   `invalid` (a forgery, or a mark of another issuer, is answered, signed);
//! - verified, but its `jti` is not among the instances we issued: 404 `not_found` (the
//!   specification's MUST; lighthouse answers `active` from the token alone);
//! - otherwise 200 with the instance's status: `active`, `expired` or `revoked`.
//!
//! The answer is a `trust-mark-status-response+jwt` with `iss`, `iat`, `trust_mark` (the
//! token asked about) and `status`.

use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use pharos_shared::jose::{self, Jwks};
use pharos_shared::snapshot::Snapshot;
use pharos_shared::trust_mark::TRUST_MARK_TYP;
use pharos_shared::trust_mark_issuer::STATUS_RESPONSE_TYP;
use serde_json::{Map, Value, json};

use super::Call;
use super::trust_mark::param;
use crate::error::FedError;
use crate::jwt_response::jwt;
use crate::signing;

/// Media type of the response.
pub const CONTENT_TYPE: &str = "application/trust-mark-status-response+jwt";

/// Answers a status request.
pub(crate) async fn serve(call: Call<'_>) -> Response {
    let (snap, now) = (call.snap.clone(), call.now);
    let params = match call.params().await {
        Ok((p, _)) => p,
        Err(e) => return e.into_response(),
    };
    let status = match param(&params, "trust_mark").and_then(|t| status(&snap, t, now)) {
        Ok(s) => s,
        Err(e) => return e.into_response(),
    };
    let mut claims = Map::new();
    claims.insert("iss".into(), json!(&*snap.entity_id));
    claims.insert("iat".into(), json!(now));
    if let Some(t) = params.iter().find(|(k, _)| k == "trust_mark") {
        claims.insert("trust_mark".into(), json!(t.1));
    }
    claims.insert("status".into(), json!(status));
    match signing::sign(&snap.keys.signer, STATUS_RESPONSE_TYP, claims).await {
        Ok(token) => jwt(CONTENT_TYPE, Bytes::from(token)),
        Err(e) => FedError::server_error(e).into_response(),
    }
}

/// The `status` claim for `token`, or the error to answer with.
fn status(snap: &Snapshot, token: &str, now: i64) -> Result<&'static str, FedError> {
    let decoded = jose::decode_unverified(token)
        .map_err(|e| FedError::invalid_request(format!("'trust_mark' is not a JWT: {e}")))?;
    jose::check_typ(&decoded, TRUST_MARK_TYP)
        .map_err(|e| FedError::invalid_request(format!("'trust_mark' is not a trust mark: {e}")))?;
    if decoded.claims.get("iss").and_then(Value::as_str) != Some(&*snap.entity_id) {
        return Ok("invalid");
    }
    let keys = Jwks {
        keys: snap
            .keys
            .published
            .iter()
            .chain(&snap.keys.historical)
            .cloned()
            .collect(),
    };
    let Ok(verified) = jose::verify(token, &keys) else {
        return Ok("invalid");
    };
    let issued = verified
        .claims
        .get("jti")
        .and_then(Value::as_str)
        .and_then(|jti| snap.trust_marks.issued.get(jti));
    match issued {
        Some(m) => Ok(m.status(now).as_str()),
        None => Err(FedError::not_found("trust mark not issued here")),
    }
}
