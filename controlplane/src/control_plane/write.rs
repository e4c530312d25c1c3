//! [`Write`]: the one way to change federation state.
//!
//! ```text
//! let mut w = cp.write(actor).await;          // writer lock
//! repo::update(&cp.db, w.tx().await?, …)?;    // transaction, opened on first use
//! w.subordinate_event(id, status, "…", None).await?; // history, same transaction, with the actor
//! w.touch_subordinate(entity_id);             // what the snapshot must reload
//! w.commit().await?;                          // commit, then publish exactly that
//! ```
//!
//! Dropping a `Write` without `commit()` rolls the transaction back and publishes nothing.
//!
//! `commit()` returns once the write is durable and published. On an SQLite file the commit
//! itself does not fsync: the writer lock is released at once and the next writers commit
//! while the group commit task fsyncs the WAL once for all of them (`durable.rs`); each
//! `commit()` returns after the fsync that covers it.
//! Reads that decide the write (does it exist? what is stored?) happen after `cp.write()`, so
//! no other writer can change them before the commit.

use std::pin::Pin;
use std::sync::Arc;

use pharos_shared::subordinate::SubordinateStatus;
use sqlx::{Any, AnyConnection, Transaction};
use tokio::sync::MutexGuard;
use tracing::Instrument as _;

use super::{Changes, ControlPlane, Section};
use crate::db::Db;
use crate::db::subordinate_events::{self, NewEvent};
use crate::db::trust_mark_events::{self, NewTrustMarkEvent};
use crate::error::Result;

/// Work that must come first in every write transaction begun while it is in scope (see
/// [`with_begin_hook`]). The Admin API's preconditions are one: the control plane calls them
/// without knowing the Admin API.
pub trait BeginHook: Send + Sync {
    /// Runs on `tx` right after `BEGIN`; an error ends the write before it read anything.
    fn on_begin<'a>(
        &'a self,
        db: &'a Db,
        tx: &'a mut AnyConnection,
    ) -> Pin<Box<dyn Future<Output = Result<()>> + Send + 'a>>;
}

tokio::task_local! {
    static BEGIN_HOOK: Arc<dyn BeginHook>;
}

/// Runs `work` with `hook` called by every write transaction `work` begins (a request's
/// writes run in the request's task, so the scope is the request).
pub async fn with_begin_hook<F: Future>(hook: Arc<dyn BeginHook>, work: F) -> F::Output {
    BEGIN_HOOK.scope(hook, work).await
}

/// A change in progress; see the module documentation.
#[derive(Debug)]
pub struct Write<'a> {
    cp: &'a ControlPlane,
    /// The writer lock, released by `commit()` before it waits for the group's fsync.
    lock: Option<MutexGuard<'a, ()>>,
    tx: Option<Transaction<'static, Any>>,
    changes: Changes,
    actor: Option<String>,
    /// The change's trace span (issue 41), from the writer lock to commit or rollback; a
    /// no-op unless traces are exported.
    span: tracing::Span,
}

impl<'a> Write<'a> {
    pub(super) fn new(
        cp: &'a ControlPlane,
        lock: MutexGuard<'a, ()>,
        actor: Option<String>,
    ) -> Self {
        Self {
            cp,
            lock: Some(lock),
            tx: None,
            changes: Changes::default(),
            actor,
            span: pharos_shared::trace_span!(
                "db.write",
                db.system.name = cp.db.dialect.system_name()
            ),
        }
    }

    /// The change's transaction, begun on first use (on SQLite with the write lock taken at
    /// once: see [`crate::db::Db::begin`]).
    ///
    /// Inside a [`with_begin_hook`] scope (an Admin API write: the cluster-wide write lock and
    /// the request's `If-Match`) the hook runs first on the new transaction, so that what the
    /// handler reads next is current on every replica.
    pub async fn tx(&mut self) -> Result<&mut AnyConnection> {
        let tx = match self.tx.take() {
            Some(tx) => tx,
            None => {
                let asked = pharos_shared::time::Stopwatch::start();
                let mut tx = self
                    .cp
                    .db
                    .begin_write()
                    .await
                    .inspect_err(|e| self.cp.db.note(e))?;
                slow("beginning the write transaction", asked);
                if let Ok(hook) = BEGIN_HOOK.try_with(Arc::clone) {
                    hook.on_begin(&self.cp.db, &mut tx)
                        .await
                        .inspect_err(|e| self.cp.db.note_error(e))?;
                }
                tx
            }
        };
        Ok(&mut **self.tx.insert(tx))
    }

    /// Who makes the change, as recorded in history events.
    pub fn actor(&self) -> Option<&str> {
        self.actor.as_deref()
    }

    /// The snapshot section `s` must be reloaded on commit.
    pub fn touch(&mut self, s: Section) {
        self.changes.section(s);
    }

    /// The subordinate `entity_id` must be reloaded on commit (and only it).
    pub fn touch_subordinate(&mut self, entity_id: &str) {
        self.changes.subordinate(entity_id);
    }

    /// The issued trust mark instance `jti` must be (re)loaded on commit (and only it).
    pub fn touch_issued_mark(&mut self, jti: &str) {
        self.changes.issued_mark(jti);
    }

    /// The subject `entity_id` of `trust_mark_type`'s issuance spec must be (re)loaded on
    /// commit (and only it: no other subject or spec gets a new version).
    pub fn touch_mark_subject(&mut self, trust_mark_type: &str, entity_id: &str) {
        self.changes.mark_subject(trust_mark_type, entity_id);
    }

    /// A hosted entity was created or deleted: other replicas start or stop serving it.
    pub fn touch_hosted_entities(&mut self) {
        self.changes.hosted_entities();
    }

    /// Trust Anchor `trust_anchor`'s entity collection must be reloaded on commit (and only it).
    pub fn touch_collection(&mut self, trust_anchor: &str) {
        self.changes.collection(trust_anchor);
    }

    /// Records a history event of subordinate `id` (status after the change) in this
    /// transaction, with this write's actor.
    pub async fn subordinate_event(
        &mut self,
        id: i64,
        status: SubordinateStatus,
        kind: &str,
        message: Option<String>,
    ) -> Result<()> {
        let now = self.cp.now();
        let actor = self.actor.clone();
        let db = self.cp.db.clone();
        let c = self.tx().await?;
        let e = NewEvent {
            kind,
            status: Some(status.as_str()),
            message,
            actor: actor.as_deref(),
        };
        subordinate_events::record(&db, c, id, now, &e).await
    }

    /// Records a history event of trust mark type `trust_mark_type` (of its `subject`, when
    /// given; `status` = the subject's status after the change) in this transaction, with this
    /// write's actor.
    pub async fn trust_mark_event(
        &mut self,
        trust_mark_type: &str,
        subject: Option<&str>,
        status: Option<&str>,
        kind: &str,
        message: Option<String>,
    ) -> Result<()> {
        let now = self.cp.now();
        let actor = self.actor.clone();
        let db = self.cp.db.clone();
        let c = self.tx().await?;
        let e = NewTrustMarkEvent {
            trust_mark_type,
            subject,
            kind,
            status,
            message,
            actor: actor.as_deref(),
        };
        trust_mark_events::record(&db, c, now, &e).await
    }

    /// Commits the transaction (if one was begun), then publishes what was touched; returns
    /// once the write is durable and published. A failed publish does not fail the write: it
    /// is committed, and the snapshot catches up (see [`ControlPlane::reconcile`]).
    ///
    /// On an SQLite file the commit does not wait for the disk under the writer lock: the lock
    /// is released and the group commit task fsyncs and publishes this write together with
    /// those committed meanwhile (`durable.rs`). Elsewhere the commit is durable by itself and
    /// the write is published under the writer lock.
    ///
    /// With `cluster.enabled` the other replicas are told what was touched in the same
    /// transaction (`pg_notify`, or the change log on MariaDB): delivered on commit, never for
    /// a rolled-back write.
    pub async fn commit(self) -> Result<()> {
        let span = pharos_shared::trace_span!(parent: &self.span, "db.commit");
        self.commit_traced().instrument(span).await
    }

    async fn commit_traced(mut self) -> Result<()> {
        let changes = std::mem::take(&mut self.changes);
        let Some(mut tx) = self.tx.take() else {
            self.cp.publish(changes).await;
            return Ok(());
        };
        stamp(&self.cp.db, &mut tx, &changes, self.cp.now()).await?;
        if self.cp.announces() && !changes.is_empty() {
            self.cp.announce(&mut tx, &changes).await?;
        }
        let asked = pharos_shared::time::Stopwatch::start();
        tx.commit().await.inspect_err(|e| self.cp.db.note(e))?;
        slow("committing", asked);
        match &self.cp.group {
            Some(group) => {
                let seq = group.committed(changes);
                drop(self.lock.take());
                let asked = pharos_shared::time::Stopwatch::start();
                let synced = group.wait(seq).await;
                slow("waiting for the group commit (fsync and publish)", asked);
                synced
            }
            None => {
                self.cp.publish(changes).await;
                Ok(())
            }
        }
    }
}

/// Moves the change times that the extended listing reports and filters by: `updated_at` of
/// every subordinate the write touched, and the general settings' `changed_at` when they
/// changed (every statement changes with them). Here, once, rather than in each write path,
/// so that no change to what a statement says leaves its time behind.
async fn stamp(db: &Db, c: &mut AnyConnection, changes: &Changes, now: i64) -> Result<()> {
    for entity_id in changes.touched_subordinates() {
        crate::db::subordinates::stamp_updated(db, c, entity_id, now).await?;
    }
    if changes.touches(Section::SubordinateGeneral) {
        let at = serde_json::Value::from(now);
        crate::db::settings::set(db, c, crate::db::settings::SUBORDINATE, "changed_at", &at)
            .await?;
    }
    Ok(())
}

/// A phase of a write slower than this is logged: a write that waits seconds is one an
/// operator must be able to explain (the request timeout answers 408 at 20 s by default).
const SLOW_PHASE: std::time::Duration = std::time::Duration::from_secs(1);

/// Logs `phase` when it took longer than [`SLOW_PHASE`] since `since`.
pub(super) fn slow(phase: &'static str, since: pharos_shared::time::Stopwatch) {
    let took = since.elapsed();
    if took > SLOW_PHASE {
        tracing::warn!(
            phase,
            took_ms = took.as_millis() as u64,
            "slow federation write"
        );
    }
}
