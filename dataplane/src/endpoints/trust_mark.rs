//! The trust mark endpoint (spec §8.6): a Trust Mark of `trust_mark_type` for `sub`, signed
//! here, when the subject is entitled to it.
//!
//! Answers: `200 application/trust-mark+jwt`; unknown type or a subject without the right to
//! the mark `404 not_found` (the specification's MUST); a blocked subject `403`, a pending
//! request `202` with an error body (lighthouse's answers, kept for its clients); with a
//! checker, its denial (see [`super::trust_mark_eligibility`]). Every mark is
//! recorded through the control plane before it is handed out, so the status and listing
//! endpoints know every mark a client can hold.
//!
//! A subject that holds a mark gets that mark again (same `jti`, same bytes, from the
//! snapshot: no command, no writer lock) until it nears its end — past
//! `federation.trust_mark_renew_after_percent` of its lifetime, or the spec's `cache_ttl`
//! (when set) after it was issued — or until what it says (spec or subject claims), our
//! signing key or its standing changed: then a new one is signed and recorded. So repeated
//! requests store one row, not one each. A revoked mark is never served again (lighthouse's
//! cache outlives revocation, reference §13 item 10).

use crate::cache_counters::Cache as Counted;
use std::sync::Arc;

use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use pharos_shared::chain::is_entity_identifier;
use pharos_shared::snapshot::Snapshot;
use pharos_shared::trust_mark::TRUST_MARK_TYP;
use pharos_shared::trust_mark_issuer::{
    IssuanceSpec, IssuedMark, SignedMark, mark_claims, standing,
};

use super::Call;
use super::trust_mark_eligibility::{Refusal, decide};
use crate::DataPlane;
use crate::error::FedError;
use crate::jwt_response::jwt;
use pharos_runtime::command::Command;
use pharos_runtime::signing;

/// Media type of the response.
pub const CONTENT_TYPE: &str = "application/trust-mark+jwt";

/// The one value of parameter `name`: absent or empty is `invalid_request`, and so is a
/// parameter given twice (which of the two was meant is not ours to guess).
pub(crate) fn param<'p>(params: &'p [(String, String)], name: &str) -> Result<&'p str, FedError> {
    optional_param(params, name)?
        .ok_or_else(|| FedError::invalid_request(format!("required parameter '{name}' not given")))
}

/// As [`param`], for a parameter that may be absent.
pub(crate) fn optional_param<'p>(
    params: &'p [(String, String)],
    name: &str,
) -> Result<Option<&'p str>, FedError> {
    let mut values = params.iter().filter(|(k, _)| k == name);
    let first = values.next().map(|(_, v)| v.as_str());
    if values.next().is_some() {
        return Err(FedError::invalid_request(format!(
            "parameter '{name}' given more than once"
        )));
    }
    Ok(first.filter(|v| !v.is_empty()))
}

/// The one value of parameter `name`, which must be an Entity Identifier (the rule chain
/// validation applies): checked before anything is fetched or stored for it.
pub(crate) fn entity_id_param<'p>(
    params: &'p [(String, String)],
    name: &str,
) -> Result<&'p str, FedError> {
    let value = param(params, name)?;
    if !url::Url::parse(value).is_ok_and(|u| is_entity_identifier(&u)) {
        return Err(FedError::invalid_request(format!(
            "'{name}' must be an entity identifier: an https URL with a host, without query or fragment"
        )));
    }
    Ok(value)
}

/// The issuance spec of `trust_mark_type`, or 404.
pub(crate) fn spec<'s>(
    snap: &'s Snapshot,
    trust_mark_type: &str,
) -> Result<&'s Arc<IssuanceSpec>, FedError> {
    snap.trust_marks
        .specs
        .get(trust_mark_type)
        .ok_or_else(|| FedError::not_found("'trust_mark_type' not known"))
}

/// Answers a trust mark request.
pub(crate) async fn serve(call: Call<'_>) -> Response {
    if let Some(refused) = call.over_limit(crate::rate_limit::Limited::TrustMark) {
        return refused;
    }
    let (dp, snap, now) = (call.dp, call.snap.clone(), call.now);
    let params = match call.params().await {
        Ok((p, _)) => p,
        Err(e) => return e.into_response(),
    };
    match issue(dp, &snap, &params, now).await {
        Ok(body) => jwt(CONTENT_TYPE, body),
        Err(e) => e.into_response(),
    }
}

async fn issue(
    dp: &DataPlane,
    snap: &Snapshot,
    params: &[(String, String)],
    now: i64,
) -> Result<Bytes, Refusal> {
    // The identifier rules first: a checker would fetch `sub`.
    let sub = entity_id_param(params, "sub")?;
    let tm_type = param(params, "trust_mark_type")?;
    let spec = spec(snap, tm_type)?;
    let key = (tm_type.to_owned(), sub.to_owned());
    // A subject entitled by a checker alone has no stored row: no extra claims.
    let subject = snap.trust_marks.subjects.get(&key).map(|s| &**s);
    let checked = decide(dp, spec.eligibility, standing(subject), tm_type, sub).await?;
    let jti = pharos_runtime::jti::new_jti().map_err(FedError::server_error)?;
    let extras = subject.map(|s| &s.additional_claims);
    let claims = mark_claims(
        &snap.entity_id,
        spec,
        extras,
        sub,
        &jti,
        now,
        snap.trust_marks.legacy_id,
    );
    let kid = snap.keys.signer.kid();
    if let Some(held) = held(snap, spec, sub, &claims, kid, now) {
        dp.caches.hit(Counted::TrustMark);
        return Ok(held);
    }
    dp.caches.miss(Counted::TrustMark);
    let expires_at = claims.get("exp").and_then(serde_json::Value::as_i64);
    let token = signing::sign(&snap.keys.signer, TRUST_MARK_TYP, claims)
        .await
        .map_err(FedError::server_error)?;
    let signed = SignedMark::parse(&token)
        .ok_or_else(|| FedError::server_error("a mark we signed does not decode"))?;
    let mark = IssuedMark {
        jti,
        trust_mark_type: tm_type.to_owned(),
        subject: sub.to_owned(),
        issued_at: now,
        expires_at,
        revoked_at: None,
        signed: Some(Arc::new(signed)),
    };
    // The control plane answers the mark to hand out: this one once recorded, or the one a
    // concurrent request recorded first.
    let handed_out = dp
        .commands
        .call(|reply| Command::RecordIssuedTrustMark {
            mark,
            checked,
            reply,
        })
        .await
        .map_err(Refusal::from)?;
    Ok(Bytes::copy_from_slice(handed_out.as_bytes()))
}

/// The mark `sub` holds of `spec`'s type, when it may be handed out again instead of one with
/// `claims` signed with `kid` (see the module documentation).
fn held(
    snap: &Snapshot,
    spec: &IssuanceSpec,
    sub: &str,
    claims: &serde_json::Map<String, serde_json::Value>,
    kid: &str,
    now: i64,
) -> Option<Bytes> {
    let held =
        snap.trust_marks
            .reusable(&spec.trust_mark_type, sub, claims, kid, spec.cache_ttl, now)?;
    let signed = held.signed.as_ref()?;
    Some(Bytes::copy_from_slice(signed.token.as_bytes()))
}
