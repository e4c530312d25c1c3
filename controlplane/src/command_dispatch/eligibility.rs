//! Trust mark eligibility by checker ([`Command::CheckEligibility`]): fetch and verify the
//! subject's Entity Configuration with the resolver's fetcher (its outbound rules), run the
//! issuance spec's checker, answer the verdict.
//!
//! Bounded like every command: [`CHECKS_AT_ONCE`] checks run at once (a checker may call a
//! slow service or program for its whole timeout); one more is refused at once. Concurrent
//! requests for one (type, subject) share one run ([`Flights`]), and verdicts are reused for
//! the spec's `check_cache_ttl` — keyed with the spec's version, so an administrator's change
//! of the spec (its checker, its mode) takes effect with the next request; a check that could
//! not be carried out (5xx) is not kept. Answering from the cache happens before admission,
//! so a cached verdict costs no slot.
//!
//! [`Command::CheckEligibility`]: pharos_runtime::command::Command::CheckEligibility

use std::sync::{Arc, LazyLock};

use pharos_runtime::command::{CheckError, Refused, Reply};
use pharos_runtime::single_flight::Flights;
use pharos_shared::chain::Fetcher;
use pharos_shared::checks::{Candidate, Checker, Denial, Verdict, check};
use pharos_shared::snapshot::Snapshot;
use pharos_shared::trust_mark_issuer::IssuanceSpec;
use tokio::sync::Semaphore;

use crate::checks::Env;
use crate::checks::entity::fetch_configuration;
use crate::control_plane::ControlPlane;

/// Eligibility checks running at once.
pub const CHECKS_AT_ONCE: usize = 16;
/// Requests that may wait for one (type, subject)'s check.
pub const CHECK_WAITERS: usize = 1_024;
/// Verdicts cached at most.
pub const CACHED_VERDICTS: u64 = 100_000;

type Outcome = Result<Verdict, CheckError>;

/// A verdict and what it is valid for.
#[derive(Debug)]
struct Cached {
    spec_version: u64,
    /// Reused until then (exclusive), control plane clock.
    until: i64,
    verdict: Verdict,
}

/// The eligibility checks' bound, flights and verdict cache.
#[derive(Debug)]
pub struct Eligibility {
    slots: Arc<Semaphore>,
    flights: Arc<Flights<String, Outcome>>,
    /// Made on the first check: an empty cache is about 30 kB, and most hosted entities
    /// never check eligibility (BENCHMARKS.md, "Hosted entities").
    verdicts: LazyLock<moka::sync::Cache<(String, String), Arc<Cached>>>,
}

impl Default for Eligibility {
    fn default() -> Self {
        Self {
            slots: Arc::new(Semaphore::new(CHECKS_AT_ONCE)),
            flights: Flights::new(CHECK_WAITERS),
            verdicts: LazyLock::new(|| moka::sync::Cache::new(CACHED_VERDICTS)),
        }
    }
}

impl Eligibility {
    /// Answers from the cache, joins the check in progress, or starts one if a slot is free.
    /// Never waits.
    pub fn admit<F: Fetcher + 'static>(
        &self,
        cp: &Arc<ControlPlane>,
        fetcher: &Arc<F>,
        trust_mark_type: String,
        sub: String,
        reply: Reply<Verdict, CheckError>,
    ) {
        let snap = cp.snapshot();
        let Some(spec) = snap.trust_marks.specs.get(&trust_mark_type).cloned() else {
            let _ = reply.send(Err(CheckError::UnknownType));
            return;
        };
        let key = (trust_mark_type, sub);
        if let Some(hit) = self.verdicts.get(&key)
            && hit.spec_version == spec.version
            && cp.now() < hit.until
        {
            let _ = reply.send(Ok(hit.verdict.clone()));
            return;
        }
        // Type and subject are URLs: a newline separates them unambiguously.
        let flight = format!("{}\n{}", key.0, key.1);
        let Some((lead, slot)) = self.flights.lead_with(
            &flight,
            reply,
            || Err(Refused::Busy.into()),
            || self.slots.clone().try_acquire_owned().ok(),
        ) else {
            return;
        };
        let (cp, fetcher, verdicts) = (cp.clone(), fetcher.clone(), self.verdicts.clone());
        tokio::spawn(async move {
            let now = cp.now();
            let outcome = run(&cp, fetcher, snap, &spec, &key.1, now).await;
            drop(slot);
            // A check that could not be carried out (a 5xx: service down, program missing)
            // is not a verdict worth keeping: the next request tries again.
            let decided = match &outcome {
                Ok(Verdict::Pass) => true,
                Ok(Verdict::Deny(d)) => d.status < 500,
                Err(_) => false,
            };
            if let Ok(verdict) = &outcome
                && decided
                && spec.check_cache_ttl > 0
            {
                let cached = Cached {
                    spec_version: spec.version,
                    until: now.saturating_add(spec.check_cache_ttl),
                    verdict: verdict.clone(),
                };
                verdicts.insert(key, Arc::new(cached));
            }
            lead.finish(outcome);
        });
    }

    /// Checks in progress (tests and diagnostics).
    pub fn in_flight(&self) -> usize {
        self.flights.len()
    }
}

/// One check of `sub` against `spec`'s checker.
async fn run<F: Fetcher>(
    cp: &ControlPlane,
    fetcher: Arc<F>,
    snap: Arc<Snapshot>,
    spec: &IssuanceSpec,
    sub: &str,
    now: i64,
) -> Outcome {
    let Some(raw) = &spec.checker else {
        return Ok(Verdict::Deny(Denial::new(
            404,
            "not_found",
            "no entity check is configured for this trust mark type",
        )));
    };
    let checker = Checker::parse(raw, "eligibility_config.checker").map_err(|e| {
        // Validated when stored; a stored value that no longer parses is our bug.
        tracing::error!(error = %e, trust_mark_type = %spec.trust_mark_type, "stored checker unusable");
        CheckError::Internal
    })?;
    let fetched = match fetch_configuration(&*fetcher, sub, now).await {
        Ok(f) => f,
        Err(e) => return Ok(Verdict::Deny(Denial::new(400, "invalid_request", e))),
    };
    let env = Env::new(snap, fetcher, cp.checks.clone(), now);
    let candidate = Candidate {
        entity_id: sub,
        entity_types: &fetched.entity_types,
        configuration: &fetched.claims,
        configuration_jws: &fetched.jws,
        trust_mark_type: Some(&spec.trust_mark_type),
    };
    Ok(check(&checker, &candidate, &env).await)
}
