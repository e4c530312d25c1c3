//! The trust mark status endpoint (spec §8.4, final text): what we say about a Trust Mark we
//! issued. POST only, form parameter `trust_mark`.
//!
//! - not a JWT, or `typ` not `trust-mark+jwt`: 400 `invalid_request` (not a trust mark at all);
//! - `iss` not us, or the signature fails with our published and historical keys: 200, status
//!   `invalid` (a forgery, or a mark of another issuer, is answered, signed);
//! - verified, but its `jti` is not among the instances we issued: 404 `not_found` (the
//!   specification's MUST; lighthouse answers `active` from the token alone) — unless its
//!   `exp` has passed: expired instances are pruned, and such a mark is `expired`;
//! - otherwise 200 with the instance's status: `active`, `expired` or `revoked`.
//!
//! The answer is a `trust-mark-status-response+jwt` with `iss`, `iat`, `trust_mark` (the
//! token asked about) and `status`.
//!
//! Relying parties ask about the same marks again and again, so two bounded caches spare the
//! work: a token's verification (signature and `jti`, valid while our keys are unchanged:
//! keyed by `statements_generation`) and the signed answer for one (token, status) within one
//! second (its `iat`), so a burst of checks of one mark costs one signature a second.

use std::sync::Arc;
use std::time::Duration;

use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use moka::sync::Cache;
use pharos_shared::jose::{self, Jwks};
use pharos_shared::snapshot::Snapshot;
use pharos_shared::trust_mark::TRUST_MARK_TYP;
use pharos_shared::trust_mark_issuer::STATUS_RESPONSE_TYP;
use serde_json::{Map, Value, json};

use super::Call;
use super::trust_mark::param;
use crate::error::FedError;
use crate::jwt_response::jwt;
use pharos_runtime::signing;

/// Media type of the response.
pub const CONTENT_TYPE: &str = "application/trust-mark-status-response+jwt";

/// Largest total size of the cached tokens, and of the cached answers (each a few hundred
/// bytes to a few kilobytes; the tokens are client-chosen, so the bound is in bytes).
const CACHE_BYTES: u64 = 16 * 1024 * 1024;

/// What a token verified to: its `jti`, or `None` for a forgery or a mark of another issuer.
#[derive(Clone, Debug)]
struct Verified {
    statements_generation: u64,
    jti: Option<Arc<str>>,
    /// Its `exp`: a mark whose instance was pruned after it expired is still `expired`.
    exp: Option<i64>,
}

/// The status endpoint's caches (see the module documentation).
#[derive(Debug)]
pub struct StatusCache {
    verified: Cache<Arc<str>, Verified>,
    answers: Cache<(Arc<str>, &'static str, i64), Bytes>,
}

impl Default for StatusCache {
    fn default() -> Self {
        let weigh = |k: &Arc<str>| u32::try_from(k.len()).unwrap_or(u32::MAX);
        Self {
            verified: Cache::builder()
                .max_capacity(CACHE_BYTES)
                .weigher(move |k: &Arc<str>, _: &Verified| weigh(k))
                .build(),
            answers: Cache::builder()
                .max_capacity(CACHE_BYTES)
                .weigher(|k: &(Arc<str>, &'static str, i64), v: &Bytes| {
                    u32::try_from(k.0.len() + v.len()).unwrap_or(u32::MAX)
                })
                .time_to_live(Duration::from_secs(2))
                .build(),
        }
    }
}

/// Answers a status request.
pub(crate) async fn serve(call: Call<'_>) -> Response {
    let (dp, snap, now) = (call.dp, call.snap.clone(), call.now);
    let params = match call.params().await {
        Ok((p, _)) => p,
        Err(e) => return e.into_response(),
    };
    let token: Arc<str> = match param(&params, "trust_mark") {
        Ok(t) => Arc::from(t),
        Err(e) => return e.into_response(),
    };
    let cache = &dp.trust_mark_status_cache;
    let status = match status(cache, &snap, &token, now) {
        Ok(s) => s,
        Err(e) => return e.into_response(),
    };
    let key = (token, status, now);
    if let Some(body) = cache.answers.get(&key) {
        return jwt(CONTENT_TYPE, body);
    }
    let mut claims = Map::new();
    claims.insert("iss".into(), json!(&*snap.entity_id));
    claims.insert("iat".into(), json!(now));
    claims.insert("trust_mark".into(), json!(&*key.0));
    claims.insert("status".into(), json!(status));
    match signing::sign(&snap.keys.signer, STATUS_RESPONSE_TYP, claims).await {
        Ok(signed) => {
            let body = Bytes::from(signed);
            cache.answers.insert(key, body.clone());
            jwt(CONTENT_TYPE, body)
        }
        Err(e) => FedError::server_error(e).into_response(),
    }
}

/// The `status` claim for `token`, or the error to answer with.
fn status(
    cache: &StatusCache,
    snap: &Snapshot,
    token: &Arc<str>,
    now: i64,
) -> Result<&'static str, FedError> {
    let generation = snap.statements_generation;
    let verified = match cache.verified.get(token) {
        Some(v) if v.statements_generation == generation => v,
        _ => {
            let (jti, exp) = match verify(snap, token)? {
                Some((jti, exp)) => (Some(jti), exp),
                None => (None, None),
            };
            let v = Verified {
                statements_generation: generation,
                jti,
                exp,
            };
            cache.verified.insert(token.clone(), v.clone());
            v
        }
    };
    let Some(jti) = verified.jti else {
        return Ok("invalid");
    };
    match snap.trust_marks.issued.get(&*jti) {
        Some(m) => Ok(m.status(now).as_str()),
        // Expired instances are pruned from the database; the mark itself says it expired.
        None if !jti.is_empty() && verified.exp.is_some_and(|e| e <= now) => Ok("expired"),
        None => Err(FedError::not_found("trust mark not issued here")),
    }
}

/// A mark we signed: its `jti` and `exp`.
type Signed = (Arc<str>, Option<i64>);

/// `Some((jti, exp))` when `token` is a mark signed by us (an empty `jti` when it has none:
/// never one we issued, so 404), `None` for a forgery or a mark of another issuer; an error
/// for what is not a trust mark at all.
fn verify(snap: &Snapshot, token: &str) -> Result<Option<Signed>, FedError> {
    let decoded = jose::decode_unverified(token)
        .map_err(|e| FedError::invalid_request(format!("'trust_mark' is not a JWT: {e}")))?;
    jose::check_typ(&decoded, TRUST_MARK_TYP)
        .map_err(|e| FedError::invalid_request(format!("'trust_mark' is not a trust mark: {e}")))?;
    if decoded.claims.get("iss").and_then(Value::as_str) != Some(&*snap.entity_id) {
        return Ok(None);
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
        return Ok(None);
    };
    // No `jti`: verified but never issued here (every mark we issue has one): 404 below.
    let jti = verified
        .claims
        .get("jti")
        .and_then(Value::as_str)
        .unwrap_or("");
    let exp = verified.claims.get("exp").and_then(Value::as_i64);
    Ok(Some((Arc::from(jti), exp)))
}
