//! Change propagation between replicas on one PostgreSQL or MariaDB database (issue 19).
//!
//! A write announces what it touched with `pg_notify` inside its own transaction
//! ([`super::Write::commit`]), so the announcement is delivered exactly when (and only if)
//! the change is committed. MariaDB has no notifications: there the write bumps the one row of
//! `cluster_generation` and logs the announcement in `cluster_changes` under that generation
//! (same transaction; the row lock makes generations commit in order), and replicas poll for
//! generations above the last one they applied every `cluster.poll_interval`. Every replica listens on a dedicated connection and reloads just
//! those parts into its snapshot through the same reload-and-publish step as a local write, under
//! its writer lock. Notifications sent while a listener is disconnected are lost, so after a
//! (re)connection the replica reloads everything, and `/readyz` says not ready until it has.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions};
use tokio_util::sync::CancellationToken;

use super::{Changes, ControlPlane};
use crate::error::{Error, Result};

/// The notification channel.
pub const CHANNEL: &str = "pharos_changes";

/// PostgreSQL refuses payloads of 8000 bytes or more; a larger change is announced as
/// "reload everything".
const MAX_PAYLOAD: usize = 7_900;

/// Longest wait between two attempts to (re)connect the listener.
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// What one committed write changed, as sent to the other replicas.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Announcement {
    /// The announcing process (its own announcements are already published).
    pub origin: u64,
    /// Too much to name: reload everything.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub all: bool,
    /// What to reload.
    #[serde(default)]
    pub changes: Changes,
}

/// The payload announcing `changes` made by `origin`.
pub fn encode(origin: u64, changes: &Changes) -> String {
    let a = Announcement {
        origin,
        all: false,
        changes: changes.clone(),
    };
    match serde_json::to_string(&a) {
        Ok(p) if p.len() <= MAX_PAYLOAD => p,
        _ => format!("{{\"origin\":{origin},\"all\":true}}"),
    }
}

/// Reads a payload; anything unreadable means "reload everything" (a newer replica's format,
/// say), never a lost change.
pub fn decode(payload: &str) -> Announcement {
    serde_json::from_str(payload).unwrap_or(Announcement {
        origin: 0,
        all: true,
        changes: Changes::default(),
    })
}

impl ControlPlane {
    /// Whether committed writes are announced to other replicas (`cluster.enabled` on
    /// PostgreSQL or MariaDB).
    pub fn announces(&self) -> bool {
        self.settings.cluster.enabled && self.db.dialect != crate::db::Dialect::Sqlite
    }

    /// Records the announcement of `changes` in the write's transaction `tx`.
    pub(super) async fn announce(
        &self,
        tx: &mut sqlx::AnyConnection,
        changes: &Changes,
    ) -> Result<()> {
        let payload = encode(self.origin, changes);
        if self.db.dialect == crate::db::Dialect::Postgres {
            sqlx::query(
                self.db
                    .sql("SELECT 1 AS n FROM (SELECT pg_notify(?, ?)) AS s"),
            )
            .bind(CHANNEL)
            .bind(payload)
            .execute(&mut *tx)
            .await?;
            return Ok(());
        }
        sqlx::query(
            self.db
                .sql("UPDATE cluster_generation SET generation = generation + 1 WHERE id = 1"),
        )
        .execute(&mut *tx)
        .await?;
        sqlx::query(self.db.sql(
            "INSERT INTO cluster_changes (generation, origin, payload, created_at) \
             SELECT generation, ?, ?, ? FROM cluster_generation WHERE id = 1",
        ))
        .bind(format!("{:016x}", self.origin))
        .bind(payload)
        .bind(self.now())
        .execute(&mut *tx)
        .await?;
        Ok(())
    }

    /// The poller task (MariaDB with `cluster.enabled`): applies the logged announcements of
    /// the other replicas every `cluster.poll_interval` until `stop`.
    pub fn spawn_poller(self: &Arc<Self>, stop: CancellationToken) -> tokio::task::JoinHandle<()> {
        let cp = self.clone();
        let every = cp.settings.cluster.poll_interval.get();
        tokio::spawn(async move {
            let pause = || async {
                tokio::select! {
                    _ = tokio::time::sleep(every) => true,
                    _ = stop.cancelled() => false,
                }
            };
            // Start: everything up to the current generation is in the reload.
            let mut last = loop {
                cp.behind.store(true, Ordering::SeqCst);
                if let Ok(g) = current_generation(&cp.db).await
                    && cp.reload_everything().await
                {
                    break g;
                }
                if !pause().await {
                    return;
                }
            };
            cp.behind.store(false, Ordering::SeqCst);
            let mut polls: u64 = 0;
            while pause().await {
                let rows = match changes_after(&cp.db, last).await {
                    Ok(rows) => rows,
                    Err(e) => {
                        // The log stays in the database: nothing is lost, only late.
                        tracing::warn!(error = %e, "cluster poll failed; retrying");
                        cp.behind.store(true, Ordering::SeqCst);
                        continue;
                    }
                };
                if rows.first().is_some_and(|(g, _)| *g > last + 1) {
                    // Pruned before this replica read it: reload everything.
                    if !cp.reload_everything().await {
                        cp.behind.store(true, Ordering::SeqCst);
                        continue;
                    }
                } else {
                    for (_, payload) in &rows {
                        cp.apply_announcement(payload).await;
                    }
                }
                if let Some((g, _)) = rows.last() {
                    last = *g;
                }
                cp.behind.store(false, Ordering::SeqCst);
                polls += 1;
                if polls.is_multiple_of(PRUNE_EVERY) {
                    prune(&cp.db, last).await;
                }
            }
        })
    }

    /// Whether this replica may have missed changes of the others (its listener is not
    /// connected, or it has not reloaded since reconnecting): `/readyz` is not ready then.
    pub fn is_behind(&self) -> bool {
        self.behind.load(Ordering::SeqCst)
    }

    /// Applies another replica's announcement: exactly the reload a local write would do.
    pub async fn apply_announcement(&self, payload: &str) {
        let a = decode(payload);
        if a.origin == self.origin {
            return;
        }
        // An Admin API change on another replica (rotation policy, an immediate rotation) may
        // move the next key transition: the key task, which runs on the leader, re-plans.
        self.key_events.notify_one();
        if a.all {
            self.reload_everything().await;
            return;
        }
        let _lock = self.write.lock().await;
        self.publish(a.changes).await;
    }

    /// Rebuilds the whole snapshot from the database (after a listener loss), under the
    /// writer lock; a failure is retried by the caller.
    pub async fn reload_everything(&self) -> bool {
        let _lock = self.write.lock().await;
        match self.reload_all().await {
            Ok(()) => true,
            Err(e) => {
                tracing::error!(error = %e, "full reload after a missed announcement failed");
                false
            }
        }
    }

    /// The listener task (PostgreSQL with `cluster.enabled`): listens, reloads everything
    /// after each (re)connection, applies announcements until `stop`.
    pub fn spawn_listener(
        self: &Arc<Self>,
        stop: CancellationToken,
    ) -> Result<tokio::task::JoinHandle<()>> {
        let opts: PgConnectOptions = self
            .settings
            .storage_url()
            .parse()
            .map_err(|e: sqlx::Error| Error::Internal(format!("cluster listener: {e}")))?;
        let opts = opts.application_name(&listener_name(self.origin));
        let cp = self.clone();
        Ok(tokio::spawn(async move {
            let mut backoff = Duration::from_millis(100);
            loop {
                cp.behind.store(true, Ordering::SeqCst);
                let listener = tokio::select! {
                    l = listen(&opts) => l,
                    _ = stop.cancelled() => return,
                };
                let mut listener = match listener {
                    Ok(l) => l,
                    Err(e) => {
                        tracing::warn!(error = %e, "cluster listener cannot connect; retrying");
                        tokio::select! {
                            _ = tokio::time::sleep(backoff) => {}
                            _ = stop.cancelled() => return,
                        }
                        backoff = (backoff * 2).min(MAX_BACKOFF);
                        continue;
                    }
                };
                // Listening before reloading: a change committed in between is both in the
                // reload and announced, never in neither.
                if !cp.reload_everything().await {
                    tokio::select! {
                        _ = tokio::time::sleep(backoff) => {}
                        _ = stop.cancelled() => return,
                    }
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    continue;
                }
                backoff = Duration::from_millis(100);
                cp.behind.store(false, Ordering::SeqCst);
                tracing::info!("cluster listener connected; snapshot up to date");
                loop {
                    let next = tokio::select! {
                        n = listener.try_recv() => n,
                        _ = stop.cancelled() => return,
                    };
                    match next {
                        Ok(Some(n)) => cp.apply_announcement(n.payload()).await,
                        Ok(None) | Err(_) => {
                            tracing::warn!("cluster listener connection lost; reconnecting");
                            break;
                        }
                    }
                }
            }
        }))
    }
}

/// Polls between two prunings of the change log.
const PRUNE_EVERY: u64 = 600;
/// Generations kept behind the newest one a replica applied (a replica further behind
/// reloads everything).
const KEEP_GENERATIONS: i64 = 10_000;

async fn current_generation(db: &crate::db::Db) -> Result<i64> {
    let (g,): (i64,) =
        sqlx::query_as(db.sql("SELECT generation FROM cluster_generation WHERE id = 1"))
            .fetch_one(&db.pool)
            .await?;
    Ok(g)
}

async fn changes_after(db: &crate::db::Db, last: i64) -> Result<Vec<(i64, String)>> {
    Ok(sqlx::query_as(db.sql(
        "SELECT generation, payload FROM cluster_changes WHERE generation > ? ORDER BY generation",
    ))
    .bind(last)
    .fetch_all(&db.pool)
    .await?)
}

/// Deletes old entries of the change log. Not federation state (nothing in a snapshot comes
/// from it), so not a `Write`: a single idempotent statement any replica may run.
async fn prune(db: &crate::db::Db, last: i64) {
    let r = sqlx::query(db.sql("DELETE FROM cluster_changes WHERE generation <= ?"))
        .bind(last - KEEP_GENERATIONS)
        .execute(&db.pool)
        .await;
    if let Err(e) = r {
        tracing::warn!(error = %e, "cluster change log pruning failed");
    }
}

/// The listener connection's `application_name`, so operators (and tests) can tell it apart.
pub fn listener_name(origin: u64) -> String {
    format!("pharos-listener-{origin:016x}")
}

async fn listen(opts: &PgConnectOptions) -> std::result::Result<PgListener, sqlx::Error> {
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .connect_with(opts.clone())
        .await?;
    let mut l = PgListener::connect_with(&pool).await?;
    l.listen(CHANNEL).await?;
    Ok(l)
}

#[cfg(test)]
mod tests {
    use super::super::Section;
    use super::*;

    #[test]
    fn announcements_name_what_changed_and_fall_back_to_everything() {
        let mut c = Changes::default();
        c.section(Section::Keys);
        c.subordinate("https://leaf.example");
        c.issued_mark("jti-1");
        let a = decode(&encode(7, &c));
        assert_eq!((a.origin, a.all, a.changes), (7, false, c.clone()));

        let mut big = Changes::default();
        for i in 0..1_000 {
            big.subordinate(&format!("https://leaf-{i}.example"));
        }
        let p = encode(7, &big);
        assert!(p.len() < 100, "{p}");
        let a = decode(&p);
        assert!(a.all && a.origin == 7);

        assert!(decode("not json").all, "unreadable: reload everything");
    }
}
