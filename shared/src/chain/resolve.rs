//! Resolution (§10, §8.3): collect candidate chains, validate them all, choose one (§10.3) and
//! shape what a resolve response needs.

use std::cmp::Reverse;

use serde_json::Value;

use super::candidates::{Collected, collect};
use super::validate::{ValidatedChain, validate_chain};
use super::{AnchorSpec, Fetcher, ResolveRequest, ResolvedChain, invalid};
use crate::{Error, Result};

/// Sort key of a valid chain, smallest wins: length, later expiry, anchor order, discovery.
type Preference = (usize, Reverse<i64>, usize, usize);

/// How many individual failures the `invalid_trust_chain` message lists before eliding.
const MAX_REPORTED_FAILURES: usize = 8;

/// Resolve `req.subject` to one of `req.anchors`: fetch its Entity Configuration, collect the
/// chains to every reachable requested anchor, validate each (§10.2) and choose among the
/// valid ones (§10.3, local policy): the shortest, then the latest expiry, then the earlier
/// anchor in the request, then discovery order.
///
/// Exists so that the resolve endpoint, registration and trust mark checks share one
/// implementation. Errors: [`Error::InvalidTrustAnchor`] when no anchor is given;
/// [`Error::Fetch`] when the subject's EC cannot be fetched; [`Error::InvalidMetadata`] or
/// [`Error::InvalidPolicy`] when no chain is valid but at least one failed only in metadata
/// resolution; otherwise [`Error::InvalidTrustChain`] summarising why each path failed.
pub async fn resolve<F: Fetcher>(fetcher: &F, req: &ResolveRequest<'_>) -> Result<ResolvedChain> {
    if req.anchors.is_empty() {
        return Err(Error::InvalidTrustAnchor(
            "no trust anchor requested".into(),
        ));
    }
    let collected = collect(fetcher, req).await?;
    let owned = OwnedRequest::from(req);
    fetcher
        .run_blocking(move || choose(collected, &owned.borrow()))
        .await
        .unwrap_or_else(|| Err(invalid("trust chain validation did not finish")))
}

/// A [`ResolveRequest`] that can travel to another thread with the work.
pub(super) struct OwnedRequest {
    subject: String,
    anchors: Vec<AnchorSpec>,
    entity_types: Vec<String>,
    now: i64,
    max_depth: usize,
}

impl OwnedRequest {
    pub(super) fn from(req: &ResolveRequest<'_>) -> Self {
        Self {
            subject: req.subject.to_owned(),
            anchors: req.anchors.to_vec(),
            entity_types: req.entity_types.to_vec(),
            now: req.now,
            max_depth: req.max_depth,
        }
    }

    pub(super) fn borrow(&self) -> ResolveRequest<'_> {
        ResolveRequest {
            subject: &self.subject,
            anchors: &self.anchors,
            entity_types: &self.entity_types,
            now: self.now,
            max_depth: self.max_depth,
        }
    }
}

/// Validate every collected candidate (§10.2) and choose among the valid ones (§10.3).
fn choose(collected: Collected, req: &ResolveRequest<'_>) -> Result<ResolvedChain> {
    let mut failures = collected.failures;
    let mut metadata_error = None;
    let mut best: Option<(Preference, ValidatedChain)> = None;
    for (order, cand) in collected.candidates.into_iter().enumerate() {
        let anchor = &req.anchors[cand.anchor];
        match validate_chain(&cand.chain, anchor, req.now) {
            Ok(v) if v.subject != req.subject => failures.push(format!(
                "chain to {} is about {}, not the subject",
                anchor.entity_id, v.subject
            )),
            Ok(v) => {
                let key = (v.statements.len(), Reverse(v.exp), cand.anchor, order);
                if best.as_ref().is_none_or(|(k, _)| key < *k) {
                    best = Some((key, v));
                }
            }
            Err(e @ (Error::InvalidMetadata(_) | Error::InvalidPolicy(_))) => {
                metadata_error.get_or_insert(e);
            }
            Err(e) => failures.push(format!(
                "chain to {} ({} statements): {e}",
                anchor.entity_id,
                cand.chain.len()
            )),
        }
    }
    match (best, metadata_error) {
        (Some((_, v)), _) => Ok(finish(v, req.entity_types)),
        (None, Some(e)) => Err(e),
        (None, None) => Err(no_chain(req, &failures)),
    }
}

/// The `invalid_trust_chain` error naming the subject, the anchors and the first failures.
pub(super) fn no_chain(req: &ResolveRequest<'_>, failures: &[String]) -> Error {
    let anchors: Vec<&str> = req.anchors.iter().map(|a| a.entity_id.as_str()).collect();
    let mut reasons: Vec<&str> = failures
        .iter()
        .take(MAX_REPORTED_FAILURES)
        .map(String::as_str)
        .collect();
    let more;
    if failures.len() > MAX_REPORTED_FAILURES {
        more = format!("and {} more", failures.len() - MAX_REPORTED_FAILURES);
        reasons.push(&more);
    }
    if reasons.is_empty() {
        reasons.push("no requested trust anchor is reachable");
    }
    invalid(format!(
        "no valid trust chain from {} to {}: {}",
        req.subject,
        anchors.join(", "),
        reasons.join("; ")
    ))
}

/// Build the result from the chosen chain, keeping only the requested Entity Types (all when
/// none were requested; possibly none, which is reported as an empty object).
pub(super) fn finish(v: ValidatedChain, entity_types: &[String]) -> ResolvedChain {
    let mut metadata = v.metadata;
    if let (Value::Object(md), false) = (&mut metadata, entity_types.is_empty()) {
        md.retain(|t, _| entity_types.contains(t));
    }
    let subject_claims = v
        .statements
        .first()
        .map(|s| s.claims.clone())
        .unwrap_or_default();
    let anchor_claims = v
        .statements
        .last()
        .map(|s| s.claims.clone())
        .unwrap_or_default();
    ResolvedChain {
        trust_anchor: v.trust_anchor,
        chain: v.statements.into_iter().map(|s| s.jws).collect(),
        metadata,
        exp: v.exp,
        subject_claims,
        anchor_claims,
    }
}
