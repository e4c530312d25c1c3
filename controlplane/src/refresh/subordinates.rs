//! The subordinate key refresher: one schedule entry per subordinate with
//! `enable_jwks_update` (and status active or pending). Entries start on create, restart when
//! `enable_jwks_update`, `jwks_poll_interval` or the status change, and stop on delete: every
//! subordinate change reaches the control plane's `refresh_subordinate`, which queues the
//! entity for [`Refreshers::sync_changed_subordinates`].
//!
//! The same poll serves the jwks_update_trigger endpoint ([`Refreshers::refresh_holding`]).

use std::sync::Arc;

use pharos_shared::chain::Fetcher;
use pharos_shared::key_update::{check_configuration, check_new_keys};
use pharos_shared::refresh::{describe_change, subordinate_interval};
use pharos_shared::subordinate::SubordinateStatus;

use super::{FetchPermit, PollError, Polled, Refreshers};
use crate::db::subordinates::{self as repo, SubKey, SubordinateRow};
use crate::db::{self};
use crate::error::Result;
use crate::leadership::Fence;

/// The settings a subordinate is polled with; a change restarts its schedule entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubordinatePoll {
    /// `jwks_poll_interval` (0 = derive from `exp`).
    pub jwks_poll_interval: i64,
    /// Its status when the entry (re)started.
    pub status: SubordinateStatus,
}

/// Whether a subordinate is polled, and with what.
pub(super) fn wanted(
    enabled: bool,
    status: SubordinateStatus,
    interval: i64,
) -> Option<SubordinatePoll> {
    let polled = matches!(
        status,
        SubordinateStatus::Active | SubordinateStatus::Pending
    );
    (enabled && polled).then_some(SubordinatePoll {
        jwks_poll_interval: interval,
        status,
    })
}

impl<F: Fetcher + 'static> Refreshers<F> {
    pub(super) async fn sync_all_subordinates(&self, now: i64) -> Result<()> {
        let rows = db::jwks_polling::polled(&self.cp.db).await?;
        let mut s = self.subordinates.lock().await;
        let polled: std::collections::HashSet<&str> =
            rows.iter().map(|r| r.entity_id.as_str()).collect();
        s.retain(|id| polled.contains(id));
        for r in &rows {
            s.sync(
                &r.entity_id,
                wanted(true, r.status, r.jwks_poll_interval),
                now,
            );
        }
        Ok(())
    }

    /// Applies the subordinate changes the control plane reported since the last call.
    pub async fn sync_changed_subordinates(&self, now: i64) -> Result<()> {
        for id in self.cp.take_changed_subordinates() {
            let row = repo::get(&self.cp.db, SubKey::EntityId(&id)).await?;
            let w = row.and_then(|r| wanted(r.enable_jwks_update, r.status, r.jwks_poll_interval));
            let outcome = self.subordinates.lock().await.sync(&id, w, now);
            tracing::debug!(subordinate = %id, ?outcome, "subordinate key polling synced");
        }
        Ok(())
    }

    pub(super) async fn poll_due_subordinates(self: &Arc<Self>, now: i64, fence: &Fence) {
        let due = self.subordinates.lock().await.due(now);
        let mut set = tokio::task::JoinSet::new();
        for (id, settings) in due {
            // The slot is taken before the task exists: all polled subordinates are due
            // together at boot, and waiting here keeps the tasks as few as the slots.
            let slot = match self.fetch_permit().await {
                Ok(p) => p,
                Err(e) => {
                    tracing::error!(error = %e, "no fetch slot; polls retried next tick");
                    break;
                }
            };
            let me = self.clone();
            let fence = fence.clone();
            set.spawn(async move {
                let r = me.refresh_holding(&slot, &id, now, None, &fence).await;
                drop(slot);
                let mut s = me.subordinates.lock().await;
                match r.and_then(|p| p.exp.map(|e| (p, e)).ok_or(no_exp())) {
                    Ok((_, exp)) => {
                        let i = subordinate_interval(settings.jwks_poll_interval, exp, now);
                        s.succeeded(&id, &settings, now, i);
                    }
                    Err(e) => {
                        super::Failures::count(&me.failures.subordinate_keys);
                        let delay = s.failed(&id, &settings, now);
                        tracing::warn!(subordinate = %id, error = %e, retry_in = ?delay, "subordinate key refresh failed");
                    }
                }
            });
        }
        while set.join_next().await.is_some() {}
    }

    /// [`Self::refresh_holding`] once a fetch slot is free.
    pub async fn refresh_subordinate_keys(
        &self,
        id: &str,
        now: i64,
        actor: Option<&str>,
    ) -> std::result::Result<Polled, PollError> {
        let slot = self.fetch_permit().await?;
        self.refresh_holding(&slot, id, now, actor, &Fence::any_replica())
            .await
    }

    /// Fetches subordinate `id`'s configuration, verifies it with the stored keys (or seeds
    /// them when none are stored) and stores the new keys if their `kid`s changed, recording
    /// `jwks_refreshed`. A configuration without `exp` is refused before anything is stored.
    /// The leader's polls pass their `fence` (a deposed leader stores nothing); a trigger or
    /// a push, which any replica answers, passes [`Fence::any_replica`].
    pub async fn refresh_holding(
        &self,
        _slot: &FetchPermit,
        id: &str,
        now: i64,
        actor: Option<&str>,
        fence: &Fence,
    ) -> std::result::Result<Polled, PollError> {
        let before = self.row(id).await?.jwks;
        let jws = self
            .fetcher
            .entity_configuration(id)
            .await
            .map_err(|e| PollError::Fetch(e.to_string()))?;
        let fetched = check_configuration(&jws, id, before.as_ref(), now)?;
        // Stored keys are parsed like the Admin API's: a malformed key is not taken.
        check_new_keys(
            &fetched.jwks,
            Some(&self.cp.settings.federation.accept.key_types),
        )
        .map_err(|e| PollError::Invalid(format!("jwks: {e}")))?;
        if fetched.exp.is_none() {
            return Err(no_exp());
        }
        let mut w = self.cp.write(actor).await;
        let row = self.row(id).await?;
        if row.jwks != before {
            // The keys changed while this fetch was in flight (another poll, a trigger, a push
            // or an administrator): what is stored is at least as new as what was fetched, and
            // an older configuration (it still verifies with a set that kept its key) must not
            // put back the keys it announced.
            return Ok(Polled {
                changed: false,
                exp: fetched.exp,
            });
        }
        let old = row.jwks.clone().unwrap_or_default();
        let Some(message) = describe_change(&old, &fetched.jwks) else {
            return Ok(Polled {
                changed: false,
                exp: fetched.exp,
            });
        };
        let tx = w.tx().await?;
        repo::set_jwks(&self.cp.db, tx, row.id, &fetched.jwks, now).await?;
        w.subordinate_event(row.id, row.status, "jwks_refreshed", Some(message))
            .await?;
        w.touch_subordinate(id);
        fence.check(w.tx().await?).await?;
        w.commit().await?;
        Ok(Polled {
            changed: true,
            exp: fetched.exp,
        })
    }

    async fn row(&self, id: &str) -> std::result::Result<SubordinateRow, PollError> {
        repo::get(&self.cp.db, SubKey::EntityId(id))
            .await?
            .ok_or(PollError::Gone)
    }
}

fn no_exp() -> PollError {
    PollError::Fetch("the entity configuration has no exp".into())
}
