//! The first stop of a warm anonymous resolve: the finished response bytes, looked up by the
//! request's raw query string.
//!
//! The full path parses the parameters, checks the anchors against the allow-list, builds the
//! resolution key (which hashes the pinned anchor keys) and does two cache lookups; for the
//! same query in the same snapshot all of that gives the same answer until either cached layer
//! would change it. So an entry remembers the snapshot generation it was computed in and the
//! first instant at which one of the layers beneath would stop serving it unchanged: the
//! grace rule's refresh point of its resolution, or the signed response's re-signing time.
//! Within those bounds a hit is exactly what the full path would answer; outside them the
//! request takes the full path, which refreshes and re-signs as usual.
//!
//! Only anonymous GET requests without a proactive resolver use it: an authenticated caller's
//! response carries its `aud`, and the proactive resolver's stored responses come first.

use std::sync::Arc;

use bytes::Bytes;
use moka::sync::Cache;

/// Upper bound of the cache in bytes of keys and responses. Keys are raw query strings that a
/// client chooses freely (parameter order, unknown parameters), so the bound is on bytes, not
/// entries: a flood of long, distinct queries evicts older entries instead of growing memory.
/// Responses are shared with the signed-response cache, so this overcounts.
const MAX_BYTES: u64 = 64 * 1024 * 1024;

#[derive(Debug)]
struct Entry {
    generation: u64,
    valid_until: i64,
    body: Bytes,
}

/// Signed resolve responses by raw query string.
#[derive(Debug)]
pub struct FrontCache(Cache<Arc<str>, Arc<Entry>>);

impl FrontCache {
    pub(crate) fn new() -> Self {
        Self::with_capacity(MAX_BYTES)
    }

    /// A cache holding at most `max_bytes` of queries and responses (plus 64 bytes each).
    fn with_capacity(max_bytes: u64) -> Self {
        Self(
            Cache::builder()
                .max_capacity(max_bytes)
                .weigher(|k: &Arc<str>, v: &Arc<Entry>| {
                    u32::try_from(k.len() + v.body.len() + 64).unwrap_or(u32::MAX)
                })
                .build(),
        )
    }

    /// The response to `query` if one was stored in snapshot `generation` and is still valid
    /// at `now`.
    pub fn get(&self, query: &str, generation: u64, now: i64) -> Option<Bytes> {
        self.0
            .get(query)
            .filter(|e| e.generation == generation && now < e.valid_until)
            .map(|e| e.body.clone())
    }

    /// Forgets every response (a flush: entries carry no subject to pick by).
    pub fn clear(&self) {
        self.0.invalidate_all();
    }

    /// Remembers `body` as the answer to `query` in snapshot `generation` until `valid_until`.
    pub fn insert(&self, query: &str, generation: u64, valid_until: i64, body: Bytes) {
        let entry = Entry {
            generation,
            valid_until,
            body,
        };
        self.0.insert(Arc::from(query), Arc::new(entry));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hits_only_within_generation_and_validity() {
        let c = FrontCache::new();
        c.insert("sub=a&trust_anchor=b", 7, 100, Bytes::from_static(b"jwt"));
        assert_eq!(
            c.get("sub=a&trust_anchor=b", 7, 99).as_deref(),
            Some(&b"jwt"[..])
        );
        assert_eq!(c.get("sub=a&trust_anchor=b", 7, 100), None, "expired");
        assert_eq!(c.get("sub=a&trust_anchor=b", 8, 50), None, "newer snapshot");
        assert_eq!(c.get("trust_anchor=b&sub=a", 7, 50), None, "another query");
    }

    /// A flood of long, distinct queries with large answers stays within the byte cap.
    #[test]
    fn bounded_in_bytes() {
        const CAP: u64 = 1024 * 1024;
        let c = FrontCache::with_capacity(CAP);
        for i in 0..20 {
            let q = format!("sub=a&pad={}&n={i}", "p".repeat(10_000));
            c.insert(&q, 1, 100, Bytes::from(vec![b'x'; 200 * 1024]));
            c.0.run_pending_tasks();
        }
        let held: u64 =
            c.0.iter()
                .map(|(k, v)| (k.len() + v.body.len() + 64) as u64)
                .sum();
        assert!(held <= CAP, "{held} bytes held, cap {CAP}");
        assert!(c.0.entry_count() < 20, "{} entries", c.0.entry_count());
    }
}
