//! The fetch endpoint (spec §8.1): signed Subordinate Statements about our active subordinates.
//!
//! Signing is the expensive part, so the signed statement is kept in the subordinate's own
//! snapshot record ([`pharos_shared::subordinate::StatementSlot`]), tagged with the general
//! settings' version and the generation of our keys and endpoint registry: a cached fetch is
//! the one map lookup that finds the subordinate. Past `cache.statements_max_bytes` the
//! statements not asked for lately make room (CLOCK eviction, see
//! [`pharos_shared::subordinate::StatementBudget`]). A write to the subordinate replaces its
//! record (and so the statement); a change of the general settings, keys or registry changes
//! the tag, so a stale statement is never served. Since such a change invalidates every
//! statement at once, concurrent first requests for one statement sign it once (see
//! [`pharos_runtime::single_flight`]).

use crate::cache_counters::{Cache, CacheCounters};
use std::borrow::Cow;
use std::sync::Arc;

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use pharos_shared::endpoint::EndpointType;
use pharos_shared::entity_configuration::ENTITY_STATEMENT_TYP;
use pharos_shared::http_cache::Tagged;
use pharos_shared::snapshot::{EndpointEntry, ReadyView, Snapshot};
use pharos_shared::subordinate::{SignedStatement, Subordinate, SubordinateStatus};
use pharos_shared::subordinate_statement::{next_key_change, payload};

use super::Call;
use crate::DataPlane;
use crate::entity_configuration::CONTENT_TYPE;
use crate::error::FedError;
use crate::jwt_response::{cacheable, jwt};
use pharos_runtime::signing;
use pharos_runtime::single_flight;

/// Re-sign this long before the statement expires, and at the latest after `MAX_CACHE_AGE`.
const REFRESH_BEFORE_EXP: i64 = 60;
const MAX_CACHE_AGE: i64 = 8 * 3600;

/// `application/x-www-form-urlencoded` decoding of one key or value (`+` is a space), with no
/// allocation when there is nothing to decode and exactly one otherwise.
fn form_decode(raw: &str) -> Cow<'_, str> {
    if !raw.bytes().any(|b| b == b'%' || b == b'+') {
        return Cow::Borrowed(raw);
    }
    let raw = raw.as_bytes();
    let hex = |i: usize| raw.get(i).and_then(|c| char::from(*c).to_digit(16));
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while let Some(&b) = raw.get(i) {
        i += 1;
        match (b, hex(i), hex(i + 1)) {
            (b'+', _, _) => out.push(b' '),
            (b'%', Some(h), Some(l)) => {
                out.push(u8::try_from(h * 16 + l).unwrap_or(b'?'));
                i += 2;
            }
            _ => out.push(b),
        }
    }
    match String::from_utf8(out) {
        Ok(s) => Cow::Owned(s),
        Err(e) => Cow::Owned(String::from_utf8_lossy(e.as_bytes()).into_owned()),
    }
}

/// The one query parameter that matters, or the error to answer with.
pub(crate) fn subject(query: &str) -> Result<Cow<'_, str>, FedError> {
    let mut sub = None;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        if form_decode(k) == "sub" {
            if sub.is_some() {
                return Err(FedError::invalid_request(
                    "parameter 'sub' given more than once",
                ));
            }
            sub = Some(form_decode(v));
        }
    }
    sub.filter(|s| !s.is_empty())
        .ok_or_else(|| FedError::invalid_request("required parameter 'sub' not given"))
}

/// Signings in flight, by subject and everything its statement is made from (the record's
/// version, the general settings' version, the generation of our keys and registry).
pub(crate) type Flights =
    Arc<single_flight::Flights<(Arc<str>, u64, u64, u64), Result<Tagged, FedError>>>;

/// The subordinate an answer is about, or the error to answer with; `view` is `snap`'s
/// ready view, when it has one.
fn subordinate<'s>(
    snap: &'s Snapshot,
    view: Option<&'s ReadyView>,
    query: &str,
) -> Result<&'s Arc<Subordinate>, FedError> {
    let sub_id = subject(query)?;
    // A subject found among the subordinates is our own identifier only if that is listed
    // too (the ready view knows): the identifier's bytes are compared only then, or when
    // the subject is not found.
    let (found, own_listed) = match view {
        Some(v) => (v.subordinate(&sub_id), v.own_id_listed()),
        None => (snap.subordinates.get(&sub_id), true),
    };
    match found {
        Some(s)
            if s.status == SubordinateStatus::Active
                && !(own_listed && *sub_id == *snap.entity_id) =>
        {
            Ok(s)
        }
        _ if *sub_id == *snap.entity_id => Err(FedError::invalid_request(
            "'sub' is our own entity identifier; are you looking for the entity configuration?",
        )),
        _ => Err(FedError::not_found(
            "the requested entity identifier is not found",
        )),
    }
}

/// The statement already signed for this request, if there is one (the warm path: no await);
/// `view` is `snap`'s ready view, when it has one (taken once per request by the caller).
pub(crate) fn cached(
    caches: &CacheCounters,
    snap: &Snapshot,
    view: Option<&ReadyView>,
    query: &str,
    now: i64,
    if_none_match: Option<&HeaderValue>,
) -> Option<Response> {
    let sub = subordinate(snap, view, query).ok()?;
    let general_version = view.map_or(snap.subordinates.general_version, |v| v.general_version());
    let statements_generation = snap.statements_generation;
    let tagged = sub
        .statement
        .get(general_version, statements_generation, now)?;
    caches.hit(Cache::Fetch);
    Some(cacheable(CONTENT_TYPE, tagged, now, if_none_match))
}

/// Answers a fetch request: an anonymous GET as a cacheable answer (as the Entity
/// Configuration), an authenticated one for its client only.
pub(crate) async fn serve(call: Call<'_>) -> Response {
    let (dp, snap, entry, now) = (call.dp, call.snap.clone(), call.entry.clone(), call.now);
    let anonymous = call
        .raw_query()
        .is_some()
        .then(|| call.req.headers().get(header::IF_NONE_MATCH).cloned());
    let query = match call.query().await {
        Ok(q) => q,
        Err(e) => return e.into_response(),
    };
    match (signed(dp, &snap, &entry, &query, now).await, anonymous) {
        (Ok(tagged), Some(inm)) => cacheable(CONTENT_TYPE, tagged, now, inm.as_ref()),
        (Ok(tagged), None) => jwt(CONTENT_TYPE, tagged.body()),
        (Err(e), _) => e.into_response(),
    }
}

async fn signed(
    dp: &DataPlane,
    snap: &Arc<Snapshot>,
    entry: &EndpointEntry,
    query: &str,
    now: i64,
) -> Result<Tagged, FedError> {
    let sub = subordinate(snap, snap.ready(), query)?;
    let source = entry.published_url(&snap.entity_id);
    statement(dp, snap, sub, source.as_deref(), now).await
}

/// The statement about the active subordinate `sub_id` as the fetch endpoint serves it
/// (cached, or signed now): what the enroll endpoint answers an enrolled entity with.
pub(crate) async fn statement_about(
    dp: &DataPlane,
    snap: &Arc<Snapshot>,
    sub_id: &str,
    now: i64,
) -> Result<Bytes, FedError> {
    let sub = match snap.subordinates.get(sub_id) {
        Some(s) if s.status == SubordinateStatus::Active => s,
        _ => {
            return Err(FedError::not_found(
                "the entity is not an active subordinate",
            ));
        }
    };
    let source = snap
        .registry
        .by_type
        .get(&EndpointType::Fetch)
        .and_then(|e| e.published_url(&snap.entity_id));
    statement(dp, snap, sub, source.as_deref(), now)
        .await
        .map(|t| t.body())
}

/// `sub`'s statement from its record's slot, or signed once for all concurrent callers.
pub(crate) async fn statement(
    dp: &DataPlane,
    snap: &Arc<Snapshot>,
    sub: &Arc<Subordinate>,
    source: Option<&str>,
    now: i64,
) -> Result<Tagged, FedError> {
    let (general_version, statements_generation) = (
        snap.subordinates.general_version,
        snap.statements_generation,
    );
    if let Some(body) = sub
        .statement
        .get(general_version, statements_generation, now)
    {
        dp.caches.hit(Cache::Fetch);
        return Ok(body);
    }
    // Concurrent first requests for one statement sign it once: after a key or registry
    // change every statement is invalid at once, and a burst for one subject would otherwise
    // queue that many signatures on the signer.
    let key = (
        sub.entity_id.clone(),
        sub.version,
        general_version,
        statements_generation,
    );
    dp.fetch_flights
        .run(key, || async {
            // A flight that ended just before this one began has filled the slot.
            if let Some(body) = sub
                .statement
                .get(general_version, statements_generation, now)
            {
                return Ok(body);
            }
            dp.caches.miss(Cache::Fetch);
            let signed = sign(snap, sub, now, source)
                .await
                .map_err(FedError::server_error)?;
            sub.keep_statement(
                SignedStatement {
                    general_version,
                    statements_generation,
                    signed: signed.clone(),
                },
                &dp.statement_budget,
            );
            Ok(signed)
        })
        .await
}

/// The signed statement about `sub`, tagged with when to sign a new one: before `exp`, after
/// at most `MAX_CACHE_AGE`, and at the next change of the subordinate's keys or of ours (the
/// same instant bounds how long HTTP caches keep it).
async fn sign(
    snap: &Snapshot,
    sub: &Subordinate,
    now: i64,
    source: Option<&str>,
) -> Result<Tagged, pharos_shared::Error> {
    let claims = payload(snap, sub, now, source);
    let exp = claims
        .get("exp")
        .and_then(serde_json::Value::as_i64)
        .unwrap_or(now);
    let token = signing::sign(&snap.keys.signer, ENTITY_STATEMENT_TYP, claims).await?;
    let mut refresh_at = (exp - REFRESH_BEFORE_EXP).min(now + MAX_CACHE_AGE);
    if let Some(change) = next_key_change(sub, now) {
        refresh_at = refresh_at.min(change);
    }
    if let Some(change) = snap.keys.next_change(now) {
        refresh_at = refresh_at.min(change);
    }
    // Exactly sized: 100,000 of these stay in memory.
    Ok(Tagged::new(
        Bytes::from(token.into_bytes().into_boxed_slice()),
        refresh_at,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_decoding() {
        assert_eq!(form_decode("a+b%20c%3A%2f"), "a b c:/");
        assert_eq!(form_decode("100%"), "100%");
        assert_eq!(form_decode("%zz%4"), "%zz%4");
        assert_eq!(form_decode("%C3%A9"), "\u{e9}");
        assert_eq!(form_decode("%FF"), "\u{fffd}");
        assert!(matches!(form_decode("plain"), Cow::Borrowed("plain")));
    }

    #[test]
    fn subject_parameter_rules() {
        assert_eq!(subject("sub=https%3A%2F%2Fa").unwrap(), "https://a");
        assert_eq!(subject("iss=x&sub=https://a").unwrap(), "https://a");
        assert_eq!(subject("").unwrap_err().code, "invalid_request");
        assert_eq!(subject("sub=").unwrap_err().code, "invalid_request");
        assert_eq!(subject("sub=a&sub=b").unwrap_err().code, "invalid_request");
        assert_eq!(subject("s%75b=a&&x").unwrap(), "a");
        assert_eq!(subject("sub").unwrap_err().code, "invalid_request");
    }
}
