//! Change propagation between replicas on one PostgreSQL or MariaDB database (issue 19).
//!
//! A write bumps the one row of `cluster_generation` and logs what it touched in
//! `cluster_changes` under that generation, inside its own transaction
//! ([`super::Write::commit`]): the log holds exactly the committed changes, and the row lock
//! makes generations commit in order. Replicas apply the entries above the last generation
//! they applied, through the same reload-and-publish step as a local write, under their writer
//! lock. On MariaDB they poll the log every `cluster.poll_interval`. On PostgreSQL the write
//! also sends the entry with `pg_notify`, delivered at commit to every replica's listener.
//!
//! A replica subscribes before it builds its first snapshot ([`Subscription`]), so that build
//! is the only full one. Notifications sent while a listener is disconnected are lost; after a
//! reconnection the replica reads what it missed from the log, and reloads everything only
//! when the log no longer holds it (pruned, or written by a release that did not log on
//! PostgreSQL): a cut listener at a million subordinates costs the few changes made meanwhile,
//! not a second snapshot. `/readyz` says not ready until it has caught up.

use std::sync::Arc;
use std::time::Duration;

use pharos_shared::config::Settings;
use pharos_shared::refresh::Backoff;
use serde::{Deserialize, Serialize};
use sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions};
use tokio_util::sync::CancellationToken;

use pharos_shared::hosted::EntityNo;

use super::{Changes, ControlPlane};
use crate::db::{Db, Dialect};
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
    /// The hosted entity whose snapshot changed (absent: the default entity, as replicas of
    /// earlier releases announce).
    #[serde(default = "default_entity", skip_serializing_if = "is_default_entity")]
    pub entity: i64,
    /// Too much to name: reload everything.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub all: bool,
    /// Its place in the change log (notifications; a log entry's is its row's). Absent from
    /// the notifications of releases that did not log on PostgreSQL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    /// What to reload.
    #[serde(default)]
    pub changes: Changes,
}

fn default_entity() -> i64 {
    EntityNo::DEFAULT.get()
}

fn is_default_entity(n: &i64) -> bool {
    *n == EntityNo::DEFAULT.get()
}

/// The payload announcing `changes` made by `origin` to hosted entity `entity`, logged under
/// `generation` when given (a notification carries it; the log's rows have their own).
pub fn encode(origin: u64, entity: EntityNo, changes: &Changes, generation: Option<i64>) -> String {
    let mut a = Announcement {
        origin,
        entity: entity.get(),
        all: false,
        generation,
        changes: changes.clone(),
    };
    if let Ok(p) = serde_json::to_string(&a)
        && p.len() <= MAX_PAYLOAD
    {
        return p;
    }
    a.all = true;
    a.changes = Changes::default();
    serde_json::to_string(&a).unwrap_or_else(|_| format!("{{\"origin\":{origin},\"all\":true}}"))
}

/// Reads a payload; anything unreadable means "reload everything" (a newer replica's format,
/// say), never a lost change.
pub fn decode(payload: &str) -> Announcement {
    serde_json::from_str(payload).unwrap_or(Announcement {
        origin: 0,
        entity: default_entity(),
        all: true,
        generation: None,
        changes: Changes::default(),
    })
}

/// This process's place among the replicas, taken before its first snapshot is built: its
/// origin, and where it starts receiving the others' announcements: the current generation of
/// the change log, read (on PostgreSQL) once its listener is LISTENing. A change committed
/// after that point is announced to this replica, and one committed before it is in the first
/// snapshot (built afterwards); one committed while the snapshot is being built is in both,
/// never in neither. So the start-up build is the only full one, and a replica is ready once it
/// is published (reloading everything again when the listener connected doubled a million
/// subordinates' start: 21.5 s instead of 9 s, 1.6 GB instead of 0.8).
#[derive(Debug)]
pub struct Subscription {
    /// This process among the replicas: announcements carrying it are its own.
    pub origin: u64,
    start: Start,
}

#[derive(Debug)]
enum Start {
    /// Not a replica (SQLite, or `cluster.enabled` off).
    Alone,
    /// PostgreSQL: LISTEN is in effect on this connection; the last generation the first
    /// snapshot includes, when it could be read (else the first reconnection reloads
    /// everything).
    Listening(PgListener, Option<i64>),
    /// MariaDB: the last generation the first snapshot includes.
    Generation(i64),
    /// The position could not be taken (the database went away meanwhile): the replica
    /// catches up with a full reload once it can, as after a lost listener.
    Unknown,
}

impl Subscription {
    /// Subscribes to the other replicas' announcements when `settings` make this process one.
    /// Call before the first snapshot is built. Fails only on a configuration error; an
    /// unreachable database leaves the replica to catch up later (see [`Self::is_behind`]).
    pub async fn open(db: &Db, settings: &Settings) -> Result<Self> {
        let origin = random_origin();
        let start = if !replicates(settings, db.dialect) {
            Start::Alone
        } else if db.dialect == Dialect::Postgres {
            match listen(&listener_options(settings, origin)?).await {
                Ok(l) => Start::Listening(l, current_generation(db).await.ok()),
                Err(e) => {
                    tracing::warn!(error = %e, "cluster listener cannot connect; catching up later");
                    Start::Unknown
                }
            }
        } else {
            match current_generation(db).await {
                Ok(g) => Start::Generation(g),
                Err(e) => {
                    tracing::warn!(error = %e, "cluster generation unreadable; catching up later");
                    Start::Unknown
                }
            }
        };
        Ok(Self { origin, start })
    }

    /// A process that follows no other replica (a single instance; unit tests).
    pub fn alone() -> Self {
        Self {
            origin: random_origin(),
            start: Start::Alone,
        }
    }

    /// Whether a snapshot built now may miss changes of the other replicas: the subscription
    /// could not be made, so the follower will reload everything.
    pub fn is_behind(&self) -> bool {
        matches!(self.start, Start::Unknown)
    }
}

/// Whether `settings` make this process one of several replicas on a database of `dialect`.
fn replicates(settings: &Settings, dialect: Dialect) -> bool {
    settings.cluster.enabled && dialect != Dialect::Sqlite
}

/// A process identifier unlikely to repeat among replicas (random, not configured: two
/// replicas given the same `instance_id` by mistake must still not ignore each other).
fn random_origin() -> u64 {
    let mut b = [0u8; 8];
    if getrandom::fill(&mut b).is_err() {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        return h.finish();
    }
    u64::from_le_bytes(b)
}

impl ControlPlane {
    /// Whether committed writes are announced to other replicas (`cluster.enabled` on
    /// PostgreSQL or MariaDB).
    pub fn announces(&self) -> bool {
        replicates(&self.settings, self.db.dialect)
    }

    /// Starts following the other replicas from where `subscription` (this process's, made
    /// before [`ControlPlane::start`]) left off: the listener on PostgreSQL, the poller on
    /// MariaDB; nothing for a single instance.
    pub fn spawn_follower(
        self: &Arc<Self>,
        subscription: Subscription,
        stop: CancellationToken,
    ) -> Result<Option<tokio::task::JoinHandle<()>>> {
        debug_assert_eq!(
            subscription.origin, self.origin,
            "another process's subscription"
        );
        Ok(Some(match subscription.start {
            Start::Alone => return Ok(None),
            Start::Listening(l, g) => self.spawn_listener(Some((l, g)), stop)?,
            Start::Generation(g) => self.spawn_poller(Some(g), stop),
            Start::Unknown if self.db.dialect == Dialect::Postgres => {
                self.spawn_listener(None, stop)?
            }
            Start::Unknown => self.spawn_poller(None, stop),
        }))
    }

    /// Records the announcement of `changes` in the write's transaction `tx`: logged under
    /// the next generation, and on PostgreSQL sent to the listeners with that generation.
    pub(super) async fn announce(
        &self,
        tx: &mut sqlx::AnyConnection,
        changes: &Changes,
    ) -> Result<()> {
        let payload = encode(self.origin, self.db.hosted(), changes, None);
        if self.db.dialect == Dialect::Postgres {
            let (generation,): (i64,) = sqlx::query_as(self.db.sql(
                "UPDATE cluster_generation SET generation = generation + 1 WHERE id = 1 \
                 RETURNING generation",
            ))
            .fetch_one(&mut *tx)
            .await?;
            sqlx::query(self.db.sql(
                "INSERT INTO cluster_changes (generation, origin, payload, created_at) \
                 VALUES (?, ?, ?, ?)",
            ))
            .bind(generation)
            .bind(format!("{:016x}", self.origin))
            .bind(payload)
            .bind(self.now())
            .execute(&mut *tx)
            .await?;
            let notice = encode(self.origin, self.db.hosted(), changes, Some(generation));
            sqlx::query(
                self.db
                    .sql("SELECT 1 AS n FROM (SELECT pg_notify(?, ?)) AS s"),
            )
            .bind(CHANNEL)
            .bind(notice)
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
    /// the other replicas after generation `from` (everything up to it is in the snapshot)
    /// every `cluster.poll_interval` until `stop`. Without `from` it reloads everything first.
    fn spawn_poller(
        self: &Arc<Self>,
        from: Option<i64>,
        stop: CancellationToken,
    ) -> tokio::task::JoinHandle<()> {
        let cp = self.clone();
        let every = cp.settings.cluster.poll_interval.get();
        tokio::spawn(async move {
            let pause = || async {
                tokio::select! {
                    _ = tokio::time::sleep(every) => true,
                    _ = stop.cancelled() => false,
                }
            };
            let mut last = match from {
                Some(g) => g,
                // Everything up to the generation read before the reload is in it.
                None => loop {
                    cp.behind.fell_behind(cp.now());
                    if let Ok(g) = current_generation(&cp.db).await
                        && cp.reload_everything().await
                    {
                        break g;
                    }
                    if !pause().await {
                        return;
                    }
                },
            };
            cp.behind.caught_up();
            let mut polls: u64 = 0;
            while pause().await {
                let rows = match changes_after(&cp.db, last).await {
                    Ok(rows) => rows,
                    Err(e) => {
                        // The log stays in the database: nothing is lost, only late.
                        tracing::warn!(error = %e, "cluster poll failed; retrying");
                        cp.behind.fell_behind(cp.now());
                        continue;
                    }
                };
                if rows.first().is_some_and(|(g, _)| *g > last + 1) {
                    // Pruned before this replica read it: reload everything.
                    if !cp.reload_everything().await {
                        cp.behind.fell_behind(cp.now());
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
                cp.behind.caught_up();
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
        self.behind.is_behind()
    }

    /// Seconds since this replica may have missed changes of the others (0 when it has not):
    /// how stale its snapshot may be, for `/metrics`.
    pub fn behind_seconds(&self) -> i64 {
        self.behind.seconds(self.now())
    }

    /// Applies another replica's announcement: exactly the reload a local write would do, by
    /// the control plane of the hosted entity it names (this process's other entities are
    /// reached through [`ControlPlane::set_peers`]).
    pub async fn apply_announcement(&self, payload: &str) {
        self.apply_decoded(decode(payload)).await;
    }

    /// [`Self::apply_announcement`] of a decoded announcement.
    async fn apply_decoded(&self, a: Announcement) {
        if a.origin == self.origin {
            return;
        }
        let peers = self.peers();
        if let Some(p) = &peers
            && (a.all || a.changes.touches_hosted_entities())
        {
            // An entity created or deleted there: start or stop serving it here. Its first
            // snapshot is built from the database, which already holds the announced change.
            p.entities_changed().await;
        }
        let target = EntityNo::new(a.entity).unwrap_or(EntityNo::DEFAULT);
        if target == self.db.hosted() {
            self.apply(a).await;
        } else if let Some(cp) = peers.and_then(|p| p.entity(target)) {
            cp.apply(a).await;
        }
    }

    /// [`Self::apply_announcement`] for this entity.
    async fn apply(&self, a: Announcement) {
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
    /// writer lock, and those of this process's other hosted entities (which missed the same
    /// announcements); a failure is retried by the caller.
    pub async fn reload_everything(&self) -> bool {
        let mine = {
            let _lock = self.write.lock().await;
            match self.reload_all().await {
                Ok(()) => true,
                Err(e) => {
                    tracing::error!(error = %e, "full reload after a missed announcement failed");
                    false
                }
            }
        };
        let mut all = mine;
        if let Some(p) = self.peers()
            && self.db.hosted().is_default()
        {
            p.entities_changed().await;
            for cp in p.others() {
                let _lock = cp.write.lock().await;
                if let Err(e) = cp.reload_all().await {
                    tracing::error!(error = %e, entity = %cp.db.hosted(),
                        "full reload after a missed announcement failed");
                    all = false;
                }
            }
        }
        all
    }

    /// The listener task (PostgreSQL with `cluster.enabled`): applies announcements until
    /// `stop`, starting with `subscribed` (LISTEN made before the first snapshot was built,
    /// and the generation that snapshot includes), and after a lost connection (or without
    /// `subscribed`) reconnects and catches up from the change log.
    fn spawn_listener(
        self: &Arc<Self>,
        subscribed: Option<(PgListener, Option<i64>)>,
        stop: CancellationToken,
    ) -> Result<tokio::task::JoinHandle<()>> {
        let opts = listener_options(&self.settings, self.origin)?;
        let cp = self.clone();
        Ok(tokio::spawn(async move {
            let mut place = Place::default();
            let mut subscribed = subscribed;
            loop {
                let mut listener = match subscribed.take() {
                    Some((l, last)) => {
                        place.last = last;
                        l
                    }
                    None => match cp.resubscribe(&opts, &mut place, &stop).await {
                        Some(l) => l,
                        None => return,
                    },
                };
                loop {
                    let next = tokio::select! {
                        n = listener.try_recv() => n,
                        _ = stop.cancelled() => return,
                    };
                    match next {
                        Ok(Some(n)) => {
                            if !cp.on_notification(n.payload(), &mut place).await {
                                // What was missed could not be read: catch up as after a
                                // lost connection (retried, not ready meanwhile).
                                break;
                            }
                        }
                        Ok(None) | Err(_) => {
                            tracing::warn!("cluster listener connection lost; reconnecting");
                            break;
                        }
                    }
                }
            }
        }))
    }

    /// One notification: applied unless the log already gave it; one beyond the next expected
    /// generation (a notification was missed) first catches up from the log. `false` when that
    /// failed: `place` no longer knows what was applied, and the caller reconnects.
    async fn on_notification(&self, payload: &str, place: &mut Place) -> bool {
        let a = decode(payload);
        place.received += 1;
        if place.received.is_multiple_of(PRUNE_EVERY)
            && let Some(last) = place.last
        {
            prune(&self.db, last).await;
        }
        match (a.generation, place.last) {
            (None, _) => {
                // A release that does not log: after a lost connection only a full reload
                // recovers what it announced meanwhile.
                place.unlogged = true;
                self.apply_decoded(a).await;
            }
            (Some(g), Some(last)) if g <= last => {}
            (Some(g), Some(last)) if g > last + 1 => {
                tracing::warn!(
                    generation = g,
                    last,
                    "cluster notification missed; reading the log"
                );
                if !self.catch_up(place).await {
                    place.last = None;
                    return false;
                }
                // The log held this one too (it was committed before it was delivered).
                if place.last.is_none_or(|l| l < g) {
                    self.apply_decoded(a).await;
                    place.last = Some(g);
                }
            }
            (Some(g), _) => {
                self.apply_decoded(a).await;
                place.last = Some(g);
            }
        }
        true
    }

    /// Brings this replica up to the log's current generation after `place.last`: the logged
    /// changes when the log still holds all of them (and no unlogged announcement may have
    /// been missed), else everything. Whether it succeeded; `place` is where it got to.
    async fn catch_up(&self, place: &mut Place) -> bool {
        let Ok(current) = current_generation(&self.db).await else {
            return false;
        };
        if let (Some(last), false) = (place.last, place.unlogged) {
            match changes_after(&self.db, last).await {
                Ok(rows) if logged_through(last, current, &rows) => {
                    for (_, payload) in &rows {
                        self.apply_announcement(payload).await;
                    }
                    place.last = rows.last().map_or(Some(last), |(g, _)| Some(*g));
                    return true;
                }
                Ok(_) => tracing::info!(
                    last,
                    current,
                    "cluster change log no longer holds what was missed; reloading everything"
                ),
                Err(e) => {
                    tracing::warn!(error = %e, "cluster change log unreadable");
                    return false;
                }
            }
        }
        if !self.reload_everything().await {
            return false;
        }
        // Everything up to the generation read before the reload is in it.
        place.last = Some(current);
        place.unlogged = false;
        true
    }

    /// Connects and LISTENs again, then catches up with what was missed (announcements made
    /// while not listening are not delivered), retrying with backoff; not ready (`/readyz`)
    /// meanwhile. `None` when stopped first.
    async fn resubscribe(
        &self,
        opts: &PgConnectOptions,
        place: &mut Place,
        stop: &CancellationToken,
    ) -> Option<PgListener> {
        self.behind.fell_behind(self.now());
        let mut backoff = Backoff::between(Duration::from_millis(100), MAX_BACKOFF);
        loop {
            let listener = tokio::select! {
                l = listen(opts) => l,
                _ = stop.cancelled() => return None,
            };
            match listener {
                // Listening before reading the log: a change committed in between is both read
                // and announced, never neither (the announcement is then skipped by generation).
                Ok(l) => {
                    if self.catch_up(place).await {
                        self.behind.caught_up();
                        tracing::info!("cluster listener connected; snapshot up to date");
                        return Some(l);
                    }
                }
                Err(e) => tracing::warn!(error = %e, "cluster listener cannot connect; retrying"),
            }
            tokio::select! {
                _ = tokio::time::sleep(backoff.fail()) => {}
                _ = stop.cancelled() => return None,
            }
        }
    }
}

/// Where a PostgreSQL listener is in the change log.
#[derive(Debug, Default)]
struct Place {
    /// The last generation applied (`None`: unknown, so catching up reloads everything).
    last: Option<i64>,
    /// An announcement without a generation was applied since the last full reload: a release
    /// that does not log may be writing, so what it announces while the listener is away is
    /// found only by reloading everything.
    unlogged: bool,
    /// Notifications received, for pruning the log now and then.
    received: u64,
}

/// Whether `rows` (the log after generation `last`, in order) are every generation from
/// `last + 1` up to at least `current`: nothing pruned at the start, nothing missing at the
/// end (generations commit in order, so the log has no hole but a pruned start).
fn logged_through(last: i64, current: i64, rows: &[(i64, String)]) -> bool {
    let contiguous = rows
        .iter()
        .zip(last + 1..)
        .all(|((g, _), expected)| *g == expected);
    let reached = rows.last().map_or(last, |(g, _)| *g);
    contiguous && reached >= current
}

/// Polls between two prunings of the change log.
const PRUNE_EVERY: u64 = 600;
/// Generations kept behind the newest one a replica applied (a replica further behind
/// reloads everything).
const KEEP_GENERATIONS: i64 = 10_000;

async fn current_generation(db: &Db) -> Result<i64> {
    let (g,): (i64,) =
        sqlx::query_as(db.sql("SELECT generation FROM cluster_generation WHERE id = 1"))
            .fetch_one(&db.pool)
            .await?;
    Ok(g)
}

async fn changes_after(db: &Db, last: i64) -> Result<Vec<(i64, String)>> {
    Ok(sqlx::query_as(db.sql(
        "SELECT generation, payload FROM cluster_changes WHERE generation > ? ORDER BY generation",
    ))
    .bind(last)
    .fetch_all(&db.pool)
    .await?)
}

/// Deletes old entries of the change log. Not federation state (nothing in a snapshot comes
/// from it), so not a `Write`: a single idempotent statement any replica may run.
async fn prune(db: &Db, last: i64) {
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

/// The listener connection's options: the database of `settings`, named after `origin`.
fn listener_options(settings: &Settings, origin: u64) -> Result<PgConnectOptions> {
    let opts: PgConnectOptions = settings
        .storage_url()
        .parse()
        .map_err(|e: sqlx::Error| Error::Internal(format!("cluster listener: {e}")))?;
    Ok(opts.application_name(&listener_name(origin)))
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
        let a = decode(&encode(7, EntityNo::DEFAULT, &c, None));
        assert_eq!((a.origin, a.all, a.changes), (7, false, c.clone()));
        assert_eq!(a.entity, 1);
        let three = EntityNo::new(3).unwrap();
        let p = encode(7, three, &c, None);
        assert!(p.contains("\"entity\":3"), "{p}");
        assert_eq!(decode(&p).entity, 3);
        // An announcement of an earlier release names no entity: the default one.
        assert_eq!(decode("{\"origin\":7}").entity, 1);

        let mut big = Changes::default();
        for i in 0..1_000 {
            big.subordinate(&format!("https://leaf-{i}.example"));
        }
        let p = encode(7, three, &big, Some(42));
        assert!(p.len() < 100, "{p}");
        let a = decode(&p);
        assert!(a.all && a.origin == 7 && a.entity == 3);
        assert_eq!(
            a.generation,
            Some(42),
            "a notification keeps its place in the log"
        );
        assert_eq!(decode(&encode(7, three, &c, Some(9))).generation, Some(9));
        assert_eq!(decode(&encode(7, three, &c, None)).generation, None);

        assert!(decode("not json").all, "unreadable: reload everything");
    }

    #[test]
    fn the_log_serves_a_catch_up_only_when_it_holds_every_missed_generation() {
        let rows =
            |gs: &[i64]| -> Vec<(i64, String)> { gs.iter().map(|g| (*g, String::new())).collect() };
        assert!(logged_through(5, 5, &rows(&[])), "nothing missed");
        assert!(logged_through(5, 8, &rows(&[6, 7, 8])));
        assert!(
            logged_through(5, 7, &rows(&[6, 7, 8])),
            "committed after the generation was read"
        );
        assert!(!logged_through(5, 8, &rows(&[7, 8])), "6 was pruned");
        assert!(!logged_through(5, 8, &rows(&[6, 8])), "a hole");
        assert!(
            !logged_through(5, 9, &rows(&[6, 7, 8])),
            "9 is not in the log"
        );
        assert!(!logged_through(5, 6, &rows(&[])), "6 is not in the log");
    }
}
