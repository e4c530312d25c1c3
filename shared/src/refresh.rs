//! Pure rules of the key refreshers (trust anchors and subordinates): backoff, the choice of
//! the next poll interval, and how a change of a key set is described.
//!
//! Kept free of I/O and clocks so that the schedule is tested exactly, without sleeping.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::jose::Jwks;

/// First retry delay after a failure, seconds.
pub const BACKOFF_START: i64 = 1;
/// Longest retry delay, seconds (5 minutes).
pub const BACKOFF_CAP: i64 = 300;
/// Interval when neither a configured interval nor an `exp` is available (trust anchors).
pub const DEFAULT_INTERVAL: i64 = 3_600;
/// Poll this long before the fetched configuration expires, so the next one is fetched while
/// the current one is still valid.
pub const EXP_BUFFER: i64 = 60;
/// Shortest interval derived from `exp` for subordinates: a subordinate publishing very short
/// lived configurations must not make us poll it in a loop.
pub const SUBORDINATE_FLOOR: i64 = 60;

/// Exponential backoff: `start`, twice that, four times, … capped at `cap`, back to `start`
/// after a success. The one backoff of the code base: the key refreshers use the default (1 s
/// to 5 minutes), the cluster listener, the snapshot reconciler and the wait for a database at
/// start their own bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    start: Duration,
    cap: Duration,
    failures: u32,
}

impl Default for Backoff {
    /// [`BACKOFF_START`] to [`BACKOFF_CAP`] seconds.
    fn default() -> Self {
        Self::between(
            Duration::from_secs(BACKOFF_START.unsigned_abs()),
            Duration::from_secs(BACKOFF_CAP.unsigned_abs()),
        )
    }
}

impl Backoff {
    /// Delays from `start`, doubling, to at most `cap`.
    pub const fn between(start: Duration, cap: Duration) -> Self {
        Self {
            start,
            cap,
            failures: 0,
        }
    }

    /// Records a failure and returns how long to wait before the next attempt.
    pub fn fail(&mut self) -> Duration {
        // Doubling by `checked_pow`, not a shift: a shift by 63 is "checked" yet lands on the
        // sign bit, and 64 failures in a row gave a negative delay (found by the property test).
        let delay = 2u32
            .checked_pow(self.failures)
            .and_then(|f| self.start.checked_mul(f))
            .map_or(self.cap, |d| d.min(self.cap));
        self.failures = self.failures.saturating_add(1);
        delay
    }

    /// [`Self::fail`] in whole seconds, for schedules kept in Unix seconds.
    pub fn fail_secs(&mut self) -> i64 {
        i64::try_from(self.fail().as_secs()).unwrap_or(i64::MAX)
    }

    /// Records a success: the next failure waits `start` again.
    pub fn reset(&mut self) {
        self.failures = 0;
    }

    /// Consecutive failures so far.
    pub fn failures(&self) -> u32 {
        self.failures
    }
}

/// Trust anchors: `key_poll_interval` if > 0, else the configuration's `exp` minus a buffer
/// (at least 1 s), else one hour.
pub fn anchor_interval(key_poll_interval: i64, exp: Option<i64>, now: i64) -> i64 {
    if key_poll_interval > 0 {
        return key_poll_interval;
    }
    match exp {
        Some(exp) if exp > 0 => (exp - now - EXP_BUFFER).max(1),
        _ => DEFAULT_INTERVAL,
    }
}

/// Subordinates: `jwks_poll_interval` if > 0, else the configuration's `exp` minus a buffer,
/// never less than one minute. (A configuration without `exp` is a failure, see the refresher.)
pub fn subordinate_interval(jwks_poll_interval: i64, exp: i64, now: i64) -> i64 {
    if jwks_poll_interval > 0 {
        return jwks_poll_interval;
    }
    (exp - now - EXP_BUFFER).max(SUBORDINATE_FLOOR)
}

/// The `kid`s of a key set (keys without one count by their JSON text, so a change is seen).
pub fn kids(jwks: &Jwks) -> BTreeSet<String> {
    jwks.keys
        .iter()
        .map(|k| match k.get("kid").and_then(|v| v.as_str()) {
            Some(kid) => kid.to_owned(),
            None => serde_json::Value::Object(k.clone()).to_string(),
        })
        .collect()
}

/// The event message of a key set change, `None` when the `kid` sets are equal:
/// `"added: a, b; removed: c"`.
pub fn describe_change(old: &Jwks, new: &Jwks) -> Option<String> {
    let (old, new) = (kids(old), kids(new));
    if old == new {
        return None;
    }
    let join = |s: Vec<&String>| {
        s.into_iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let added = join(new.difference(&old).collect());
    let removed = join(old.difference(&new).collect());
    Some(format!("added: {added}; removed: {removed}"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn jwks(kids: &[&str]) -> Jwks {
        let keys: Vec<_> = kids.iter().map(|k| json!({"kid": k})).collect();
        serde_json::from_value(json!({ "keys": keys })).unwrap()
    }

    #[test]
    fn other_bounds_double_from_their_start_to_their_cap() {
        let mut b = Backoff::between(Duration::from_millis(100), Duration::from_secs(1));
        let ms: Vec<u128> = (0..6).map(|_| b.fail().as_millis()).collect();
        assert_eq!(ms, [100, 200, 400, 800, 1000, 1000]);
        b.reset();
        assert_eq!(b.fail(), Duration::from_millis(100));
    }

    #[test]
    fn a_long_run_of_failures_waits_the_cap_never_less() {
        let mut b = Backoff::default();
        let delays: Vec<i64> = (0..200).map(|_| b.fail_secs()).collect();
        assert_eq!(delays[0], BACKOFF_START);
        assert!(delays.windows(2).all(|w| w[0] <= w[1]), "{delays:?}");
        assert_eq!(delays[199], BACKOFF_CAP);
    }

    #[test]
    fn backoff_doubles_from_one_second_to_five_minutes_and_resets() {
        let mut b = Backoff::default();
        let seq: Vec<i64> = (0..12).map(|_| b.fail_secs()).collect();
        assert_eq!(seq, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300]);
        for _ in 0..100 {
            b.fail_secs();
        }
        assert_eq!(b.fail_secs(), 300);
        b.reset();
        assert_eq!(b.failures(), 0);
        assert_eq!(b.fail_secs(), 1);
    }

    proptest::proptest! {
        /// Over any sequence of failures and successes: every delay is within [1 s, 5 min],
        /// delays never shrink between successes, and the first after a success is 1 s.
        #[test]
        fn backoff_stays_within_bounds(events in proptest::collection::vec(proptest::bool::weighted(0.8), 0..400)) {
            let mut b = Backoff::default();
            let mut last: Option<i64> = None;
            for failed in events {
                if failed {
                    let d = b.fail_secs();
                    proptest::prop_assert!((BACKOFF_START..=BACKOFF_CAP).contains(&d));
                    match last {
                        None => proptest::prop_assert_eq!(d, BACKOFF_START),
                        Some(prev) => proptest::prop_assert!(d >= prev && d <= (prev * 2).min(BACKOFF_CAP)),
                    }
                    last = Some(d);
                } else {
                    b.reset();
                    last = None;
                }
            }
        }

        /// Poll intervals are always positive, and a subordinate is never polled more often
        /// than once a minute unless configured so.
        #[test]
        fn intervals_are_positive_and_floored(conf in -10i64..10_000, exp in proptest::option::of(-10_000i64..1_000_000), now in 0i64..500_000) {
            proptest::prop_assert!(anchor_interval(conf, exp, now) >= 1);
            let s = subordinate_interval(conf, exp.unwrap_or(0), now);
            if conf > 0 {
                proptest::prop_assert_eq!(s, conf);
            } else {
                proptest::prop_assert!(s >= SUBORDINATE_FLOOR);
            }
        }
    }

    #[test]
    fn anchor_interval_prefers_configuration_then_exp_then_an_hour() {
        assert_eq!(anchor_interval(120, Some(10_000), 0), 120);
        assert_eq!(anchor_interval(0, Some(10_000), 0), 10_000 - EXP_BUFFER);
        assert_eq!(anchor_interval(0, Some(10), 0), 1);
        assert_eq!(anchor_interval(0, None, 0), 3_600);
        assert_eq!(anchor_interval(0, Some(0), 0), 3_600);
    }

    #[test]
    fn subordinate_interval_has_a_one_minute_floor_on_exp() {
        assert_eq!(subordinate_interval(30, 10_000, 0), 30);
        assert_eq!(subordinate_interval(0, 10_000, 0), 10_000 - EXP_BUFFER);
        assert_eq!(subordinate_interval(0, 70, 0), 60);
        assert_eq!(subordinate_interval(0, 5, 0), 60);
    }

    #[test]
    fn change_is_described_by_kids() {
        assert_eq!(
            describe_change(&jwks(&["a", "b"]), &jwks(&["b", "a"])),
            None
        );
        assert_eq!(
            describe_change(&jwks(&["a", "b"]), &jwks(&["b", "c", "d"])).unwrap(),
            "added: c, d; removed: a"
        );
        assert_eq!(
            describe_change(&jwks(&[]), &jwks(&["a"])).unwrap(),
            "added: a; removed: "
        );
    }
}
