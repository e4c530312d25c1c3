//! Keeping other entities' keys fresh: the trust anchor and subordinate key refreshers, the
//! on-demand refresh of the jwks_update_trigger endpoint and the signed push of the
//! jwks_update endpoint; and keeping the trust marks we hold fresh (`held_marks`).
//!
//! One background task drives all refreshers: it calls [`Refreshers::tick`] whenever the
//! earliest entry of any [`schedule::Schedule`] is due, or when the control plane reports
//! a change of trust anchors, subordinates or held trust marks. Tests call `tick(now)` directly with a manual
//! clock and an in-memory fetcher, so the schedule is tested without sleeping.
//!
//! Every Entity Configuration fetched here — anchor polls, subordinate polls, triggers — holds
//! a [`FetchPermit`] of one semaphore of `federation.refresh_concurrency` slots, so the number
//! of outbound connections the refreshers open is bounded however the work arrives. Polls wait
//! for a slot (they are background work); triggers take one only if it is free and are refused
//! otherwise (see `crate::command_dispatch`), so a flood of triggers never queues.

mod anchors;
pub mod held_marks;
pub mod push;
pub mod schedule;
mod subordinates;

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;
#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests_subordinates;

use std::sync::Arc;
use std::time::Duration;

use pharos_shared::chain::Fetcher;
use pharos_shared::key_update::KeyCheckError;
use tokio::sync::{Mutex, OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::control_plane::ControlPlane;
use schedule::Schedule;

pub use anchors::AnchorPoll;
pub use held_marks::HeldPoll;
pub use subordinates::SubordinatePoll;

/// Longest sleep of the refresher task; it re-checks at least this often.
const MAX_SLEEP: i64 = 3_600;

/// Why a poll did not update keys.
#[derive(Debug, thiserror::Error)]
pub enum PollError {
    /// The Entity Configuration could not be fetched (or had no `exp`, for subordinates).
    #[error("fetch failed: {0}")]
    Fetch(String),
    /// It did not verify with the stored keys.
    #[error("{0}")]
    Signature(String),
    /// It is not a valid Entity Configuration of the entity.
    #[error("invalid entity configuration: {0}")]
    Invalid(String),
    /// The entity is no longer stored.
    #[error("no longer stored")]
    Gone,
    /// Database or snapshot failure.
    #[error(transparent)]
    Internal(#[from] crate::error::Error),
}

impl From<sqlx::Error> for PollError {
    fn from(e: sqlx::Error) -> Self {
        Self::Internal(e.into())
    }
}

impl From<KeyCheckError> for PollError {
    fn from(e: KeyCheckError) -> Self {
        match e {
            KeyCheckError::Invalid(m) => Self::Invalid(m),
            e @ KeyCheckError::Signature(_) => Self::Signature(e.to_string()),
        }
    }
}

/// What a successful poll found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Polled {
    /// Whether the stored keys changed.
    pub changed: bool,
    /// The configuration's `exp`, when it had one.
    pub exp: Option<i64>,
}

/// One of the refreshers' outbound fetch slots; holding one is the right to fetch an Entity
/// Configuration. Taking it as a parameter makes a fetch without a slot a compile error.
#[derive(Debug)]
pub struct FetchPermit {
    /// Held only to be released on drop.
    _slot: OwnedSemaphorePermit,
}

/// Both refreshers and the fetcher they share.
#[derive(Debug)]
pub struct Refreshers<F> {
    cp: Arc<ControlPlane>,
    fetcher: Arc<F>,
    /// The fetch slots (`federation.refresh_concurrency`).
    fetches: Arc<Semaphore>,
    /// Trust anchors polled, by entity identifier.
    pub anchors: Mutex<Schedule<AnchorPoll>>,
    /// Subordinates polled, by entity identifier.
    pub subordinates: Mutex<Schedule<SubordinatePoll>>,
    /// The trust marks we hold, by `trust_mark_type`.
    pub held_marks: Mutex<Schedule<HeldPoll>>,
    booted: std::sync::atomic::AtomicBool,
    /// Failed polls by kind, for `/metrics`.
    pub failures: Arc<Failures>,
}

/// Failed refreshes since start, by kind, and what is failing now, for `/metrics`. The
/// schedules live behind the refreshers' async locks, which a scrape must not wait for, so
/// each tick copies what alerts need here: one figure per polled trust anchor (a handful,
/// configured by the operator) and one count for all subordinates (never one per subordinate:
/// a registry may hold a million).
#[derive(Debug, Default)]
pub struct Failures {
    /// Trust anchor key refreshes.
    pub anchor_keys: std::sync::atomic::AtomicU64,
    /// Subordinate key refreshes.
    pub subordinate_keys: std::sync::atomic::AtomicU64,
    /// Renewals of trust marks we hold.
    pub held_marks: std::sync::atomic::AtomicU64,
    /// Polled subordinates whose last poll failed.
    pub subordinates_failing: std::sync::atomic::AtomicU64,
    /// Subordinates polled (the denominator of `subordinates_failing`).
    pub subordinates_polled: std::sync::atomic::AtomicU64,
    /// Polled trust anchors with their failed polls since their last success.
    anchors: std::sync::Mutex<Vec<(String, u32)>>,
}

impl Failures {
    /// Counts one failure.
    pub fn count(counter: &std::sync::atomic::AtomicU64) {
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Every polled trust anchor with its failed polls since its last success, as of the last
    /// tick.
    pub fn anchors(&self) -> Vec<(String, u32)> {
        // A poisoned lock only means a tick panicked while copying; the figures are whole.
        self.anchors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn set_anchors(&self, anchors: Vec<(String, u32)>) {
        *self.anchors.lock().unwrap_or_else(|e| e.into_inner()) = anchors;
    }
}

impl<F: Fetcher + 'static> Refreshers<F> {
    /// Refreshers over `cp`, fetching with `fetcher`. Nothing is polled before the first tick.
    pub fn new(cp: Arc<ControlPlane>, fetcher: Arc<F>) -> Arc<Self> {
        let slots = cp.settings.federation.refresh_concurrency.max(1) as usize;
        Arc::new(Self {
            cp,
            fetcher,
            fetches: Arc::new(Semaphore::new(slots)),
            anchors: Mutex::new(Schedule::default()),
            subordinates: Mutex::new(Schedule::default()),
            held_marks: Mutex::new(Schedule::default()),
            booted: std::sync::atomic::AtomicBool::new(false),
            failures: Arc::default(),
        })
    }

    /// The control plane refreshed.
    pub fn control(&self) -> &Arc<ControlPlane> {
        &self.cp
    }

    /// The statement fetcher (the data plane's outbound rules in production).
    pub fn fetcher(&self) -> &Arc<F> {
        &self.fetcher
    }

    /// A fetch slot if one is free now (triggers: refused rather than queued).
    pub fn try_fetch_permit(&self) -> Option<FetchPermit> {
        let slot = self.fetches.clone().try_acquire_owned().ok()?;
        Some(FetchPermit { _slot: slot })
    }

    /// A fetch slot, waiting for one (polls).
    pub async fn fetch_permit(&self) -> Result<FetchPermit, PollError> {
        self.fetches
            .clone()
            .acquire_owned()
            .await
            .map(|slot| FetchPermit { _slot: slot })
            // The semaphore is never closed; this would be a bug, not a remote failure.
            .map_err(|e| PollError::Internal(crate::error::Error::Internal(e.to_string())))
    }

    /// Fetch slots free now (tests and diagnostics).
    pub fn free_fetch_slots(&self) -> usize {
        self.fetches.available_permits()
    }

    /// Syncs the schedules with the stored state and polls (or renews) everything due at
    /// `now`.
    pub async fn tick(self: &Arc<Self>, now: i64) {
        if let Err(e) = self.sync(now).await {
            tracing::error!(error = %e, "cannot read what to poll; retrying later");
        }
        // Leader-only work: every write of this tick is fenced by the term it began in.
        let fence = self.cp.fence();
        self.poll_due_anchors(now, &fence).await;
        self.poll_due_subordinates(now, &fence).await;
        self.tick_held_marks(now, &fence).await;
        self.report_failing().await;
    }

    /// Copies what is failing now into [`Failures`] for `/metrics`.
    async fn report_failing(&self) {
        let anchors = self
            .anchors
            .lock()
            .await
            .failures()
            .map(|(id, n)| (id.to_owned(), n))
            .collect();
        self.failures.set_anchors(anchors);
        let (failing, polled) = {
            let s = self.subordinates.lock().await;
            (s.failing(), s.len())
        };
        for (into, n) in [
            (&self.failures.subordinates_failing, failing),
            (&self.failures.subordinates_polled, polled),
        ] {
            into.store(
                u64::try_from(n).unwrap_or(u64::MAX),
                std::sync::atomic::Ordering::Relaxed,
            );
        }
    }

    async fn sync(&self, now: i64) -> crate::error::Result<()> {
        self.sync_anchors(now).await;
        // At boot every polled subordinate is read once; later only the changed ones.
        // After a full reload too (a replica that missed announcements).
        if self.cp.take_resync_all_subordinates()
            || !self.booted.load(std::sync::atomic::Ordering::SeqCst)
        {
            self.sync_all_subordinates(now).await?;
            self.booted.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        self.sync_changed_subordinates(now).await
    }

    /// The earliest due time of any schedule.
    pub async fn next_wake(&self) -> Option<i64> {
        let a = self.anchors.lock().await.next_wake();
        let s = self.subordinates.lock().await.next_wake();
        let h = self.held_marks.lock().await.next_wake();
        [a, s, h].into_iter().flatten().min()
    }

    /// Runs the refreshers until `stop` is cancelled.
    pub fn spawn(self: &Arc<Self>, stop: CancellationToken) -> tokio::task::JoinHandle<()> {
        let me = self.clone();
        tokio::spawn(async move {
            loop {
                let now = me.cp.now();
                me.tick(now).await;
                let now = me.cp.now();
                let wait = me
                    .next_wake()
                    .await
                    .map_or(MAX_SLEEP, |t| (t - now).clamp(0, MAX_SLEEP));
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(wait as u64)) => {}
                    _ = me.cp.refresh_events.notified() => {}
                    _ = stop.cancelled() => break,
                }
            }
        })
    }
}
