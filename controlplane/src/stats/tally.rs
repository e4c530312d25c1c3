//! Counting request records as they are read from their batches: latency distributions with
//! nearest-rank percentiles, and value counts for the top-N lists. Pure, so the reports and
//! the daily aggregates share one tested implementation.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use utoipa::ToSchema;

/// A value and how often it occurred.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize, ToSchema)]
pub struct Count {
    /// The value (endpoint, User-Agent, address, country, or query parameters as JSON).
    pub value: String,
    /// Requests.
    pub count: i64,
}

/// Durations up to here (µs, 65 ms) are counted exactly; above, to three significant digits
/// (within 1 %), so a distribution's memory stays bounded (at most ~70,000 distinct keys)
/// whatever the range and however slow the slowest requests.
const EXACT_BELOW: i64 = 65_536;

/// A latency distribution.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Durations {
    counts: BTreeMap<i64, i64>,
    n: i64,
    sum: i64,
    min: Option<i64>,
    max: Option<i64>,
}

/// The key a duration is counted under.
fn key(us: i64) -> i64 {
    if us < EXACT_BELOW {
        return us;
    }
    let mut step = 1;
    while us / step >= 1000 {
        step *= 10;
    }
    us - us % step
}

/// The nearest rank (1-based) of the `per_mille`-th per-mille of `n` values: ⌈p·n⌉ in integer
/// arithmetic (0.95 · 20 in floating point is not exactly 19).
pub fn rank(per_mille: i64, n: i64) -> i64 {
    ((per_mille * n + 999) / 1000).clamp(1, n.max(1))
}

impl Durations {
    /// Counts one duration.
    pub fn add(&mut self, us: i64) {
        *self.counts.entry(key(us)).or_insert(0) += 1;
        self.n += 1;
        self.sum = self.sum.saturating_add(us);
        self.min = Some(self.min.map_or(us, |m| m.min(us)));
        self.max = Some(self.max.map_or(us, |m| m.max(us)));
    }

    /// Durations counted.
    pub fn n(&self) -> i64 {
        self.n
    }

    /// Their sum.
    pub fn sum(&self) -> i64 {
        self.sum
    }

    /// The smallest (0 without any).
    pub fn min(&self) -> i64 {
        self.min.unwrap_or(0)
    }

    /// The largest (0 without any).
    pub fn max(&self) -> i64 {
        self.max.unwrap_or(0)
    }

    /// The integer average (0 without any).
    pub fn avg(&self) -> i64 {
        if self.n == 0 { 0 } else { self.sum / self.n }
    }

    /// Nearest-rank percentiles (`per_mille` ascending); 0 without any duration.
    pub fn percentiles<const N: usize>(&self, per_mille: [i64; N]) -> [i64; N] {
        let mut out = [0; N];
        if self.n == 0 {
            return out;
        }
        let ranks = per_mille.map(|p| rank(p, self.n));
        let (mut seen, mut next) = (0, 0);
        for (value, count) in &self.counts {
            seen += count;
            while next < ranks.len() && ranks.get(next).is_some_and(|r| *r <= seen) {
                if let Some(slot) = out.get_mut(next) {
                    *slot = *value;
                }
                next += 1;
            }
            if next == ranks.len() {
                break;
            }
        }
        out
    }
}

/// How often each value occurred.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Counter {
    counts: HashMap<String, i64>,
}

impl Counter {
    /// Counts `value` once (nothing for an absent value).
    pub fn add(&mut self, value: Option<&str>) {
        let Some(value) = value else {
            return;
        };
        match self.counts.get_mut(value) {
            Some(c) => *c += 1,
            None => {
                self.counts.insert(value.to_owned(), 1);
            }
        }
    }

    /// Distinct values.
    pub fn distinct(&self) -> i64 {
        self.counts.len() as i64
    }

    /// Every value and its count, ordered by value.
    pub fn into_map(self) -> BTreeMap<String, i64> {
        self.counts.into_iter().collect()
    }

    /// The `limit` most frequent values, most frequent first, ties by value.
    pub fn top(&self, limit: usize) -> Vec<Count> {
        let mut all: Vec<(&String, &i64)> = self.counts.iter().collect();
        all.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
        all.into_iter()
            .take(limit)
            .map(|(v, c)| Count {
                value: v.clone(),
                count: *c,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_ranks() {
        assert_eq!(rank(950, 20), 19);
        assert_eq!(rank(990, 6), 6);
        assert_eq!(rank(500, 6), 3);
        assert_eq!(rank(500, 1), 1);
        assert_eq!(rank(10, 3), 1);
    }

    #[test]
    fn percentiles_are_exact_below_65_ms() {
        let mut d = Durations::default();
        for us in (1..=20).rev() {
            d.add(us * 100);
        }
        assert_eq!(d.percentiles([500, 950, 990]), [1000, 1900, 2000]);
        assert_eq!((d.n(), d.min(), d.max(), d.avg()), (20, 100, 2000, 1050));
        assert_eq!(Durations::default().percentiles([500]), [0]);
    }

    #[test]
    fn slow_durations_are_kept_to_three_significant_digits() {
        assert_eq!(key(65_535), 65_535);
        assert_eq!(key(65_536), 65_500);
        assert_eq!(key(1_234_567), 1_230_000);
        let mut d = Durations::default();
        d.add(1_234_567);
        assert_eq!(d.percentiles([500]), [1_230_000]);
        // Minimum, maximum and average stay exact.
        assert_eq!(
            (d.min(), d.max(), d.avg()),
            (1_234_567, 1_234_567, 1_234_567)
        );
    }

    #[test]
    fn top_values_by_count_then_value() {
        let mut c = Counter::default();
        for v in ["b", "a", "c", "b", "a", "d"] {
            c.add(Some(v));
        }
        c.add(None);
        let top: Vec<(String, i64)> = c.top(3).into_iter().map(|c| (c.value, c.count)).collect();
        assert_eq!(top, vec![("a".into(), 2), ("b".into(), 2), ("c".into(), 1)]);
        assert_eq!(c.distinct(), 4);
    }
}
