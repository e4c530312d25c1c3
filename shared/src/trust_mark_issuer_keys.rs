//! Whose keys verify a Trust Mark (§7.3): the Trust Mark Issuer's Federation Entity Keys,
//! established through a trust chain to the same Trust Anchor the subject's chain ends at.
//!
//! The resolver, the entity collector and the `trust_mark` checker all take issuer keys from
//! here, so an issuer that left the federation (its superior no longer vouches for it, or its
//! domain lapsed and someone else answers there) stops issuing valid-looking marks everywhere
//! at once, even while the anchor's `trust_mark_issuers` still lists it.
//!
//! - The anchor itself issuing: the keys of its Entity Configuration, already verified.
//! - Any other issuer: a trust chain from the issuer to the anchor ([`chain::resolve`], with
//!   its depth and fetch bounds); the keys are the `jwks` of the issuer's Entity
//!   Configuration in that chain.
//! - Without a chain, the issuer's self-signed Entity Configuration is used only when the
//!   trust anchor record says `trust_mark_issuer_self_signed` AND the anchor's
//!   `trust_mark_issuers` names the issuer for the mark's type (an empty list, "anyone may
//!   issue", is not enough): a federation whose issuers sit outside it must say so per anchor.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::chain::{self, AnchorSpec, DEFAULT_MAX_DEPTH, Fetcher, ResolveRequest};
use crate::jose::Jwks;
use crate::trust_mark::{self, VerifiedTrustMark, mark_issuers, mark_type};
use crate::{Error, Result};

/// At most this many distinct Trust Mark Issuers are resolved for one subject: each costs a
/// trust chain (up to [`chain::MAX_FETCHES`] fetches), and a subject's configuration is
/// attacker-controlled. Marks of further issuers are left out.
pub const MAX_ISSUERS_PER_SUBJECT: usize = 8;

/// How an issuer's keys were established.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IssuerTrust {
    /// The issuer is the Trust Anchor.
    Anchor,
    /// A valid trust chain from the issuer to the anchor.
    Chain,
    /// The issuer's self-signed Entity Configuration, allowed by the anchor's record.
    SelfSigned,
}

/// A Trust Mark Issuer's keys relative to one anchor.
#[derive(Clone, Debug, PartialEq)]
pub struct IssuerKeys {
    /// The issuer's Entity Identifier.
    pub issuer: String,
    /// Its Federation Entity Keys.
    pub keys: Jwks,
    /// How they were established.
    pub trust: IssuerTrust,
    /// Its `federation_trust_mark_status_endpoint`, from the same configuration (resolved
    /// metadata when established through a chain).
    pub status_endpoint: Option<String>,
}

/// The `federation_entity` member `name` of `metadata`, when it is a string.
fn federation_endpoint(metadata: Option<&Value>, name: &str) -> Option<String> {
    metadata?
        .get("federation_entity")?
        .get(name)?
        .as_str()
        .map(str::to_owned)
}

const STATUS_ENDPOINT: &str = "federation_trust_mark_status_endpoint";

fn jwks_of(claims: &Map<String, Value>) -> Option<Jwks> {
    serde_json::from_value(claims.get("jwks")?.clone()).ok()
}

/// Whether the anchor's `trust_mark_issuers` names `issuer` for `tm_type` (`None`: for any
/// type).
fn listed(
    anchor: &AnchorSpec,
    anchor_claims: &Map<String, Value>,
    issuer: &str,
    tm_type: Option<&str>,
) -> bool {
    let Some(Value::Object(by_type)) = mark_issuers(anchor_claims, anchor.interop.draft_shapes)
    else {
        return false;
    };
    by_type
        .iter()
        .filter(|(t, _)| tm_type.is_none_or(|want| want == t.as_str()))
        .filter_map(|(_, list)| list.as_array())
        .any(|list| list.iter().any(|i| i.as_str() == Some(issuer)))
}

/// The keys of Trust Mark Issuer `issuer` relative to `anchor`, whose verified Entity
/// Configuration claims are `anchor_claims` (see the module documentation for the rule). The
/// error says why the issuer is not trusted.
pub async fn issuer_keys<F: Fetcher>(
    fetcher: &F,
    anchor: &AnchorSpec,
    anchor_claims: &Map<String, Value>,
    issuer: &str,
    now: i64,
) -> Result<IssuerKeys> {
    let found = |keys, trust, status_endpoint| IssuerKeys {
        issuer: issuer.to_owned(),
        keys,
        trust,
        status_endpoint,
    };
    if issuer == anchor.entity_id {
        let keys = jwks_of(anchor_claims).ok_or_else(|| {
            Error::InvalidTrustChain(format!("trust anchor {issuer} publishes no jwks"))
        })?;
        let endpoint = federation_endpoint(anchor_claims.get("metadata"), STATUS_ENDPOINT);
        return Ok(found(keys, IssuerTrust::Anchor, endpoint));
    }
    let req = ResolveRequest {
        subject: issuer,
        anchors: std::slice::from_ref(anchor),
        entity_types: &[],
        now,
        max_depth: DEFAULT_MAX_DEPTH,
    };
    match chain::resolve(fetcher, &req).await {
        Ok(c) => {
            let keys = jwks_of(&c.subject_claims).ok_or_else(|| {
                Error::InvalidTrustChain(format!("trust mark issuer {issuer} publishes no jwks"))
            })?;
            let endpoint = federation_endpoint(Some(&c.metadata), STATUS_ENDPOINT);
            Ok(found(keys, IssuerTrust::Chain, endpoint))
        }
        Err(_)
            if anchor.trust_mark_issuer_self_signed
                && listed(anchor, anchor_claims, issuer, None) =>
        {
            let ec = fetcher.entity_configuration(issuer).await?;
            let keys = trust_mark::self_signed_keys(&ec, issuer, now)?;
            let claims = crate::jose::verify(&ec, &keys).map(|d| d.claims).ok();
            let metadata = claims.as_ref().and_then(|c| c.get("metadata"));
            let endpoint = federation_endpoint(metadata, STATUS_ENDPOINT);
            Ok(found(keys, IssuerTrust::SelfSigned, endpoint))
        }
        Err(e) => Err(Error::InvalidTrustChain(format!(
            "trust mark issuer {issuer} has no trust chain to {}: {e}",
            anchor.entity_id
        ))),
    }
}

/// [`trust_mark::verify`] of one entry with keys from [`issuer_keys`]: keys taken on the
/// issuer's own word verify only marks of a type the anchor lists that issuer for.
pub fn verify_mark(
    entry: &Value,
    subject: &str,
    anchor: &AnchorSpec,
    anchor_claims: &Map<String, Value>,
    issuer: &IssuerKeys,
    now: i64,
) -> Result<VerifiedTrustMark> {
    let draft = anchor.interop.draft_shapes;
    if issuer.trust == IssuerTrust::SelfSigned {
        let tm_type = entry.as_object().and_then(|e| mark_type(e, draft));
        if tm_type.is_none_or(|t| !listed(anchor, anchor_claims, &issuer.issuer, Some(t))) {
            return Err(Error::Jws(format!(
                "trust mark rejected: {} has no trust chain to {} and is not listed for the type",
                issuer.issuer, anchor.entity_id
            )));
        }
    }
    trust_mark::verify(entry, subject, anchor_claims, &issuer.keys, now, draft)
}

/// The Trust Marks in `subject_claims` (an Entity Configuration's claims, or just its
/// `trust_marks`) that `anchor` admits ([`trust_mark::candidates`]) and that verify with
/// their issuer's keys ([`issuer_keys`], once per issuer, at most
/// [`MAX_ISSUERS_PER_SUBJECT`] issuers). Returns the verified marks and, for each mark left
/// out, why.
pub async fn verified_marks<F: Fetcher>(
    fetcher: &F,
    anchor: &AnchorSpec,
    anchor_claims: &Map<String, Value>,
    subject_claims: &Map<String, Value>,
    subject: &str,
    now: i64,
) -> (Vec<VerifiedTrustMark>, Vec<String>) {
    let (marks, refused) =
        verified_marks_with_issuers(fetcher, anchor, anchor_claims, subject_claims, subject, now)
            .await;
    (marks.into_iter().map(|(m, _)| m).collect(), refused)
}

/// [`verified_marks`], each with its issuer's keys and status endpoint (for a resolver that
/// asks the issuer whether the mark is still active).
pub async fn verified_marks_with_issuers<F: Fetcher>(
    fetcher: &F,
    anchor: &AnchorSpec,
    anchor_claims: &Map<String, Value>,
    subject_claims: &Map<String, Value>,
    subject: &str,
    now: i64,
) -> (Vec<(VerifiedTrustMark, Arc<IssuerKeys>)>, Vec<String>) {
    let draft = anchor.interop.draft_shapes;
    let mut issuers: Vec<(String, std::result::Result<Arc<IssuerKeys>, String>)> = Vec::new();
    let (mut marks, mut refused) = (Vec::new(), Vec::new());
    for (entry, issuer) in trust_mark::candidates(subject_claims, anchor_claims, draft) {
        let pos = match issuers.iter().position(|(i, _)| *i == issuer) {
            Some(p) => p,
            None if issuers.len() >= MAX_ISSUERS_PER_SUBJECT => {
                refused.push(format!(
                    "{issuer}: more than {MAX_ISSUERS_PER_SUBJECT} trust mark issuers"
                ));
                continue;
            }
            None => {
                let keys = issuer_keys(fetcher, anchor, anchor_claims, &issuer, now)
                    .await
                    .map(Arc::new)
                    .map_err(|e| e.to_string());
                issuers.push((issuer.clone(), keys));
                issuers.len() - 1
            }
        };
        let checked = match &issuers[pos].1 {
            Ok(keys) => verify_mark(entry, subject, anchor, anchor_claims, keys, now)
                .map(|m| (m, keys.clone()))
                .map_err(|e| e.to_string()),
            Err(e) => Err(e.clone()),
        };
        match checked {
            Ok(m) => marks.push(m),
            Err(e) => refused.push(e),
        }
    }
    (marks, refused)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing unwrap is a failing test
#[path = "trust_mark_issuer_keys_tests.rs"]
mod tests;
