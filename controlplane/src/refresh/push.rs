//! The control plane's side of the jwks_update_trigger and jwks_update endpoints: the data
//! plane has checked the request and forwards it as a command; the answer is the result or a
//! typed reason ([`TriggerError`], [`PushError`]) that the data plane renders.

use pharos_runtime::command::{PushError, Refused, TriggerError};
use pharos_shared::chain::Fetcher;
use pharos_shared::jose;
use pharos_shared::key_update::{SignedJwks, check_new_keys};
use pharos_shared::refresh::describe_change;

use super::{FetchPermit, PollError, Refreshers};
use crate::control_plane::ControlPlane;
use crate::db::subordinates::{self as repo, SubKey, SubordinateRow};

/// Why a subordinate may not have its keys refreshed or pushed.
enum NotKnown {
    NotStored,
    NotActiveOrPending,
}

/// Only active and pending subordinates may have their keys refreshed or pushed.
fn known(row: Option<SubordinateRow>) -> Result<SubordinateRow, NotKnown> {
    let row = row.ok_or(NotKnown::NotStored)?;
    if matches!(row.status.as_str(), "active" | "pending") {
        Ok(row)
    } else {
        Err(NotKnown::NotActiveOrPending)
    }
}

impl From<NotKnown> for TriggerError {
    fn from(n: NotKnown) -> Self {
        match n {
            NotKnown::NotStored => Self::UnknownSubordinate,
            NotKnown::NotActiveOrPending => Self::NotActiveOrPending,
        }
    }
}

impl From<NotKnown> for PushError {
    fn from(n: NotKnown) -> Self {
        match n {
            NotKnown::NotStored => Self::UnknownSubordinate,
            NotKnown::NotActiveOrPending => Self::NotActiveOrPending,
        }
    }
}

/// Logs an internal failure; the caller only learns that there was one.
fn logged(e: impl std::fmt::Display) {
    tracing::error!(error = %e, "key update failed");
}

impl<F: Fetcher + 'static> Refreshers<F> {
    /// jwks_update_trigger: refreshes `sub`'s keys now, holding fetch slot `slot` (polling
    /// need not be enabled) and records `jwks_update_triggered`. Answers whether the keys
    /// changed.
    pub async fn trigger(
        &self,
        slot: &FetchPermit,
        sub: &str,
        actor: Option<&str>,
        now: i64,
    ) -> Result<bool, TriggerError> {
        let internal = |e| {
            logged(e);
            TriggerError::Internal
        };
        // A database known to be down refuses at once (503), like the Admin API's writes.
        if self.cp.db.breaker.is_open() {
            return Err(Refused::Unavailable.into());
        }
        let row = repo::get(&self.cp.db, SubKey::EntityId(sub))
            .await
            .map_err(|e| {
                if e.is_unavailable() {
                    self.cp.db.note_error(&e);
                    TriggerError::from(Refused::Unavailable)
                } else {
                    internal(e.to_string())
                }
            })?;
        let row = known(row)?;
        let any = crate::leadership::Fence::any_replica();
        let changed = match self.refresh_holding(slot, sub, now, actor, &any).await {
            Ok(p) => p.changed,
            Err(PollError::Fetch(m)) => return Err(TriggerError::FetchFailed(m)),
            Err(PollError::Signature(m)) => return Err(TriggerError::BadSignature(m)),
            Err(PollError::Invalid(m)) => return Err(TriggerError::InvalidConfiguration(m)),
            Err(PollError::Gone) => return Err(TriggerError::UnknownSubordinate),
            Err(e @ PollError::Internal(_)) => return Err(internal(e.to_string())),
        };
        let message = if changed {
            "jwks changed"
        } else {
            "jwks unchanged"
        };
        let mut w = self.cp.write(actor).await;
        w.subordinate_event(
            row.id,
            row.status,
            "jwks_update_triggered",
            Some(message.into()),
        )
        .await
        .map_err(|e| internal(e.to_string()))?;
        w.commit().await.map_err(|e| internal(e.to_string()))?;
        Ok(changed)
    }
}

impl ControlPlane {
    /// A database error of a push: 503 (and the write breaker opened) when the database is
    /// unreachable, else `other`.
    fn unavailable_or(
        &self,
        e: crate::Error,
        other: impl FnOnce(String) -> PushError,
    ) -> PushError {
        if e.is_unavailable() {
            self.db.note_error(&e);
            Refused::Unavailable.into()
        } else {
            other(e.to_string())
        }
    }

    /// jwks_update: checks the signature of `pushed` (whose form the data plane checked)
    /// against the keys stored now (under the writer lock, so no concurrent change slips
    /// between check and store) and its `iat` against the last accepted push's, replaces
    /// them, records `jwks_updated` and publishes. Every refusal leaves everything as it was.
    pub async fn push_jwks(&self, pushed: &SignedJwks, now: i64) -> Result<(), PushError> {
        let internal = |e: String| {
            logged(e);
            PushError::Internal
        };
        // A database known to be down refuses at once (503), like the Admin API's writes.
        if self.db.breaker.is_open() {
            return Err(Refused::Unavailable.into());
        }
        // The pushing subordinate is the actor of its own key change.
        let mut w = self.write(Some(&pushed.sub)).await;
        let row = repo::get(&self.db, SubKey::EntityId(&pushed.sub))
            .await
            .map_err(|e| self.unavailable_or(e, internal))?;
        let row = known(row)?;
        // The data plane checked the keys' form but left unknown key types to the
        // configuration it does not hold.
        check_new_keys(
            &pushed.keys,
            Some(&self.settings.federation.accept.key_types),
        )
        .map_err(|e| PushError::Invalid(format!("invalid signed JWK Set: {e}")))?;
        let stored = row.jwks.clone().unwrap_or_default();
        if stored.keys.is_empty() {
            return Err(PushError::NoStoredKeys);
        }
        jose::verify(pushed.token(), &stored)
            .map_err(|e| PushError::NotSignedByCurrentKey(e.to_string()))?;
        // Read under the writer lock, like the keys: two pushes cannot both pass this.
        let last = repo::last_push_iat(&self.db, row.id)
            .await
            .map_err(|e| internal(e.to_string()))?;
        if let Some(last) = last.filter(|l| pushed.iat <= *l) {
            return Err(PushError::Stale { last });
        }
        // The signature covers the very token `pushed` was read from, so its claims are now
        // authentic; reading them again here would only repeat the data plane's work.
        let message =
            describe_change(&stored, &pushed.keys).unwrap_or_else(|| "added: ; removed: ".into());
        let down_or = |e: crate::Error| {
            if e.is_unavailable() {
                PushError::from(Refused::Unavailable)
            } else {
                internal(e.to_string())
            }
        };
        let tx = w.tx().await.map_err(down_or)?;
        repo::set_pushed_jwks(&self.db, tx, row.id, &pushed.keys, pushed.iat, now)
            .await
            .map_err(|e| internal(e.to_string()))?;
        w.subordinate_event(row.id, row.status, "jwks_updated", Some(message))
            .await
            .map_err(|e| internal(e.to_string()))?;
        w.touch_subordinate(&pushed.sub);
        w.commit().await.map_err(down_or)
    }
}
