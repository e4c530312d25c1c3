//! Key lifecycle operations of the control plane (methods of [`ControlPlane`], since each is a
//! write through it; the key material and the plans they act on are in [`crate::keys`]): the rotation tick (run by the background task
//! at every key transition, and by tests after moving a manual clock), immediate rotation,
//! and the scheduled algorithm change.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use pharos_shared::jose::Algorithm;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{ControlPlane, Section};
use crate::db::keys::{API, FEDERATION, KeyRow};
use crate::db::{self, settings};
use crate::error::{Error, Result};
use crate::keys::planner::{self, Action};
use crate::keys::{PendingAlg, current_alg, new_row, pending_alg, plan_keys, rotation};
use crate::leadership::Fence;

/// Longest sleep of the background task: it re-plans at least this often, in case the clock
/// jumped or the database was changed behind our back.
const MAX_SLEEP: i64 = 3_600;

/// The next instant the key task must run after `now`: the federation keys' next transition
/// in `plan`, the API keys' next one in `rows`, or the scheduled algorithm change.
fn next_transition(
    rows: &[KeyRow],
    plan: &planner::Plan,
    pending: Option<&PendingAlg>,
    now: i64,
) -> Option<i64> {
    let api = planner::next_transition(&plan_keys(rows, Some(API)), now);
    let alg_at = pending.map(|p| p.at).filter(|at| *at > now);
    [plan.next, api, alg_at].into_iter().flatten().min()
}

/// Revocation reasons of spec §8.7.3.
pub const REASONS: [&str; 3] = ["unspecified", "compromised", "superseded"];

impl ControlPlane {
    /// Applies whatever the rotation schedule requires at `now` and republishes the keys when
    /// the set of published, historical or signing keys changed. Returns the next instant at
    /// which it must run again.
    pub async fn rotate_keys(&self, now: i64) -> Result<Option<i64>> {
        self.rotate_keys_fenced(now, &Fence::any_replica()).await
    }

    /// [`Self::rotate_keys`] as the leader's key task runs it: the write is refused when
    /// `fence` (taken before the schedule was read) no longer holds, so a deposed leader
    /// cannot announce or retire a key after another replica took over the schedule.
    pub async fn rotate_keys_fenced(&self, now: i64, fence: &Fence) -> Result<Option<i64>> {
        let mut w = self.write(None).await;
        // On a single instance the writer lock makes this process the only writer, so what
        // is read under it is what the transaction changes. Replicas read it once their
        // transaction has begun (another replica may have written just before).
        let single = if self.announces() {
            None
        } else {
            Some(self.key_plan(now).await?)
        };
        if let Some((pending, rows, plan)) = &single
            && pending.as_ref().is_none_or(|p| p.at > now)
            && plan.actions.is_empty()
        {
            // Nothing to store and no replica to tell: the keys are republished (what signs
            // changes with the time) without a write transaction. A thousand hosted entities
            // starting at once each took SQLite's one writer here, one after the other, each
            // holding a pooled connection the others' start-up reads waited for.
            w.touch(Section::Keys);
            w.commit().await?;
            return Ok(next_transition(rows, plan, pending.as_ref(), now));
        }
        let tx = w.tx().await?;
        let (pending, _, plan) = match single {
            Some(read) => read,
            None => self.key_plan(now).await?,
        };
        if let Some(p) = pending.as_ref().filter(|p| p.at <= now) {
            let db = &self.db;
            settings::set(db, tx, settings::SIGNING, "alg", &json!(p.alg.as_str())).await?;
            settings::set(db, tx, settings::SIGNING, "pending_alg", &Value::Null).await?;
            tracing::info!(alg = %p.alg, "signing algorithm changed");
        }
        let alg = self.alg_for_new_keys().await?;
        for a in &plan.actions {
            match a {
                Action::Generate { nbf, exp } => {
                    let row = self.generate(alg, now, *nbf, *exp).await?;
                    db::keys::insert(&self.db, tx, &row).await?;
                    tracing::info!(kid = %row.kid, %alg, nbf, "announced next signing key");
                }
                Action::SetExp { kid, exp } => {
                    db::keys::set_exp(&self.db, tx, kid, Some(*exp)).await?;
                }
            }
        }
        // Republished whatever was stored: what signs changes with the time too.
        w.touch(Section::Keys);
        fence.check(w.tx().await?).await?;
        w.commit().await?;
        let rows = db::keys::list(&self.db).await?;
        Ok(next_transition(&rows, &plan, pending.as_ref(), now))
    }

    /// The scheduled algorithm change, the stored keys and what the rotation schedule requires
    /// of them at `now`.
    async fn key_plan(&self, now: i64) -> Result<(Option<PendingAlg>, Vec<KeyRow>, planner::Plan)> {
        let pending = pending_alg(&self.db).await?;
        let rows = db::keys::list(&self.db).await?;
        let mut policy = rotation::load(&self.db).await?;
        let lifetime = self.snapshot().entity_configuration.lifetime;
        if policy.enabled {
            rotation::resolve_lead_time(&policy, lifetime);
        }
        if policy.enabled && self.kms.static_key().is_some() {
            tracing::warn!("key rotation is enabled but the signing key is a static key_file");
            policy.enabled = false;
        }
        let plan = planner::plan(&plan_keys(&rows, Some(FEDERATION)), &policy, lifetime, now);
        Ok((pending, rows, plan))
    }

    /// Rotates our keys now: a new key signs from this instant; the old ones keep verifying for
    /// `overlap`, or with `revoke` are revoked at once and never used again.
    pub async fn rotate_now(
        &self,
        revoke: bool,
        reason: Option<&str>,
        actor: Option<&str>,
    ) -> Result<()> {
        self.kms.require_dynamic()?;
        let now = self.now();
        let mut w = self.write(actor).await;
        let policy = rotation::load(&self.db).await?;
        let tx = w.tx().await?;
        let alg = match pending_alg(&self.db).await? {
            // The new key is of the scheduled algorithm: the change happens now.
            Some(p) => {
                let db = &self.db;
                settings::set(db, tx, settings::SIGNING, "alg", &json!(p.alg.as_str())).await?;
                settings::set(db, tx, settings::SIGNING, "pending_alg", &Value::Null).await?;
                p.alg
            }
            None => current_alg(&self.db, &self.settings).await?,
        };
        let exp = policy.enabled.then_some(now + policy.interval);
        let row = self.generate(alg, now, now, exp).await?;
        for old in db::keys::list(&self.db)
            .await?
            .iter()
            .filter(|k| ours_valid(k, now))
        {
            if revoke {
                db::keys::revoke(&self.db, tx, &old.kid, now, reason).await?;
            } else {
                // Never-used announced keys end now; used ones verify for the overlap.
                let end = if old.nbf > now {
                    now
                } else {
                    now + policy.overlap
                };
                let exp = old.exp.map_or(end, |e| e.min(end));
                db::keys::set_exp(&self.db, tx, &old.kid, Some(exp)).await?;
            }
        }
        db::keys::insert(&self.db, tx, &row).await?;
        w.touch(Section::Keys);
        w.commit().await?;
        tracing::warn!(kid = %row.kid, revoke, ?reason, "signing keys rotated immediately");
        self.key_events.notify_one();
        Ok(())
    }

    /// Schedules a switch to `alg`: a key of `alg` is announced now and signs from now + lead
    /// time; the current keys verify until `overlap` after that.
    pub async fn change_alg(&self, alg: Algorithm, actor: Option<&str>) -> Result<()> {
        self.kms.require_dynamic()?;
        let now = self.now();
        let mut w = self.write(actor).await;
        let current = current_alg(&self.db, &self.settings).await?;
        let pending = pending_alg(&self.db).await?;
        if pending.map_or(alg == current, |p| p.alg == alg) {
            return Ok(());
        }
        let policy = rotation::load(&self.db).await?;
        let lifetime = self.snapshot().entity_configuration.lifetime;
        let at = now + rotation::resolve_lead_time(&policy, lifetime);
        let row = self
            .generate(alg, now, at, policy.enabled.then_some(at + policy.interval))
            .await?;
        let tx = w.tx().await?;
        for k in db::keys::list(&self.db)
            .await?
            .iter()
            .filter(|k| ours_valid(k, now))
        {
            // Announced keys that would take over after the switch are superseded unused.
            if k.nbf >= at {
                db::keys::set_exp(&self.db, tx, &k.kid, Some(now)).await?;
            }
        }
        db::keys::insert(&self.db, tx, &row).await?;
        let p = json!({"alg": alg.as_str(), "at": at});
        settings::set(&self.db, tx, settings::SIGNING, "pending_alg", &p).await?;
        w.touch(Section::Keys);
        w.commit().await?;
        tracing::info!(%alg, at, kid = %row.kid, "signing algorithm change scheduled");
        // The planner gives the current keys their end (the new key's nbf + overlap).
        self.rotate_keys(now).await?;
        self.key_events.notify_one();
        Ok(())
    }

    /// The algorithm of keys generated from now on.
    pub async fn alg_for_new_keys(&self) -> Result<Algorithm> {
        match pending_alg(&self.db).await? {
            Some(PendingAlg { alg, .. }) => Ok(alg),
            None => current_alg(&self.db, &self.settings).await,
        }
    }

    async fn generate(
        &self,
        alg: Algorithm,
        now: i64,
        nbf: i64,
        exp: Option<i64>,
    ) -> Result<KeyRow> {
        let bits = crate::keys::rsa_key_len(&self.db, &self.settings).await?;
        let g = self.kms.generate(alg, bits)?;
        Ok(new_row(g, alg, now, nbf, exp))
    }

    /// The next key transition (a key announced, starting to sign or retired) the key task
    /// planned at its last successful run; `None` before it ran or when nothing is planned.
    /// Past it by more than a few seconds, a rotation is overdue: the task failed since, or
    /// stopped running (no replica leads). Read by `/metrics`.
    pub fn next_key_transition(&self) -> Option<i64> {
        match self.next_key_transition.load(Ordering::Relaxed) {
            i64::MIN => None,
            t => Some(t),
        }
    }

    fn planned_key_transition(&self, next: Option<i64>) {
        self.next_key_transition
            .store(next.unwrap_or(i64::MIN), Ordering::Relaxed);
    }

    /// The background task: runs [`Self::rotate_keys`] at every planned instant (and when an
    /// admin change wakes it) until `stop`.
    pub fn spawn_key_task(
        self: &Arc<Self>,
        stop: CancellationToken,
    ) -> tokio::task::JoinHandle<()> {
        let cp = self.clone();
        tokio::spawn(async move {
            loop {
                let now = cp.now();
                let next = match cp.rotate_keys_fenced(now, &cp.fence()).await {
                    Ok(n) => {
                        cp.planned_key_transition(n);
                        n
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "key rotation failed; retrying in a minute");
                        Some(now + 60)
                    }
                };
                let wait = next.map_or(MAX_SLEEP, |t| (t - now).clamp(1, MAX_SLEEP));
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(wait as u64)) => {}
                    _ = cp.key_events.notified() => {}
                    _ = stop.cancelled() => break,
                }
            }
        })
    }
}

fn ours_valid(k: &KeyRow, now: i64) -> bool {
    k.key_set == FEDERATION && k.revoked_at.is_none() && k.exp.is_none_or(|e| e > now)
}

/// Checks a revocation reason (spec §8.7.3); omitting it is allowed and preferred.
pub fn check_reason(reason: Option<&str>) -> Result<()> {
    match reason {
        Some(r) if !REASONS.contains(&r) => Err(Error::RevocationReason { allowed: &REASONS }),
        _ => Ok(()),
    }
}
