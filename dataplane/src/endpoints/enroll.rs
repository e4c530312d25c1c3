//! The enroll endpoint (lighthouse extension, reference §1.9): an entity asks to become our
//! subordinate, and the endpoint's entity check decides at once.
//!
//! Parameters (query for GET, form for POST): `sub` (required, the entity identifier) and
//! `entity_type` (repeatable; otherwise the keys of the entity's metadata). Answers:
//! - already `active`: `201 application/entity-statement+jwt`, the statement the fetch
//!   endpoint serves about it;
//! - `pending`: `202 invalid_request` "the enrollment needs to be approved by an
//!   administrator"; `blocked` and `inactive` (both set by an administrator, whose decision
//!   enrollment never changes): `403 invalid_request`;
//! - new: the control plane fetches the entity's Entity Configuration (the resolver's
//!   outbound rules), verifies its self-signature and that it is `sub`'s, that its
//!   `authority_hints` name us and that every requested `entity_type` is in its metadata, runs
//!   the check and stores the entity `active` ([`Command::Enroll`]); then `201` with the
//!   statement. A configuration that cannot be fetched or verified, or fails those rules, is
//!   `400 invalid_request`; a denial is the check's status and error body. Nothing is stored
//!   in either case.
//!
//! The request is read here and shared with the enroll_request endpoint
//! ([`super::enroll_request`]), which differs only in what it stores and answers.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use pharos_shared::chain::is_entity_identifier;
use pharos_shared::checks::Checker;
use pharos_shared::endpoint::EndpointConfig;
use pharos_shared::snapshot::{EndpointEntry, Snapshot};
use pharos_shared::subordinate::SubordinateStatus;

use super::trust_mark::param;
use super::trust_mark_eligibility::Refusal;
use super::{Call, Caller, fetch};
use crate::DataPlane;
use crate::entity_configuration::CONTENT_TYPE;
use crate::error::FedError;
use crate::jwt_response::jwt_with_status;
use pharos_runtime::command::{Command, EnrollError, EnrollMode, EnrollOutcome, Enrollment};

/// Longest `entity_type` value accepted (the database column's size).
const MAX_TYPE_LEN: usize = 255;
/// Most `entity_type` values in one request (there are a handful of entity types).
const MAX_TYPES: usize = 16;

/// What an enroll or enroll_request asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EnrollParams {
    /// The entity identifier.
    pub sub: String,
    /// The `entity_type` values, deduplicated, in request order.
    pub entity_types: Vec<String>,
}

/// Reads and checks the parameters of a request to enroll at the service `own_id`.
pub(crate) fn read(params: &[(String, String)], own_id: &str) -> Result<EnrollParams, FedError> {
    let sub = param(params, "sub")?;
    if !url::Url::parse(sub).is_ok_and(|u| is_entity_identifier(&u)) {
        return Err(FedError::invalid_request(
            "'sub' must be an entity identifier: an https URL with a host, without query or fragment",
        ));
    }
    if sub == own_id {
        return Err(FedError::invalid_request(
            "'sub' is our own entity identifier",
        ));
    }
    let mut entity_types: Vec<String> = Vec::new();
    for (_, t) in params.iter().filter(|(k, _)| k == "entity_type") {
        if t.trim().is_empty() || t.len() > MAX_TYPE_LEN {
            return Err(FedError::invalid_request(format!(
                "'entity_type' values must be non-empty and at most {MAX_TYPE_LEN} characters"
            )));
        }
        if !entity_types.contains(t) {
            entity_types.push(t.clone());
        }
    }
    if entity_types.len() > MAX_TYPES {
        return Err(FedError::invalid_request(format!(
            "at most {MAX_TYPES} 'entity_type' values"
        )));
    }
    Ok(EnrollParams {
        sub: sub.to_owned(),
        entity_types,
    })
}

/// Answers an enroll request.
pub(crate) async fn serve(call: Call<'_>) -> Response {
    if let Some(refused) = call.over_limit(crate::rate_limit::Limited::Enroll) {
        return refused;
    }
    let (dp, now) = (call.dp, call.now);
    match standing(call, EnrollMode::Enroll).await {
        Ok((sub, EnrollOutcome::Active)) => {
            // The snapshot the control plane published with the enrollment, or a newer one.
            let snap = dp.snapshot();
            match fetch::statement_about(dp, &snap, &sub, now).await {
                Ok(body) => jwt_with_status(StatusCode::CREATED, CONTENT_TYPE, body),
                Err(e) => e.into_response(),
            }
        }
        Ok((_, EnrollOutcome::Pending)) => FedError::new(
            StatusCode::ACCEPTED,
            "invalid_request",
            "the enrollment needs to be approved by an administrator",
        )
        .into_response(),
        Err(e) => e.into_response(),
    }
}

/// The entity's standing after the request (and its identifier): read from the snapshot
/// when it is decided already, else whatever the control plane made of the enrollment.
pub(crate) async fn standing(
    call: Call<'_>,
    mode: EnrollMode,
) -> Result<(String, EnrollOutcome), Refusal> {
    let (dp, snap, entry) = (call.dp, call.snap.clone(), call.entry.clone());
    let (params, caller) = call.params().await?;
    let p = read(&params, &snap.entity_id)?;
    if let Some(decided) = decided(&snap, &p.sub) {
        return Ok((p.sub, decided?));
    }
    let enrollment = enrollment(&entry, p.clone(), caller, mode)?;
    let outcome = ask(dp, enrollment).await?;
    Ok((p.sub, outcome))
}

/// The stored standing when it decides the answer without fetching anything.
fn decided(snap: &Snapshot, sub: &str) -> Option<Result<EnrollOutcome, EnrollError>> {
    match snap.subordinates.get(sub)?.status {
        SubordinateStatus::Active => Some(Ok(EnrollOutcome::Active)),
        SubordinateStatus::Pending => Some(Ok(EnrollOutcome::Pending)),
        SubordinateStatus::Blocked => Some(Err(EnrollError::Blocked)),
        // Set by an administrator (enrollment creates active or pending rows only).
        SubordinateStatus::Inactive => Some(Err(EnrollError::Inactive)),
    }
}

/// The command for `p` at endpoint `entry`.
fn enrollment(
    entry: &EndpointEntry,
    p: EnrollParams,
    caller: Caller,
    mode: EnrollMode,
) -> Result<Enrollment, FedError> {
    let (checker, poll) = match &entry.config {
        EndpointConfig::Enroll(c) => (
            // Validated when stored: a failure here is a corrupted row, not the caller's fault.
            c.parsed_checker().map_err(FedError::server_error)?,
            c.enable_jwks_update.then_some(c.jwks_poll_interval),
        ),
        _ => (Checker::None, None),
    };
    let actor = match caller {
        Caller::Authenticated { entity_id } => entity_id,
        Caller::Anonymous => format!("{} endpoint", entry.kind),
    };
    Ok(Enrollment {
        mode,
        sub: p.sub,
        entity_types: p.entity_types,
        checker,
        poll,
        actor,
    })
}

async fn ask(dp: &DataPlane, enrollment: Enrollment) -> Result<EnrollOutcome, Refusal> {
    let outcome = dp
        .commands
        .call(|reply| Command::Enroll { enrollment, reply })
        .await?;
    Ok(outcome)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn p(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    const US: &str = "https://us.example";

    #[test]
    fn reads_sub_and_entity_types() {
        let r = read(
            &p(&[
                ("sub", "https://leaf.example"),
                ("entity_type", "openid_relying_party"),
                ("entity_type", "federation_entity"),
                ("entity_type", "openid_relying_party"),
            ]),
            US,
        )
        .unwrap();
        assert_eq!(r.sub, "https://leaf.example");
        assert_eq!(
            r.entity_types,
            ["openid_relying_party", "federation_entity"]
        );
        let r = read(&p(&[("sub", "http://127.0.0.1:8080/x")]), US).unwrap();
        assert!(
            r.entity_types.is_empty(),
            "http on loopback (one-machine federations)"
        );
    }

    #[test]
    fn refuses_bad_requests() {
        let bad = |pairs: &[(&str, &str)]| {
            let e = read(&p(pairs), US).unwrap_err();
            assert_eq!((e.status.as_u16(), e.code), (400, "invalid_request"));
            e.description
        };
        assert!(bad(&[]).contains("'sub'"));
        assert!(bad(&[("sub", "")]).contains("'sub'"));
        assert!(bad(&[("sub", "leaf.example")]).contains("entity identifier"));
        assert!(bad(&[("sub", "ftp://leaf.example")]).contains("entity identifier"));
        assert!(bad(&[("sub", "http://leaf.example")]).contains("https"));
        assert!(bad(&[("sub", "https://leaf.example?x=1")]).contains("query"));
        assert!(bad(&[("sub", "https://leaf.example#f")]).contains("fragment"));
        assert!(bad(&[("sub", "https://a"), ("sub", "https://b")]).contains("more than once"));
        assert!(bad(&[("sub", US)]).contains("own"));
        assert!(bad(&[("sub", "https://a"), ("entity_type", " ")]).contains("entity_type"));
        let long = "x".repeat(256);
        assert!(bad(&[("sub", "https://a"), ("entity_type", &long)]).contains("entity_type"));
        let many: Vec<String> = (0..17).map(|i| format!("t{i}")).collect();
        let mut pairs = vec![("sub", "https://a")];
        pairs.extend(many.iter().map(|t| ("entity_type", t.as_str())));
        assert!(bad(&pairs).contains("at most"));
    }
}
