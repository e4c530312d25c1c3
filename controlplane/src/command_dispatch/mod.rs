//! The control plane's end of the command channel (`pharos_runtime::command`).
//!
//! One dispatcher task takes commands off the channel and admits or refuses each at once; it
//! never awaits anything but the next command, so the channel drains as fast as it fills and
//! the data plane's `try_send` fails only under a burst the dispatcher cannot even look at.
//! Each command kind has its own bound, and an admitted command runs in a task of its own
//! holding its share until it replies:
//!
//! - jwks_update_trigger: one fetch slot of the refreshers ([`Refreshers::try_fetch_permit`],
//!   shared with the polls, `federation.refresh_concurrency`), and single flight per
//!   subordinate ([`Flights`]): a trigger naming a subordinate already being fetched waits for
//!   that fetch's outcome instead of starting another, without a task of its own.
//! - jwks_update: [`PUSHES_AT_ONCE`] (each takes the writer lock; more would only queue).
//! - client assertion `jti` records: [`JTI_RECORDS_AT_ONCE`] (one insert each).
//! - issued trust mark records: [`MARK_RECORDS_AT_ONCE`]; trust mark requests:
//!   [`MARK_REQUESTS_AT_ONCE`] (each may take the writer lock; more would only queue; a
//!   request fetches the subject's Entity Configuration first, and pending subjects are
//!   capped per type by `federation.trust_mark_pending_max`).
//! - enroll and enroll_request: [`enroll::ENROLLMENTS_AT_ONCE`] (a fetch and a check each)
//!   and single flight per entity ([`enroll`]).
//! - trust mark eligibility checks: [`eligibility::CHECKS_AT_ONCE`], single flight per
//!   (type, subject), cached verdicts answered without a slot ([`eligibility`]).
//! - on-demand entity collections: `collector::demand::COLLECTIONS_AT_ONCE` walks, single
//!   flight per Trust Anchor, results cached briefly (`collector::demand`).
//!
//! A command over its kind's bound is answered [`Refused::Busy`] at once (the data plane
//! renders 503 `temporarily_unavailable`). So the number of tasks and outbound connections
//! stays fixed however many requests arrive.

pub mod eligibility;
pub mod enroll;
pub mod trust_marks;

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod eligibility_tests;
#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod enroll_tests;
#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;
#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod trust_marks_tests;

use std::sync::Arc;
use std::time::Duration;

use pharos_runtime::command::{
    Command, HistoryError, JtiError, Recorded, Refused, Reply, TriggerError,
};
use pharos_runtime::single_flight::Flights;
use pharos_shared::chain::Fetcher;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::control_plane::ControlPlane;
use crate::db;
use crate::refresh::Refreshers;
use eligibility::Eligibility;

/// Pushed key sets verified and stored at once (each holds the writer lock while it works).
pub const PUSHES_AT_ONCE: usize = 8;
/// Client assertion identifiers recorded at once (one small insert each).
pub const JTI_RECORDS_AT_ONCE: usize = 64;
/// Issued trust marks recorded at once (each takes the writer lock for one insert).
pub const MARK_RECORDS_AT_ONCE: usize = 64;
/// Trust mark requests stored at once (each takes the writer lock).
pub const MARK_REQUESTS_AT_ONCE: usize = 8;
/// Subordinate histories read at once (one indexed read each; the data plane caches answers).
pub const HISTORIES_AT_ONCE: usize = 8;
/// Triggers that may wait for one subordinate's fetch (each is one stored reply channel).
pub const TRIGGER_WAITERS: usize = 1_024;

/// The outcome a trigger's waiters share.
type TriggerOutcome = Result<bool, TriggerError>;

/// Admits commands against their kind's bound (see the module documentation).
#[derive(Debug)]
pub struct Dispatcher<F> {
    refreshers: Arc<Refreshers<F>>,
    triggers: Arc<Flights<String, TriggerOutcome>>,
    pushes: Arc<Semaphore>,
    jti_records: Arc<Semaphore>,
    mark_records: Arc<Semaphore>,
    mark_requests: Arc<Semaphore>,
    histories: Arc<Semaphore>,
    enrollments: enroll::Enrollments,
    eligibility: Eligibility,
    collections: Arc<crate::collector::demand::OnDemand>,
}

impl<F: Fetcher + 'static> Dispatcher<F> {
    /// A dispatcher running triggers and pushes on `refreshers` (and its control plane).
    pub fn new(refreshers: Arc<Refreshers<F>>) -> Self {
        Self {
            collections: crate::collector::demand::OnDemand::new(refreshers.control().clone()),
            refreshers,
            triggers: Flights::new(TRIGGER_WAITERS),
            pushes: Arc::new(Semaphore::new(PUSHES_AT_ONCE)),
            jti_records: Arc::new(Semaphore::new(JTI_RECORDS_AT_ONCE)),
            mark_records: Arc::new(Semaphore::new(MARK_RECORDS_AT_ONCE)),
            mark_requests: Arc::new(Semaphore::new(MARK_REQUESTS_AT_ONCE)),
            histories: Arc::new(Semaphore::new(HISTORIES_AT_ONCE)),
            enrollments: enroll::Enrollments::default(),
            eligibility: Eligibility::default(),
        }
    }

    /// Eligibility checks in progress (tests and diagnostics).
    pub fn checks_in_flight(&self) -> usize {
        self.eligibility.in_flight()
    }

    /// Triggers whose fetch is in progress (tests and diagnostics).
    pub fn triggers_in_flight(&self) -> usize {
        self.triggers.len()
    }

    /// Enrollments in progress (tests and diagnostics).
    pub fn enrollments_in_flight(&self) -> usize {
        self.enrollments.in_flight()
    }

    /// Starts `cmd` in a task of its own if its kind has room, else refuses it. Never waits.
    pub fn admit(&self, cmd: Command) {
        match cmd {
            Command::JwksUpdateTrigger { sub, actor, reply } => self.trigger(sub, actor, reply),
            Command::JwksUpdate { pushed, reply } => {
                let Ok(permit) = self.pushes.clone().try_acquire_owned() else {
                    let _ = reply.send(Err(Refused::Busy.into()));
                    return;
                };
                let cp = self.refreshers.control().clone();
                tokio::spawn(async move {
                    let result = cp.push_jwks(&pushed, cp.now()).await;
                    drop(permit);
                    let _ = reply.send(result);
                });
            }
            Command::RecordJti {
                jti,
                expires_at,
                reply,
            } => {
                let Ok(permit) = self.jti_records.clone().try_acquire_owned() else {
                    let _ = reply.send(Err(Refused::Busy.into()));
                    return;
                };
                let cp = self.refreshers.control().clone();
                tokio::spawn(async move {
                    let result = record_jti(&cp, &jti, expires_at).await;
                    drop(permit);
                    let _ = reply.send(result);
                });
            }
            Command::RecordIssuedTrustMark {
                mark,
                checked,
                reply,
            } => {
                let Ok(permit) = self.mark_records.clone().try_acquire_owned() else {
                    let _ = reply.send(Err(Refused::Busy.into()));
                    return;
                };
                let cp = self.refreshers.control().clone();
                tokio::spawn(async move {
                    let result = trust_marks::record_issued(&cp, &mark, checked).await;
                    drop(permit);
                    let _ = reply.send(result);
                });
            }
            Command::RequestTrustMark {
                trust_mark_type,
                sub,
                actor,
                reply,
            } => {
                let Ok(permit) = self.mark_requests.clone().try_acquire_owned() else {
                    let _ = reply.send(Err(Refused::Busy.into()));
                    return;
                };
                let cp = self.refreshers.control().clone();
                let fetcher = self.refreshers.fetcher().clone();
                tokio::spawn(async move {
                    let actor = actor.as_deref();
                    let result =
                        trust_marks::request(&cp, &*fetcher, &trust_mark_type, &sub, actor).await;
                    drop(permit);
                    let _ = reply.send(result);
                });
            }
            Command::Enroll { enrollment, reply } => {
                let cp = self.refreshers.control().clone();
                let fetcher = self.refreshers.fetcher().clone();
                self.enrollments.admit(cp, fetcher, enrollment, reply);
            }
            Command::CheckEligibility {
                trust_mark_type,
                sub,
                reply,
            } => {
                let (cp, fetcher) = (self.refreshers.control(), self.refreshers.fetcher());
                self.eligibility
                    .admit(cp, fetcher, trust_mark_type, sub, reply);
            }
            Command::CollectEntities {
                trust_anchor,
                reply,
            } => self.collections.admit(trust_anchor, reply),
            Command::SubordinateHistory { sub, reply } => {
                let Ok(permit) = self.histories.clone().try_acquire_owned() else {
                    let _ = reply.send(Err(Refused::Busy.into()));
                    return;
                };
                let cp = self.refreshers.control().clone();
                tokio::spawn(async move {
                    let result = history(&cp, &sub).await;
                    drop(permit);
                    let _ = reply.send(result);
                });
            }
        }
    }

    /// Joins the flight for `sub`, or leads a new one if a fetch slot is free.
    fn trigger(&self, sub: String, actor: Option<String>, reply: Reply<bool, TriggerError>) {
        let Some((lead, slot)) = self.triggers.lead_with(
            &sub,
            reply,
            || Err(Refused::Busy.into()),
            || self.refreshers.try_fetch_permit(),
        ) else {
            return;
        };
        let r = self.refreshers.clone();
        tokio::spawn(async move {
            let now = r.control().now();
            let outcome = r.trigger(&slot, &sub, actor.as_deref(), now).await;
            drop(slot);
            lead.finish(outcome);
        });
    }
}

/// Receives commands until `stop` is cancelled or every sender is gone.
pub fn spawn<F: Fetcher + 'static>(
    refreshers: Arc<Refreshers<F>>,
    mut rx: pharos_runtime::command::CommandQueue,
    stop: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    let dispatcher = Dispatcher::new(refreshers);
    tokio::spawn(async move {
        loop {
            let cmd = tokio::select! {
                c = rx.recv() => c,
                _ = stop.cancelled() => None,
            };
            let Some(cmd) = cmd else { break };
            dispatcher.admit(cmd);
        }
    })
}

/// Subordinate `sub`'s `created_at` and recorded history; `None` when there is none.
async fn history(
    cp: &ControlPlane,
    sub: &str,
) -> Result<Option<(i64, Vec<Recorded>)>, HistoryError> {
    let read = async {
        let Some(row) =
            db::subordinates::get(&cp.db, db::subordinates::SubKey::EntityId(sub)).await?
        else {
            return Ok(None);
        };
        let rows = db::subordinate_events::public_rows(&cp.db, row.id).await?;
        Ok::<_, crate::error::Error>(Some((row.created_at, rows)))
    };
    read.await.map_err(|e| {
        tracing::error!(error = %e, "cannot read a subordinate's history");
        if e.is_unavailable() {
            HistoryError::Refused(Refused::Unavailable)
        } else {
            HistoryError::Internal
        }
    })
}

/// Records a client assertion's `jti`; `Ok(false)` when it was used before.
async fn record_jti(cp: &ControlPlane, jti: &str, expires_at: i64) -> Result<bool, JtiError> {
    db::jti::record(&cp.db, jti, expires_at, cp.now())
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "cannot record a client assertion jti");
            if e.is_unavailable() {
                JtiError::Refused(Refused::Unavailable)
            } else {
                JtiError::Internal
            }
        })
}

/// Deletes expired `jti` records every `interval` (db replay store only), leader-run: a write
/// (not just one statement on the pool) so that its fence refuses a deposed leader's delete.
pub fn spawn_jti_cleanup(
    cp: Arc<ControlPlane>,
    interval: Duration,
    stop: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    spawn_periodic_cleanup(cp, interval, stop, "expired jti records", |cp| async move {
        let fence = cp.fence();
        let mut w = cp.write(None).await;
        let n = db::jti::cleanup(&cp.db, w.tx().await?, cp.now()).await?;
        fence.check(w.tx().await?).await?;
        w.commit().await?;
        Ok(n)
    })
}

/// Runs the deletion `job` every `interval` (at least a second) until `stop`, logging what
/// it deleted (`what`) and why it failed: the shape of every expiry cleanup of the control
/// plane.
pub(crate) fn spawn_periodic_cleanup<F, Fut>(
    cp: Arc<ControlPlane>,
    interval: Duration,
    stop: CancellationToken,
    what: &'static str,
    job: F,
) -> tokio::task::JoinHandle<()>
where
    F: Fn(Arc<ControlPlane>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = crate::Result<u64>> + Send,
{
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(interval.max(Duration::from_secs(1)));
        loop {
            tokio::select! {
                _ = ticker.tick() => {}
                _ = stop.cancelled() => break,
            }
            match job(cp.clone()).await {
                Ok(n) if n > 0 => tracing::debug!(deleted = n, "{what} deleted"),
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "deleting {what} failed"),
            }
        }
    })
}
