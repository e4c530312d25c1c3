//! How far a replica may be behind the others: since when it may have missed their changes
//! (its listener lost, its poll failing, or a full reload not done yet). `/readyz` asks
//! whether it is behind; `/metrics` says for how long, so that an alert can tell a reconnect
//! of a second from a replica that serves an old registry for minutes.

use std::sync::atomic::{AtomicI64, Ordering};

/// `since` of a replica that is up to date.
const UP_TO_DATE: i64 = i64::MIN;

/// Since when (Unix seconds) this replica may be missing changes of the others.
#[derive(Debug)]
pub struct Lag {
    since: AtomicI64,
}

impl Lag {
    /// A replica behind since `now`, or up to date.
    pub fn new(behind: bool, now: i64) -> Self {
        Self {
            since: AtomicI64::new(if behind { now } else { UP_TO_DATE }),
        }
    }

    /// Changes may be missing from `now` on; a replica already behind keeps its first
    /// instant (a failing poll repeats this every interval).
    pub fn fell_behind(&self, now: i64) {
        let _ = self
            .since
            .compare_exchange(UP_TO_DATE, now, Ordering::SeqCst, Ordering::SeqCst);
    }

    /// Everything committed by the others is applied.
    pub fn caught_up(&self) {
        self.since.store(UP_TO_DATE, Ordering::SeqCst);
    }

    /// Whether changes may be missing.
    pub fn is_behind(&self) -> bool {
        self.since.load(Ordering::SeqCst) != UP_TO_DATE
    }

    /// Seconds behind at `now`: 0 when up to date.
    pub fn seconds(&self, now: i64) -> i64 {
        match self.since.load(Ordering::SeqCst) {
            UP_TO_DATE => 0,
            since => now.saturating_sub(since).max(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_instant_behind_counts_until_caught_up() {
        let lag = Lag::new(false, 100);
        assert!(!lag.is_behind());
        assert_eq!(lag.seconds(100), 0);
        lag.fell_behind(110);
        // A poll failing again later does not restart the count.
        lag.fell_behind(140);
        assert!(lag.is_behind());
        assert_eq!(lag.seconds(170), 60);
        lag.caught_up();
        assert_eq!(lag.seconds(200), 0);
        assert!(!lag.is_behind());
        assert_eq!(Lag::new(true, 50).seconds(80), 30);
    }
}
