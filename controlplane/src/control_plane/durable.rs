//! Group commit on the embedded SQLite (see [`crate::db::wal`] for the durability argument).
//!
//! A [`super::Write`] commits its own transaction under the writer lock without an fsync,
//! hands what it touched to [`GroupCommit::committed`] (which numbers it), releases the writer
//! lock and waits until [`GroupCommit::wait`] says its number is durable and published. One
//! task ([`spawn`]) repeatedly takes everything committed so far, fsyncs the WAL once for all
//! of it, publishes the merged changes under the writer lock (so the snapshot never shows a
//! write before it is durable), and then wakes every request waiting on those numbers. While
//! it syncs, the next writers commit and form the next group: with N concurrent writers one
//! fsync serves up to N writes.
//!
//! The task, not the request, finishes a group: a request whose future is dropped (client
//! gone) after its commit still has its write synced and published.
//!
//! A second task ([`spawn`] too) checkpoints the WAL when the group commit finds it past
//! [`wal::CHECKPOINT_AT`] and at least every [`wal::CHECKPOINT_EVERY`], on a pooled
//! connection, beside the writes instead of inside one of them (see [`crate::db::wal`]).
//!
//! If an fsync fails, what the kernel dropped cannot be known (a later fsync may succeed
//! without it), so from then on every write waiting for durability fails (500) until restart,
//! as PostgreSQL stops on such an error.

use std::sync::{Arc, Mutex, Weak};

use tokio::sync::{Notify, watch};

use super::{Changes, ControlPlane};
use crate::db::wal::{self, Wal};
use crate::error::{Error, Result};

/// Commits waiting for their fsync, and the outcome of those done.
#[derive(Debug)]
pub(super) struct GroupCommit {
    wal: Arc<Wal>,
    queue: Mutex<Queue>,
    wake: Notify,
    /// The WAL passed [`wal::CHECKPOINT_AT`].
    checkpoint_due: Notify,
    done: watch::Sender<Synced>,
    /// How many fsyncs were made (tests check that writes share them).
    syncs: std::sync::atomic::AtomicU64,
}

/// Commits numbered 1, 2, … in commit order; `changes` merges those after `taken`.
#[derive(Debug, Default)]
struct Queue {
    committed: u64,
    changes: Changes,
    closed: bool,
}

/// What is durable and published: every commit numbered up to `through`; from `failed_from`
/// on (an fsync failed), nothing is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Synced {
    pub through: u64,
    pub failed_from: Option<u64>,
}

impl Synced {
    /// The outcome for commit `seq`, once `through` reached it.
    fn outcome(&self, seq: u64) -> Option<Result<()>> {
        if self.through < seq {
            return None;
        }
        Some(match self.failed_from {
            Some(f) if f <= seq => Err(Error::Internal(
                "the database could not make the write durable (fsync failed); restart the \
                 service"
                    .into(),
            )),
            _ => Ok(()),
        })
    }

    /// The state after a group up to `target` was synced (`ok`) or not.
    fn after(self, target: u64, ok: bool) -> Self {
        let failed_from = match (self.failed_from, ok) {
            (Some(f), _) => Some(f),
            (None, true) => None,
            (None, false) => Some(self.through + 1),
        };
        Self {
            through: target.max(self.through),
            failed_from,
        }
    }
}

impl GroupCommit {
    pub(super) fn new(wal: Arc<Wal>) -> Self {
        Self {
            wal,
            queue: Mutex::new(Queue::default()),
            wake: Notify::new(),
            checkpoint_due: Notify::new(),
            done: watch::Sender::new(Synced::default()),
            syncs: Default::default(),
        }
    }

    /// How many fsyncs of the WAL were made.
    #[cfg(test)]
    pub(super) fn syncs(&self) -> u64 {
        self.syncs.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records a transaction just committed (call under the writer lock, right after the
    /// commit, so that numbers follow commit order) with what it touched; returns its number.
    pub(super) fn committed(&self, changes: Changes) -> u64 {
        let seq = {
            let mut q = self.queue();
            q.committed += 1;
            q.changes.absorb(changes);
            q.committed
        };
        self.wake.notify_one();
        seq
    }

    /// Waits until commit `seq` is durable and published (without the writer lock).
    pub(super) async fn wait(&self, seq: u64) -> Result<()> {
        let mut rx = self.done.subscribe();
        loop {
            if let Some(r) = rx.borrow_and_update().outcome(seq) {
                return r;
            }
            if rx.changed().await.is_err() {
                return Err(Error::Internal("the group commit task stopped".into()));
            }
        }
    }

    /// Stops the task (the control plane is going away).
    pub(super) fn close(&self) {
        self.queue().closed = true;
        self.wake.notify_one();
        self.checkpoint_due.notify_one();
    }

    /// What to sync next: the last commit's number and the merged changes since the previous
    /// group; `None` when nothing is waiting.
    fn take(&self, synced: u64) -> Option<(u64, Changes)> {
        let mut q = self.queue();
        (q.committed > synced).then(|| (q.committed, std::mem::take(&mut q.changes)))
    }

    fn is_closed(&self) -> bool {
        self.queue().closed
    }
}

/// The group commit task of `cp` (which holds `gc`) and its checkpointer; they end when the
/// control plane is closed or dropped.
pub(super) fn spawn(cp: Weak<ControlPlane>, gc: Arc<GroupCommit>) {
    tokio::spawn(checkpoints(cp.clone(), gc.clone()));
    tokio::spawn(async move {
        let mut state = Synced::default();
        loop {
            while let Some((target, changes)) = gc.take(state.through) {
                let wal = gc.wal.clone();
                gc.syncs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let asked = pharos_shared::time::Stopwatch::start();
                let ok = match tokio::task::spawn_blocking(move || wal.sync()).await {
                    Ok(Ok(size)) => {
                        if size > wal::CHECKPOINT_AT {
                            gc.checkpoint_due.notify_one();
                        }
                        true
                    }
                    Ok(Err(e)) => {
                        tracing::error!(error = %e, "fsync of the SQLite WAL failed; writes fail until restart");
                        false
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "fsync of the SQLite WAL did not finish");
                        false
                    }
                };
                super::write::slow("the group's fsync of the WAL", asked);
                // Published even when the fsync failed: the snapshot follows what the database
                // holds; only the acknowledgement is withheld.
                if let Some(cp) = cp.upgrade() {
                    let asked = pharos_shared::time::Stopwatch::start();
                    let _lock = cp.write.lock().await;
                    super::write::slow("the group's wait for the writer lock", asked);
                    let asked = pharos_shared::time::Stopwatch::start();
                    cp.publish(changes).await;
                    super::write::slow("publishing the group", asked);
                }
                state = state.after(target, ok);
                gc.done.send_replace(state);
            }
            if gc.is_closed() {
                return;
            }
            gc.wake.notified().await;
        }
    });
}

/// Checkpoints the WAL when the group commit asks, and every [`wal::CHECKPOINT_EVERY`].
async fn checkpoints(cp: Weak<ControlPlane>, gc: Arc<GroupCommit>) {
    loop {
        tokio::select! {
            _ = gc.checkpoint_due.notified() => {}
            _ = tokio::time::sleep(wal::CHECKPOINT_EVERY) => {}
        }
        if gc.is_closed() {
            return;
        }
        let Some(cp) = cp.upgrade() else { return };
        let asked = pharos_shared::time::Stopwatch::start();
        match wal::checkpoint(&cp.db.pool).await {
            Ok((log, done)) => {
                let took_ms = asked.elapsed().as_millis() as u64;
                tracing::debug!(frames = log, checkpointed = done, took_ms, "WAL checkpoint");
            }
            Err(e) => tracing::warn!(error = %e, "WAL checkpoint failed; retried later"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commit_is_done_once_its_group_is_synced() {
        let s = Synced::default();
        assert!(s.outcome(1).is_none());
        let s = s.after(3, true);
        assert!(s.outcome(1).is_some_and(|r| r.is_ok()));
        assert!(s.outcome(3).is_some_and(|r| r.is_ok()));
        assert!(s.outcome(4).is_none());
    }

    #[test]
    fn a_failed_fsync_fails_its_group_and_every_later_one() {
        let s = Synced::default().after(2, true).after(5, false);
        assert!(s.outcome(2).is_some_and(|r| r.is_ok()));
        for seq in 3..=5 {
            assert!(s.outcome(seq).is_some_and(|r| r.is_err()), "{seq}");
        }
        let s = s.after(9, true);
        assert!(s.outcome(9).is_some_and(|r| r.is_err()));
        assert!(s.outcome(2).is_some_and(|r| r.is_ok()));
    }

    #[tokio::test]
    async fn commits_are_numbered_in_order_and_taken_as_one_group() {
        let gc = GroupCommit {
            wal: Arc::new(Wal::for_tests()),
            queue: Mutex::new(Queue::default()),
            wake: Notify::new(),
            checkpoint_due: Notify::new(),
            done: watch::Sender::new(Synced::default()),
            syncs: Default::default(),
        };
        assert!(gc.take(0).is_none());
        let mut a = Changes::default();
        a.subordinate("https://a.example");
        let mut b = Changes::default();
        b.subordinate("https://b.example");
        assert_eq!(gc.committed(a), 1);
        assert_eq!(gc.committed(b), 2);
        let (target, changes) = gc.take(0).unwrap();
        assert_eq!(target, 2);
        let mut both = Changes::default();
        both.subordinate("https://a.example");
        both.subordinate("https://b.example");
        assert_eq!(changes, both);
        assert!(gc.take(2).is_none());
        assert_eq!(gc.committed(Changes::default()), 3);
        assert_eq!(gc.take(2).map(|t| t.0), Some(3));
    }
}
