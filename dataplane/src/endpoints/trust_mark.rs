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
//! With the spec's `cache_ttl` the signed mark is handed out again (same `jti`) for at most
//! `cache_ttl` seconds and never past its `exp`. The cached mark is tied to the versions of
//! the spec and subject it was made from and to our keys' generation: blocking a subject
//! publishes it with a new version, so a revoked mark is never served again (lighthouse's
//! cache outlives revocation, reference §13 item 10).

use crate::cache_counters::Cache as Counted;
use std::sync::Arc;

use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use moka::future::Cache;
use pharos_shared::snapshot::Snapshot;
use pharos_shared::trust_mark::TRUST_MARK_TYP;
use pharos_shared::trust_mark_issuer::{
    IssuanceSpec, IssuedMark, MarkStatus, Subject, mark_claims, standing,
};

use super::Call;
use super::trust_mark_eligibility::{Refusal, decide};
use crate::DataPlane;
use crate::command::Command;
use crate::error::FedError;
use crate::jwt_response::jwt;
use crate::signing;

/// Media type of the response.
pub const CONTENT_TYPE: &str = "application/trust-mark+jwt";

/// Cached marks kept at most (one per type and subject).
const CACHE_ENTRIES: u64 = 100_000;

/// A mark signed earlier, and what it was made from.
#[derive(Debug)]
struct CachedMark {
    body: Bytes,
    jti: Arc<str>,
    spec_version: u64,
    subject_version: u64,
    statements_generation: u64,
    /// Handed out again until then (exclusive).
    until: i64,
}

/// Signed marks by (type, subject), for specs with a `cache_ttl`.
#[derive(Debug)]
pub struct MarkCache(Cache<(String, String), Arc<CachedMark>>);

impl Default for MarkCache {
    fn default() -> Self {
        Self(Cache::builder().max_capacity(CACHE_ENTRIES).build())
    }
}

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
    let sub = param(params, "sub")?;
    let tm_type = param(params, "trust_mark_type")?;
    let spec = spec(snap, tm_type)?;
    let key = (tm_type.to_owned(), sub.to_owned());
    // A subject entitled by a checker alone has no stored row: no extra claims, version 0.
    let subject = snap.trust_marks.subjects.get(&key).map(|s| &**s);
    decide(dp, spec.eligibility, standing(subject), tm_type, sub).await?;
    let cache = &dp.trust_mark_cache.0;
    if spec.cache_ttl > 0
        && let Some(hit) = cache.get(&key).await
        && fresh(&hit, snap, spec, subject, now)
    {
        dp.caches.hit(Counted::TrustMark);
        return Ok(hit.body.clone());
    }
    dp.caches.miss(Counted::TrustMark);
    let jti = new_jti()?;
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
    let expires_at = claims.get("exp").and_then(serde_json::Value::as_i64);
    let token = signing::sign(&snap.keys.signer, TRUST_MARK_TYP, claims)
        .await
        .map_err(FedError::server_error)?;
    let mark = IssuedMark {
        jti: jti.clone(),
        trust_mark_type: tm_type.to_owned(),
        subject: sub.to_owned(),
        issued_at: now,
        expires_at,
        revoked_at: None,
    };
    dp.commands
        .call(|reply| Command::RecordIssuedTrustMark { mark, reply })
        .await
        .map_err(FedError::from)?;
    let body = Bytes::from(token);
    if spec.cache_ttl > 0 {
        let until = expires_at
            .unwrap_or(i64::MAX)
            .min(now.saturating_add(spec.cache_ttl));
        let cached = CachedMark {
            body: body.clone(),
            jti: Arc::from(jti),
            spec_version: spec.version,
            subject_version: subject.map_or(0, |s| s.version),
            statements_generation: snap.statements_generation,
            until,
        };
        cache.insert(key, Arc::new(cached)).await;
    }
    Ok(body)
}

/// Whether a cached mark may be handed out again: made from the spec and subject as they are
/// now, with our current keys, in time, and its instance still active.
fn fresh(
    hit: &CachedMark,
    snap: &Snapshot,
    spec: &IssuanceSpec,
    subject: Option<&Subject>,
    now: i64,
) -> bool {
    hit.spec_version == spec.version
        && hit.subject_version == subject.map_or(0, |s| s.version)
        && hit.statements_generation == snap.statements_generation
        && now < hit.until
        && snap
            .trust_marks
            .issued
            .get(&*hit.jti)
            .is_some_and(|m| m.status(now) == MarkStatus::Active)
}

/// A fresh `jti`: 128 random bits from the operating system, as 32 hex digits.
fn new_jti() -> Result<String, FedError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(FedError::server_error)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
