//! The trust mark request endpoint (Pharos and lighthouse extension, reference §1.11): an
//! entity asks for a mark of `trust_mark_type`; an administrator approves or declines later.
//!
//! `sub` must be an Entity Identifier (`400 invalid_request`, checked before anything else).
//! Already entitled: `204`. Blocked: `403 invalid_request`. Pending already: `202` — these
//! three from the snapshot, without a command. Otherwise the control plane fetches and
//! verifies the subject's Entity Configuration (`400 invalid_request` when it cannot), refuses
//! once `federation.trust_mark_pending_max` subjects of the type are pending (`503
//! temporarily_unavailable`, naming the bound), and stores the subject as `pending` with a
//! `requested` history event whose actor is the authenticated client (none without client
//! authentication): `202`. An unknown type is `404 not_found`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use pharos_shared::snapshot::Snapshot;
use pharos_shared::trust_mark_issuer::{Standing, standing};

use super::trust_mark::{entity_id_param, param, spec};
use super::{Call, Caller};
use crate::DataPlane;
use crate::error::FedError;
use pharos_runtime::command::{Command, MarkRequestError, MarkRequestOutcome};

/// Answers a trust mark request.
pub(crate) async fn serve(call: Call<'_>) -> Response {
    if let Some(refused) = call.over_limit(crate::rate_limit::Limited::TrustMarkRequest) {
        return refused;
    }
    let (dp, snap) = (call.dp, call.snap.clone());
    let (params, caller) = match call.params().await {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    match request(dp, &snap, &params, caller).await {
        Ok(MarkRequestOutcome::AlreadyEntitled) => StatusCode::NO_CONTENT.into_response(),
        Ok(MarkRequestOutcome::Pending) => StatusCode::ACCEPTED.into_response(),
        Err(e) => e.into_response(),
    }
}

async fn request(
    dp: &DataPlane,
    snap: &Snapshot,
    params: &[(String, String)],
    caller: Caller,
) -> Result<MarkRequestOutcome, FedError> {
    let sub = entity_id_param(params, "sub")?;
    let tm_type = param(params, "trust_mark_type")?;
    spec(snap, tm_type)?;
    let key = (tm_type.to_owned(), sub.to_owned());
    // The stored standing only: a request asks an administrator, not a checker.
    match standing(snap.trust_marks.subjects.get(&key).map(|s| &**s)) {
        Standing::Entitled => return Ok(MarkRequestOutcome::AlreadyEntitled),
        Standing::Pending => return Ok(MarkRequestOutcome::Pending),
        Standing::Blocked => return Err(MarkRequestError::Blocked.into()),
        Standing::NotEntitled => {}
    }
    let (trust_mark_type, sub) = key;
    let actor = match caller {
        Caller::Authenticated { entity_id } => Some(entity_id),
        Caller::Anonymous => None,
    };
    let outcome = dp
        .commands
        .call(|reply| Command::RequestTrustMark {
            trust_mark_type,
            sub,
            actor,
            reply,
        })
        .await?;
    Ok(outcome)
}
