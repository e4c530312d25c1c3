//! The chain explainer (issue 40): a resolution with every step shown. It runs the
//! resolver's own collection ([`super::candidates`]), its validation
//! ([`super::validate`], with a trace) and the policy engine's trace, and the Trust Mark
//! checks of the resolver, so what it shows is what resolve does, not a re-enactment.

use std::cmp::Reverse;

use serde::Serialize;
use serde_json::{Map, Value};

use super::candidates::{Collected, collect};
use super::trace::{ChainTrace, Failure, message};
use super::validate::validate_traced;
use super::{Fetcher, ResolveRequest, TrustMarkStatusCheck, invalid};
use crate::chain::resolve::{OwnedRequest, finish, no_chain};
use crate::trust_mark_issuer_keys::MAX_ISSUERS_PER_SUBJECT;
use crate::{Error, jose, trust_mark, trust_mark_issuer_keys};

/// At most this many of the subject's Trust Marks are examined one by one.
pub const MAX_EXPLAINED_MARKS: usize = 32;

/// A resolution explained.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Explanation {
    /// The Entity explained (`sub`).
    pub subject: String,
    /// The Trust Anchors it was resolved towards.
    pub trust_anchors: Vec<String>,
    /// The Entity Types asked for (empty: all).
    pub entity_types: Vec<String>,
    /// The time of the explanation, Unix seconds.
    pub now: i64,
    /// Paths that ended while collecting chains (no `authority_hints`, fetch failures, loops).
    pub collection: Vec<String>,
    /// The Trust Anchor of the chain explained (the chosen one, or the first that failed).
    pub trust_anchor: Option<String>,
    /// The chain explained: statements, constraints and metadata policy, step by step.
    #[serde(flatten)]
    pub chain: ChainTrace,
    /// The other chains found and what became of each.
    pub other_chains: Vec<OtherChain>,
    /// The resolved metadata, reduced to the Entity Types asked for: what resolve returns.
    pub metadata: Option<Value>,
    /// The chain's expiry (the earliest `exp` of its statements).
    pub exp: Option<i64>,
    /// Each of the subject's Trust Marks, kept or dropped.
    pub trust_marks: Vec<TrustMarkStep>,
    /// Where resolution failed, in words; `None` when it succeeded.
    pub failed: Option<Failure>,
}

/// A chain other than the one explained.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OtherChain {
    /// Its Trust Anchor.
    pub trust_anchor: String,
    /// Its statements, in chain order: the issuer of each.
    pub issuers: Vec<String>,
    /// `valid (not chosen)` or why it failed.
    pub outcome: String,
}

/// One of the subject's Trust Marks.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TrustMarkStep {
    /// `trust_mark_type` (as the entry names it).
    pub trust_mark_type: Option<String>,
    /// The mark's issuer (as the mark claims, before verification).
    pub issuer: Option<String>,
    /// Whether resolve returns it.
    pub kept: bool,
    /// Why it is kept or dropped.
    pub reason: String,
}

impl Explanation {
    fn new(req: &ResolveRequest<'_>) -> Self {
        Self {
            subject: req.subject.to_owned(),
            trust_anchors: req.anchors.iter().map(|a| a.entity_id.clone()).collect(),
            entity_types: req.entity_types.to_vec(),
            now: req.now,
            ..Self::default()
        }
    }

    /// An explanation that failed at `step` by `rule`.
    fn failing(mut self, step: impl Into<String>, rule: &str, message: impl Into<String>) -> Self {
        self.failed = Some(Failure {
            step: step.into(),
            rule: rule.to_owned(),
            message: message.into(),
        });
        self
    }
}

const RULE_ANCHORS: &str =
    "a chain is resolved only towards Trust Anchors this resolver accepts (§8.3.1)";
const RULE_SUBJECT: &str = "the subject's Entity Configuration must be fetchable at its /.well-known/openid-federation and name itself as iss and sub (§9, §10.1)";
const RULE_COLLECT: &str = "a chain follows authority_hints from the subject up to a requested Trust Anchor, fetching from each superior its Subordinate Statement about the Entity below (§10.1)";

/// Explains the resolution of `req.subject`: resolve (§10) with every step recorded. Never
/// fails: a resolution that fails is explained, with `failed` naming the step.
pub async fn explain<F: Fetcher>(fetcher: &F, req: &ResolveRequest<'_>) -> Explanation {
    let x = Explanation::new(req);
    if req.anchors.is_empty() {
        return x.failing(
            "choosing the Trust Anchors",
            RULE_ANCHORS,
            "no accepted trust anchor was requested",
        );
    }
    let collected = match collect(fetcher, req).await {
        Ok(c) => c,
        Err(e) => {
            let step = format!("fetching the Entity Configuration of {}", req.subject);
            return x.failing(step, RULE_SUBJECT, message(&e));
        }
    };
    let owned = OwnedRequest::from(req);
    let fallback = x.clone();
    let explained = fetcher
        .run_blocking(move || explain_candidates(x, collected, &owned.borrow()))
        .await;
    let Some((mut x, chosen)) = explained else {
        return fallback.failing(
            "validating the chains",
            RULE_COLLECT,
            "trust chain validation did not finish",
        );
    };
    if let Some((anchor_claims, subject_claims)) = chosen {
        let anchor = req
            .anchors
            .iter()
            .find(|a| x.trust_anchor.as_deref() == Some(a.entity_id.as_str()))
            .cloned()
            .unwrap_or_default();
        x.trust_marks = explain_marks(fetcher, &anchor, &anchor_claims, &subject_claims, req).await;
    }
    x
}

/// The claims of the chosen chain's anchor and subject, for the Trust Mark checks.
type Ends = Option<(Map<String, Value>, Map<String, Value>)>;

/// Validates every candidate with a trace and explains the one resolve would choose (or,
/// when none is valid, the one whose failure resolve would report).
fn explain_candidates(
    mut x: Explanation,
    collected: Collected,
    req: &ResolveRequest<'_>,
) -> (Explanation, Ends) {
    x.collection = collected.failures.clone();
    if collected.candidates.is_empty() {
        let e = no_chain(req, &collected.failures);
        return (
            x.failing("collecting chains", RULE_COLLECT, message(&e)),
            None,
        );
    }
    let mut traced = Vec::new();
    for (order, cand) in collected.candidates.iter().enumerate() {
        let anchor = &req.anchors[cand.anchor];
        let mut t = ChainTrace::default();
        let r = validate_traced(&cand.chain, anchor, req.now, Some(&mut t)).and_then(|v| {
            if v.subject == req.subject {
                Ok(v)
            } else {
                let e = invalid(format!("the chain is about {}, not the subject", v.subject));
                Err(e)
            }
        });
        traced.push((order, cand.anchor, r, t));
    }
    let best = traced
        .iter()
        .filter_map(|(order, anchor, r, _)| {
            r.as_ref()
                .ok()
                .map(|v| (v.statements.len(), Reverse(v.exp), *anchor, *order))
        })
        .min();
    // Resolve reports a metadata failure before other failures when no chain is valid.
    let is_metadata = |r: &crate::Result<_>| {
        matches!(r, Err(Error::InvalidMetadata(_) | Error::InvalidPolicy(_)))
    };
    let pick = match best {
        Some(key) => key.3,
        None => traced
            .iter()
            .find(|(_, _, r, _)| is_metadata(r))
            .map_or(0, |(order, ..)| *order),
    };
    let mut ends = None;
    for (order, anchor, r, mut t) in traced {
        let anchor_id = req.anchors[anchor].entity_id.clone();
        if order != pick {
            let issuers = t.statements.iter().filter_map(|s| s.iss.clone()).collect();
            let outcome = match (&r, t.failed.take()) {
                (Ok(_), _) => "valid, not chosen: a shorter or longer-lived chain was".into(),
                (Err(_), Some(f)) => format!("failed at {}: {}", f.step, f.message),
                (Err(e), None) => message(e),
            };
            x.other_chains.push(OtherChain {
                trust_anchor: anchor_id,
                issuers,
                outcome,
            });
            continue;
        }
        x.trust_anchor = Some(anchor_id);
        x.failed = t.failed.take();
        x.chain = t;
        match r {
            Ok(v) => {
                let resolved = finish(v, req.entity_types);
                x.metadata = Some(resolved.metadata);
                x.exp = Some(resolved.exp);
                ends = Some((resolved.anchor_claims, resolved.subject_claims));
            }
            Err(e) if x.failed.is_none() => {
                x = x.failing("choosing the chain", RULE_COLLECT, message(&e));
            }
            Err(_) => {}
        }
    }
    (x, ends)
}

/// Each Trust Mark of the subject, checked on its own as resolve checks them all: the
/// anchor must admit its issuer for its type, and it must verify with keys established
/// through a chain to the same anchor.
async fn explain_marks<F: Fetcher>(
    fetcher: &F,
    anchor: &super::AnchorSpec,
    anchor_claims: &Map<String, Value>,
    subject_claims: &Map<String, Value>,
    req: &ResolveRequest<'_>,
) -> Vec<TrustMarkStep> {
    let Some(entries) = subject_claims.get("trust_marks").and_then(Value::as_array) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    // Resolve asks at most this many issuers for their keys per subject; so does this.
    let mut issuers: Vec<String> = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let jwt = entry.get("trust_mark").and_then(Value::as_str);
        let claims = jwt
            .and_then(|j| jose::decode_unverified(j).ok())
            .map(|d| d.claims);
        let text = |k: &str| {
            entry
                .get(k)
                .or_else(|| claims.as_ref().and_then(|c| c.get(k)))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let mut step = TrustMarkStep {
            trust_mark_type: text("trust_mark_type").or_else(|| text("id")),
            issuer: claims
                .as_ref()
                .and_then(|c| c.get("iss"))
                .and_then(Value::as_str)
                .map(str::to_owned),
            kept: false,
            reason: String::new(),
        };
        if i >= MAX_EXPLAINED_MARKS {
            step.reason =
                format!("not examined: only the first {MAX_EXPLAINED_MARKS} are explained");
            out.push(step);
            continue;
        }
        let mut one = subject_claims.clone();
        one.insert("trust_marks".into(), Value::Array(vec![entry.clone()]));
        let draft = anchor.interop.draft_shapes;
        if trust_mark::candidates(&one, anchor_claims, draft).is_empty() {
            step.reason = "dropped: malformed, or the Trust Anchor's trust_mark_issuers does not list its issuer for its type (§8.3.2, §7.5)".into();
            out.push(step);
            continue;
        }
        let iss = step.issuer.clone().unwrap_or_default();
        if !issuers.contains(&iss) {
            if issuers.len() >= MAX_ISSUERS_PER_SUBJECT {
                step.reason = format!(
                    "dropped: {iss}: more than {MAX_ISSUERS_PER_SUBJECT} trust mark issuers"
                );
                out.push(step);
                continue;
            }
            issuers.push(iss);
        }
        let (kept, refused) = trust_mark_issuer_keys::verified_marks_with_issuers(
            fetcher,
            anchor,
            anchor_claims,
            &one,
            req.subject,
            req.now,
        )
        .await;
        step.kept = !kept.is_empty();
        step.reason = if step.kept {
            let mut why = "kept: the Trust Anchor admits its issuer, and it verifies with the issuer's keys established through a chain to the Trust Anchor (§7.3)".to_owned();
            if anchor.trust_mark_status != TrustMarkStatusCheck::Off {
                why.push_str(&format!(
                    "; resolve also asks its issuer for its status (trust_mark_status {}), which the explainer does not",
                    anchor.trust_mark_status.as_str()
                ));
            }
            why
        } else {
            format!("dropped: {}", refused.join("; "))
        };
        out.push(step);
    }
    out
}
