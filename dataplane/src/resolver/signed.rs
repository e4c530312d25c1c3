//! Signed resolve responses, cached so that a warm resolve costs a cache lookup and not a
//! signature.
//!
//! An entry is keyed by the signing key's `kid`, the audience and the query, and remembers
//! which [`Resolution`] it signed: a key rollover (new `kid`) or a refreshed resolution makes
//! it unreachable or stale, so responses always come from the current key and the current
//! chain. Entries are re-signed shortly before the response's `exp` and at least hourly, so
//! that `iat` stays recent.

use std::sync::Arc;

use bytes::Bytes;
use moka::future::Cache;
use pharos_shared::Result;
use pharos_shared::chain::{RESOLVE_RESPONSE_TYP, response_claims};
use pharos_shared::snapshot::Snapshot;

use super::Resolution;
use crate::signing;

/// Re-sign this long before the response's `exp`.
const REFRESH_BEFORE_EXP: i64 = 60;
/// Re-sign at least this often, so that `iat` stays recent.
const MAX_AGE: i64 = 3600;
/// Most signed responses kept.
const MAX_ENTRIES: u64 = 100_000;

#[derive(Debug)]
struct Signed {
    resolution: Arc<Resolution>,
    body: Bytes,
    refresh_at: i64,
}

/// Signed responses by (`kid`, audience, query key).
#[derive(Debug)]
pub struct SignedCache(Cache<String, Arc<Signed>>);

impl SignedCache {
    pub(crate) fn new() -> Self {
        Self(Cache::builder().max_capacity(MAX_ENTRIES).build())
    }

    /// The signed response for `res` (the resolution of the query whose key is `query_key`),
    /// from the cache when it still fits, else signed now with the snapshot's key; with the
    /// instant from which this cache would re-sign it.
    pub async fn get_or_sign(
        &self,
        snap: &Snapshot,
        query_key: &str,
        res: &Arc<Resolution>,
        aud: Option<&str>,
        now: i64,
    ) -> Result<(Bytes, i64)> {
        let key = format!(
            "{}\n{}\n{query_key}",
            snap.keys.signer.kid(),
            aud.unwrap_or("")
        );
        if let Some(hit) = self.0.get(&key).await
            && Arc::ptr_eq(&hit.resolution, res)
            && now < hit.refresh_at
        {
            return Ok((hit.body.clone(), hit.refresh_at));
        }
        let body = Bytes::from(sign(snap, res, aud, now).await?);
        let refresh_at = (res.exp() - REFRESH_BEFORE_EXP).min(now + MAX_AGE);
        if refresh_at > now {
            let entry = Signed {
                resolution: res.clone(),
                body: body.clone(),
                refresh_at,
            };
            self.0.insert(key, Arc::new(entry)).await;
        }
        Ok((body, refresh_at))
    }
}

/// A resolve response for `res`, issued by us at `now`, signed with the snapshot's key.
pub async fn sign(
    snap: &Snapshot,
    res: &Resolution,
    aud: Option<&str>,
    now: i64,
) -> Result<String> {
    let legacy_id = snap.trust_marks.legacy_id;
    let claims = response_claims(&snap.entity_id, &res.chain, &res.marks, now, aud, legacy_id);
    signing::sign(&snap.keys.signer, RESOLVE_RESPONSE_TYP, claims).await
}
