//! `/stats/…`: request statistics (lighthouse-compatible bodies, built in
//! `crate::stats::report`). All GET; common parameters `from`, `to`, `limit`, `endpoint`,
//! `interval` (see `crate::stats::params`); a bad or unknown parameter is a 400 naming it.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, RawQuery, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};

use crate::admin::error::{ApiError, ApiResult};
use crate::control_plane::ControlPlane;
use crate::stats::export::{self, Format};
use crate::stats::params::{self, Query};
use crate::stats::query::Top;
use crate::stats::report::{self, DailyBody, LatencyBody, SummaryBody, TimeseriesBody, TopBody};

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

/// The query string's parameters, checked; `extra` names route-specific ones.
fn read(
    cp: &ControlPlane,
    raw: Option<String>,
    extra: &[&str],
) -> ApiResult<(Query, Vec<(String, String)>)> {
    let raw = raw.unwrap_or_default();
    let pairs: Vec<(String, String)> = url::form_urlencoded::parse(raw.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let q = params::parse(&pairs, cp.now(), extra).map_err(|e| ApiError::BadRequest(e.0))?;
    Ok((q, pairs))
}

/// Totals, error rate, latency percentiles and per-status / per-endpoint counts of a range.
#[utoipa::path(get, path = "/stats/summary", tag = "stats",
    params(("from" = Option<String>, Query, description = "RFC 3339 or YYYY-MM-DD; default 24 h ago"),
        ("to" = Option<String>, Query, description = "RFC 3339 or YYYY-MM-DD (end of that day); default now"),
        ("endpoint" = Option<String>, Query, description = "Only this endpoint")),
    responses((status = 200, body = SummaryBody), (status = 400)))]
pub async fn summary(State(cp): Cp, RawQuery(raw): RawQuery) -> ApiResult<Json<SummaryBody>> {
    let (q, _) = read(&cp, raw, &[])?;
    Ok(Json(report::summary(&cp.db, &q).await?))
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
) -> ApiResult<Json<TopBody>> {
    let kind = Top::parse(&what).ok_or_else(|| {
        ApiError::NotFound(format!(
            "no top list {what:?}: endpoints, user-agents, clients, countries or params"
        ))
    })?;
    let (q, _) = read(&cp, raw, &[])?;
    Ok(Json(report::top(&cp.db, &q, kind).await?.0))
}

/// Requests, errors and average latency per bucket.
#[utoipa::path(get, path = "/stats/timeseries", tag = "stats",
    params(("from" = Option<String>, Query, description = "RFC 3339 or YYYY-MM-DD"),
        ("to" = Option<String>, Query, description = "RFC 3339 or YYYY-MM-DD"),
        ("endpoint" = Option<String>, Query, description = "Only this endpoint"),
        ("interval" = Option<String>, Query, description = "minute, hour (default), day, week or month")),
    responses((status = 200, body = TimeseriesBody), (status = 400)))]
pub async fn timeseries(State(cp): Cp, RawQuery(raw): RawQuery) -> ApiResult<Json<TimeseriesBody>> {
    let (q, _) = read(&cp, raw, &[])?;
    Ok(Json(report::timeseries(&cp.db, &q).await?))
}

/// Latency percentiles of a range (exact, nearest rank).
#[utoipa::path(get, path = "/stats/latency", tag = "stats",
    params(("from" = Option<String>, Query, description = "RFC 3339 or YYYY-MM-DD"),
        ("to" = Option<String>, Query, description = "RFC 3339 or YYYY-MM-DD"),
        ("endpoint" = Option<String>, Query, description = "Only this endpoint")),
    responses((status = 200, body = LatencyBody), (status = 400)))]
pub async fn latency(State(cp): Cp, RawQuery(raw): RawQuery) -> ApiResult<Json<LatencyBody>> {
    let (q, _) = read(&cp, raw, &[])?;
    Ok(Json(report::latency(&cp.db, &q).await?))
}

/// Daily aggregates (computed at 02:00 UTC for the day before).
#[utoipa::path(get, path = "/stats/daily", tag = "stats",
    params(("from" = Option<String>, Query, description = "RFC 3339 or YYYY-MM-DD"),
        ("to" = Option<String>, Query, description = "RFC 3339 or YYYY-MM-DD"),
        ("endpoint" = Option<String>, Query, description = "Only this endpoint")),
    responses((status = 200, body = DailyBody), (status = 400)))]
pub async fn daily(State(cp): Cp, RawQuery(raw): RawQuery) -> ApiResult<Json<DailyBody>> {
    let (q, _) = read(&cp, raw, &[])?;
    Ok(Json(report::daily(&cp.db, &q).await?))
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
    let body = crate::admin::streaming::channel_body(rx);
    let disposition = format!("attachment; filename=\"{file}\"");
    let headers = [
        (header::CONTENT_TYPE, media.to_string()),
        (header::CONTENT_DISPOSITION, disposition),
    ];
    Ok((headers, body).into_response())
}
