//! `/stats/…`: request statistics (lighthouse-compatible bodies). All GET; common parameters
//! `from`, `to`, `limit`, `endpoint`, `interval` (see `crate::stats::params`); a bad or unknown
//! parameter is a 400 naming it.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use crate::admin::error::{ApiError, ApiResult};
use crate::control_plane::ControlPlane;
use crate::stats::export::{self, Format};
use crate::stats::params::{self, Query, date, rfc3339};
use crate::stats::query::{self, Count, Latency, Point, Summary, Top};

type Cp = State<Arc<ControlPlane>>;

/// This module's routes, merged by [`crate::admin::routes`].
pub fn routes() -> crate::admin::Routes {
    use utoipa_axum::routes;
    crate::admin::Routes::new()
        .routes(routes!(summary))
        .routes(routes!(top))
        .routes(routes!(timeseries))
        .routes(routes!(latency))
        .routes(routes!(daily))
        .routes(routes!(export))
}

fn read(
    cp: &ControlPlane,
    raw: Option<String>,
    extra: &[&str],
) -> ApiResult<(Query, Vec<(String, String)>)> {
    let pairs: Vec<(String, String)> =
        url::form_urlencoded::parse(raw.unwrap_or_default().as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
    let q = params::parse(&pairs, cp.now(), extra).map_err(|e| ApiError::BadRequest(e.0))?;
    Ok((q, pairs))
}

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

/// Totals, error rate, latency percentiles and per-status / per-endpoint counts of a range.
#[utoipa::path(get, path = "/stats/summary", tag = "stats",
    params(("from" = Option<String>, Query, description = "RFC 3339 or YYYY-MM-DD; default 24 h ago"),
        ("to" = Option<String>, Query, description = "RFC 3339 or YYYY-MM-DD (end of that day); default now"),
        ("endpoint" = Option<String>, Query, description = "Only this endpoint")),
    responses((status = 200, body = SummaryBody), (status = 400)))]
pub async fn summary(State(cp): Cp, RawQuery(raw): RawQuery) -> ApiResult<axum::Json<SummaryBody>> {
    let (q, _) = read(&cp, raw, &[])?;
    Ok(axum::Json(SummaryBody {
        from: rfc3339(q.from),
        to: rfc3339(q.to),
        summary: query::summary(&cp.db, &q).await?,
    }))
}

/// `top/*` body: `{from, to, limit, <endpoints|user_agents|clients|countries|params>: [{value, count}]}`
/// (`params` also carries `endpoint`).
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

/// The most frequent endpoints, User-Agents, client addresses, countries (needs GeoIP) or
/// query parameter combinations (as JSON objects; `endpoint` recommended).
#[utoipa::path(get, path = "/stats/top/{what}", tag = "stats",
    params(("what" = String, Path, description = "endpoints, user-agents, clients, countries or params"),
        ("from" = Option<String>, Query, description = "RFC 3339 or YYYY-MM-DD"),
        ("to" = Option<String>, Query, description = "RFC 3339 or YYYY-MM-DD"),
        ("limit" = Option<i64>, Query, description = "1 to 100, default 10"),
        ("endpoint" = Option<String>, Query, description = "Only this endpoint")),
    responses((status = 200, body = TopBody), (status = 400), (status = 404)))]
pub async fn top(
    State(cp): Cp,
    Path(what): Path<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult<axum::Json<TopBody>> {
    let kind = Top::parse(&what).ok_or_else(|| {
        ApiError::NotFound(format!(
            "no top list {what:?}: endpoints, user-agents, clients, countries or params"
        ))
    })?;
    let (q, _) = read(&cp, raw, &[])?;
    let list: Vec<Count> = query::top(&cp.db, &q, kind).await?;
    let mut members = json!({ kind.member(): list });
    if kind == Top::Params {
        members["endpoint"] = json!(q.endpoint);
    }
    Ok(axum::Json(TopBody {
        from: rfc3339(q.from),
        to: rfc3339(q.to),
        limit: q.limit,
        list: members,
    }))
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
    pub interval: params::Interval,
    /// Buckets with requests, in time order.
    pub timeseries: Vec<Point>,
}

/// Requests, errors and average latency per bucket.
#[utoipa::path(get, path = "/stats/timeseries", tag = "stats",
    params(("from" = Option<String>, Query, description = "RFC 3339 or YYYY-MM-DD"),
        ("to" = Option<String>, Query, description = "RFC 3339 or YYYY-MM-DD"),
        ("endpoint" = Option<String>, Query, description = "Only this endpoint"),
        ("interval" = Option<String>, Query, description = "minute, hour (default), day, week or month")),
    responses((status = 200, body = TimeseriesBody), (status = 400)))]
pub async fn timeseries(
    State(cp): Cp,
    RawQuery(raw): RawQuery,
) -> ApiResult<axum::Json<TimeseriesBody>> {
    let (q, _) = read(&cp, raw, &[])?;
    Ok(axum::Json(TimeseriesBody {
        from: rfc3339(q.from),
        to: rfc3339(q.to),
        endpoint: q.endpoint.clone(),
        interval: q.interval,
        timeseries: query::timeseries(&cp.db, &q).await?,
    }))
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

/// Latency percentiles of a range (exact, nearest rank).
#[utoipa::path(get, path = "/stats/latency", tag = "stats",
    params(("from" = Option<String>, Query, description = "RFC 3339 or YYYY-MM-DD"),
        ("to" = Option<String>, Query, description = "RFC 3339 or YYYY-MM-DD"),
        ("endpoint" = Option<String>, Query, description = "Only this endpoint")),
    responses((status = 200, body = LatencyBody), (status = 400)))]
pub async fn latency(State(cp): Cp, RawQuery(raw): RawQuery) -> ApiResult<axum::Json<LatencyBody>> {
    let (q, _) = read(&cp, raw, &[])?;
    Ok(axum::Json(LatencyBody {
        from: rfc3339(q.from),
        to: rfc3339(q.to),
        endpoint: q.endpoint.clone(),
        latency: query::latency(&cp.db, &q).await?,
    }))
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

impl From<crate::db::stats::DailyRow> for DailyStats {
    fn from(r: crate::db::stats::DailyRow) -> Self {
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

/// Daily aggregates (computed at 02:00 UTC for the day before).
#[utoipa::path(get, path = "/stats/daily", tag = "stats",
    params(("from" = Option<String>, Query, description = "RFC 3339 or YYYY-MM-DD"),
        ("to" = Option<String>, Query, description = "RFC 3339 or YYYY-MM-DD"),
        ("endpoint" = Option<String>, Query, description = "Only this endpoint")),
    responses((status = 200, body = DailyBody), (status = 400)))]
pub async fn daily(State(cp): Cp, RawQuery(raw): RawQuery) -> ApiResult<axum::Json<DailyBody>> {
    let (q, _) = read(&cp, raw, &[])?;
    // Days whose start lies in range, and the day `from` falls in.
    let first = crate::stats::aggregate::day_start(q.from);
    let rows = crate::db::stats::daily(&cp.db, first, q.to, q.endpoint.as_deref()).await?;
    Ok(axum::Json(DailyBody {
        from: rfc3339(q.from),
        to: rfc3339(q.to),
        daily: rows.into_iter().map(Into::into).collect(),
    }))
}

/// The raw request records of a range as a download: `stats.csv` (default) or `stats.json`
/// (one JSON object per line), streamed from the database.
#[utoipa::path(get, path = "/stats/export", tag = "stats",
    params(("from" = Option<String>, Query, description = "RFC 3339 or YYYY-MM-DD"),
        ("to" = Option<String>, Query, description = "RFC 3339 or YYYY-MM-DD"),
        ("endpoint" = Option<String>, Query, description = "Only this endpoint"),
        ("format" = Option<String>, Query, description = "csv (default) or json")),
    responses((status = 200, content_type = "text/csv", body = String), (status = 400)))]
pub async fn export(State(cp): Cp, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let (q, pairs) = read(&cp, raw, &["format"])?;
    let format = match pairs.iter().rev().find(|(k, _)| k == "format") {
        None => Format::Csv,
        Some((_, v)) => Format::parse(v)
            .ok_or_else(|| ApiError::BadRequest(format!("format: {v:?} is not csv or json")))?,
    };
    let (media, file) = match format {
        Format::Csv => ("text/csv; charset=utf-8", "stats.csv"),
        Format::Json => ("application/x-ndjson", "stats.json"),
    };
    let rx = export::start(cp.db.clone(), q, format);
    let body = Body::from_stream(futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|chunk| (chunk, rx))
    }));
    Ok((
        [
            (header::CONTENT_TYPE, media.to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{file}\""),
            ),
        ],
        body,
    )
        .into_response())
}
