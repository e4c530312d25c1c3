//! The trust marks we hold (`published_trust_marks`, edited at
//! `/entity-configuration/trust-marks`), kept fresh: one schedule entry per row. A row is
//! looked at when its entry is due; its mark is renewed when there is none usable or its
//! remaining life is within `refresh_grace_period`, never sooner than `refresh_rate_limit`
//! after the previous attempt, and after failures later still (×2 per consecutive failure,
//! at most an hour). Meanwhile the old mark stays published while it is valid; the Entity
//! Configuration drops it once it has expired.
//!
//! External marks (and given marks with `refresh`) are fetched from the issuer's
//! `federation_trust_mark_endpoint`, found in its self-signed Entity Configuration, holding
//! one of the refreshers' fetch slots; self-issued marks are signed with our current key.
//! Nothing is stored that fails [`holder::check`] (with the issuer's keys for fetched marks).

use pharos_shared::chain::Fetcher;
use pharos_shared::jose;
use pharos_shared::trust_mark::{TRUST_MARK_TYP, self_signed_keys};
use pharos_shared::trust_mark_holder::{self as holder, HeldMark, SelfIssuance};
use pharos_shared::trust_mark_issuer::mark_claims;
use serde_json::Value;

use super::{MAX_SLEEP, PollError, Refreshers};
use crate::control_plane::{ControlPlane, Section};
use crate::db::published_marks::{self as repo, PublishedRow};
use crate::leadership::Fence;

/// The configuration a held mark is renewed with. An administrator's change restarts the
/// row's entry (due at once); its JWT is deliberately not part of it, so that storing a
/// renewed mark does not restart the entry and skip the rate limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldPoll {
    id: i64,
    updated_at: i64,
    issuer: Option<String>,
    refresh: bool,
    self_issuance: Option<String>,
    min_lifetime: i64,
    grace: i64,
    rate_limit: i64,
}

impl HeldPoll {
    fn of(r: &PublishedRow) -> Self {
        Self {
            id: r.id,
            updated_at: r.updated_at,
            issuer: r.trust_mark_issuer.clone(),
            refresh: r.refresh,
            self_issuance: r.self_issuance_spec.as_ref().map(Value::to_string),
            min_lifetime: r.min_lifetime,
            grace: r.refresh_grace_period,
            rate_limit: r.refresh_rate_limit,
        }
    }
}

/// Whether the refresher renews `row`'s mark at all (self-issued and external marks always;
/// a given JWT only with `refresh`).
pub fn renews(row: &PublishedRow) -> bool {
    row.refresh || row.self_issuance_spec.is_some()
}

impl<F: Fetcher + 'static> Refreshers<F> {
    /// Syncs the held marks' schedule with the table and renews every mark due at `now`.
    /// Sequential: an entity holds a handful of marks, and each fetch takes a shared slot.
    pub(super) async fn tick_held_marks(&self, now: i64, fence: &Fence) {
        let rows = match repo::all(&self.cp.db).await {
            Ok(r) => r,
            Err(e) => {
                tracing::error!(error = %e, "cannot read the held trust marks; retrying later");
                return;
            }
        };
        let due = {
            let mut s = self.held_marks.lock().await;
            s.retain(|t| rows.iter().any(|r| r.trust_mark_type == t));
            for r in &rows {
                s.sync(&r.trust_mark_type, Some(HeldPoll::of(r)), now);
            }
            s.due(now)
        };
        for (tm_type, settings) in due {
            let Some(row) = rows.iter().find(|r| r.trust_mark_type == tm_type) else {
                continue;
            };
            let outcome = self.renew_if_due(row, now, fence).await;
            let mut s = self.held_marks.lock().await;
            match outcome {
                Ok(next) => s.succeeded(&tm_type, &settings, now, next - now),
                Err(e) => {
                    super::Failures::count(&self.failures.held_marks);
                    let rate = row.refresh_rate_limit;
                    let retry =
                        s.failed_with(&tm_type, &settings, now, |f| holder::retry_delay(rate, f));
                    tracing::warn!(trust_mark_type = %tm_type, error = %e, retry_in = ?retry,
                        "held trust mark renewal failed; the current mark stays while valid");
                }
            }
        }
    }

    /// Renews `row`'s mark if it is due at `now`; returns when to look at the row next.
    async fn renew_if_due(
        &self,
        row: &PublishedRow,
        now: i64,
        fence: &Fence,
    ) -> Result<i64, PollError> {
        let us = self.cp.settings.entity_id.as_str();
        let idle = now + MAX_SLEEP;
        if !renews(row) {
            return Ok(idle);
        }
        let held = row
            .trust_mark
            .as_deref()
            .and_then(|j| holder::check(j, us, &row.trust_mark_type, None, now, 0).ok());
        // A held external mark is also looked at every status interval: its issuer may have
        // revoked it, and a revoked mark must not stay published until it expires.
        let external = row.self_issuance_spec.is_none() && row.trust_mark_issuer.is_some();
        let status_at = now + holder::status_interval(row.refresh_rate_limit);
        match holder::renewal_at(held.as_ref(), row.refresh_grace_period) {
            None => return Ok(idle),
            Some(at) if at > now => {
                if external && let Some(jwt) = row.trust_mark.as_deref() {
                    self.check_status(row, jwt, now, fence).await?;
                    return Ok(at.min(idle).min(status_at));
                }
                return Ok(at.min(idle));
            }
            Some(_) => {}
        }
        let jwt = self.obtain(row, now).await?;
        let fresh = self.store(row, &jwt, now, fence).await?;
        let next = holder::renewal_at(Some(&fresh), row.refresh_grace_period).unwrap_or(idle);
        let next = if external { next.min(status_at) } else { next };
        Ok(next.min(idle).max(now + row.refresh_rate_limit.max(1)))
    }

    /// Asks `row`'s issuer whether the mark we hold (`jwt`) still stands: its status endpoint
    /// (`revoked` or `invalid`), else its Trust Marked Entities Listing (we are no longer
    /// listed), whichever it publishes. A withdrawn mark is removed from our Entity
    /// Configuration at once (the row stays: the mark is obtained again if the issuer issues
    /// it again). An issuer that cannot be asked, or answers what cannot be understood, leaves
    /// the mark as it is.
    async fn check_status(
        &self,
        row: &PublishedRow,
        jwt: &str,
        now: i64,
        fence: &Fence,
    ) -> Result<(), PollError> {
        let Some(issuer) = row.trust_mark_issuer.as_deref() else {
            return Ok(());
        };
        let us = self.cp.settings.entity_id.as_str();
        let withdrawal = {
            let _slot = self.fetch_permit().await?;
            let asked = async {
                let ec = self.fetcher.entity_configuration(issuer).await.ok()?;
                let keys = self_signed_keys(&ec, issuer, now).ok()?;
                let status_endpoint =
                    federation_entity_url(&ec, "federation_trust_mark_status_endpoint");
                if let Some(endpoint) = status_endpoint {
                    let response = self.fetcher.trust_mark_status(&endpoint, jwt).await.ok()?;
                    let status = holder::status_of(&response, jwt, issuer, &keys).ok()?;
                    return holder::withdrawn(&status).then_some(status);
                }
                let endpoint = federation_entity_url(&ec, "federation_trust_mark_list_endpoint")?;
                let tm_type = row.trust_mark_type.as_str();
                let response = self
                    .fetcher
                    .trust_mark_listing(&endpoint, tm_type, us)
                    .await
                    .ok()?;
                (!holder::listed(&response, us)?).then(|| "no longer listed".to_owned())
            };
            asked.await
        };
        let Some(status) = withdrawal else {
            return Ok(());
        };
        let mut w = self.cp.write(None).await;
        let current = repo::find(&self.cp.db, &row.id.to_string())
            .await?
            .ok_or(PollError::Gone)?;
        if current.trust_mark.as_deref() != Some(jwt) {
            return Ok(());
        }
        let tx = w.tx().await?;
        repo::clear_mark(&self.cp.db, tx, row.id).await?;
        w.touch(Section::TrustMarks);
        fence.check(w.tx().await?).await?;
        w.commit().await?;
        tracing::warn!(trust_mark_type = %row.trust_mark_type, %issuer, %status,
            "held trust mark withdrawn by its issuer; no longer published");
        Ok(())
    }

    /// A new mark for `row`: self-issued, or fetched from its issuer and verified with the
    /// issuer's self-signed keys.
    async fn obtain(&self, row: &PublishedRow, now: i64) -> Result<String, PollError> {
        let us = self.cp.settings.entity_id.as_str();
        let tm_type = row.trust_mark_type.as_str();
        if let Some(spec) = &row.self_issuance_spec {
            let spec: SelfIssuance = serde_json::from_value(spec.clone())
                .map_err(|e| PollError::Invalid(format!("self_issuance_spec: {e}")))?;
            let jwt = self_issue(&self.cp, tm_type, &spec, now).await?;
            holder::check(&jwt, us, tm_type, None, now, row.min_lifetime)
                .map_err(PollError::Invalid)?;
            return Ok(jwt);
        }
        let issuer = row
            .trust_mark_issuer
            .as_deref()
            .ok_or_else(|| PollError::Invalid("no trust_mark_issuer to renew from".into()))?;
        let fetch = |e: pharos_shared::Error| PollError::Fetch(e.to_string());
        let slot = self.fetch_permit().await?;
        let ec = self
            .fetcher
            .entity_configuration(issuer)
            .await
            .map_err(fetch)?;
        let keys =
            self_signed_keys(&ec, issuer, now).map_err(|e| PollError::Signature(e.to_string()))?;
        let endpoint = trust_mark_endpoint(&ec).ok_or_else(|| {
            PollError::Invalid(format!(
                "{issuer} publishes no federation_trust_mark_endpoint"
            ))
        })?;
        let jwt = self
            .fetcher
            .trust_mark(&endpoint, tm_type, us)
            .await
            .map_err(fetch)?;
        drop(slot);
        let m = holder::check(&jwt, us, tm_type, Some(&keys), now, row.min_lifetime)
            .map_err(PollError::Invalid)?;
        if m.iss != issuer {
            return Err(PollError::Invalid(format!(
                "the mark is issued by {}, not {issuer}",
                m.iss
            )));
        }
        Ok(jwt)
    }

    /// Stores `jwt` as `row`'s mark, unless an administrator changed or removed the row
    /// while it was obtained (their change wins; the entry restarts at the next tick).
    async fn store(
        &self,
        row: &PublishedRow,
        jwt: &str,
        now: i64,
        fence: &Fence,
    ) -> Result<HeldMark, PollError> {
        let us = self.cp.settings.entity_id.as_str();
        let held = holder::check(jwt, us, &row.trust_mark_type, None, now, 0)
            .map_err(PollError::Invalid)?;
        let mut w = self.cp.write(None).await;
        let current = repo::find(&self.cp.db, &row.id.to_string())
            .await?
            .ok_or(PollError::Gone)?;
        if HeldPoll::of(&current) != HeldPoll::of(row) {
            return Err(PollError::Invalid(
                "changed by an administrator during the renewal".into(),
            ));
        }
        // Another renewal (a concurrent tick) stored a mark since this one read the row: that
        // one stays, so a mark that was read as current is not replaced behind its reader.
        if current.trust_mark != row.trust_mark
            && let Some(theirs) = current.trust_mark.as_deref()
            && let Ok(held) = holder::check(theirs, us, &row.trust_mark_type, None, now, 0)
        {
            return Ok(held);
        }
        let tx = w.tx().await?;
        repo::set_mark(&self.cp.db, tx, row.id, jwt).await?;
        w.touch(Section::TrustMarks);
        fence.check(w.tx().await?).await?;
        w.commit().await?;
        tracing::info!(trust_mark_type = %row.trust_mark_type, iat = held.iat, exp = ?held.exp,
            "held trust mark renewed");
        Ok(held)
    }
}

/// `metadata.federation_entity.federation_trust_mark_endpoint` of an Entity Configuration
/// (whose signature the caller has verified).
fn trust_mark_endpoint(ec: &str) -> Option<String> {
    federation_entity_url(ec, "federation_trust_mark_endpoint")
}

/// `metadata.federation_entity.<name>` of an Entity Configuration, a string.
fn federation_entity_url(ec: &str, name: &str) -> Option<String> {
    let d = jose::decode_unverified(ec).ok()?;
    let url = d
        .claims
        .get("metadata")?
        .get("federation_entity")?
        .get(name)?
        .as_str()?;
    Some(url.to_owned())
}

/// A mark of `tm_type` we issue to ourselves at `now` per `spec` (`iss` = `sub` = us, the
/// type also as legacy `id` unless `federation.trust_mark_legacy_id` is off), signed with our
/// current key.
pub async fn self_issue(
    cp: &ControlPlane,
    tm_type: &str,
    spec: &SelfIssuance,
    now: i64,
) -> crate::error::Result<String> {
    let us = cp.settings.entity_id.as_str();
    let legacy_id = cp.settings.federation.trust_mark_legacy_id;
    let jti = pharos_runtime::jti::new_jti()
        .map_err(|e| crate::error::Error::Internal(format!("no randomness for a jti: {e}")))?;
    let claims = mark_claims(us, &spec.spec(tm_type), None, us, &jti, now, legacy_id);
    let signer = cp.snapshot().keys.signer.clone();
    Ok(pharos_runtime::signing::sign(&signer, TRUST_MARK_TYP, claims).await?)
}
