//! `GET /.well-known/openid-federation`: our signed Entity Configuration.
//!
//! Signing is the expensive part, so the signed bytes are cached for the current snapshot
//! generation and re-signed only when the snapshot changes or the cached token has used up its
//! freshness window. The cache is one atomically swapped slot: a hit is a lock-free load, a
//! comparison and a `Bytes` clone. Concurrent misses are coalesced into one signing by a mutex
//! that only the miss path takes.

use std::sync::Arc;

use arc_swap::{ArcSwapOption, Guard};
use axum::extract::{Request, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use pharos_shared::entity_configuration::{ENTITY_STATEMENT_TYP, payload};
use pharos_shared::http_cache::Tagged;
use pharos_shared::snapshot::Snapshot;

use crate::DataPlane;
use crate::error::FedError;
use crate::jwt_response::cacheable;
use pharos_runtime::signing;

/// Media type of entity statements.
pub const CONTENT_TYPE: &str = pharos_shared::entity_configuration::ENTITY_STATEMENT_MEDIA_TYPE;

/// A cached token is re-signed this long before it expires, and at the latest after this long,
/// so that `iat` stays recent.
const REFRESH_BEFORE_EXP: i64 = 60;
const MAX_CACHE_AGE: i64 = 8 * 3600;

/// The signed bytes with their entity tag (hashed once, at signing) and their refresh instant,
/// which is also how long HTTP caches may keep them.
#[derive(Debug)]
struct Signed {
    generation: u64,
    tagged: Tagged,
}

/// The signed Entity Configuration of one snapshot generation (the slot first: it is what a
/// request reads; see [`DataPlane`]'s layout).
#[derive(Debug, Default)]
#[repr(C)]
pub struct EcCache {
    slot: ArcSwapOption<Signed>,
    /// Held while signing, so that concurrent misses sign once.
    signing: tokio::sync::Mutex<()>,
}

impl EcCache {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    fn fresh(&self, generation: u64, now: i64) -> Option<Tagged> {
        let slot = self.slot.load();
        slot.as_ref()
            .filter(|s| s.generation == generation && now < s.tagged.fresh_until)
            .map(|s| s.tagged.clone())
    }
}

/// The handler: a cacheable answer (`ETag`, `Cache-Control` up to the next re-signing, `304`
/// on a matching `If-None-Match`). It takes the request itself, not a `HeaderMap`: that extractor clones every request header
/// to read one.
pub async fn handler(State(dp): State<Arc<DataPlane>>, req: Request) -> Response {
    let now = dp.now();
    match signed_at(&dp, now).await {
        Ok(tagged) => cacheable(
            CONTENT_TYPE,
            tagged,
            now,
            req.headers().get(header::IF_NONE_MATCH),
        ),
        Err(e) => e.into_response(),
    }
}

/// The answer to `req` when the signed Entity Configuration is cached and fresh (what
/// [`handler`] answers without awaiting; see [`crate::front`]); `None` leaves it to the
/// handler, which signs.
pub(crate) fn ready(dp: &DataPlane, req: &Request) -> Option<Response> {
    let now = dp.now();
    // The generation beside the snapshot handle: the snapshot itself is not touched.
    let tagged = dp.ec_cache.fresh(dp.generation(), now)?;
    Some(cacheable(
        CONTENT_TYPE,
        tagged,
        now,
        req.headers().get(header::IF_NONE_MATCH),
    ))
}

/// The Entity Configuration signed for `now`, with its entity tag and freshness.
async fn signed_at(dp: &DataPlane, now: i64) -> Result<Tagged, FedError> {
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
    let body = signed.tagged.clone();
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
    // Re-signed (and kept by HTTP caches) until shortly before `exp`, for at most
    // `MAX_CACHE_AGE`, and never past the next change of our keys: a CDN must not go on
    // serving the old key set after a rotation.
    let mut refresh_at = (exp - REFRESH_BEFORE_EXP).min(now + MAX_CACHE_AGE);
    if let Some(change) = snap.keys.next_change(now) {
        refresh_at = refresh_at.min(change);
    }
    Ok(Signed {
        generation: snap.generation,
        tagged: Tagged::new(Bytes::from(token), refresh_at),
    })
}
