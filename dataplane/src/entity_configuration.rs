//! `GET /.well-known/openid-federation`: our signed Entity Configuration.
//!
//! Signing is the expensive part, so the signed bytes are cached for the current snapshot
//! generation and re-signed only when the snapshot changes or the cached token has used up its
//! freshness window. The cache is one atomically swapped slot: a hit is a lock-free load, a
//! comparison and a `Bytes` clone. Concurrent misses are coalesced into one signing by a mutex
//! that only the miss path takes.

use std::sync::Arc;

use arc_swap::{ArcSwapOption, Guard};
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use pharos_shared::entity_configuration::{ENTITY_STATEMENT_TYP, payload};
use pharos_shared::snapshot::Snapshot;

use crate::DataPlane;
use crate::error::FedError;
use crate::jwt_response::jwt;
use crate::signing;

/// Media type of entity statements.
pub const CONTENT_TYPE: &str = "application/entity-statement+jwt";

/// A cached token is re-signed this long before it expires, and at the latest after this long,
/// so that `iat` stays recent.
const REFRESH_BEFORE_EXP: i64 = 60;
const MAX_CACHE_AGE: i64 = 8 * 3600;

#[derive(Debug)]
struct Signed {
    generation: u64,
    body: Bytes,
    refresh_at: i64,
}

/// The signed Entity Configuration of one snapshot generation.
#[derive(Debug, Default)]
pub struct EcCache {
    slot: ArcSwapOption<Signed>,
    /// Held while signing, so that concurrent misses sign once.
    signing: tokio::sync::Mutex<()>,
}

impl EcCache {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    fn fresh(&self, generation: u64, now: i64) -> Option<Bytes> {
        let slot = self.slot.load();
        slot.as_ref()
            .filter(|s| s.generation == generation && now < s.refresh_at)
            .map(|s| s.body.clone())
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
    let now = dp.now();
    let cache = &dp.ec_cache;
    let snap = {
        let snap = dp.snapshot_ref();
        if let Some(body) = cache.fresh(snap.generation, now) {
            return Ok(body);
        }
        // Waiting for the lock and signing are awaits: no guard across them.
        Guard::into_inner(snap)
    };
    let _signing = cache.signing.lock().await;
    // Another request may have signed while this one waited.
    if let Some(body) = cache.fresh(snap.generation, now) {
        return Ok(body);
    }
    let signed = sign(&snap, now).await.map_err(FedError::server_error)?;
    let body = signed.body.clone();
    // A request holding an older snapshot must not replace a newer generation's token.
    if cache
        .slot
        .load()
        .as_ref()
        .is_none_or(|s| s.generation <= signed.generation)
    {
        cache.slot.store(Some(Arc::new(signed)));
    }
    Ok(body)
}

async fn sign(snap: &Snapshot, now: i64) -> Result<Signed, pharos_shared::Error> {
    let claims = payload(snap, now);
    let exp = claims
        .get("exp")
        .and_then(serde_json::Value::as_i64)
        .unwrap_or(now);
    let token = signing::sign(&snap.keys.signer, ENTITY_STATEMENT_TYP, claims).await?;
    Ok(Signed {
        generation: snap.generation,
        body: Bytes::from(token),
        refresh_at: (exp - REFRESH_BEFORE_EXP).min(now + MAX_CACHE_AGE),
    })
}
