//! `stats_requests` and `stats_daily`: request statistics and their daily aggregates.
//!
//! Not snapshot state, so these writes do not go through `Write`: they are append-only records
//! and recomputable aggregates that nothing in the snapshot depends on, batched on the pool's
//! own connections so they never hold the writer lock (named as an exception in
//! `control_plane/tests.rs`). Reads for the Admin API and the CLI live in `crate::stats::query`.

use sqlx::Row as _;

use super::Db;
use crate::error::Result;

/// One request record as stored.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct RequestRow {
    /// Arrival, Unix seconds.
    pub ts: i64,
    /// Endpoint (path without `/`).
    pub endpoint: String,
    /// HTTP method.
    pub method: String,
    /// Status code.
    pub status_code: i64,
    /// Microseconds to the response head.
    pub duration_us: i64,
    /// Client address.
    pub client_ip: Option<String>,
    /// ISO 3166 country code from GeoIP.
    pub country_code: Option<String>,
    /// User-Agent.
    pub user_agent: Option<String>,
    /// Authenticated client entity.
    pub client_entity_id: Option<String>,
    /// Query parameters as a JSON object (keys sorted, last value wins).
    pub query_params: Option<String>,
    /// Request size in bytes.
    pub request_size: i64,
    /// Response size in bytes.
    pub response_size: i64,
    /// Error class for status ≥ 400.
    pub error_type: Option<String>,
}

/// Columns of `stats_requests` in insert and export order.
pub const REQUEST_COLUMNS: &str = "ts, endpoint, method, status_code, duration_us, client_ip, \
     country_code, user_agent, client_entity_id, query_params, request_size, response_size, \
     error_type";

/// Rows per INSERT statement of the daily aggregates (15 placeholders each, far below every
/// dialect's limit).
pub const BATCH: usize = 2000;

/// Row counts of the multi-row INSERT statements that write request records, largest first.
/// A batch is cut into statements of exactly these sizes (8,192 rows = four of 2,048; 1,000
/// rows = three of 256, seven of 32, two of 4), so that the database only ever sees five
/// statement texts: each is prepared once per connection and then taken from the statement
/// cache. Statements of arbitrary sizes made SQLite parse and plan a new 26,000-placeholder
/// statement for most flushes. The largest size keeps the round trips to the database (and the
/// flusher's waits behind busy request workers) few: 2,048 × 13 placeholders stays below every
/// dialect's limit (SQLite's is the lowest, 32,766).
const STATEMENT_ROWS: [usize; 5] = [2048, 256, 32, 4, 1];

/// The INSERT statement of `n` request records.
fn insert_sql(n: usize) -> String {
    let mut sql = format!("INSERT INTO stats_requests ({REQUEST_COLUMNS}) VALUES ");
    sql.reserve(n * 28);
    for i in 0..n {
        if i > 0 {
            sql.push(',');
        }
        sql.push_str("(?,?,?,?,?,?,?,?,?,?,?,?,?)");
    }
    sql
}

/// Inserts `rows` in one transaction (one commit, so one round of disk syncs for the whole
/// batch instead of one per statement), in multi-row statements of the [`STATEMENT_ROWS`]
/// sizes; returns how many were written. The rows are consumed: their strings are bound as
/// they are, without copies.
pub async fn insert_requests(db: &Db, rows: Vec<RequestRow>) -> Result<u64> {
    let mut written = 0;
    let mut left = rows.len();
    let mut rows = rows.into_iter();
    let mut tx = db.pool.begin().await?;
    for size in STATEMENT_ROWS {
        while left >= size {
            let mut q = sqlx::query(db.sql_built(insert_sql(size)));
            for r in rows.by_ref().take(size) {
                q = q
                    .bind(r.ts)
                    .bind(r.endpoint)
                    .bind(r.method)
                    .bind(r.status_code)
                    .bind(r.duration_us)
                    .bind(r.client_ip)
                    .bind(r.country_code)
                    .bind(r.user_agent)
                    .bind(r.client_entity_id)
                    .bind(r.query_params)
                    .bind(r.request_size)
                    .bind(r.response_size)
                    .bind(r.error_type);
            }
            written += q.execute(&mut *tx).await?.rows_affected();
            left -= size;
        }
    }
    tx.commit().await?;
    Ok(written)
}

/// One daily aggregate row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DailyRow {
    /// 00:00 UTC of the date, Unix seconds.
    pub day: i64,
    /// Endpoint.
    pub endpoint: String,
    /// Status code.
    pub status_code: i64,
    /// Requests.
    pub request_count: i64,
    /// Requests with status ≥ 400.
    pub error_count: i64,
    /// Latency percentiles, average, minimum and maximum, microseconds.
    pub p50_us: i64,
    /// 95th percentile.
    pub p95_us: i64,
    /// 99th percentile.
    pub p99_us: i64,
    /// Average.
    pub avg_us: i64,
    /// Minimum.
    pub min_us: i64,
    /// Maximum.
    pub max_us: i64,
    /// JSON `[{value,count}]`, top 5.
    pub top_user_agents: String,
    /// JSON `[{value,count}]`, top 5.
    pub top_countries: String,
    /// JSON `[{value,count}]`, top 5.
    pub top_clients: String,
    /// JSON `[{value,count}]`, top 5.
    pub top_params: String,
}

/// Replaces the aggregates of `day` with `rows`. Two statements without a transaction: a crash
/// between them leaves the day without aggregates, which the start-up backfill recomputes.
pub async fn replace_day(db: &Db, day: i64, rows: &[DailyRow]) -> Result<()> {
    sqlx::query(db.sql("DELETE FROM stats_daily WHERE day = ?"))
        .bind(day)
        .execute(&db.pool)
        .await?;
    for chunk in rows.chunks(BATCH) {
        let mut sql = "INSERT INTO stats_daily (day, endpoint, status_code, request_count, \
             error_count, p50_us, p95_us, p99_us, avg_us, min_us, max_us, top_user_agents, \
             top_countries, top_clients, top_params) VALUES "
            .to_string();
        for i in 0..chunk.len() {
            if i > 0 {
                sql.push(',');
            }
            sql.push_str("(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
        }
        let mut q = sqlx::query(db.sql_built(sql));
        for r in chunk {
            q = q
                .bind(r.day)
                .bind(r.endpoint.clone())
                .bind(r.status_code)
                .bind(r.request_count)
                .bind(r.error_count)
                .bind(r.p50_us)
                .bind(r.p95_us)
                .bind(r.p99_us)
                .bind(r.avg_us)
                .bind(r.min_us)
                .bind(r.max_us)
                .bind(r.top_user_agents.clone())
                .bind(r.top_countries.clone())
                .bind(r.top_clients.clone())
                .bind(r.top_params.clone());
        }
        q.execute(&db.pool).await?;
    }
    Ok(())
}

/// Deletes request records older than `before` (Unix seconds); returns how many.
pub async fn purge_requests(db: &Db, before: i64) -> Result<u64> {
    let r = sqlx::query(db.sql("DELETE FROM stats_requests WHERE ts < ?"))
        .bind(before)
        .execute(&db.pool)
        .await?;
    Ok(r.rows_affected())
}

/// Deletes aggregates of days before `before`; returns how many rows.
pub async fn purge_daily(db: &Db, before: i64) -> Result<u64> {
    let r = sqlx::query(db.sql("DELETE FROM stats_daily WHERE day < ?"))
        .bind(before)
        .execute(&db.pool)
        .await?;
    Ok(r.rows_affected())
}

/// How many request records and aggregate rows a purge at these bounds would delete.
pub async fn count_purgeable(
    db: &Db,
    requests_before: i64,
    daily_before: i64,
) -> Result<(i64, i64)> {
    let r = sqlx::query(db.sql("SELECT COUNT(*) FROM stats_requests WHERE ts < ?"))
        .bind(requests_before)
        .fetch_one(&db.pool)
        .await?;
    let d = sqlx::query(db.sql("SELECT COUNT(*) FROM stats_daily WHERE day < ?"))
        .bind(daily_before)
        .fetch_one(&db.pool)
        .await?;
    Ok((r.try_get(0)?, d.try_get(0)?))
}

/// Days in `[from, to)` (00:00 UTC, Unix seconds) that have aggregates.
pub async fn aggregated_days(db: &Db, from: i64, to: i64) -> Result<Vec<i64>> {
    let rows = sqlx::query(
        db.sql("SELECT DISTINCT day FROM stats_daily WHERE day >= ? AND day < ? ORDER BY day"),
    )
    .bind(from)
    .bind(to)
    .fetch_all(&db.pool)
    .await?;
    rows.iter().map(|r| Ok(r.try_get(0)?)).collect()
}

/// Days in `[from, to)` that have request records.
pub async fn recorded_days(db: &Db, from: i64, to: i64) -> Result<Vec<i64>> {
    let rows = sqlx::query(db.sql(
        "SELECT DISTINCT ts - (ts % 86400) FROM stats_requests WHERE ts >= ? AND ts < ? \
         ORDER BY 1",
    ))
    .bind(from)
    .bind(to)
    .fetch_all(&db.pool)
    .await?;
    rows.iter().map(|r| Ok(r.try_get(0)?)).collect()
}

/// Aggregates of days in `[from, to]`, ordered by day, endpoint, status.
pub async fn daily(db: &Db, from: i64, to: i64, endpoint: Option<&str>) -> Result<Vec<DailyRow>> {
    let mut sql = "SELECT day, endpoint, status_code, request_count, error_count, p50_us, p95_us, \
         p99_us, avg_us, min_us, max_us, top_user_agents, top_countries, top_clients, top_params \
         FROM stats_daily WHERE day >= ? AND day <= ?"
        .to_string();
    if endpoint.is_some() {
        sql.push_str(" AND endpoint = ?");
    }
    sql.push_str(" ORDER BY day, endpoint, status_code");
    let mut q = sqlx::query(db.sql_built(sql)).bind(from).bind(to);
    if let Some(e) = endpoint {
        q = q.bind(e.to_owned());
    }
    let rows = q.fetch_all(&db.pool).await?;
    rows.iter()
        .map(|r| {
            Ok(DailyRow {
                day: r.try_get(0)?,
                endpoint: r.try_get(1)?,
                status_code: r.try_get(2)?,
                request_count: r.try_get(3)?,
                error_count: r.try_get(4)?,
                p50_us: r.try_get(5)?,
                p95_us: r.try_get(6)?,
                p99_us: r.try_get(7)?,
                avg_us: r.try_get(8)?,
                min_us: r.try_get(9)?,
                max_us: r.try_get(10)?,
                top_user_agents: r.try_get(11)?,
                top_countries: r.try_get(12)?,
                top_clients: r.try_get(13)?,
                top_params: r.try_get(14)?,
            })
        })
        .collect()
}
