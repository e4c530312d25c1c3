//! Time as an injectable dependency.
//!
//! The pure logic takes `now` as a parameter; the planes ask a [`Clock`] for it once per request
//! or per job, so expiry, grace periods and key rollover can be tested with a manual clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

/// Leeway in seconds for `iat` lying in the future (the issuer's clock running ahead of ours,
/// §3.2 step 7). There is deliberately no leeway on `exp`: a chain's expiry becomes the `exp`
/// of resolve responses, which must not already have passed.
pub const CLOCK_SKEW: i64 = 60;

/// Source of the current time in Unix seconds.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Seconds since the Unix epoch.
    fn now(&self) -> i64;
}

/// The real wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    #[allow(clippy::disallowed_methods)] // the clock module: the one reader of the wall clock
    fn now(&self) -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
            .unwrap_or(0)
    }
}

/// How long something took (latency, slow-phase warnings): the one reader of the monotonic
/// clock. Measuring is not logic a test steers; a deadline that tests must move uses
/// `tokio::time::Instant`, which a paused test runtime controls (clippy.toml bans
/// `std::time::Instant::now` elsewhere).
#[derive(Debug, Clone, Copy)]
pub struct Stopwatch(std::time::Instant);

impl Stopwatch {
    /// Starts measuring now.
    #[allow(clippy::disallowed_methods)] // the clock module
    pub fn start() -> Self {
        Self(std::time::Instant::now())
    }

    /// Time since [`Self::start`].
    pub fn elapsed(&self) -> std::time::Duration {
        self.0.elapsed()
    }
}

/// Nanoseconds of the wall clock as seed material (mixed into the request id generator's
/// start), never as a time.
#[allow(clippy::disallowed_methods)] // the clock module
pub fn seed_nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default()
}

/// A clock that only moves when told to; for tests of time-dependent behaviour.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    /// A clock standing at `now`.
    pub fn new(now: i64) -> Arc<Self> {
        Arc::new(Self(AtomicI64::new(now)))
    }

    /// Moves the clock forward (or back, with a negative value).
    pub fn advance(&self, secs: i64) {
        self.0.fetch_add(secs, Ordering::SeqCst);
    }

    /// Sets the clock to an absolute time.
    pub fn set(&self, now: i64) {
        self.0.store(now, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}
