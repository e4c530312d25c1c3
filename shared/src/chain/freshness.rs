//! The resolver cache rule of the service interface: when a cached statement (or resolved
//! chain) may still be served, and when it should be refreshed in the background.
//!
//! Pure arithmetic on Unix seconds so that both cache layers of the data plane share one
//! reading of the rule and it can be tested exhaustively without a clock.

use serde::{Deserialize, Serialize};

/// What a cache does with an entry at a given instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Freshness {
    /// Serve it; nothing to do.
    Fresh,
    /// Serve it, and start one background refresh (if none is running yet).
    Refresh,
    /// Do not serve it: fetch anew before answering.
    Expired,
}

/// The `grace_period` / `time_elapsed_grace_factor` pair of the `resolve` endpoint.
///
/// An entry that is not yet expired but expires within `grace_period` is still served; it is
/// refreshed in the background only once at least `elapsed_factor` of its lifetime has
/// elapsed (the interface's wording; lighthouse's code compares the *remaining* fraction,
/// which we do not copy). With 3600 s and 0.75 a one-hour statement is refreshed only after
/// 45 minutes; with factor 0 it is refreshed as soon as it is inside the grace period.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct GraceRule {
    /// Seconds before expiry from which a background refresh may happen.
    pub grace_period: i64,
    /// Fraction (0..=1) of the lifetime that must have elapsed before that refresh.
    pub elapsed_factor: f64,
}

impl Default for GraceRule {
    fn default() -> Self {
        Self {
            grace_period: 3600,
            elapsed_factor: 0.5,
        }
    }
}

impl GraceRule {
    /// Judge an entry issued at `issued` (its `iat`, or when it was computed) that expires at
    /// `exp`, at time `now`.
    pub fn judge(&self, issued: i64, exp: i64, now: i64) -> Freshness {
        if now >= exp {
            return Freshness::Expired;
        }
        if exp - now > self.grace_period {
            return Freshness::Fresh;
        }
        let lifetime = (exp - issued).max(1) as f64;
        let elapsed = (now - issued).max(0) as f64;
        if elapsed >= self.elapsed_factor * lifetime {
            Freshness::Refresh
        } else {
            Freshness::Fresh
        }
    }

    /// The first instant at which [`Self::judge`] stops answering `Fresh`: when a scheduler
    /// (the proactive resolver) should refresh the entry.
    pub fn refresh_at(&self, issued: i64, exp: i64) -> i64 {
        let by_grace = exp - self.grace_period;
        let by_factor = issued + (self.elapsed_factor * (exp - issued).max(1) as f64).ceil() as i64;
        by_grace.max(by_factor).min(exp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: i64 = 1_800_000_000;

    fn rule(grace: i64, factor: f64) -> GraceRule {
        GraceRule {
            grace_period: grace,
            elapsed_factor: factor,
        }
    }

    #[test]
    fn one_hour_statement_with_factor_three_quarters_refreshes_after_45_minutes() {
        let r = rule(3600, 0.75);
        let exp = T0 + 3600;
        assert_eq!(r.judge(T0, exp, T0), Freshness::Fresh);
        assert_eq!(r.judge(T0, exp, T0 + 2699), Freshness::Fresh);
        assert_eq!(r.judge(T0, exp, T0 + 2700), Freshness::Refresh);
        assert_eq!(r.judge(T0, exp, T0 + 3599), Freshness::Refresh);
        assert_eq!(r.judge(T0, exp, T0 + 3600), Freshness::Expired);
        assert_eq!(r.refresh_at(T0, exp), T0 + 2700);
    }

    #[test]
    fn long_lived_statement_is_fresh_until_the_grace_period() {
        let r = rule(3600, 0.5);
        let exp = T0 + 86_400;
        assert_eq!(r.judge(T0, exp, exp - 3601), Freshness::Fresh);
        assert_eq!(r.judge(T0, exp, exp - 3600), Freshness::Refresh);
        assert_eq!(r.refresh_at(T0, exp), exp - 3600);
    }

    #[test]
    fn factor_zero_refreshes_immediately_when_the_whole_lifetime_is_in_grace() {
        let r = rule(3600, 0.0);
        assert_eq!(r.judge(T0, T0 + 600, T0), Freshness::Refresh);
        assert_eq!(r.refresh_at(T0, T0 + 600), T0);
    }

    #[test]
    fn zero_grace_never_refreshes_in_the_background() {
        let r = rule(0, 0.5);
        assert_eq!(r.judge(T0, T0 + 10, T0 + 9), Freshness::Fresh);
        assert_eq!(r.judge(T0, T0 + 10, T0 + 10), Freshness::Expired);
    }

    #[test]
    fn an_issued_time_in_the_future_counts_as_nothing_elapsed() {
        let r = rule(3600, 0.5);
        assert_eq!(r.judge(T0 + 30, T0 + 600, T0), Freshness::Fresh);
    }
}
