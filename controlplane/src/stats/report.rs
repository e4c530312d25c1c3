//! The statistics reports as the Admin API returns them (lighthouse's bodies), built once for
//! the API and the CLI's JSON output.

use serde::Serialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use super::params::{Interval, Query, date, rfc3339};
use super::query::{self, Count, Latency, Point, Summary, Top};
use crate::db::Db;
use crate::db::stats::DailyRow;
use crate::error::Result;

/// `summary` body.
#[derive(Debug, Serialize, ToSchema)]
pub struct SummaryBody {
    /// Range start, RFC 3339.
    pub from: String,
    /// Range end, RFC 3339.
    pub to: String,
    /// Totals of the range.
    pub summary: Summary,
}

/// `summary`.
pub async fn summary(db: &Db, q: &Query) -> Result<SummaryBody> {
    Ok(SummaryBody {
        from: rfc3339(q.from),
        to: rfc3339(q.to),
        summary: query::summary(db, q).await?,
    })
}

/// `top/*` body: `{from, to, limit, <endpoints|user_agents|clients|countries|params>: [{value,
/// count}]}` (`params` also carries `endpoint`).
#[derive(Debug, Serialize, ToSchema)]
pub struct TopBody {
    /// Range start.
    pub from: String,
    /// Range end.
    pub to: String,
    /// Result count asked for.
    pub limit: i64,
    /// The list, under the member its kind names.
    #[serde(flatten)]
    #[schema(value_type = Object)]
    pub list: Value,
}

/// `top/<what>`; also returns the list itself (for table and CSV output).
pub async fn top(db: &Db, q: &Query, kind: Top) -> Result<(TopBody, Vec<Count>)> {
    let list: Vec<Count> = query::top(db, q, kind).await?;
    let mut members = json!({ kind.member(): list });
    if kind == Top::Params {
        members["endpoint"] = json!(q.endpoint);
    }
    let body = TopBody {
        from: rfc3339(q.from),
        to: rfc3339(q.to),
        limit: q.limit,
        list: members,
    };
    Ok((body, list))
}

/// `timeseries` body.
#[derive(Debug, Serialize, ToSchema)]
pub struct TimeseriesBody {
    /// Range start.
    pub from: String,
    /// Range end.
    pub to: String,
    /// Endpoint filter (null = all).
    pub endpoint: Option<String>,
    /// Bucket.
    pub interval: Interval,
    /// Buckets with requests, in time order.
    pub timeseries: Vec<Point>,
}

/// `timeseries`.
pub async fn timeseries(db: &Db, q: &Query) -> Result<TimeseriesBody> {
    Ok(TimeseriesBody {
        from: rfc3339(q.from),
        to: rfc3339(q.to),
        endpoint: q.endpoint.clone(),
        interval: q.interval,
        timeseries: query::timeseries(db, q).await?,
    })
}

/// `latency` body.
#[derive(Debug, Serialize, ToSchema)]
pub struct LatencyBody {
    /// Range start.
    pub from: String,
    /// Range end.
    pub to: String,
    /// Endpoint filter (null = all).
    pub endpoint: Option<String>,
    /// Exact (nearest-rank) percentiles, average, minimum and maximum, ms.
    pub latency: Latency,
}

/// `latency`.
pub async fn latency(db: &Db, q: &Query) -> Result<LatencyBody> {
    Ok(LatencyBody {
        from: rfc3339(q.from),
        to: rfc3339(q.to),
        endpoint: q.endpoint.clone(),
        latency: query::latency(db, q).await?,
    })
}

/// One daily aggregate.
#[derive(Debug, Serialize, ToSchema)]
pub struct DailyStats {
    /// UTC date, YYYY-MM-DD.
    pub date: String,
    /// Endpoint.
    pub endpoint: String,
    /// Status code.
    pub status_code: i64,
    /// Requests.
    pub request_count: i64,
    /// Requests with status ≥ 400.
    pub error_count: i64,
    /// Median latency, ms.
    pub duration_p50_ms: f64,
    /// 95th percentile, ms.
    pub duration_p95_ms: f64,
    /// 99th percentile, ms.
    pub duration_p99_ms: f64,
    /// Average, ms.
    pub duration_avg_ms: f64,
    /// Minimum, ms.
    pub duration_min_ms: f64,
    /// Maximum, ms.
    pub duration_max_ms: f64,
    /// Top 5 User-Agents.
    pub top_user_agents: Vec<Count>,
    /// Top 5 countries.
    pub top_countries: Vec<Count>,
    /// Top 5 client addresses.
    pub top_client_ips: Vec<Count>,
    /// Top 5 query parameter combinations.
    pub top_params: Vec<Count>,
}

impl From<DailyRow> for DailyStats {
    fn from(r: DailyRow) -> Self {
        let list = |s: &str| serde_json::from_str::<Vec<Count>>(s).unwrap_or_default();
        Self {
            date: date(r.day),
            duration_p50_ms: query::ms(r.p50_us),
            duration_p95_ms: query::ms(r.p95_us),
            duration_p99_ms: query::ms(r.p99_us),
            duration_avg_ms: query::ms(r.avg_us),
            duration_min_ms: query::ms(r.min_us),
            duration_max_ms: query::ms(r.max_us),
            top_user_agents: list(&r.top_user_agents),
            top_countries: list(&r.top_countries),
            top_client_ips: list(&r.top_clients),
            top_params: list(&r.top_params),
            endpoint: r.endpoint,
            status_code: r.status_code,
            request_count: r.request_count,
            error_count: r.error_count,
        }
    }
}

/// `daily` body.
#[derive(Debug, Serialize, ToSchema)]
pub struct DailyBody {
    /// Range start.
    pub from: String,
    /// Range end.
    pub to: String,
    /// Aggregates of the days in range, by date, endpoint and status.
    pub daily: Vec<DailyStats>,
}

/// `daily`: the days whose start lies in range, and the day `from` falls in.
pub async fn daily(db: &Db, q: &Query) -> Result<DailyBody> {
    let first = super::aggregate::day_start(q.from);
    let rows = crate::db::stats::daily(db, first, q.to, q.endpoint.as_deref()).await?;
    Ok(DailyBody {
        from: rfc3339(q.from),
        to: rfc3339(q.to),
        daily: rows.into_iter().map(Into::into).collect(),
    })
}
