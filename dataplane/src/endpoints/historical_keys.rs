//! `historical_keys` (spec §8.7): our expired and revoked keys as a signed JWK Set, so that
//! signatures made before a rollover (or before a compromise was discovered) can still be
//! judged.
//!
//! The key list changes only with the snapshot, so the signed answer is cached per snapshot
//! generation like the Entity Configuration, and re-signed hourly to keep `iat` recent (and at
//! the next change of our keys, when the list changes). An anonymous GET's answer is
//! cacheable until that re-signing, with an entity tag.

use std::sync::Arc;

use axum::http::header;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use moka::future::Cache;
use pharos_shared::http_cache::Tagged;
use pharos_shared::snapshot::Snapshot;
use serde_json::{Map, Value, json};

use super::Call;
use crate::DataPlane;
use crate::error::FedError;
use crate::jwt_response::{cacheable, jwt};
use pharos_runtime::signing;

/// Media type of the response.
pub const CONTENT_TYPE: &str = "application/jwk-set+jwt";
/// JWT `typ` of the response.
pub const TYP: &str = "jwk-set+jwt";

/// A cached answer is re-signed after this long so that its `iat` stays recent.
const MAX_CACHE_AGE: i64 = 3_600;

#[derive(Debug)]
struct Signed {
    tagged: Tagged,
}

/// Signed historical-key sets by snapshot generation.
#[derive(Debug)]
pub struct HistoricalKeysCache(Cache<u64, Arc<Signed>>);

impl Default for HistoricalKeysCache {
    fn default() -> Self {
        Self(Cache::builder().max_capacity(4).build())
    }
}

/// The claims at `now`: `iss`, `iat` and `keys`.
pub fn claims(snap: &Snapshot, now: i64) -> Map<String, Value> {
    let mut c = Map::new();
    c.insert("iss".into(), json!(&*snap.entity_id));
    c.insert("iat".into(), json!(now));
    c.insert("keys".into(), json!(snap.keys.historical));
    c
}

/// Answers a historical keys request (its parameters are read, and the client authenticated
/// when the endpoint asks for it, but none of them changes the answer).
pub(crate) async fn serve(call: Call<'_>) -> Response {
    let (dp, snap, now) = (call.dp, call.snap.clone(), call.now);
    let anonymous = call
        .raw_query()
        .is_some()
        .then(|| call.req.headers().get(header::IF_NONE_MATCH).cloned());
    let tagged = match call.params().await {
        Ok(_) => signed(dp, snap, now).await,
        Err(e) => return e.into_response(),
    };
    match (tagged, anonymous) {
        (Ok(t), Some(inm)) => cacheable(CONTENT_TYPE, t, now, inm.as_ref()),
        (Ok(t), None) => jwt(CONTENT_TYPE, t.body()),
        (Err(e), _) => e.into_response(),
    }
}

/// The signed historical keys of `snap` at `now` (cached).
async fn signed(dp: &DataPlane, snap: Arc<Snapshot>, now: i64) -> Result<Tagged, FedError> {
    let cache = &dp.historical_cache.0;
    if let Some(hit) = cache.get(&snap.generation).await {
        if now < hit.tagged.fresh_until {
            return Ok(hit.tagged.clone());
        }
        cache.invalidate(&snap.generation).await;
    }
    let generation = snap.generation;
    let signed = cache
        .try_get_with(generation, async move {
            let token = signing::sign(&snap.keys.signer, TYP, claims(&snap, now)).await?;
            let mut fresh_until = now + MAX_CACHE_AGE;
            if let Some(change) = snap.keys.next_change(now) {
                fresh_until = fresh_until.min(change);
            }
            Ok::<_, pharos_shared::Error>(Arc::new(Signed {
                tagged: Tagged::new(Bytes::from(token), fresh_until),
            }))
        })
        .await;
    signed
        .map(|s| s.tagged.clone())
        .map_err(FedError::server_error)
}
