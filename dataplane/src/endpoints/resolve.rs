//! The `resolve` endpoint (§8.3): `sub` + `trust_anchor` (repeatable) + `entity_type`
//! (repeatable) → a signed `resolve-response+jwt`.
//!
//! Order of sources: the proactive resolver's stored responses (so a restarted resolver
//! answers with every upstream down), then the resolver caches, then live resolution. Errors
//! follow the specification (design decision 1): `invalid_request` 400, `invalid_trust_anchor`
//! 404, `invalid_trust_chain` 400, `invalid_metadata` 400, `not_found` 404 when the subject's
//! Entity Configuration cannot be fetched.

use crate::cache_counters::Cache;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use pharos_shared::Error;
use pharos_shared::chain::{RESOLVE_RESPONSE_CONTENT_TYPE, RESOLVE_RESPONSE_TYP};
use pharos_shared::endpoint::{EndpointConfig, ResolveConfig};
use pharos_shared::snapshot::{EndpointEntry, Snapshot};
use pharos_shared::trust_mark::VerifiedTrustMark;
use std::sync::Arc;

use super::{Call, Caller};
use crate::DataPlane;
use crate::error::FedError;
use crate::jwt_response::jwt;
use crate::resolver::store::{Hit, Job};
use crate::resolver::{Local, Query, Resolution, admits, anchor_rule, grace_rule};
use pharos_runtime::signing;

/// The parsed request.
struct Params {
    sub: String,
    anchors: Vec<String>,
    types: Vec<String>,
}

fn parse(pairs: &[(String, String)]) -> Result<Params, FedError> {
    let all = |name: &str| -> Vec<String> {
        pairs
            .iter()
            .filter(|(k, v)| k == name && !v.is_empty())
            .map(|(_, v)| v.clone())
            .collect()
    };
    let sub = all("sub")
        .into_iter()
        .next()
        .ok_or_else(|| FedError::invalid_request("required parameter 'sub' not given"))?;
    let anchors = all("trust_anchor");
    if anchors.is_empty() {
        return Err(FedError::invalid_request(
            "required parameter 'trust_anchor' not given",
        ));
    }
    let mut types = all("entity_type");
    types.sort();
    types.dedup();
    Ok(Params {
        sub,
        anchors,
        types,
    })
}

/// A response and the first instant at which the caches beneath would answer differently.
struct Answer {
    body: Bytes,
    valid_until: i64,
}

/// The front cache's answer to an unauthenticated GET with raw query string `query` (see
/// [`crate::resolver::front`]), if it holds one.
pub(crate) fn cached(
    dp: &DataPlane,
    snap: &Snapshot,
    entry: &EndpointEntry,
    query: &str,
    now: i64,
) -> Option<Response> {
    if !front_cached(entry) {
        return None;
    }
    let body = dp.resolve.front.get(query, snap.generation, now)?;
    dp.caches.hit(Cache::Resolve);
    Some(jwt(RESOLVE_RESPONSE_CONTENT_TYPE, body))
}

/// Answers a resolve request that [`cached`] did not.
pub(crate) async fn serve(call: Call<'_>) -> Response {
    if let Some(refused) = call.over_limit(crate::rate_limit::Limited::Resolve) {
        return refused;
    }
    let (dp, snap, entry, now) = (call.dp, call.snap.clone(), call.entry.clone(), call.now);
    if let Some(query) = call.raw_query() {
        return anonymous_get(dp, &snap, &entry, query, now).await;
    }
    let (form, caller) = match call.params().await {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    match answer(dp, &snap, &entry, &form, &caller).await {
        Ok(a) => jwt(RESOLVE_RESPONSE_CONTENT_TYPE, a.body),
        Err(e) => e.into_response(),
    }
}

/// Whether anonymous answers go through the front cache: the proactive resolver's stored
/// responses take precedence, so with one enabled the whole path runs every time.
fn front_cached(entry: &EndpointEntry) -> bool {
    !config(entry)
        .proactive_resolver
        .as_ref()
        .is_some_and(|p| p.enabled)
}

/// An unauthenticated GET with raw query string `query` that the front cache did not answer:
/// the full path, whose answer is then kept there.
async fn anonymous_get(
    dp: &DataPlane,
    snap: &Snapshot,
    entry: &EndpointEntry,
    query: &str,
    now: i64,
) -> Response {
    let front = front_cached(entry);
    dp.caches.miss(Cache::Resolve);
    let form = super::query::pairs(query.as_bytes());
    match answer(dp, snap, entry, &form, &Caller::Anonymous).await {
        Ok(a) => {
            if front && a.valid_until > now {
                let body = a.body.clone();
                dp.resolve
                    .front
                    .insert(query, snap.generation, a.valid_until, body);
            }
            jwt(RESOLVE_RESPONSE_CONTENT_TYPE, a.body)
        }
        Err(e) => e.into_response(),
    }
}

fn config(entry: &EndpointEntry) -> &ResolveConfig {
    static DEFAULT: std::sync::LazyLock<ResolveConfig> =
        std::sync::LazyLock::new(ResolveConfig::default);
    match &entry.config {
        EndpointConfig::Resolve(c) => c,
        _ => &DEFAULT,
    }
}

async fn answer(
    dp: &DataPlane,
    snap: &Snapshot,
    entry: &EndpointEntry,
    form: &[(String, String)],
    caller: &Caller,
) -> Result<Answer, FedError> {
    let p = parse(form)?;
    let cfg = config(entry);
    let mut anchors = p.anchors.clone();
    let rule = anchor_rule(snap, cfg);
    anchors.retain(|a| admits(snap, &rule, a));
    let mut seen = std::collections::HashSet::new();
    anchors.retain(|a| seen.insert(a.clone()));
    if anchors.is_empty() {
        // Refused before anything is fetched: a stranger's anchor is not walked for anyone.
        return Err(FedError::new(
            StatusCode::NOT_FOUND,
            "invalid_trust_anchor",
            format!(
                "all provided trust anchors are not allowed for this endpoint: {}",
                rule.describe()
            ),
        ));
    }
    let now = dp.now();
    let proactive = dp.resolve.proactive(cfg).await;
    if let Some(pr) = &proactive
        && let Some(body) = stored(pr, snap, &p, &anchors, caller, now).await?
    {
        return Ok(Answer {
            body,
            valid_until: now,
        });
    }
    let mut q = Query {
        subject: p.sub.clone(),
        anchors: anchors.iter().map(|a| snap.trust_anchors.spec(a)).collect(),
        entity_types: Vec::new(),
        local: Local::of(snap, cfg),
    };
    let rule = grace_rule(cfg);
    let resolver = &dp.resolve.resolver;
    let mut res = resolver.resolve(&q, rule, now).await.map_err(fed_error)?;
    if !p.types.is_empty() {
        // The filtered answer is cached under the requested types the subject has, so that
        // made-up `entity_type` values share one entry instead of filling the caches.
        q.entity_types = narrowed(&p.types, &res.chain.metadata);
        res = resolver.resolve(&q, rule, now).await.map_err(fed_error)?;
    }
    let res = without_marks_revoked_here(snap, res, now);
    if let Some(pr) = &proactive {
        pr.submit(Job {
            sub: p.sub.clone(),
            trust_anchor: res.chain.trust_anchor.clone(),
            entity_types: q.entity_types.clone(),
        });
    }
    let (body, resign_at) = dp
        .resolve
        .resolver
        .signed
        .get_or_sign(snap, &q.key(), &res, caller.aud(), now)
        .await
        .map_err(FedError::server_error)?;
    Ok(Answer {
        body,
        valid_until: resign_at
            .min(rule.refresh_at(res.computed_at, res.exp()))
            .min(res.recheck_at.unwrap_or(i64::MAX)),
    })
}

/// `res` without the trust marks we issued and have since revoked (see
/// [`pharos_shared::trust_mark_issuer::TrustMarks::revoked_here`]). Rare, so the filtered copy
/// is not cached: it is signed anew, and the front cache keeps the answer as usual.
fn without_marks_revoked_here(snap: &Snapshot, res: Arc<Resolution>, now: i64) -> Arc<Resolution> {
    let revoked = |m: &&VerifiedTrustMark| {
        snap.trust_marks
            .revoked_here(&snap.entity_id, &m.trust_mark, now)
    };
    if !res.marks.iter().any(|m| revoked(&m)) {
        return res;
    }
    let kept = res.marks.iter().filter(|m| !revoked(m)).cloned().collect();
    Arc::new(Resolution::new(res.chain.clone(), kept, res.computed_at))
}

/// Stands for "requested Entity Types, none of which the subject has": no type is named
/// by the empty string, so the filter keeps no metadata, as the request asks.
const NONE_OF_THEM: &str = "";

/// The requested Entity Types (sorted, deduplicated) that the subject's unfiltered resolved
/// `metadata` has; [`NONE_OF_THEM`] alone when it has none of them. The answer for the result
/// is the answer for the request (the filter keeps only types that exist), and it is drawn
/// from the subject's few types instead of the values a client makes up.
fn narrowed(requested: &[String], metadata: &serde_json::Value) -> Vec<String> {
    let has = |t: &&String| metadata.get(t.as_str()).is_some();
    let types: Vec<String> = requested.iter().filter(has).cloned().collect();
    if types.is_empty() {
        vec![NONE_OF_THEM.to_owned()]
    } else {
        types
    }
}

/// A stored response for the first requested anchor that has one. A pre-signed JWT is served
/// only to anonymous callers (it has no `aud`); stored claims are signed for anyone.
async fn stored(
    pr: &crate::resolver::proactive::Proactive,
    snap: &Snapshot,
    p: &Params,
    anchors: &[String],
    caller: &Caller,
    now: i64,
) -> Result<Option<Bytes>, FedError> {
    for ta in anchors {
        let job = Job {
            sub: p.sub.clone(),
            trust_anchor: ta.clone(),
            entity_types: p.types.clone(),
        };
        match pr.store.lookup(&job, snap.keys.signer.kid(), now) {
            Some(Hit::Jwt(b)) if *caller == Caller::Anonymous => return Ok(Some(b)),
            Some(Hit::Jwt(_)) | None => {}
            Some(Hit::Json(mut claims)) => {
                claims.remove("trust_anchor");
                claims.insert("iss".into(), snap.entity_id.as_ref().into());
                claims.insert("iat".into(), now.into());
                if let Some(aud) = caller.aud() {
                    claims.insert("aud".into(), aud.into());
                }
                let token = signing::sign(&snap.keys.signer, RESOLVE_RESPONSE_TYP, claims)
                    .await
                    .map_err(FedError::server_error)?;
                return Ok(Some(Bytes::from(token)));
            }
        }
    }
    Ok(None)
}

/// Resolution errors as federation error responses.
fn fed_error(e: Error) -> FedError {
    match e {
        Error::InvalidTrustAnchor(m) => {
            FedError::new(StatusCode::NOT_FOUND, "invalid_trust_anchor", m)
        }
        Error::InvalidTrustChain(m) => {
            FedError::new(StatusCode::BAD_REQUEST, "invalid_trust_chain", m)
        }
        Error::InvalidMetadata(m) | Error::InvalidPolicy(m) => {
            FedError::new(StatusCode::BAD_REQUEST, "invalid_metadata", m)
        }
        Error::Fetch(m) => FedError::not_found(format!(
            "the subject's Entity Configuration cannot be fetched: {m}"
        )),
        other => FedError::server_error(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn types(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn made_up_types_narrow_to_what_the_subject_has() {
        let md = json!({"openid_provider": {}, "federation_entity": {}});
        assert_eq!(
            narrowed(&types(&["a1b2", "openid_provider"]), &md),
            types(&["openid_provider"])
        );
        assert_eq!(
            narrowed(&types(&["federation_entity", "openid_provider"]), &md),
            types(&["federation_entity", "openid_provider"])
        );
    }

    #[test]
    fn only_made_up_types_share_one_key_that_keeps_no_metadata() {
        let md = json!({"openid_provider": {}});
        let a = narrowed(&types(&["x1"]), &md);
        let b = narrowed(&types(&["x2", "x3"]), &md);
        assert_eq!(a, b);
        assert_eq!(a, vec![NONE_OF_THEM.to_owned()]);
        assert!(md.get(NONE_OF_THEM).is_none());
    }
}
