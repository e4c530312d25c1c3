//! Reads of `stats_requests` for the Admin API and the CLI, written once for all three
//! dialects (`?` placeholders, BIGINT columns, sums cast by [`Db::sum`]).
//!
//! Percentiles are exact (nearest rank): the durations in range are streamed in order from the
//! database and the ranks picked on the way, so memory does not grow with the range.

use std::collections::BTreeMap;

use futures_util::TryStreamExt as _;
use serde::Serialize;
use sqlx::Row as _;
use utoipa::ToSchema;

use super::params::{Interval, Query};
use crate::db::Db;
use crate::error::Result;

/// A value and how often it occurred.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize, ToSchema)]
pub struct Count {
    /// The value (endpoint, User-Agent, address, country, or query parameters as JSON).
    pub value: String,
    /// Requests.
    pub count: i64,
}

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
    fn column(self) -> &'static str {
        match self {
            Self::Endpoints => "endpoint",
            Self::UserAgents => "user_agent",
            Self::Clients => "client_ip",
            Self::Countries => "country_code",
            Self::Params => "query_params",
        }
    }

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

/// ` WHERE ts >= ? AND ts <= ? [AND endpoint = ?]` and whether the endpoint is bound.
fn filter(q: &Query) -> String {
    let mut w = " WHERE ts >= ? AND ts <= ?".to_string();
    if q.endpoint.is_some() {
        w.push_str(" AND endpoint = ?");
    }
    w
}

type AnyQuery<'q> = sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments>;

fn bind<'q>(mut query: AnyQuery<'q>, q: &Query) -> AnyQuery<'q> {
    query = query.bind(q.from).bind(q.to);
    if let Some(e) = &q.endpoint {
        query = query.bind(e.clone());
    }
    query
}

/// Count, sum, min and max of the durations in range.
async fn totals(db: &Db, q: &Query) -> Result<(i64, i64, i64, i64, i64)> {
    let sql = format!(
        "SELECT COUNT(*), {}, {}, COALESCE(MIN(duration_us), 0), COALESCE(MAX(duration_us), 0) \
         FROM stats_requests{}",
        db.sum("CASE WHEN status_code >= 400 THEN 1 ELSE 0 END"),
        db.sum("duration_us"),
        filter(q)
    );
    let r = bind(sqlx::query(db.sql_built(sql)), q)
        .fetch_one(&db.pool)
        .await?;
    Ok((
        r.try_get(0)?,
        r.try_get(1)?,
        r.try_get(2)?,
        r.try_get(3)?,
        r.try_get(4)?,
    ))
}

/// The nearest rank (1-based) of the `per_mille`-th per-mille of `n` values: ⌈p·n⌉ in integer
/// arithmetic (0.95 · 20 in floating point is not exactly 19).
pub fn rank(per_mille: i64, n: i64) -> i64 {
    ((per_mille * n + 999) / 1000).clamp(1, n.max(1))
}

/// Nearest-rank percentiles (`ps` ascending, per mille) of the `n` durations in range.
pub async fn percentiles(db: &Db, q: &Query, n: i64, ps: &[i64]) -> Result<Vec<i64>> {
    let mut out = vec![0; ps.len()];
    if n == 0 {
        return Ok(out);
    }
    let ranks: Vec<i64> = ps.iter().map(|p| rank(*p, n)).collect();
    let sql = format!(
        "SELECT duration_us FROM stats_requests{} ORDER BY duration_us",
        filter(q)
    );
    let sql = db.sql_built(sql);
    let mut rows = bind(sqlx::query(sql), q).fetch(&db.pool);
    let (mut i, mut next) = (0i64, 0usize);
    while let Some(row) = rows.try_next().await? {
        i += 1;
        while next < ranks.len() && ranks[next] == i {
            out[next] = row.try_get(0)?;
            next += 1;
        }
        if next == ranks.len() {
            break;
        }
    }
    Ok(out)
}

async fn grouped(db: &Db, q: &Query, column: &str) -> Result<BTreeMap<String, i64>> {
    let sql = format!(
        "SELECT {column}, COUNT(*) FROM stats_requests{} GROUP BY {column}",
        filter(q)
    );
    let rows = bind(sqlx::query(db.sql_built(sql)), q)
        .fetch_all(&db.pool)
        .await?;
    let mut out = BTreeMap::new();
    for r in rows {
        let key = if column == "status_code" {
            r.try_get::<i64, _>(0)?.to_string()
        } else {
            r.try_get::<String, _>(0)?
        };
        out.insert(key, r.try_get(1)?);
    }
    Ok(out)
}

async fn distinct(db: &Db, q: &Query, column: &str) -> Result<i64> {
    let sql = format!(
        "SELECT COUNT(DISTINCT {column}) FROM stats_requests{}",
        filter(q)
    );
    let r = bind(sqlx::query(db.sql_built(sql)), q)
        .fetch_one(&db.pool)
        .await?;
    Ok(r.try_get(0)?)
}

/// `summary`.
pub async fn summary(db: &Db, q: &Query) -> Result<Summary> {
    let (n, errors, sum, _, _) = totals(db, q).await?;
    let p = percentiles(db, q, n, &[500, 950, 990]).await?;
    let avg = if n == 0 { 0.0 } else { ms(sum) / n as f64 };
    Ok(Summary {
        total_requests: n,
        total_errors: errors,
        error_rate: if n == 0 {
            0.0
        } else {
            errors as f64 / n as f64
        },
        avg_latency_ms: avg,
        p50_latency_ms: ms(p[0]),
        p95_latency_ms: ms(p[1]),
        p99_latency_ms: ms(p[2]),
        unique_clients: distinct(db, q, "client_ip").await?,
        unique_user_agents: distinct(db, q, "user_agent").await?,
        requests_by_status: grouped(db, q, "status_code").await?,
        requests_by_endpoint: grouped(db, q, "endpoint").await?,
    })
}

/// `latency`.
pub async fn latency(db: &Db, q: &Query) -> Result<Latency> {
    let (n, _, sum, min, max) = totals(db, q).await?;
    let p = percentiles(db, q, n, &[500, 750, 900, 950, 990]).await?;
    Ok(Latency {
        p50_ms: ms(p[0]),
        p75_ms: ms(p[1]),
        p90_ms: ms(p[2]),
        p95_ms: ms(p[3]),
        p99_ms: ms(p[4]),
        avg_ms: if n == 0 { 0.0 } else { ms(sum) / n as f64 },
        min_ms: ms(min),
        max_ms: ms(max),
    })
}

/// The `limit` most frequent values of a column (missing values are not counted), most
/// frequent first, ties by value.
pub async fn top(db: &Db, q: &Query, what: Top) -> Result<Vec<Count>> {
    let c = what.column();
    let sql = format!(
        "SELECT {c}, COUNT(*) AS n FROM stats_requests{} AND {c} IS NOT NULL \
         GROUP BY {c} ORDER BY n DESC, {c} LIMIT ?",
        filter(q)
    );
    let rows = bind(sqlx::query(db.sql_built(sql)), q)
        .bind(q.limit)
        .fetch_all(&db.pool)
        .await?;
    rows.iter()
        .map(|r| {
            Ok(Count {
                value: r.try_get(0)?,
                count: r.try_get(1)?,
            })
        })
        .collect()
}

/// SQL of a bucket's start for the fixed-width intervals (a month is folded from days).
fn bucket_sql(interval: Interval) -> &'static str {
    match interval {
        Interval::Minute => "ts - (ts % 60)",
        Interval::Hour => "ts - (ts % 3600)",
        Interval::Day | Interval::Month => "ts - (ts % 86400)",
        // 1970-01-05 (345,600 s) was a Monday.
        Interval::Week => "ts - ((ts - 345600) % 604800)",
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

/// `timeseries`: buckets with requests, in time order.
pub async fn timeseries(db: &Db, q: &Query) -> Result<Vec<Point>> {
    let sql = format!(
        "SELECT {}, COUNT(*), {}, {} FROM stats_requests{} GROUP BY 1 ORDER BY 1",
        bucket_sql(q.interval),
        db.sum("CASE WHEN status_code >= 400 THEN 1 ELSE 0 END"),
        db.sum("duration_us"),
        filter(q)
    );
    let rows = bind(sqlx::query(db.sql_built(sql)), q)
        .fetch_all(&db.pool)
        .await?;
    // (bucket, count, errors, duration sum)
    let mut buckets: Vec<(i64, i64, i64, i64)> = Vec::with_capacity(rows.len());
    for r in rows {
        let mut b = r.try_get::<i64, _>(0)?;
        if q.interval == Interval::Month {
            b = month_start(b);
        }
        let (n, e, s) = (r.try_get(1)?, r.try_get(2)?, r.try_get(3)?);
        match buckets.last_mut() {
            Some(last) if last.0 == b => {
                last.1 += n;
                last.2 += e;
                last.3 += s;
            }
            _ => buckets.push((b, n, e, s)),
        }
    }
    Ok(buckets
        .into_iter()
        .map(|(b, n, e, s)| Point {
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
    fn nearest_ranks() {
        assert_eq!(rank(950, 20), 19);
        assert_eq!(rank(990, 6), 6);
        assert_eq!(rank(500, 6), 3);
        assert_eq!(rank(500, 1), 1);
        assert_eq!(rank(10, 3), 1);
    }

    #[test]
    fn months_start_on_the_first() {
        // 2023-11-14T22:13:20Z → 2023-11-01T00:00:00Z
        assert_eq!(month_start(1_700_000_000), 1_698_796_800);
    }
}
