//! The trust anchor key refresher: polls the Entity Configuration of every anchor with
//! `enable_jwks_update`, verifies it with the stored keys (or seeds them on the first poll)
//! and stores a changed key set, database first, then the snapshot's repository.
//!
//! The set of polled anchors is read from the snapshot on every tick, so anchors added,
//! changed or deleted through the Admin API are picked up without a restart.

use std::sync::Arc;

use pharos_shared::chain::Fetcher;
use pharos_shared::key_update::{check_configuration, check_new_keys};
use pharos_shared::refresh::{anchor_interval, kids};

use super::{PollError, Polled, Refreshers};
use crate::control_plane::Section;
use crate::db::trust_anchors::{self, TrustAnchorWrite};
use crate::leadership::Fence;

/// The settings an anchor is polled with; a change restarts its schedule entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnchorPoll {
    /// `key_poll_interval` (0 = derive from `exp`).
    pub key_poll_interval: i64,
}

impl<F: Fetcher + 'static> Refreshers<F> {
    pub(super) async fn sync_anchors(&self, now: i64) {
        let snap = self.cp.snapshot();
        let mut s = self.anchors.lock().await;
        s.retain(|id| snap.trust_anchors.by_id.contains_key(id));
        for (id, ta) in &snap.trust_anchors.by_id {
            let wanted = ta.enable_jwks_update.then_some(AnchorPoll {
                key_poll_interval: ta.key_poll_interval,
            });
            s.sync(id, wanted, now);
        }
    }

    pub(super) async fn poll_due_anchors(self: &Arc<Self>, now: i64, fence: &Fence) {
        let due = self.anchors.lock().await.due(now);
        for (id, settings) in due {
            let result = self.poll_anchor_fenced(&id, now, fence).await;
            let mut s = self.anchors.lock().await;
            match result {
                Ok(p) => {
                    let interval = anchor_interval(settings.key_poll_interval, p.exp, now);
                    s.succeeded(&id, &settings, now, interval);
                }
                Err(e) => {
                    super::Failures::count(&self.failures.anchor_keys);
                    let delay = s.failed(&id, &settings, now);
                    tracing::warn!(anchor = %id, error = %e, retry_in = ?delay, "trust anchor key refresh failed");
                }
            }
        }
    }

    /// Fetches anchor `id`'s configuration and stores its keys if their `kid`s changed.
    pub async fn poll_anchor(&self, id: &str, now: i64) -> Result<Polled, PollError> {
        self.poll_anchor_fenced(id, now, &self.cp.fence()).await
    }

    /// [`Self::poll_anchor`] under the leader's `fence`: a deposed leader stores nothing.
    async fn poll_anchor_fenced(
        &self,
        id: &str,
        now: i64,
        fence: &Fence,
    ) -> Result<Polled, PollError> {
        // Read before fetching: a configuration fetched before a change of the stored keys
        // (another poll, an administrator) must be judged against what was stored then.
        let stored = trust_anchors::get(&self.cp.db, id)
            .await?
            .ok_or(PollError::Gone)?;
        let slot = self.fetch_permit().await?;
        let jws = self
            .fetcher
            .entity_configuration(id)
            .await
            .map_err(|e| PollError::Fetch(e.to_string()))?;
        drop(slot);
        let fetched = check_configuration(&jws, id, stored.jwks.as_ref(), now)?;
        // Stored keys are parsed like the Admin API's: a malformed key is not taken.
        check_new_keys(
            &fetched.jwks,
            Some(&self.cp.settings.federation.accept.key_types),
        )
        .map_err(|e| PollError::Invalid(format!("jwks: {e}")))?;
        let mut w = self.cp.write(None).await;
        // Re-read under the writer lock: a change may have landed during the fetch.
        let row = trust_anchors::get(&self.cp.db, id)
            .await?
            .ok_or(PollError::Gone)?;
        if row.jwks != stored.jwks {
            return Err(PollError::Invalid("keys changed during the poll".into()));
        }
        let old = row.jwks.clone().unwrap_or_default();
        let changed = row.jwks.is_none() || kids(&old) != kids(&fetched.jwks);
        if changed {
            let tx = w.tx().await?;
            let update = TrustAnchorWrite {
                entity_id: row.entity_id.clone(),
                jwks: Some(fetched.jwks.clone()),
                enable_jwks_update: row.enable_jwks_update,
                key_poll_interval: row.key_poll_interval,
                anchor_ec_constraints: row.anchor_ec_constraints,
                trust_mark_issuer_self_signed: row.trust_mark_issuer_self_signed,
                trust_mark_status: row.trust_mark_status,
            };
            trust_anchors::update(&self.cp.db, tx, row.id, &update, now).await?;
            w.touch(Section::TrustAnchors);
            fence.check(w.tx().await?).await?;
            w.commit().await?;
            tracing::info!(anchor = %id, kids = ?kids(&fetched.jwks), "trust anchor keys updated");
        }
        Ok(Polled {
            changed,
            exp: fetched.exp,
        })
    }
}
