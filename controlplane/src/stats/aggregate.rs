//! Daily aggregates and retention: at 02:00 UTC yesterday's records are summarised per endpoint
//! and status into `stats_daily`, and records and aggregates past their retention are purged;
//! at start every recent day with records but no aggregates is backfilled (after moving any
//! records an older version left one per row into batches).
//!
//! Time comes from the control plane's clock and [`Aggregator::tick`] does whatever is due at
//! the `now` it is given, so tests drive 02:00 without sleeping.

use std::collections::HashMap;
use std::sync::Arc;

use pharos_shared::config::StatsRetention;
use tokio_util::sync::CancellationToken;

use super::tally::{Counter, Durations};
use crate::control_plane::ControlPlane;
use crate::db::Db;
use crate::db::stats::{self, DailyRow};
use crate::error::Result;
use crate::leadership::Fence;

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

/// One (endpoint, status) group of a day.
#[derive(Default)]
struct Group {
    durations: Durations,
    user_agents: Counter,
    countries: Counter,
    clients: Counter,
    params: Counter,
}

/// Computes and stores the aggregates of the day starting at `day`, for every hosted entity
/// that answered requests that day (one pass over the day's records; each entity's rows are
/// its own); returns the row count. `fence`: the leader's token (the CLI, offline, passes
/// `Fence::any_replica()`).
pub async fn aggregate_day(db: &Db, day: i64, fence: &Fence) -> Result<usize> {
    let (from, to) = (day, day + DAY);
    let mut groups: HashMap<(i64, String, i64), Group> = HashMap::new();
    stats::for_each_batch(db, from, to - 1, |b| {
        for r in b.iter().filter(|r| r.ts >= from && r.ts < to) {
            let key = (r.entity, r.endpoint.to_owned(), r.status_code);
            let g = groups.entry(key).or_default();
            g.durations.add(r.duration_us);
            g.user_agents.add(r.user_agent);
            g.countries.add(r.country_code);
            g.clients.add(r.client_ip);
            g.params.add(r.query_params);
        }
        Ok(())
    })
    .await?;
    let top = |c: &Counter| serde_json::to_string(&c.top(TOP)).unwrap_or_else(|_| "[]".into());
    let mut rows: Vec<(i64, DailyRow)> = groups
        .into_iter()
        .map(|((entity, endpoint, status), g)| {
            let d = &g.durations;
            let [p50, p95, p99] = d.percentiles([500, 950, 990]);
            let row = DailyRow {
                day,
                endpoint,
                status_code: status,
                request_count: d.n(),
                error_count: if status >= 400 { d.n() } else { 0 },
                p50_us: p50,
                p95_us: p95,
                p99_us: p99,
                avg_us: d.avg(),
                min_us: d.min(),
                max_us: d.max(),
                top_user_agents: top(&g.user_agents),
                top_countries: top(&g.countries),
                top_clients: top(&g.clients),
                top_params: top(&g.params),
            };
            (entity, row)
        })
        .collect();
    rows.sort_by(|(ea, a), (eb, b)| {
        (ea, &a.endpoint, a.status_code).cmp(&(eb, &b.endpoint, b.status_code))
    });
    let mut entities: Vec<i64> = rows.iter().map(|(e, _)| *e).collect();
    entities.dedup();
    // The handle's entity too: a day it had no records replaces its aggregates by none.
    if !entities.contains(&db.entity()) {
        entities.push(db.entity());
    }
    for e in entities {
        let Some(n) = pharos_shared::hosted::EntityNo::new(e) else {
            continue;
        };
        let of_e: Vec<DailyRow> = rows
            .iter()
            .filter(|(re, _)| *re == e)
            .map(|(_, r)| r.clone())
            .collect();
        stats::replace_day(&db.for_entity(n), day, &of_e, fence).await?;
    }
    Ok(rows.len())
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
pub async fn purge(
    db: &Db,
    now: i64,
    retention: &StatsRetention,
    fence: &Fence,
) -> Result<(u64, u64)> {
    let (requests, daily) = purge_bounds(now, retention);
    Ok((
        stats::purge_requests(db, requests, fence).await?,
        stats::purge_daily(db, daily, fence).await?,
    ))
}

/// Aggregates every day within detailed retention before today that has records and no
/// aggregates; returns the days done.
pub async fn backfill(
    db: &Db,
    now: i64,
    retention: &StatsRetention,
    fence: &Fence,
) -> Result<Vec<i64>> {
    let today = day_start(now);
    let from = today - i64::from(retention.detailed_days) * DAY;
    let done = stats::aggregated_days(db, from, today).await?;
    let mut filled = Vec::new();
    for day in stats::recorded_days(db, from, today).await? {
        if !done.contains(&day) {
            aggregate_day(db, day, fence).await?;
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
        self.tick_fenced(now, &Fence::any_replica()).await
    }

    /// [`Self::tick`] as the leader's task runs it: every write is refused once `fence` no
    /// longer holds.
    pub async fn tick_fenced(&self, now: i64, fence: &Fence) -> Result<()> {
        let mut next = self.next.lock().await;
        match *next {
            None => {
                let moved = stats::convert_legacy_rows(&self.db, fence).await?;
                if moved > 0 {
                    tracing::info!(records = moved, "statistics records moved into batches");
                }
                let filled = backfill(&self.db, now, &self.retention, fence).await?;
                if !filled.is_empty() {
                    tracing::info!(days = filled.len(), "statistics aggregates backfilled");
                }
                *next = Some(next_run(now));
            }
            Some(at) if now >= at => {
                let yesterday = day_start(now) - DAY;
                aggregate_day(&self.db, yesterday, fence).await?;
                let (records, aggregates) = purge(&self.db, now, &self.retention, fence).await?;
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
                let wait = match me.tick_fenced(now, &cp.fence()).await {
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
