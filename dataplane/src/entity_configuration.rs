//! `GET /.well-known/openid-federation`: our signed Entity Configuration.
//!
//! Signing is the expensive part, so the signed bytes are cached per snapshot generation and
//! re-signed only when the snapshot changes or the cached token has used up its freshness
//! window. Concurrent misses for one generation are coalesced into one signing.

use std::sync::Arc;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use moka::future::Cache;
use pharos_shared::entity_configuration::{ENTITY_STATEMENT_TYP, payload};
use pharos_shared::jose;
use pharos_shared::snapshot::Snapshot;

use crate::DataPlane;
use crate::error::FedError;
use crate::jwt_response::jwt;

/// Media type of entity statements.
pub const CONTENT_TYPE: &str = "application/entity-statement+jwt";

/// A cached cached token is re-signed this long before it expires, and at the latest after
/// this long, so that `iat` stays recent.
const REFRESH_BEFORE_EXP: i64 = 60;
const MAX_CACHE_AGE: i64 = 8 * 3600;

#[derive(Debug, Clone)]
struct Signed {
    body: Bytes,
    refresh_at: i64,
}

/// Signed Entity Configurations by snapshot generation.
#[derive(Debug)]
pub struct EcCache(Cache<u64, Arc<Signed>>);

impl EcCache {
    pub(crate) fn new() -> Self {
        Self(Cache::builder().max_capacity(4).build())
    }
}

impl Default for EcCache {
    fn default() -> Self {
        Self::new()
    }
}

/// The handler.
pub async fn handler(State(dp): State<Arc<DataPlane>>) -> Response {
    match signed(&dp).await {
        Ok(body) => jwt(CONTENT_TYPE, body),
        Err(e) => e.into_response(),
    }
}

/// The current signed Entity Configuration (cached).
pub async fn signed(dp: &DataPlane) -> Result<Bytes, FedError> {
    let snap = dp.snapshot();
    let now = dp.now();
    let cache = &dp.ec_cache.0;
    if let Some(hit) = cache.get(&snap.generation).await {
        if now < hit.refresh_at {
            return Ok(hit.body.clone());
        }
        cache.invalidate(&snap.generation).await;
    }
    let gen_ = snap.generation;
    cache
        .try_get_with(gen_, async move { sign(&snap, now).map(Arc::new) })
        .await
        .map(|s| s.body.clone())
        .map_err(FedError::server_error)
}

fn sign(snap: &Snapshot, now: i64) -> Result<Signed, pharos_shared::Error> {
    let claims = payload(snap, now);
    let exp = claims
        .get("exp")
        .and_then(serde_json::Value::as_i64)
        .unwrap_or(now);
    let token = jose::sign(
        snap.keys.signer.as_ref(),
        ENTITY_STATEMENT_TYP,
        &claims,
        None,
    )?;
    Ok(Signed {
        body: Bytes::from(token),
        refresh_at: (exp - REFRESH_BEFORE_EXP).min(now + MAX_CACHE_AGE),
    })
}
