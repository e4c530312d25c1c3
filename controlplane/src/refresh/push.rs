//! The control plane's side of the jwks_update_trigger and jwks_update endpoints: the data
//! plane forwards the request as a command; the answer is a federation error or the result.

use pharos_shared::chain::Fetcher;
use pharos_shared::command::CommandError;
use pharos_shared::jose;
use pharos_shared::key_update::parse_signed_jwks;
use pharos_shared::refresh::describe_change;

use super::{PollError, Refreshers};
use crate::db::subordinates::{self as repo, SubKey, SubordinateRow};
use crate::state::ControlPlane;

/// Only these subordinates may have their keys refreshed or pushed.
fn known(row: Option<SubordinateRow>) -> Result<SubordinateRow, CommandError> {
    row.filter(|r| matches!(r.status.as_str(), "active" | "pending"))
        .ok_or_else(|| CommandError::not_found("subordinate not known"))
}

fn internal(e: impl std::fmt::Display) -> CommandError {
    tracing::error!(error = %e, "key update failed");
    CommandError::server_error()
}

impl<F: Fetcher + 'static> Refreshers<F> {
    /// jwks_update_trigger: refreshes `sub`'s keys now (polling need not be enabled) and
    /// records `jwks_update_triggered`. Answers whether the keys changed.
    pub async fn trigger(
        &self,
        sub: &str,
        actor: Option<&str>,
        now: i64,
    ) -> Result<bool, CommandError> {
        let row = repo::get(&self.cp.db, SubKey::EntityId(sub))
            .await
            .map_err(internal)?;
        let row = known(row)?;
        let changed = match self.refresh_subordinate_keys(sub, now, actor).await {
            Ok(p) => p.changed,
            Err(PollError::Fetch(m)) => {
                return Err(CommandError::new(502, "server_error", m));
            }
            Err(PollError::Signature(m)) => return Err(CommandError::invalid_client(m)),
            Err(PollError::Gone) => return Err(CommandError::not_found("subordinate not known")),
            Err(e) => return Err(internal(e)),
        };
        let message = if changed {
            "jwks changed"
        } else {
            "jwks unchanged"
        };
        let mut w = self.cp.write(actor).await;
        w.subordinate_event(
            row.id,
            &row.status,
            "jwks_update_triggered",
            Some(message.into()),
        )
        .await
        .map_err(internal)?;
        w.commit().await.map_err(internal)?;
        Ok(changed)
    }
}

impl ControlPlane {
    /// jwks_update: checks the signed JWK Set against the keys stored now (under the writer
    /// lock, so no concurrent change slips between check and store), replaces them, records
    /// `jwks_updated` and publishes. Every refusal leaves everything as it was.
    pub async fn push_jwks(&self, token: &str, now: i64) -> Result<(), CommandError> {
        let pushed = parse_signed_jwks(token, now)
            .map_err(|e| CommandError::invalid_request(e.to_string()))?;
        // The pushing subordinate is the actor of its own key change.
        let mut w = self.write(Some(&pushed.sub)).await;
        let row = repo::get(&self.db, SubKey::EntityId(&pushed.sub))
            .await
            .map_err(internal)?;
        let row = known(row)?;
        let stored = row.jwks.clone().unwrap_or_default();
        if stored.keys.is_empty() {
            return Err(CommandError::invalid_client(
                "no keys stored for the subordinate",
            ));
        }
        jose::verify(token, &stored).map_err(|e| {
            CommandError::invalid_client(format!("not signed by a current key: {e}"))
        })?;
        let message =
            describe_change(&stored, &pushed.keys).unwrap_or_else(|| "added: ; removed: ".into());
        let tx = w.tx().await.map_err(internal)?;
        repo::set_jwks(&self.db, tx, row.id, &pushed.keys, now)
            .await
            .map_err(internal)?;
        w.subordinate_event(row.id, &row.status, "jwks_updated", Some(message))
            .await
            .map_err(internal)?;
        w.touch_subordinate(&pushed.sub);
        w.commit().await.map_err(internal)
    }
}
