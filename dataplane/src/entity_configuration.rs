//! `GET /.well-known/openid-federation`: our signed Entity Configuration.
//!
//! Signing is the expensive part, so the signed bytes are cached for the current snapshot
//! generation and re-signed only when the snapshot changes or the cached token has used up its
//! freshness window. The cache is one atomically swapped slot kept at the snapshot's
//! publication point beside the generation: a hit is a lock-free load, a comparison and a
//! `Bytes` clone. Concurrent misses are coalesced into one signing by a mutex that only the
//! miss path takes.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use pharos_shared::entity_configuration::{ENTITY_STATEMENT_TYP, payload};
use pharos_shared::http_cache::Tagged;
use pharos_shared::snapshot::{Signed, Snapshot, SnapshotReader};

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

/// Signing the Entity Configuration. The signed answer itself is kept at the snapshot's
/// publication point ([`SnapshotReader::entity_configuration`]), where a request finds it and
/// whether it is current in one cache line.
#[derive(Debug, Default)]
pub struct EcSigning {
    /// Held while signing, so that concurrent misses sign once.
    lock: tokio::sync::Mutex<()>,
}

/// The handler: a cacheable answer (`ETag`, `Cache-Control` up to the next re-signing, `304`
/// on a matching `If-None-Match`). It takes the request itself, not a `HeaderMap`: that
/// extractor clones every request header to read one.
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
    kept(dp.reader(), dp.now(), req)
}

/// The answer to `req` from the Entity Configuration kept at `reader`'s publication point, if
/// it is current and fresh at `now` (a hosted entity's route asks its own point directly).
pub(crate) fn kept(reader: &SnapshotReader, now: i64, req: &Request) -> Option<Response> {
    let tagged = reader.entity_configuration(now)?;
    Some(cacheable(
        CONTENT_TYPE,
        tagged,
        now,
        req.headers().get(header::IF_NONE_MATCH),
    ))
}

/// The Entity Configuration signed for `now`, with its entity tag and freshness.
async fn signed_at(dp: &DataPlane, now: i64) -> Result<Tagged, FedError> {
    let reader = dp.reader();
    if let Some(tagged) = reader.entity_configuration(now) {
        return Ok(tagged);
    }
    let _signing = dp.ec_signing.lock.lock().await;
    // Another request may have signed while this one waited.
    if let Some(tagged) = reader.entity_configuration(now) {
        return Ok(tagged);
    }
    let snap = dp.snapshot();
    let signed = sign(&snap, now).await.map_err(FedError::server_error)?;
    let tagged = signed.tagged.clone();
    reader.keep_entity_configuration(signed);
    Ok(tagged)
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
