//! Leadership among replicas (issues 19 and 33): work that must run once per federation entity
//! (key rotation and key-state transitions, the key refreshers' polls, held-mark renewal,
//! entity collection, statistics aggregation, purge and conversion, JTI cleanup, the prune of
//! expired issued marks) runs only on the replica holding the lease, and its writes are fenced.
//!
//! **The lease** is one row of the `leadership` table: `holder` leads until `expires_ms`, which
//! the database's clock judges (`clock_timestamp()`, `NOW(3)`), never a replica's. A replica
//! takes it with one conditional UPDATE when it has expired (or still names this replica),
//! adding one to `generation`; the leader renews it every quarter of `cluster.leader_lease`.
//! Each renewal is bounded: a leader whose renewals have not succeeded for half a lease since
//! the last one was sent steps down locally at once (its jobs are cancelled), while the lease
//! it last wrote still runs for at least another half. A session lock (the design of issue 19)
//! could not do that: a paused leader's kernel keeps its TCP session, so its lock, alive.
//!
//! **Fencing**: a paused process cannot step down, and a job may be between its decision and
//! its commit when the lease is lost. So every leader-only write checks, in its own transaction
//! and just before its commit, that the lease row still names this replica with the
//! generation the job started under ([`Fence::check`]), taking a shared lock on the row until
//! the commit: a takeover (an UPDATE of that row) either commits before the check, which then
//! fails and the transaction rolls back, or waits for the commit, so the write happened while
//! this replica led. A transaction idle in that window for a whole lease (the process was
//! paused there) is ended by the database (`idle_in_transaction_session_timeout`, MariaDB's
//! `idle_transaction_timeout`), so a paused holder cannot block a takeover for long.
//!
//! Without `cluster.enabled`, and always on SQLite, the process leads at a constant generation
//! and fences check nothing. Every replica serves every endpoint and accepts Admin API writes
//! whatever its role: those are not fenced.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use pharos_shared::config::Settings;
use sqlx::{AnyConnection, Connection as _, Row as _};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::db::Dialect;
use crate::error::{Error, Result};

/// The lease row's name (one lease per database: one deployment per database).
pub const LEASE: &str = "leader";

/// Whether this process leads, under which generation, and what its fences refused.
#[derive(Debug)]
pub struct Leadership {
    /// `Some(generation)` while leading.
    term: watch::Sender<Option<i64>>,
    /// `None` for a process that always leads (no clustering, or SQLite).
    cluster: Option<Cluster>,
    /// Leader-only writes refused by a fence since start (for `/metrics`).
    refused: AtomicU64,
    /// Terms begun and ended since start (for `/metrics`: a lease that changes hands often
    /// means renewals that do not reach the database in time).
    changes: Changes,
}

/// Terms of this process begun and ended since start.
#[derive(Debug, Default)]
pub struct Changes {
    /// Terms begun: the lease taken, or taken again under a new generation.
    pub acquired: AtomicU64,
    /// Terms ended: stepped down, deposed, or released at shutdown.
    pub lost: AtomicU64,
}

#[derive(Debug)]
struct Cluster {
    dialect: Dialect,
    /// This process in the lease row: its instance name and its random origin, so that two
    /// replicas configured with the same `instance_id` by mistake are still two holders.
    holder: String,
    lease: Duration,
}

impl Leadership {
    /// A process that always leads (no clustering).
    pub fn solo() -> Arc<Self> {
        Arc::new(Self {
            term: watch::Sender::new(Some(0)),
            cluster: None,
            refused: AtomicU64::new(0),
            changes: Changes::default(),
        })
    }

    /// Leadership for `settings` on a database of `dialect`: solo without clustering or on
    /// SQLite, else not leading until [`Self::start`]'s campaign takes the lease. `origin` is
    /// the process's random identity among the replicas.
    pub fn new(settings: &Settings, dialect: Dialect, origin: u64) -> Arc<Self> {
        if !settings.cluster.enabled || dialect == Dialect::Sqlite {
            return Self::solo();
        }
        let name = match settings.cluster.instance_id.as_str() {
            "" => format!("pid-{}", std::process::id()),
            n => n.to_owned(),
        };
        Arc::new(Self {
            term: watch::Sender::new(None),
            cluster: Some(Cluster {
                dialect,
                holder: format!("{name}#{origin:016x}"),
                lease: settings.cluster.leader_lease.get(),
            }),
            refused: AtomicU64::new(0),
            changes: Changes::default(),
        })
    }

    /// Whether this process runs the once-per-federation work now.
    pub fn is_leader(&self) -> bool {
        self.term.borrow().is_some()
    }

    /// The generation this process leads under (`None` when it does not lead; 0 for a process
    /// that always leads).
    pub fn generation(&self) -> Option<i64> {
        *self.term.borrow()
    }

    /// Leader-only writes refused by a fence since start.
    pub fn refused_writes(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// Terms begun and ended since start (a process that always leads has neither).
    pub fn changes(&self) -> &Changes {
        &self.changes
    }

    /// The fencing token of a leader-only job: take it before the reads that decide the write
    /// and [`Fence::check`] it in the write's transaction just before the commit.
    pub fn fence(self: &Arc<Self>) -> Fence {
        Fence {
            leadership: Some(self.clone()),
            generation: self.generation(),
        }
    }

    /// Starts the campaign for the lease when clustered (its task is returned), until `stop`.
    pub fn start(
        self: &Arc<Self>,
        settings: &Settings,
        stop: CancellationToken,
    ) -> Option<JoinHandle<()>> {
        self.cluster.as_ref()?;
        let me = self.clone();
        let url = settings.storage_url();
        Some(tokio::spawn(async move { me.campaign(url, stop).await }))
    }

    async fn campaign(&self, url: String, stop: CancellationToken) {
        let Some(c) = &self.cluster else { return };
        let every = c.lease / 4;
        // A leader steps down when no renewal succeeded for this long after the last good one
        // was sent: the lease it wrote then runs until at least `lease` after sending.
        let hold = c.lease / 2;
        let mut conn: Option<AnyConnection> = None;
        let mut renewed_by: Option<Instant> = None;
        loop {
            if let Some(deadline) = renewed_by
                && Instant::now() >= deadline
            {
                tracing::warn!(holder = %c.holder, "leadership: the lease was not renewed in time; stepping down");
                self.step(None);
                renewed_by = None;
            }
            let sent = Instant::now();
            let budget = renewed_by.map_or(every, |d| every.min(d.saturating_duration_since(sent)));
            let attempt = tokio::time::timeout(budget, async {
                let cn = match conn.as_mut() {
                    Some(cn) => cn,
                    None => conn.insert(c.connect(&url).await?),
                };
                c.attempt(cn, self.generation()).await
            });
            let outcome = tokio::select! {
                r = attempt => r,
                _ = stop.cancelled() => {
                    // Stopped in the middle of a statement: that connection is not reused.
                    conn = None;
                    break;
                }
            };
            match outcome {
                Ok(Ok(Some(g))) => {
                    renewed_by = Some(sent + hold);
                    self.step(Some(g));
                }
                Ok(Ok(None)) => {
                    renewed_by = None;
                    self.step(None);
                }
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "leadership: the lease could not be read or renewed");
                    conn = None;
                }
                Err(_) => {
                    // The connection is in the middle of a statement: never reuse it.
                    tracing::warn!(timeout = ?budget, "leadership: the lease renewal timed out");
                    conn = None;
                }
            }
            let pause = match renewed_by {
                Some(d) => every.min(d.saturating_duration_since(Instant::now())),
                None => every,
            };
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = stop.cancelled() => break,
            }
        }
        // Hand the lease over at once on shutdown instead of making the others wait for it.
        let held = self.generation();
        self.step(None);
        if let Some(g) = held {
            let release = async {
                let mut cn = match conn {
                    Some(cn) => cn,
                    None => c.connect(&url).await?,
                };
                c.release(&mut cn, g).await?;
                cn.close().await
            };
            if let Ok(Err(e)) = tokio::time::timeout(every, release).await {
                tracing::warn!(error = %e, "leadership: releasing the lease failed");
            }
        }
    }

    /// Changes the term, logging a change.
    fn step(&self, term: Option<i64>) {
        let before = *self.term.borrow();
        if before != term {
            let holder = self
                .cluster
                .as_ref()
                .map(|c| c.holder.as_str())
                .unwrap_or("");
            tracing::info!(holder, leader = term.is_some(), generation = ?term, "leadership changed");
            // A new generation while leading ends one term and begins another.
            if before.is_some() {
                self.changes.lost.fetch_add(1, Ordering::Relaxed);
            }
            if term.is_some() {
                self.changes.acquired.fetch_add(1, Ordering::Relaxed);
            }
            self.term.send_replace(term);
        }
    }

    /// Runs a background job only while this process leads: `start` is called with a token
    /// that is cancelled when the term ends (leadership lost, or a new generation), and again
    /// for the next term. The job's in-flight write is not interrupted: its fence refuses it.
    pub fn supervise<F>(self: &Arc<Self>, stop: CancellationToken, start: F) -> JoinHandle<()>
    where
        F: Fn(CancellationToken) -> JoinHandle<()> + Send + Sync + 'static,
    {
        let mut rx = self.term.subscribe();
        tokio::spawn(async move {
            loop {
                let term = tokio::select! {
                    r = rx.wait_for(|t| t.is_some()) => match r {
                        Ok(t) => *t,
                        Err(_) => return,
                    },
                    _ = stop.cancelled() => return,
                };
                let job_stop = stop.child_token();
                let job = start(job_stop.clone());
                tokio::select! {
                    _ = rx.wait_for(|t| *t != term) => {}
                    _ = stop.cancelled() => {}
                }
                job_stop.cancel();
                let _ = job.await;
            }
        })
    }
}

impl Cluster {
    /// Opens the lease connection, with server-side bounds on its statements so that a
    /// renewal abandoned by its timeout does not linger in the database either.
    async fn connect(&self, url: &str) -> std::result::Result<AnyConnection, sqlx::Error> {
        sqlx::any::install_default_drivers();
        let mut cn = AnyConnection::connect(url).await?;
        let ms = (self.lease.as_millis() / 4).max(100);
        let settings = match self.dialect {
            Dialect::Postgres => vec![
                format!("SET statement_timeout = {ms}"),
                format!("SET lock_timeout = {ms}"),
            ],
            _ => vec![
                format!("SET SESSION max_statement_time = {:.3}", ms as f64 / 1000.0),
                format!(
                    "SET SESSION innodb_lock_wait_timeout = {}",
                    ms.div_ceil(1000)
                ),
            ],
        };
        for s in settings {
            sqlx::raw_sql(sqlx::AssertSqlSafe(s))
                .execute(&mut cn)
                .await?;
        }
        Ok(cn)
    }

    /// One attempt: renews the lease held under `leading`, or takes it when it is free (or
    /// still names this replica). The generation now led under, or `None`.
    async fn attempt(
        &self,
        cn: &mut AnyConnection,
        leading: Option<i64>,
    ) -> std::result::Result<Option<i64>, sqlx::Error> {
        let now = now_ms(self.dialect);
        let lease = i64::try_from(self.lease.as_millis()).unwrap_or(i64::MAX);
        if let Some(g) = leading {
            let sql = format!(
                "UPDATE leadership SET expires_ms = {now} + ? \
                 WHERE name = ? AND holder = ? AND generation = ?"
            );
            let r = sqlx::query(sql_for(self.dialect, &sql))
                .bind(lease)
                .bind(LEASE)
                .bind(self.holder.as_str())
                .bind(g)
                .execute(&mut *cn)
                .await?;
            return Ok((r.rows_affected() == 1).then_some(g));
        }
        let sql = format!(
            "SELECT holder, generation, CASE WHEN expires_ms <= {now} THEN 1 ELSE 0 END \
             FROM leadership WHERE name = ?"
        );
        let Some(row) = sqlx::query(sql_for(self.dialect, &sql))
            .bind(LEASE)
            .fetch_optional(&mut *cn)
            .await?
        else {
            return Ok(None);
        };
        let holder: String = row.try_get(0)?;
        let generation: i64 = row.try_get(1)?;
        let expired: i32 = row
            .try_get::<i32, _>(2)
            .or_else(|_| row.try_get::<i64, _>(2).map(|v| v as i32))?;
        if !takes(expired == 1, &holder, &self.holder) {
            return Ok(None);
        }
        // Compare-and-set on the generation read: of two replicas taking a free lease at once,
        // one UPDATE matches.
        let sql = format!(
            "UPDATE leadership SET holder = ?, generation = ?, expires_ms = {now} + ? \
             WHERE name = ? AND generation = ? AND (expires_ms <= {now} OR holder = ?)"
        );
        let r = sqlx::query(sql_for(self.dialect, &sql))
            .bind(self.holder.as_str())
            .bind(generation + 1)
            .bind(lease)
            .bind(LEASE)
            .bind(generation)
            .bind(self.holder.as_str())
            .execute(&mut *cn)
            .await?;
        Ok((r.rows_affected() == 1).then_some(generation + 1))
    }

    /// Ends the lease held under `generation` now.
    async fn release(
        &self,
        cn: &mut AnyConnection,
        generation: i64,
    ) -> std::result::Result<(), sqlx::Error> {
        let sql =
            "UPDATE leadership SET expires_ms = 0 WHERE name = ? AND holder = ? AND generation = ?";
        sqlx::query(sql_for(self.dialect, sql))
            .bind(LEASE)
            .bind(self.holder.as_str())
            .bind(generation)
            .execute(cn)
            .await?;
        Ok(())
    }
}

/// Whether a replica named `me` that does not lead may take a lease held by `holder`: when it
/// has expired by the database's clock, or when it still names `me` (a leader that stepped
/// down locally and nobody took over). Taking always starts a new generation.
fn takes(expired: bool, holder: &str, me: &str) -> bool {
    expired || holder == me
}

/// The database's clock in milliseconds since the Unix epoch, as an SQL expression.
fn now_ms(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Postgres => "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)",
        Dialect::Mysql => "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)",
        Dialect::Sqlite => "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)",
    }
}

/// `sql` with `?` placeholders numbered for PostgreSQL. The text is fixed SQL assembled here
/// from constants, never from values.
fn sql_for(dialect: Dialect, sql: &str) -> sqlx::SqlStr {
    use sqlx::SqlSafeStr as _;
    if dialect != Dialect::Postgres {
        return sqlx::AssertSqlSafe(sql.to_owned()).into_sql_str();
    }
    let mut out = String::with_capacity(sql.len() + 8);
    let mut n = 0;
    for ch in sql.chars() {
        if ch == '?' {
            n += 1;
            out.push_str(&format!("${n}"));
        } else {
            out.push(ch);
        }
    }
    sqlx::AssertSqlSafe(out).into_sql_str()
}

/// A leader-only job's fencing token: the generation this process led under when the job
/// took it ([`Leadership::fence`]). [`Fence::check`] in the job's transaction, right before
/// its commit, makes a deposed leader's write fail instead of landing.
#[derive(Debug, Clone)]
pub struct Fence {
    /// `None`: a write any replica may make (triggers, the Admin API), checked against nothing.
    leadership: Option<Arc<Leadership>>,
    generation: Option<i64>,
}

impl Fence {
    /// For code shared between leader-only jobs and writes any replica may make (a trigger's
    /// refresh, an on-demand collection): checks nothing.
    pub fn any_replica() -> Self {
        Self {
            leadership: None,
            generation: None,
        }
    }

    /// Checks, in the write's transaction `tx`, that this process still leads under the
    /// token's generation, and keeps the lease row share-locked until the commit (see the
    /// module documentation). Call it last before the commit. A refusal is
    /// [`Error::Fenced`]: the caller returns it, and dropping the write rolls it back.
    pub async fn check(&self, tx: &mut AnyConnection) -> Result<()> {
        let Some(l) = &self.leadership else {
            return Ok(());
        };
        let Some(c) = &l.cluster else {
            return Ok(());
        };
        let refuse = |why: String| {
            l.refused.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(holder = %c.holder, generation = ?self.generation, "leader-only write refused: {why}");
            Err(Error::Fenced(why))
        };
        let Some(mine) = self.generation else {
            return refuse("this replica did not lead when the job began".into());
        };
        if l.generation() != Some(mine) {
            return refuse(format!(
                "this replica no longer leads under generation {mine}"
            ));
        }
        let idle_ms = c.lease.as_millis().max(1000);
        let (bound, read) = match c.dialect {
            Dialect::Postgres => (
                format!("SET LOCAL idle_in_transaction_session_timeout = {idle_ms}"),
                "SELECT holder, generation FROM leadership WHERE name = ? FOR SHARE",
            ),
            _ => (
                format!(
                    "SET SESSION idle_transaction_timeout = {}",
                    idle_ms.div_ceil(1000)
                ),
                "SELECT holder, generation FROM leadership WHERE name = ? LOCK IN SHARE MODE",
            ),
        };
        sqlx::raw_sql(sqlx::AssertSqlSafe(bound))
            .execute(&mut *tx)
            .await?;
        let row = sqlx::query(sql_for(c.dialect, read))
            .bind(LEASE)
            .fetch_optional(&mut *tx)
            .await?;
        let Some(row) = row else {
            return refuse("the lease row is missing".into());
        };
        let (holder, generation): (String, i64) = (row.try_get(0)?, row.try_get(1)?);
        if holder != c.holder || generation != mine {
            return refuse(format!(
                "the lease is held by {holder} under generation {generation}, not by this replica under {mine}"
            ));
        }
        Ok(())
    }
}

impl crate::db::FenceCheck for Fence {
    async fn check(&self, tx: &mut AnyConnection) -> Result<()> {
        Fence::check(self, tx).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_is_taken_when_expired_or_still_ours() {
        assert!(takes(true, "b#2", "a#1"));
        assert!(takes(false, "a#1", "a#1"));
        assert!(!takes(false, "b#2", "a#1"));
    }

    #[test]
    fn placeholders_are_numbered_for_postgres_only() {
        let s = "UPDATE t SET a = ? WHERE b = ? AND c = ?";
        assert_eq!(
            sql_for(Dialect::Postgres, s).as_str(),
            "UPDATE t SET a = $1 WHERE b = $2 AND c = $3"
        );
        assert_eq!(sql_for(Dialect::Mysql, s).as_str(), s);
    }

    #[tokio::test]
    async fn a_solo_process_always_leads_and_its_fence_checks_nothing() {
        let l = Leadership::solo();
        assert!(l.is_leader());
        assert_eq!(l.generation(), Some(0));
        sqlx::any::install_default_drivers();
        let mut c = AnyConnection::connect("sqlite::memory:").await.unwrap();
        l.fence().check(&mut c).await.unwrap();
        assert_eq!(l.refused_writes(), 0);
    }

    #[tokio::test]
    async fn a_fence_taken_while_not_leading_or_in_an_older_term_refuses() {
        let l = Arc::new(Leadership {
            term: watch::Sender::new(None),
            cluster: Some(Cluster {
                dialect: Dialect::Postgres,
                holder: "a#1".into(),
                lease: Duration::from_secs(2),
            }),
            refused: AtomicU64::new(0),
            changes: Changes::default(),
        });
        sqlx::any::install_default_drivers();
        let mut c = AnyConnection::connect("sqlite::memory:").await.unwrap();
        let before = l.fence();
        assert!(matches!(before.check(&mut c).await, Err(Error::Fenced(_))));
        l.step(Some(7));
        let old = l.fence();
        l.step(None);
        l.step(Some(8));
        assert!(matches!(old.check(&mut c).await, Err(Error::Fenced(_))));
        assert_eq!(l.refused_writes(), 2);
        // Two terms begun, one ended: what `/metrics` counts as leader changes.
        let changes = l.changes();
        assert_eq!(changes.acquired.load(Ordering::Relaxed), 2);
        assert_eq!(changes.lost.load(Ordering::Relaxed), 1);
        l.step(Some(9));
        assert_eq!(changes.acquired.load(Ordering::Relaxed), 3);
        assert_eq!(
            changes.lost.load(Ordering::Relaxed),
            2,
            "a new generation ends a term"
        );
        // Writes any replica may make are not fenced.
        Fence::any_replica().check(&mut c).await.unwrap();
    }
}
