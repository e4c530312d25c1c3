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
use pharos_runtime::signing;

/// Re-sign this long before the response's `exp`.
const REFRESH_BEFORE_EXP: i64 = 60;
/// Re-sign at least this often, so that `iat` stays recent.
const MAX_AGE: i64 = 3600;
/// Upper bound of the cache in bytes of keys and response bodies. Responses of long chains
/// can reach megabytes, so a bound on entries (formerly 100,000) was no bound on memory. The
/// resolution an entry refers to is shared with the resolutions cache and weighed there.
const MAX_BYTES: u64 = 128 * 1024 * 1024;

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
        Self::with_capacity(MAX_BYTES)
    }

    /// A cache holding at most `max_bytes` of keys and bodies (plus a fixed overhead each).
    fn with_capacity(max_bytes: u64) -> Self {
        Self(
            Cache::builder()
                .max_capacity(max_bytes)
                .weigher(|k: &String, v: &Arc<Signed>| weight(k, &v.body))
                .build(),
        )
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

/// The weight of one entry: key, body and a fixed overhead for the entry itself.
fn weight(key: &str, body: &[u8]) -> u32 {
    u32::try_from(key.len() + body.len() + 64).unwrap_or(u32::MAX)
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

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing unwrap is a failing test
mod tests {
    use super::*;
    use pharos_shared::chain::ResolvedChain;

    /// Large signed responses (long chains) stay within the byte cap; with an entry bound
    /// alone all twenty would be kept.
    #[tokio::test]
    async fn bounded_in_bytes() {
        const CAP: u64 = 1024 * 1024;
        let c = SignedCache::with_capacity(CAP);
        let chain = ResolvedChain {
            trust_anchor: "https://ta.example".into(),
            chain: Vec::new(),
            metadata: serde_json::json!({}),
            exp: 0,
            subject_claims: serde_json::Map::new(),
            anchor_claims: serde_json::Map::new(),
        };
        let resolution = Arc::new(Resolution::new(chain, Vec::new(), 0));
        for i in 0..20 {
            let entry = Signed {
                resolution: resolution.clone(),
                body: Bytes::from(vec![b'x'; 200 * 1024]),
                refresh_at: 1,
            };
            c.0.insert(format!("kid\n\nq{i}"), Arc::new(entry)).await;
            c.0.run_pending_tasks().await;
        }
        let held: u64 =
            c.0.iter()
                .map(|(k, v)| u64::from(weight(&k, &v.body)))
                .sum();
        assert!(held <= CAP, "{held} bytes held, cap {CAP}");
        assert!(c.0.entry_count() < 20, "{} entries", c.0.entry_count());
    }
}
