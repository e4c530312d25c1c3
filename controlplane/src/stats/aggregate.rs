//! Daily aggregates and retention: at 02:00 UTC yesterday's records are summarised per endpoint
//! and status into `stats_daily`, and records and aggregates past their retention are purged;
//! at start every recent day with records but no aggregates is backfilled.
//!
//! Time comes from the control plane's clock and [`Aggregator::tick`] does whatever is due at
//! the `now` it is given, so tests drive 02:00 without sleeping.

use std::collections::HashMap;
use std::sync::Arc;

use futures_util::TryStreamExt as _;
use pharos_shared::config::StatsRetention;
use sqlx::Row as _;
use tokio_util::sync::CancellationToken;

use super::query::Count;
use crate::control_plane::ControlPlane;
use crate::db::Db;
use crate::db::stats::{self, DailyRow};
use crate::error::Result;

const DAY: i64 = 86_400;
/// Run time after midnight UTC.
const AT: i64 = 2 * 3600;
/// Entries of each top list in an aggregate.
const TOP: usize = 5;

/// 00:00 UTC of the day of `ts`.
pub fn day_start(ts: i64) -> i64 {
    ts - ts.rem_euclid(DAY)
}

/// The first 02:00 UTC strictly after `now`.
pub fn next_run(now: i64) -> i64 {
    let today = day_start(now) + AT;
    if now < today { today } else { today + DAY }
}

type Key = (String, i64);

/// Computes and stores the aggregates of the day starting at `day`; returns the row count.
pub async fn aggregate_day(db: &Db, day: i64) -> Result<usize> {
    let (from, to) = (day, day + DAY);
    let sql = format!(
        "SELECT endpoint, status_code, COUNT(*), {}, MIN(duration_us), MAX(duration_us) \
         FROM stats_requests WHERE ts >= ? AND ts < ? GROUP BY endpoint, status_code",
        db.sum("duration_us")
    );
    let groups = sqlx::query(db.sql_built(sql))
        .bind(from)
        .bind(to)
        .fetch_all(&db.pool)
        .await?;
    let mut rows: HashMap<Key, DailyRow> = HashMap::new();
    for g in groups {
        let (endpoint, status): (String, i64) = (g.try_get(0)?, g.try_get(1)?);
        let n: i64 = g.try_get(2)?;
        let sum: i64 = g.try_get(3)?;
        let row = DailyRow {
            day,
            endpoint: endpoint.clone(),
            status_code: status,
            request_count: n,
            error_count: if status >= 400 { n } else { 0 },
            avg_us: if n == 0 { 0 } else { sum / n },
            min_us: g.try_get(4)?,
            max_us: g.try_get(5)?,
            ..DailyRow::default()
        };
        rows.insert((endpoint, status), row);
    }
    percentiles(db, from, to, &mut rows).await?;
    for (column, set) in [
        ("user_agent", 0usize),
        ("country_code", 1),
        ("client_ip", 2),
        ("query_params", 3),
    ] {
        let mut tops = tops(db, from, to, column).await?;
        for (key, row) in rows.iter_mut() {
            let list = tops.remove(key).unwrap_or_default();
            let json = serde_json::to_string(&list).unwrap_or_else(|_| "[]".into());
            match set {
                0 => row.top_user_agents = json,
                1 => row.top_countries = json,
                2 => row.top_clients = json,
                _ => row.top_params = json,
            }
        }
    }
    let mut rows: Vec<DailyRow> = rows.into_values().collect();
    rows.sort_by(|a, b| (&a.endpoint, a.status_code).cmp(&(&b.endpoint, b.status_code)));
    stats::replace_day(db, day, &rows).await?;
    Ok(rows.len())
}

/// Fills p50/p95/p99 of every group from one ordered stream of the day's durations.
async fn percentiles(db: &Db, from: i64, to: i64, rows: &mut HashMap<Key, DailyRow>) -> Result<()> {
    let sql = db.sql(
        "SELECT endpoint, status_code, duration_us FROM stats_requests WHERE ts >= ? AND ts < ? \
         ORDER BY endpoint, status_code, duration_us",
    );
    let mut stream = sqlx::query(sql).bind(from).bind(to).fetch(&db.pool);
    let mut seen: HashMap<Key, i64> = HashMap::new();
    while let Some(r) = stream.try_next().await? {
        let key: Key = (r.try_get(0)?, r.try_get(1)?);
        let d: i64 = r.try_get(2)?;
        let Some(row) = rows.get_mut(&key) else {
            continue;
        };
        let i = seen.entry(key).or_insert(0);
        *i += 1;
        let n = row.request_count;
        let rank = |p| super::query::rank(p, n);
        if *i == rank(500) {
            row.p50_us = d;
        }
        if *i == rank(950) {
            row.p95_us = d;
        }
        if *i == rank(990) {
            row.p99_us = d;
        }
    }
    Ok(())
}

/// The top values of `column` per (endpoint, status) group.
async fn tops(db: &Db, from: i64, to: i64, column: &str) -> Result<HashMap<Key, Vec<Count>>> {
    let sql = format!(
        "SELECT endpoint, status_code, {column}, COUNT(*) FROM stats_requests \
         WHERE ts >= ? AND ts < ? AND {column} IS NOT NULL \
         GROUP BY endpoint, status_code, {column}"
    );
    let rows = sqlx::query(db.sql_built(sql))
        .bind(from)
        .bind(to)
        .fetch_all(&db.pool)
        .await?;
    let mut out: HashMap<Key, Vec<Count>> = HashMap::new();
    for r in rows {
        let key: Key = (r.try_get(0)?, r.try_get(1)?);
        out.entry(key).or_default().push(Count {
            value: r.try_get(2)?,
            count: r.try_get(3)?,
        });
    }
    for list in out.values_mut() {
        list.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.value.cmp(&b.value)));
        list.truncate(TOP);
    }
    Ok(out)
}

/// What a purge at `now` deletes before: (request records, aggregates).
pub fn purge_bounds(now: i64, retention: &StatsRetention) -> (i64, i64) {
    let today = day_start(now);
    (
        today - i64::from(retention.detailed_days) * DAY,
        today - i64::from(retention.aggregated_days) * DAY,
    )
}

/// Deletes what is past retention at `now`; returns (records, aggregate rows) deleted.
pub async fn purge(db: &Db, now: i64, retention: &StatsRetention) -> Result<(u64, u64)> {
    let (requests, daily) = purge_bounds(now, retention);
    Ok((
        stats::purge_requests(db, requests).await?,
        stats::purge_daily(db, daily).await?,
    ))
}

/// Aggregates every day within detailed retention before today that has records and no
/// aggregates; returns the days done.
pub async fn backfill(db: &Db, now: i64, retention: &StatsRetention) -> Result<Vec<i64>> {
    let today = day_start(now);
    let from = today - i64::from(retention.detailed_days) * DAY;
    let done = stats::aggregated_days(db, from, today).await?;
    let mut filled = Vec::new();
    for day in stats::recorded_days(db, from, today).await? {
        if !done.contains(&day) {
            aggregate_day(db, day).await?;
            filled.push(day);
        }
    }
    Ok(filled)
}

/// The daily job's state.
#[derive(Debug)]
pub struct Aggregator {
    db: Db,
    retention: StatsRetention,
    /// When the daily run is due next; `None` before the start-up backfill. Held for a whole
    /// tick, so a tick driven by a test and the task's own never aggregate a day twice at once.
    next: tokio::sync::Mutex<Option<i64>>,
}

impl Aggregator {
    /// A job over `db` with the configured retention.
    pub fn new(db: Db, retention: StatsRetention) -> Arc<Self> {
        Arc::new(Self {
            db,
            retention,
            next: tokio::sync::Mutex::new(None),
        })
    }

    async fn next(&self) -> Option<i64> {
        *self.next.lock().await
    }

    /// Does what is due at `now`: the backfill on the first call, then the daily run
    /// (yesterday's aggregates and the purge) once `now` has passed 02:00 UTC. A failed run
    /// is retried at the next tick.
    pub async fn tick(&self, now: i64) -> Result<()> {
        let mut next = self.next.lock().await;
        match *next {
            None => {
                let filled = backfill(&self.db, now, &self.retention).await?;
                if !filled.is_empty() {
                    tracing::info!(days = filled.len(), "statistics aggregates backfilled");
                }
                *next = Some(next_run(now));
            }
            Some(at) if now >= at => {
                let yesterday = day_start(now) - DAY;
                aggregate_day(&self.db, yesterday).await?;
                let (records, aggregates) = purge(&self.db, now, &self.retention).await?;
                tracing::info!(records, aggregates, "statistics aggregated and purged");
                *next = Some(next_run(now));
            }
            Some(_) => {}
        }
        Ok(())
    }

    /// The job's task: ticks at each due time (checking at least hourly, so a clock change is
    /// noticed) until `stop`.
    pub fn spawn(
        self: &Arc<Self>,
        cp: Arc<ControlPlane>,
        stop: CancellationToken,
    ) -> tokio::task::JoinHandle<()> {
        let me = self.clone();
        tokio::spawn(async move {
            loop {
                let now = cp.now();
                let wait = match me.tick(now).await {
                    Ok(()) => me
                        .next()
                        .await
                        .map_or(60, |at| (at - cp.now()).clamp(1, 3600)),
                    Err(e) => {
                        tracing::error!(error = %e, "statistics aggregation failed; retrying");
                        60
                    }
                };
                tokio::select! {
                    _ = tokio::time::sleep(std::time::Duration::from_secs(wait as u64)) => {}
                    _ = stop.cancelled() => break,
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_at_the_next_two_oclock() {
        let midnight = 1_699_920_000; // 2023-11-14T00:00:00Z
        assert_eq!(day_start(midnight + 5), midnight);
        assert_eq!(next_run(midnight + 60), midnight + AT);
        assert_eq!(next_run(midnight + AT), midnight + AT + DAY);
        assert_eq!(next_run(midnight + 23 * 3600), midnight + AT + DAY);
    }

    #[test]
    fn purge_bounds_follow_retention() {
        let r = StatsRetention {
            detailed_days: 2,
            aggregated_days: 10,
        };
        let now = 1_699_920_000 + 7200;
        assert_eq!(
            purge_bounds(now, &r),
            (1_699_920_000 - 2 * DAY, 1_699_920_000 - 10 * DAY)
        );
    }
}
