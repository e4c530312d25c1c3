//! The reports of the Admin API and the CLI, computed from the request records of the stored
//! batches that meet the range, read one batch at a time (see [`crate::db::stats::batch`]).
//!
//! Percentiles are nearest-rank over a [`Durations`] distribution: exact up to 65 ms, within
//! 1 % above, so memory does not grow with the range.

use std::collections::BTreeMap;

use serde::Serialize;
use utoipa::ToSchema;

use super::params::{Interval, Query};
pub use super::tally::Count;
use super::tally::{Counter, Durations};
use crate::db::stats::batch::Record;
use crate::db::{Db, stats};
use crate::error::Result;

/// `summary` of the range.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Summary {
    /// Requests.
    pub total_requests: i64,
    /// Requests with status ≥ 400.
    pub total_errors: i64,
    /// `total_errors / total_requests` (0 without requests).
    pub error_rate: f64,
    /// Average latency, ms.
    pub avg_latency_ms: f64,
    /// Median latency, ms.
    pub p50_latency_ms: f64,
    /// 95th percentile, ms.
    pub p95_latency_ms: f64,
    /// 99th percentile, ms.
    pub p99_latency_ms: f64,
    /// Distinct client addresses.
    pub unique_clients: i64,
    /// Distinct User-Agents.
    pub unique_user_agents: i64,
    /// Status code → requests.
    pub requests_by_status: BTreeMap<String, i64>,
    /// Endpoint → requests.
    pub requests_by_endpoint: BTreeMap<String, i64>,
}

/// One time-series bucket.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Point {
    /// Bucket start, RFC 3339.
    pub timestamp: String,
    /// Requests.
    pub request_count: i64,
    /// Requests with status ≥ 400.
    pub error_count: i64,
    /// Average latency, ms.
    pub avg_latency_ms: f64,
}

/// `latency` of the range, ms.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Latency {
    /// Median.
    pub p50_ms: f64,
    /// 75th percentile.
    pub p75_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Average.
    pub avg_ms: f64,
    /// Minimum.
    pub min_ms: f64,
    /// Maximum.
    pub max_ms: f64,
}

/// Columns a top-N list counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Top {
    /// Endpoints.
    Endpoints,
    /// User-Agents.
    UserAgents,
    /// Client addresses.
    Clients,
    /// Countries.
    Countries,
    /// Query parameter combinations.
    Params,
}

impl Top {
    /// Parses the path segment (`user-agents`, …).
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "endpoints" => Self::Endpoints,
            "user-agents" => Self::UserAgents,
            "clients" => Self::Clients,
            "countries" => Self::Countries,
            "params" => Self::Params,
            _ => return None,
        })
    }

    /// The response member naming the list (`user_agents`, …).
    pub fn member(self) -> &'static str {
        match self {
            Self::Endpoints => "endpoints",
            Self::UserAgents => "user_agents",
            Self::Clients => "clients",
            Self::Countries => "countries",
            Self::Params => "params",
        }
    }
}

/// Microseconds → milliseconds.
pub fn ms(us: i64) -> f64 {
    us as f64 / 1000.0
}

/// Whether `r` is in the query's range and of its endpoint.
fn selected(q: &Query, r: &Record<'_>) -> bool {
    r.ts >= q.from && r.ts <= q.to && q.endpoint.as_deref().is_none_or(|e| e == r.endpoint)
}

/// Calls `each` with every record the query selects.
async fn scan(db: &Db, q: &Query, mut each: impl FnMut(&Record<'_>)) -> Result<()> {
    stats::for_each_batch(db, q.from, q.to, |b| {
        b.iter()
            .filter(|r| r.entity == db.entity() && selected(q, r))
            .for_each(|r| each(&r));
        Ok(())
    })
    .await
}

/// `summary`.
pub async fn summary(db: &Db, q: &Query) -> Result<Summary> {
    let mut durations = Durations::default();
    let (mut errors, mut clients, mut agents) = (0, Counter::default(), Counter::default());
    let (mut statuses, mut endpoints) = (BTreeMap::<i64, i64>::new(), Counter::default());
    scan(db, q, |r| {
        durations.add(r.duration_us);
        errors += i64::from(r.status_code >= 400);
        clients.add(r.client_ip);
        agents.add(r.user_agent);
        *statuses.entry(r.status_code).or_insert(0) += 1;
        endpoints.add(Some(r.endpoint));
    })
    .await?;
    let n = durations.n();
    let [p50, p95, p99] = durations.percentiles([500, 950, 990]);
    Ok(Summary {
        total_requests: n,
        total_errors: errors,
        error_rate: if n == 0 {
            0.0
        } else {
            errors as f64 / n as f64
        },
        avg_latency_ms: if n == 0 {
            0.0
        } else {
            ms(durations.sum()) / n as f64
        },
        p50_latency_ms: ms(p50),
        p95_latency_ms: ms(p95),
        p99_latency_ms: ms(p99),
        unique_clients: clients.distinct(),
        unique_user_agents: agents.distinct(),
        requests_by_status: statuses
            .into_iter()
            .map(|(s, n)| (s.to_string(), n))
            .collect(),
        requests_by_endpoint: endpoints.into_map(),
    })
}

/// `latency`.
pub async fn latency(db: &Db, q: &Query) -> Result<Latency> {
    let mut d = Durations::default();
    scan(db, q, |r| d.add(r.duration_us)).await?;
    let n = d.n();
    let [p50, p75, p90, p95, p99] = d.percentiles([500, 750, 900, 950, 990]);
    Ok(Latency {
        p50_ms: ms(p50),
        p75_ms: ms(p75),
        p90_ms: ms(p90),
        p95_ms: ms(p95),
        p99_ms: ms(p99),
        avg_ms: if n == 0 { 0.0 } else { ms(d.sum()) / n as f64 },
        min_ms: ms(d.min()),
        max_ms: ms(d.max()),
    })
}

/// The `limit` most frequent values of a field (missing values are not counted), most
/// frequent first, ties by value.
pub async fn top(db: &Db, q: &Query, what: Top) -> Result<Vec<Count>> {
    let mut c = Counter::default();
    scan(db, q, |r| {
        c.add(match what {
            Top::Endpoints => Some(r.endpoint),
            Top::UserAgents => r.user_agent,
            Top::Clients => r.client_ip,
            Top::Countries => r.country_code,
            Top::Params => r.query_params,
        })
    })
    .await?;
    Ok(c.top(usize::try_from(q.limit).unwrap_or(0)))
}

/// The start of the bucket of `ts`.
fn bucket(interval: Interval, ts: i64) -> i64 {
    match interval {
        Interval::Minute => ts - ts.rem_euclid(60),
        Interval::Hour => ts - ts.rem_euclid(3600),
        Interval::Day => ts - ts.rem_euclid(86_400),
        // 1970-01-05 (345,600 s) was a Monday.
        Interval::Week => ts - (ts - 345_600).rem_euclid(604_800),
        Interval::Month => month_start(ts),
    }
}

/// The first of the month of `ts`, Unix seconds.
fn month_start(ts: i64) -> i64 {
    match time::OffsetDateTime::from_unix_timestamp(ts) {
        Ok(t) => t
            .replace_day(1)
            .map(|d| d.replace_time(time::Time::MIDNIGHT).unix_timestamp())
            .unwrap_or(ts),
        Err(_) => ts,
    }
}

/// At most this many buckets are drawn with their empty ones; a longer series (a year of
/// minutes) keeps only the buckets with requests rather than grow without bound.
const MAX_FILLED_BUCKETS: usize = 20_000;

/// The bucket after the one starting at `b`.
fn next_bucket(interval: Interval, b: i64) -> i64 {
    match interval {
        Interval::Minute => b + 60,
        Interval::Hour => b + 3_600,
        Interval::Day => b + 86_400,
        Interval::Week => b + 604_800,
        // 32 days on from the first is always in the next month.
        Interval::Month => month_start(b + 32 * 86_400),
    }
}

/// Adds the range's buckets without requests as zeros, so that a plot of the series shows
/// the quiet hours instead of joining the busy ones.
fn fill_empty(buckets: &mut BTreeMap<i64, (i64, i64, i64)>, q: &Query) {
    let first = bucket(q.interval, q.from);
    let mut b = first;
    let mut all = Vec::new();
    while b <= q.to {
        if all.len() == MAX_FILLED_BUCKETS {
            return;
        }
        all.push(b);
        b = next_bucket(q.interval, b);
    }
    for b in all {
        buckets.entry(b).or_insert((0, 0, 0));
    }
}

/// `timeseries`: every bucket of the range in time order, empty ones as zeros.
pub async fn timeseries(db: &Db, q: &Query) -> Result<Vec<Point>> {
    // bucket → (count, errors, duration sum)
    let mut buckets: BTreeMap<i64, (i64, i64, i64)> = BTreeMap::new();
    let mut month = (i64::MIN, 0); // the last day start and its month, for months
    scan(db, q, |r| {
        let b = if q.interval == Interval::Month {
            let day = r.ts - r.ts.rem_euclid(86_400);
            if month.0 != day {
                month = (day, bucket(Interval::Month, day));
            }
            month.1
        } else {
            bucket(q.interval, r.ts)
        };
        let e = buckets.entry(b).or_insert((0, 0, 0));
        e.0 += 1;
        e.1 += i64::from(r.status_code >= 400);
        e.2 = e.2.saturating_add(r.duration_us);
    })
    .await?;
    fill_empty(&mut buckets, q);
    Ok(buckets
        .into_iter()
        .map(|(b, (n, e, s))| Point {
            timestamp: super::params::rfc3339(b),
            request_count: n,
            error_count: e,
            avg_latency_ms: if n == 0 { 0.0 } else { ms(s) / n as f64 },
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn months_start_on_the_first() {
        // 2023-11-14T22:13:20Z → 2023-11-01T00:00:00Z
        assert_eq!(month_start(1_700_000_000), 1_698_796_800);
    }

    fn query(from: i64, to: i64, interval: Interval) -> Query {
        Query {
            from,
            to,
            limit: 10,
            endpoint: None,
            interval,
        }
    }

    #[test]
    fn empty_buckets_are_drawn_as_zeros() {
        let from = 1_699_999_200; // 2023-11-14T22:00:00Z
        let mut b = BTreeMap::from([(from + 2 * 3_600, (5, 1, 10))]);
        fill_empty(&mut b, &query(from, from + 4 * 3_600 - 1, Interval::Hour));
        let got: Vec<(i64, i64)> = b.iter().map(|(k, v)| ((k - from) / 3_600, v.0)).collect();
        assert_eq!(got, [(0, 0), (1, 0), (2, 5), (3, 0)]);
        // Months step to the first of the next month.
        assert_eq!(next_bucket(Interval::Month, 1_698_796_800), 1_701_388_800);
        // A year of minutes is not filled.
        let mut b = BTreeMap::new();
        fill_empty(&mut b, &query(0, 365 * 86_400, Interval::Minute));
        assert!(b.is_empty());
    }

    #[test]
    fn buckets() {
        let t = 1_700_000_000; // Tuesday 2023-11-14T22:13:20Z
        assert_eq!(bucket(Interval::Minute, t), 1_699_999_980);
        assert_eq!(bucket(Interval::Hour, t), 1_699_999_200);
        assert_eq!(bucket(Interval::Day, t), 1_699_920_000);
        // Monday 2023-11-13T00:00:00Z
        assert_eq!(bucket(Interval::Week, t), 1_699_833_600);
    }
}
