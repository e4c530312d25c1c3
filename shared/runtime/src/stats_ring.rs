//! The bounded, lock-free buffer of request records between the data plane, which fills it on
//! the request path, and the control plane's flusher, which drains it into the database.
//!
//! The request path never waits on statistics: pushing is one lock-free operation, and when the
//! ring is full the oldest record is dropped (and counted) instead. Statistics never travel on
//! the command channel.

use std::borrow::Cow;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam_queue::ArrayQueue;

/// What is known about one request when its response is ready. Fields the `stats.capture.*`
/// switches turn off are `None`. Formatting (query parameters as JSON, the error type, the
/// country) is left to the flusher, off the request path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatsRecord {
    /// Arrival, Unix seconds.
    pub ts: i64,
    /// Request path without its leading `/`, lower-cased (`fetch`, `.well-known/openid-federation`).
    pub endpoint: String,
    /// HTTP method.
    pub method: http::Method,
    /// Final status code.
    pub status: u16,
    /// Time to the response head, microseconds.
    pub duration_us: u64,
    /// Client address (after trusted proxies); kept for the country lookup even when
    /// `capture.client_ip` is off — then [`StatsRecord::store_ip`] is false.
    pub ip: Option<IpAddr>,
    /// Whether the address itself may be stored.
    pub store_ip: bool,
    /// User-Agent header.
    pub user_agent: Option<String>,
    /// Entity identifier of an authenticated (`private_key_jwt`) client.
    pub client_entity_id: Option<String>,
    /// The raw query string.
    pub query: Option<String>,
    /// Request body size in bytes (declared length; 0 without a body).
    pub request_size: u64,
    /// Response body size in bytes.
    pub response_size: u64,
    /// The hosted entity that answered (1: the default entity).
    pub entity: i64,
}

/// The bounded buffer between the data plane and the flusher.
#[derive(Debug)]
pub struct Ring {
    queue: ArrayQueue<StatsRecord>,
    dropped: AtomicU64,
    threshold: usize,
    /// Woken when the fill reaches the threshold, so the flusher drains early.
    pub full: tokio::sync::Notify,
}

impl Ring {
    /// A ring of `capacity` records that asks for a flush at `threshold` (fraction in (0, 1]).
    pub fn new(capacity: usize, threshold: f64) -> Arc<Self> {
        let capacity = capacity.max(1);
        // Rounded to a whole record count: the fraction was validated at start-up.
        let at = ((capacity as f64) * threshold).ceil() as usize;
        Arc::new(Self {
            queue: ArrayQueue::new(capacity),
            dropped: AtomicU64::new(0),
            threshold: at.clamp(1, capacity),
            full: tokio::sync::Notify::new(),
        })
    }

    /// Adds a record without waiting; when full, the oldest one is dropped and counted.
    pub fn push(&self, record: StatsRecord) {
        if self.queue.force_push(record).is_some() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
        if self.queue.len() >= self.threshold {
            self.full.notify_one();
        }
    }

    /// Takes at most `max` records, oldest first.
    pub fn drain(&self, max: usize) -> Vec<StatsRecord> {
        let mut out = Vec::with_capacity(max.min(self.queue.len()));
        while out.len() < max {
            match self.queue.pop() {
                Some(r) => out.push(r),
                None => break,
            }
        }
        out
    }

    /// Records buffered now.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Whether nothing is buffered.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Capacity in records.
    pub fn capacity(&self) -> usize {
        self.queue.capacity()
    }

    /// Records dropped because the ring was full, since start.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// Longest endpoint kept in a record (longer paths are cut at a character boundary).
pub const MAX_ENDPOINT: usize = 255;

/// `/Fetch` → `fetch`: the path without leading `/`, lower-cased, cut to the column size.
pub fn normalise(path: &str) -> String {
    normalised(path).into_owned()
}

/// As [`normalise`], borrowing `path` when nothing but the leading `/` changes.
pub fn normalised(path: &str) -> Cow<'_, str> {
    let p = cut(path.trim_start_matches('/'), MAX_ENDPOINT);
    if p.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(p.to_ascii_lowercase())
    } else {
        Cow::Borrowed(p)
    }
}

/// `s` cut to at most `max` bytes, at a character boundary.
pub fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn record(n: i64) -> StatsRecord {
        StatsRecord {
            ts: n,
            endpoint: "fetch".into(),
            method: http::Method::GET,
            status: 200,
            duration_us: 1,
            ip: None,
            store_ip: false,
            user_agent: None,
            client_entity_id: None,
            query: None,
            request_size: 0,
            response_size: 0,
            entity: 1,
        }
    }

    #[test]
    fn a_full_ring_drops_the_oldest_and_counts() {
        let ring = Ring::new(3, 1.0);
        for n in 0..5 {
            ring.push(record(n));
        }
        assert_eq!(ring.dropped(), 2);
        let left: Vec<i64> = ring.drain(10).iter().map(|r| r.ts).collect();
        assert_eq!(left, [2, 3, 4]);
        assert!(ring.is_empty());
    }

    #[test]
    fn drain_takes_at_most_max_oldest_first() {
        let ring = Ring::new(10, 0.5);
        for n in 0..4 {
            ring.push(record(n));
        }
        assert_eq!(
            ring.drain(3).iter().map(|r| r.ts).collect::<Vec<_>>(),
            [0, 1, 2]
        );
        assert_eq!(ring.len(), 1);
    }
}
