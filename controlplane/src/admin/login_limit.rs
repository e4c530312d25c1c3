//! Per-client limit on failed Admin API logins.
//!
//! Without it a client can try passwords as fast as argon2 verifies them, and every wrong guess
//! costs a verification that real logins then queue behind. A client (socket peer address) with
//! [`MAX_FAILURES`] failed logins within [`WINDOW`] is answered 429 with `Retry-After` until the
//! window that began with its first failure ends — before any password is checked, so blocked
//! guesses cost nothing. A successful login clears the client's count.

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use moka::sync::Cache;

/// Failed logins a client may make per window.
pub const MAX_FAILURES: u32 = 10;
/// The window, counted from a client's first failure.
pub const WINDOW: Duration = Duration::from_secs(60);
/// Clients tracked at most (the oldest are forgotten first).
const CLIENTS: u64 = 100_000;

/// A client's failures in its current window.
#[derive(Debug)]
struct Failures {
    since: Instant,
    count: AtomicU32,
}

/// Failed logins by client address.
#[derive(Debug, Clone)]
pub struct FailedLogins(Cache<IpAddr, Arc<Failures>>);

impl Default for FailedLogins {
    fn default() -> Self {
        Self(
            Cache::builder()
                .max_capacity(CLIENTS)
                .time_to_live(WINDOW)
                .build(),
        )
    }
}

impl FailedLogins {
    /// Seconds `ip` must wait before trying again, when it is over the limit.
    pub fn retry_after(&self, ip: IpAddr) -> Option<u64> {
        let f = self.0.get(&ip)?;
        if f.count.load(Ordering::Relaxed) < MAX_FAILURES {
            return None;
        }
        let left = WINDOW.saturating_sub(f.since.elapsed());
        Some(left.as_secs().max(1))
    }

    /// Counts a failed login of `ip`.
    pub fn record(&self, ip: IpAddr) {
        let f = self.0.get_with(ip, || {
            Arc::new(Failures {
                since: Instant::now(),
                count: AtomicU32::new(0),
            })
        });
        f.count.fetch_add(1, Ordering::Relaxed);
    }

    /// Forgets `ip`'s failures (it logged in).
    pub fn clear(&self, ip: IpAddr) {
        self.0.invalidate(&ip);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_is_stopped_after_its_failures_and_others_are_not() {
        let limit = FailedLogins::default();
        let (a, b): (IpAddr, IpAddr) = ([192, 0, 2, 1].into(), [192, 0, 2, 2].into());
        for _ in 0..MAX_FAILURES - 1 {
            limit.record(a);
        }
        assert_eq!(limit.retry_after(a), None);
        limit.record(a);
        let wait = limit.retry_after(a);
        assert!(
            wait.is_some_and(|s| (1..=WINDOW.as_secs()).contains(&s)),
            "{wait:?}"
        );
        assert_eq!(limit.retry_after(b), None);
        limit.clear(a);
        assert_eq!(limit.retry_after(a), None);
    }
}
