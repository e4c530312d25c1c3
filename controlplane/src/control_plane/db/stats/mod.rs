//! `stats_batches` and `stats_daily`: request statistics (stored in batches, see
//! [`batch`]) and their daily aggregates.
//!
//! Not snapshot state, so these writes do not go through `Write`: they are append-only records
//! and recomputable aggregates that nothing in the snapshot depends on, batched on the pool's
//! own connections so they never hold the writer lock (named as an exception in
//! `control_plane/tests.rs`). Reads for the Admin API and the CLI live in `crate::stats::query`.
//!
//! The leader's jobs here (conversion, aggregation, purge) each change what they read in one
//! transaction, with the rows read locked (`FOR UPDATE`; SQLite's writer is alone anyway), and
//! check the leader's fence before committing, so two replicas never both rewrite a batch.

pub mod batch;

use futures_util::TryStreamExt as _;
use sqlx::Row as _;

use super::{Db, Dialect, FenceCheck};
use crate::error::Result;
use batch::Batch;

/// One request record as stored.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
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
    /// The hosted entity that answered (1: the default entity).
    pub entity: i64,
}

impl Default for RequestRow {
    /// An empty record of the default entity.
    fn default() -> Self {
        Self {
            ts: 0,
            endpoint: String::new(),
            method: String::new(),
            status_code: 0,
            duration_us: 0,
            client_ip: None,
            country_code: None,
            user_agent: None,
            client_entity_id: None,
            query_params: None,
            request_size: 0,
            response_size: 0,
            error_type: None,
            entity: pharos_shared::hosted::EntityNo::DEFAULT.get(),
        }
    }
}

/// A stored batch's document stays below this size (a batch that would exceed it is split):
/// MariaDB refuses statements over `max_allowed_packet` (16 MiB by default), and a few thousand
/// distinct long query strings could otherwise get there.
pub const MAX_BODY: usize = 4 * 1024 * 1024;

/// `rows` as batches: one, unless its document would pass [`MAX_BODY`].
pub fn encode_requests(rows: &[RequestRow]) -> Vec<batch::Encoded> {
    batch::encode_within(rows, MAX_BODY, batch::encode)
}

/// Stores `rows`; returns how many records were written.
pub async fn insert_requests(db: &Db, rows: Vec<RequestRow>) -> Result<u64> {
    insert_batches(db, &encode_requests(&rows)).await
}

/// Stores `batches` in one transaction (one commit: a round of disk syncs), one INSERT each;
/// returns how many records were written.
pub async fn insert_batches(db: &Db, batches: &[batch::Encoded]) -> Result<u64> {
    let mut tx = db.begin().await?;
    for b in batches {
        insert_batch(db, b, &mut *tx).await?;
    }
    tx.commit().await?;
    Ok(batches.iter().map(|b| b.records as u64).sum())
}

async fn insert_batch<'e, E>(db: &Db, batch: &batch::Encoded, on: E) -> Result<()>
where
    E: sqlx::Executor<'e, Database = sqlx::Any>,
{
    sqlx::query(
        db.sql("INSERT INTO stats_batches (ts_first, ts_last, records, body) VALUES (?, ?, ?, ?)"),
    )
    .bind(batch.ts_first)
    .bind(batch.ts_last)
    .bind(batch.records)
    .bind(batch.body.as_str())
    .execute(on)
    .await?;
    Ok(())
}

/// The stored batches that may hold records arriving in `[from, to]`, in the order of their
/// latest record, read one at a time.
pub fn batches(db: &Db, from: i64, to: i64) -> Batches<'_> {
    let sql = db.sql(
        "SELECT id, body FROM stats_batches WHERE ts_last >= ? AND ts_first <= ? \
         ORDER BY ts_last, id",
    );
    Batches {
        rows: sqlx::query(sql).bind(from).bind(to).fetch(&db.pool),
    }
}

/// See [`batches`].
pub struct Batches<'a> {
    rows: futures_util::stream::BoxStream<'a, std::result::Result<sqlx::any::AnyRow, sqlx::Error>>,
}

impl Batches<'_> {
    /// The next batch. A document that cannot be read is logged and skipped: one damaged row
    /// must not make every report of its range fail.
    pub async fn next(&mut self) -> Result<Option<Batch>> {
        while let Some(r) = self.rows.try_next().await? {
            let body: String = r.try_get(1)?;
            match Batch::decode(&body) {
                Ok(b) => return Ok(Some(b)),
                Err(e) => {
                    let id: i64 = r.try_get(0)?;
                    tracing::warn!(batch = id, error = %e, "statistics batch skipped: unreadable");
                }
            }
        }
        Ok(None)
    }
}

/// Calls `each` with every batch of [`batches`].
pub async fn for_each_batch(
    db: &Db,
    from: i64,
    to: i64,
    mut each: impl FnMut(Batch) -> Result<()>,
) -> Result<()> {
    let mut all = batches(db, from, to);
    while let Some(b) = all.next().await? {
        each(b)?;
    }
    Ok(())
}

/// Stored request records (all of them).
pub async fn count_requests(db: &Db) -> Result<i64> {
    let r = sqlx::query(db.sql_built(format!("SELECT {} FROM stats_batches", db.sum("records"))))
        .fetch_one(&db.pool)
        .await?;
    Ok(r.try_get(0)?)
}

/// Moves the rows a version before batches left in `stats_requests` into batches, 8,192 at a
/// time, each move one transaction: the rows are read locked, the batch is inserted and
/// exactly those rows deleted together, so a crash or a second instance doing the same never
/// duplicates or loses a record; `fence` refuses a deposed leader's move. Returns how many
/// records were moved.
pub async fn convert_legacy_rows(db: &Db, fence: &impl FenceCheck) -> Result<u64> {
    const CHUNK: i64 = 8192;
    let mut moved = 0;
    loop {
        let mut tx = db.begin().await?;
        let sql = format!(
            "SELECT id, ts, endpoint, method, status_code, duration_us, client_ip, \
             country_code, user_agent, client_entity_id, query_params, request_size, \
             response_size, error_type FROM stats_requests WHERE entity = ? ORDER BY id LIMIT ?{}",
            for_update(db)
        );
        let found = sqlx::query(db.sql_built(sql))
            .bind(db.entity())
            .bind(CHUNK)
            .fetch_all(&mut *tx)
            .await?;
        let Some(last) = found.last() else {
            tx.rollback().await?;
            return Ok(moved);
        };
        let last_id: i64 = last.try_get(0)?;
        let mut rows = Vec::with_capacity(found.len());
        for r in &found {
            rows.push(RequestRow {
                ts: r.try_get(1)?,
                endpoint: r.try_get(2)?,
                method: r.try_get(3)?,
                status_code: r.try_get(4)?,
                duration_us: r.try_get(5)?,
                client_ip: r.try_get(6)?,
                country_code: r.try_get(7)?,
                user_agent: r.try_get(8)?,
                client_entity_id: r.try_get(9)?,
                query_params: r.try_get(10)?,
                request_size: r.try_get(11)?,
                response_size: r.try_get(12)?,
                error_type: r.try_get(13)?,
                entity: db.entity(),
            });
        }
        if let Some(batch) = batch::encode(&rows) {
            insert_batch(db, &batch, &mut *tx).await?;
        }
        let deleted =
            sqlx::query(db.sql("DELETE FROM stats_requests WHERE entity = ? AND id <= ?"))
                .bind(db.entity())
                .bind(last_id)
                .execute(&mut *tx)
                .await?
                .rows_affected();
        if deleted != rows.len() as u64 {
            // Rows appeared below the last one read (nothing writes this table any more):
            // moving them unread would lose them. Roll back; the next round reads them.
            tx.rollback().await?;
            continue;
        }
        fence.check(&mut tx).await?;
        tx.commit().await?;
        moved += rows.len() as u64;
    }
}

/// Rows per INSERT statement of the daily aggregates (16 placeholders each: 32,000 a
/// statement, below every dialect's limit, SQLite's 32,766 the lowest).
pub const BATCH: usize = 2000;

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

/// Replaces the aggregates of `day` with `rows`, in one transaction that `fence` must pass.
pub async fn replace_day(
    db: &Db,
    day: i64,
    rows: &[DailyRow],
    fence: &impl FenceCheck,
) -> Result<()> {
    let mut tx = db.begin().await?;
    sqlx::query(db.sql("DELETE FROM stats_daily WHERE entity = ? AND day = ?"))
        .bind(db.entity())
        .bind(day)
        .execute(&mut *tx)
        .await?;
    for chunk in rows.chunks(BATCH) {
        let mut sql =
            "INSERT INTO stats_daily (entity, day, endpoint, status_code, request_count, \
             error_count, p50_us, p95_us, p99_us, avg_us, min_us, max_us, top_user_agents, \
             top_countries, top_clients, top_params) VALUES "
                .to_string();
        for i in 0..chunk.len() {
            if i > 0 {
                sql.push(',');
            }
            sql.push_str("(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
        }
        let mut q = sqlx::query(db.sql_built(sql));
        for r in chunk {
            q = q
                .bind(db.entity())
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
        q.execute(&mut *tx).await?;
    }
    fence.check(&mut tx).await?;
    tx.commit().await?;
    Ok(())
}

/// Deletes request records older than `before` (Unix seconds); returns how many. Batches
/// wholly before it are deleted; the few that straddle it are rewritten without their older
/// records. One transaction whose reads lock the rows they read, checked by `fence`: two
/// purges (a deposed leader's and the new one's) cannot both rewrite a straddling batch.
pub async fn purge_requests(db: &Db, before: i64, fence: &impl FenceCheck) -> Result<u64> {
    let mut tx = db.begin().await?;
    let sql = format!(
        "SELECT records FROM stats_batches WHERE ts_last < ?{}",
        for_update(db)
    );
    let whole: i64 = sqlx::query(db.sql_built(sql))
        .bind(before)
        .fetch_all(&mut *tx)
        .await?
        .iter()
        .map(|r| r.try_get::<i64, _>(0))
        .sum::<std::result::Result<i64, _>>()?;
    sqlx::query(db.sql("DELETE FROM stats_batches WHERE ts_last < ?"))
        .bind(before)
        .execute(&mut *tx)
        .await?;
    let mut purged = u64::try_from(whole).unwrap_or(0);
    let sql = format!(
        "SELECT id, body FROM stats_batches WHERE ts_first < ? AND ts_last >= ?{}",
        for_update(db)
    );
    let rows = sqlx::query(db.sql_built(sql))
        .bind(before)
        .bind(before)
        .fetch_all(&mut *tx)
        .await?;
    for r in rows {
        let id: i64 = r.try_get(0)?;
        // Unreadable batches are left alone.
        let Ok(b) = Batch::decode(&r.try_get::<String, _>(1)?) else {
            continue;
        };
        let kept: Vec<RequestRow> = b
            .iter()
            .filter(|r| r.ts >= before)
            .map(|r| r.to_row())
            .collect();
        purged += (b.len() - kept.len()) as u64;
        sqlx::query(db.sql("DELETE FROM stats_batches WHERE id = ?"))
            .bind(id)
            .execute(&mut *tx)
            .await?;
        if let Some(batch) = batch::encode(&kept) {
            insert_batch(db, &batch, &mut *tx).await?;
        }
    }
    fence.check(&mut tx).await?;
    tx.commit().await?;
    Ok(purged)
}

/// ` FOR UPDATE` where the dialect has it: a read that decides a write locks what it read.
/// SQLite has none and needs none (`BEGIN IMMEDIATE` makes the transaction the one writer).
fn for_update(db: &Db) -> &'static str {
    match db.dialect {
        Dialect::Sqlite => "",
        _ => " FOR UPDATE",
    }
}

/// Records in batches wholly before `before`.
async fn records_wholly_before(db: &Db, before: i64) -> Result<i64> {
    let sql = format!(
        "SELECT {} FROM stats_batches WHERE ts_last < ?",
        db.sum("records")
    );
    let r = sqlx::query(db.sql_built(sql))
        .bind(before)
        .fetch_one(&db.pool)
        .await?;
    Ok(r.try_get(0)?)
}

/// The batches that straddle `before` (some of their records are older), by id; unreadable
/// ones are left alone.
async fn straddling(db: &Db, before: i64) -> Result<Vec<(i64, Batch)>> {
    let rows = sqlx::query(
        db.sql("SELECT id, body FROM stats_batches WHERE ts_first < ? AND ts_last >= ?"),
    )
    .bind(before)
    .bind(before)
    .fetch_all(&db.pool)
    .await?;
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        if let Ok(b) = Batch::decode(&r.try_get::<String, _>(1)?) {
            out.push((r.try_get(0)?, b));
        }
    }
    Ok(out)
}

/// Deletes aggregates of days before `before`; returns how many rows. One statement in a
/// transaction that `fence` must pass.
pub async fn purge_daily(db: &Db, before: i64, fence: &impl FenceCheck) -> Result<u64> {
    let mut tx = db.begin().await?;
    let r = sqlx::query(db.sql("DELETE FROM stats_daily WHERE entity = ? AND day < ?"))
        .bind(db.entity())
        .bind(before)
        .execute(&mut *tx)
        .await?;
    fence.check(&mut tx).await?;
    tx.commit().await?;
    Ok(r.rows_affected())
}

/// How many request records and aggregate rows a purge at these bounds would delete.
pub async fn count_purgeable(
    db: &Db,
    requests_before: i64,
    daily_before: i64,
) -> Result<(i64, i64)> {
    let whole = records_wholly_before(db, requests_before).await?;
    let straddling: i64 = straddling(db, requests_before)
        .await?
        .iter()
        .map(|(_, b)| b.iter().filter(|r| r.ts < requests_before).count() as i64)
        .sum();
    let d = sqlx::query(db.sql("SELECT COUNT(*) FROM stats_daily WHERE entity = ? AND day < ?"))
        .bind(db.entity())
        .bind(daily_before)
        .fetch_one(&db.pool)
        .await?;
    Ok((whole + straddling, d.try_get(0)?))
}

/// Days in `[from, to)` (00:00 UTC, Unix seconds) that have aggregates.
pub async fn aggregated_days(db: &Db, from: i64, to: i64) -> Result<Vec<i64>> {
    let rows = sqlx::query(
        db.sql("SELECT DISTINCT day FROM stats_daily WHERE entity = ? AND day >= ? AND day < ? ORDER BY day"),
    )
    .bind(db.entity())
    .bind(from)
    .bind(to)
    .fetch_all(&db.pool)
    .await?;
    rows.iter().map(|r| Ok(r.try_get(0)?)).collect()
}

/// Days in `[from, to)` that have request records (a batch's first and last record bound
/// the days it covers).
pub async fn recorded_days(db: &Db, from: i64, to: i64) -> Result<Vec<i64>> {
    let rows = sqlx::query(
        db.sql("SELECT ts_first, ts_last FROM stats_batches WHERE ts_last >= ? AND ts_first < ?"),
    )
    .bind(from)
    .bind(to)
    .fetch_all(&db.pool)
    .await?;
    let mut days = std::collections::BTreeSet::new();
    for r in rows {
        let (first, last): (i64, i64) = (r.try_get(0)?, r.try_get(1)?);
        let mut day = first.max(from) - first.max(from).rem_euclid(86_400);
        while day <= last && day < to {
            days.insert(day);
            day += 86_400;
        }
    }
    Ok(days.into_iter().collect())
}

/// Aggregates of days in `[from, to]`, ordered by day, endpoint, status.
pub async fn daily(db: &Db, from: i64, to: i64, endpoint: Option<&str>) -> Result<Vec<DailyRow>> {
    let mut sql = "SELECT day, endpoint, status_code, request_count, error_count, p50_us, p95_us, \
         p99_us, avg_us, min_us, max_us, top_user_agents, top_countries, top_clients, top_params \
         FROM stats_daily WHERE entity = ? AND day >= ? AND day <= ?"
        .to_string();
    if endpoint.is_some() {
        sql.push_str(" AND endpoint = ?");
    }
    sql.push_str(" ORDER BY day, endpoint, status_code");
    let mut q = sqlx::query(db.sql_built(sql))
        .bind(db.entity())
        .bind(from)
        .bind(to);
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
