//! Hits and misses of the caches that decide how much work a request costs: signed Subordinate
//! Statements (a miss signs), resolve answers (a miss runs or joins a resolution) and issued
//! trust marks (a miss signs). Per data plane, not per process, so that each instance reports
//! its own; read by the control plane's `/metrics` at scrape time.
//!
//! Relaxed atomic increments: the hot paths pay one uncontended-on-average add.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// The counted caches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cache {
    /// Signed Subordinate Statements of the fetch endpoint.
    Fetch,
    /// Resolve answers (the front cache of anonymous GETs).
    Resolve,
    /// Issued trust marks of the trust mark endpoint.
    TrustMark,
}

impl Cache {
    /// Every cache, for rendering.
    pub const ALL: [Cache; 3] = [Cache::Fetch, Cache::Resolve, Cache::TrustMark];

    /// The label value.
    pub fn name(self) -> &'static str {
        match self {
            Cache::Fetch => "fetch",
            Cache::Resolve => "resolve",
            Cache::TrustMark => "trust_mark",
        }
    }
}

/// Hit and miss counts per cache.
#[derive(Debug, Default)]
pub struct CacheCounters {
    counts: [[AtomicU64; 2]; 3],
}

impl CacheCounters {
    /// Counts an answer from the cache.
    pub fn hit(&self, c: Cache) {
        self.counts[c as usize][0].fetch_add(1, Relaxed);
    }

    /// Counts an answer that had to be made.
    pub fn miss(&self, c: Cache) {
        self.counts[c as usize][1].fetch_add(1, Relaxed);
    }

    /// `(hits, misses)` of `c` so far.
    pub fn get(&self, c: Cache) -> (u64, u64) {
        let [h, m] = &self.counts[c as usize];
        (h.load(Relaxed), m.load(Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_per_cache() {
        let c = CacheCounters::default();
        c.hit(Cache::Fetch);
        c.hit(Cache::Fetch);
        c.miss(Cache::Fetch);
        c.miss(Cache::TrustMark);
        assert_eq!(c.get(Cache::Fetch), (2, 1));
        assert_eq!(c.get(Cache::Resolve), (0, 0));
        assert_eq!(c.get(Cache::TrustMark), (0, 1));
    }
}
