//! Enrollment (enroll and enroll_request endpoints): the control plane's half of
//! [`Command::Enroll`].
//!
//! Admission: single flight per (endpoint, `sub`) — concurrent enrollments of one entity share
//! one fetch, one check and one write, and all get its outcome — and at most
//! [`ENROLLMENTS_AT_ONCE`] flights at once (a fetch plus a check each, and checks may resolve
//! trust chains); a flight over that bound is refused at once (`503`).
//!
//! A flight: the stored status (of the entity, or of another spelling of it with the same
//! Entity Configuration URL) decides first (active, pending, blocked, inactive: nothing to
//! fetch). An existing row is never changed by an enrollment: its status, keys and types are
//! an administrator's (enrollment creates only active or pending rows, so an inactive one was
//! set by an administrator, and only an administrator reactivates it). Otherwise the entity's
//! Entity Configuration is fetched with the data plane's fetcher and verified
//! ([`fetch_configuration`]); its `authority_hints` must name us (an entity becomes our
//! subordinate only if it says we are its superior); the types are the request's, each of
//! which its metadata must declare, or else the metadata's keys; and the endpoint's check
//! runs — all before the writer lock, so a slow check never holds up other writes. Then,
//! under the lock, the row is read again (an administrator or another endpoint may have
//! decided meanwhile) and the entity is created by the sequence the Admin API's create uses
//! ([`new_subordinate`]), with a history event by the requester. Publishing the
//! subordinate also starts its key polling when `enable_jwks_update` is set, as for the Admin
//! API.
//!
//! [`Command::Enroll`]: pharos_runtime::command::Command::Enroll

use std::sync::Arc;

use pharos_runtime::command::{EnrollError, EnrollMode, EnrollOutcome, Enrollment, Refused, Reply};
use pharos_runtime::single_flight::Flights;
use pharos_shared::chain::Fetcher;
use pharos_shared::checks::{Candidate, Verdict, check};
use pharos_shared::jose::Jwks;
use pharos_shared::key_update::check_new_keys;
use pharos_shared::metadata_types::check_wallet_profile;
use pharos_shared::subordinate::SubordinateStatus;
use tokio::sync::Semaphore;

use crate::checks::Env;
use crate::checks::entity::{Fetched, fetch_configuration};
use crate::control_plane::ControlPlane;
use crate::db::subordinates::BasicWrite;
use crate::new_subordinate::{self, NewSubordinate};

/// Enrollments (fetch + check + write) in progress at once.
pub const ENROLLMENTS_AT_ONCE: usize = 8;
/// Requests that may wait for one entity's enrollment (each is one stored reply channel).
pub const ENROLL_WAITERS: usize = 1_024;
/// Most entity types taken from an Entity Configuration's metadata.
const MAX_TYPES: usize = 16;
/// Longest entity type stored (the column's size).
const MAX_TYPE_LEN: usize = 255;

/// The outcome an enrollment's waiters share.
type Outcome = Result<EnrollOutcome, EnrollError>;

/// The enrollments in flight and their bound.
#[derive(Debug)]
pub struct Enrollments {
    flights: Arc<Flights<String, Outcome>>,
    slots: Arc<Semaphore>,
}

impl Default for Enrollments {
    fn default() -> Self {
        Self::new(ENROLLMENTS_AT_ONCE)
    }
}

impl Enrollments {
    /// At most `at_once` enrollments in progress.
    pub fn new(at_once: usize) -> Self {
        Self {
            flights: Flights::new(ENROLL_WAITERS),
            slots: Arc::new(Semaphore::new(at_once.max(1))),
        }
    }

    /// Enrollments in progress (tests and diagnostics).
    pub fn in_flight(&self) -> usize {
        self.flights.len()
    }

    /// Joins the flight enrolling `e.sub` at `e`'s endpoint, or leads a new one in a task of
    /// its own if a slot is free; never waits.
    pub fn admit<F: Fetcher + 'static>(
        &self,
        cp: Arc<ControlPlane>,
        fetcher: Arc<F>,
        e: Enrollment,
        reply: Reply<EnrollOutcome, EnrollError>,
    ) {
        let key = flight_key(e.mode, &e.sub);
        let Some((lead, slot)) = self.flights.lead_with(
            &key,
            reply,
            || Err(Refused::Busy.into()),
            || self.slots.clone().try_acquire_owned().ok(),
        ) else {
            return;
        };
        tokio::spawn(async move {
            let outcome = enroll(&cp, &fetcher, &e).await;
            drop(slot);
            lead.finish(outcome);
        });
    }
}

/// Flights are per endpoint: an enroll and an enroll_request of one entity answer differently.
fn flight_key(mode: EnrollMode, sub: &str) -> String {
    let m = match mode {
        EnrollMode::Enroll => "enroll",
        EnrollMode::Request => "enroll_request",
    };
    format!("{m} {sub}")
}

/// Runs one enrollment; a database failure is logged and answered `Internal` (503
/// `Unavailable` when the database is unreachable).
pub async fn enroll<F: Fetcher>(cp: &ControlPlane, fetcher: &Arc<F>, e: &Enrollment) -> Outcome {
    run(cp, fetcher, e).await.unwrap_or_else(|err| {
        tracing::error!(error = %err, sub = %e.sub, "cannot store an enrollment");
        if err.is_unavailable() {
            Err(EnrollError::Refused(Refused::Unavailable))
        } else {
            Err(EnrollError::Internal)
        }
    })
}

/// The answer a stored row's status gives without fetching anything: every stored row
/// decides (`inactive`, which a hand-edited unknown word reads as, is an administrator's
/// decision).
fn decided(status: SubordinateStatus) -> Outcome {
    match status {
        SubordinateStatus::Active => Ok(EnrollOutcome::Active),
        SubordinateStatus::Pending => Ok(EnrollOutcome::Pending),
        SubordinateStatus::Blocked => Err(EnrollError::Blocked),
        SubordinateStatus::Inactive => Err(EnrollError::Inactive),
    }
}

/// The outer `Result` is a database failure, the inner one the answer.
async fn run<F: Fetcher>(
    cp: &ControlPlane,
    fetcher: &Arc<F>,
    e: &Enrollment,
) -> crate::Result<Outcome> {
    // Read outside the lock only to spare a fetch; the write reads again under it.
    if let Some(r) = new_subordinate::taken(cp, &e.sub).await? {
        return Ok(decided(r.status));
    }
    let now = cp.now();
    let fetched = match fetch_configuration(&**fetcher, &e.sub, now).await {
        Ok(f) => f,
        Err(m) => return Ok(Err(EnrollError::Configuration(m))),
    };
    let jwks = match keys(&fetched, &cp.settings.federation.accept.key_types) {
        Ok(j) => j,
        Err(m) => return Ok(Err(EnrollError::Configuration(m))),
    };
    if let Err(m) = names_us(&fetched, &cp.settings.entity_id) {
        return Ok(Err(EnrollError::Configuration(m)));
    }
    let types = match entity_types(&e.entity_types, &fetched.entity_types) {
        Ok(t) => t,
        Err(m) => return Ok(Err(EnrollError::Configuration(m))),
    };
    let metadata = fetched.claims.get("metadata").and_then(|m| m.as_object());
    if let Some(Err(m)) = metadata.map(|m| check_wallet_profile(&e.sub, m)) {
        let m = format!("the entity configuration's metadata: {m}");
        return Ok(Err(EnrollError::Configuration(m)));
    }
    let candidate = Candidate {
        entity_id: &e.sub,
        entity_types: &types,
        configuration: &fetched.claims,
        configuration_jws: &fetched.jws,
        trust_mark_type: None,
    };
    // Outside the writer lock: a check may take as long as its remote services do.
    let env = Env::new(cp.snapshot(), fetcher.clone(), cp.checks.clone(), now);
    if let Verdict::Deny(d) = check(&e.checker, &candidate, &env).await {
        return Ok(Err(EnrollError::Denied(d)));
    }
    store(cp, e, &jwks, &types).await
}

/// The configuration's `jwks`, as the subordinate's keys: a valid public key set, the rule
/// the jwks_update endpoint applies to pushed keys.
fn keys(fetched: &Fetched, accepted_kty: &[String]) -> Result<Jwks, String> {
    let jwks: Jwks = fetched
        .jwks()
        .cloned()
        .and_then(|j| serde_json::from_value(j).ok())
        .ok_or("the entity configuration has no valid jwks")?;
    check_new_keys(&jwks, Some(accepted_kty))
        .map_err(|m| format!("the entity configuration's jwks: {m}"))?;
    Ok(jwks)
}

/// Whether the configuration's `authority_hints` name `us`: enrolling an entity that does not
/// name us as its superior would make us vouch for it without its word.
fn names_us(fetched: &Fetched, us: &str) -> Result<(), String> {
    let hints = fetched
        .claims
        .get("authority_hints")
        .and_then(|h| h.as_array());
    if hints.is_some_and(|h| h.iter().any(|v| v.as_str() == Some(us))) {
        Ok(())
    } else {
        Err(format!(
            "the entity configuration's authority_hints do not name {us}"
        ))
    }
}

/// The request's types, each of which the configuration's metadata must declare, else the
/// metadata keys that fit a stored type.
fn entity_types(requested: &[String], declared: &[String]) -> Result<Vec<String>, String> {
    if let Some(t) = requested.iter().find(|t| !declared.contains(t)) {
        return Err(format!(
            "entity_type {t} is not in the entity configuration's metadata"
        ));
    }
    if !requested.is_empty() {
        return Ok(requested.to_vec());
    }
    Ok(declared
        .iter()
        .filter(|t| !t.trim().is_empty() && t.len() <= MAX_TYPE_LEN)
        .take(MAX_TYPES)
        .cloned()
        .collect())
}

/// Stores the enrollment under the writer lock, unless the row was decided meanwhile.
async fn store(
    cp: &ControlPlane,
    e: &Enrollment,
    jwks: &Jwks,
    types: &[String],
) -> crate::Result<Outcome> {
    let (status, outcome, what) = match e.mode {
        EnrollMode::Enroll => (
            SubordinateStatus::Active,
            EnrollOutcome::Active,
            "enrolled at the enroll endpoint",
        ),
        EnrollMode::Request => (
            SubordinateStatus::Pending,
            EnrollOutcome::Pending,
            "enrollment requested at the enroll_request endpoint",
        ),
    };
    let mut w = cp.write(Some(&e.actor)).await;
    if let Some(r) = new_subordinate::taken(cp, &e.sub).await? {
        // Decided meanwhile (an administrator or another endpoint): left as it is.
        return Ok(decided(r.status));
    }
    let keys = Some(jwks.clone());
    let new = NewSubordinate {
        entity_id: &e.sub,
        basic: BasicWrite {
            description: what.into(),
            status,
            enable_jwks_update: e.poll.is_some(),
            jwks_poll_interval: e.poll.unwrap_or(0),
        },
        jwks: &keys,
        entity_types: types,
    };
    new_subordinate::insert(cp, &mut w, &new, what).await?;
    w.commit().await?;
    Ok(Ok(outcome))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_statuses_decide_before_any_fetch() {
        let stored = |word| crate::db::subordinates::stored_status("https://e.example", word);
        assert_eq!(decided(stored("active")), Ok(EnrollOutcome::Active));
        assert_eq!(decided(stored("pending")), Ok(EnrollOutcome::Pending));
        assert_eq!(decided(stored("blocked")), Err(EnrollError::Blocked));
        assert_eq!(decided(stored("inactive")), Err(EnrollError::Inactive));
        assert_eq!(decided(stored("hand-edited")), Err(EnrollError::Inactive));
    }

    #[test]
    fn types_come_from_the_request_else_the_metadata() {
        let s = |v: &[&str]| v.iter().map(|t| (*t).to_owned()).collect::<Vec<_>>();
        let declared = s(&["federation_entity", "openid_relying_party"]);
        assert_eq!(
            entity_types(&s(&["openid_relying_party"]), &declared),
            Ok(s(&["openid_relying_party"]))
        );
        let undeclared = entity_types(&s(&["openid_relying_party", "openid_provider"]), &declared);
        assert!(undeclared.unwrap_err().contains("openid_provider"));
        assert_eq!(entity_types(&[], &declared), Ok(declared));
        let long = "x".repeat(256);
        let odd = s(&["", &long, "openid_provider"]);
        assert_eq!(entity_types(&[], &odd), Ok(s(&["openid_provider"])));
        let many: Vec<String> = (0..40).map(|i| format!("t{i}")).collect();
        assert_eq!(entity_types(&[], &many).unwrap().len(), MAX_TYPES);
    }

    #[test]
    fn flights_are_per_endpoint_and_entity() {
        assert_ne!(
            flight_key(EnrollMode::Enroll, "https://a"),
            flight_key(EnrollMode::Request, "https://a")
        );
        assert_ne!(
            flight_key(EnrollMode::Enroll, "https://a"),
            flight_key(EnrollMode::Enroll, "https://b")
        );
    }
}
