//! `trust_mark`: the entity's Entity Configuration carries a Trust Mark of the configured
//! type that verifies (§7.3) — the correct logic; lighthouse's anchor branch is inverted
//! (reference §13 item 2).
//!
//! - With `trust_anchors`: each anchor (from the repository) has its Entity Configuration
//!   fetched and verified (pinned keys, else self-signed); the mark must come from an issuer
//!   its `trust_mark_issuers` admits, verify with that issuer's keys (from the issuer's own
//!   Entity Configuration), and carry a delegation from the owner its `trust_mark_owners`
//!   names, if any — exactly what a resolver applies ([`crate::trust_mark`]).
//! - With `trust_mark_issuer_jwks`: verified with those keys directly; delegation checked
//!   against `trust_mark_owner` when configured (then required), and a mark carrying a
//!   delegation is refused without one.
//!
//! Either way that passes is enough.

use serde_json::{Map, Value, json};

use super::{Candidate, CheckEnv, Denial, TrustMarkCheck, Verdict};
use crate::chain::{self, Fetcher};
use crate::trust_mark::{candidates, self_signed_keys, verify};

/// Runs a `trust_mark` check.
pub(super) async fn check<E: CheckEnv>(
    c: &TrustMarkCheck,
    cand: &Candidate<'_>,
    env: &E,
) -> Verdict {
    let entries = entries_of_type(cand.configuration, &c.trust_mark_type);
    if entries.is_empty() {
        return deny(format!(
            "the entity configuration carries no trust mark of type {}",
            c.trust_mark_type
        ));
    }
    let mut reasons = Vec::new();
    if let Some(keys) = &c.trust_mark_issuer_jwks {
        let owners = match &c.trust_mark_owner {
            Some(o) => json!({"trust_mark_owners": {
                c.trust_mark_type.clone(): {"sub": o.entity_id, "jwks": o.jwks}
            }}),
            None => json!({}),
        };
        let owners = owners.as_object().cloned().unwrap_or_default();
        for entry in &entries {
            match verify(entry, cand.entity_id, &owners, keys, env.now()) {
                Ok(_) => return Verdict::Pass,
                Err(e) => reasons.push(e.to_string()),
            }
        }
    }
    for id in &c.trust_anchors {
        match verify_through_anchor(id, &entries, cand.entity_id, env).await {
            Ok(()) => return Verdict::Pass,
            Err(e) => reasons.push(format!("{id}: {e}")),
        }
    }
    deny(format!(
        "no trust mark of type {} verifies: {}",
        c.trust_mark_type,
        reasons.join("; ")
    ))
}

/// The EC's `trust_marks` entries of `tm_type`, normalised to `{"trust_mark_type",
/// "trust_mark"}` (earlier drafts name the type `id`).
fn entries_of_type(configuration: &Map<String, Value>, tm_type: &str) -> Vec<Value> {
    let Some(marks) = configuration.get("trust_marks").and_then(Value::as_array) else {
        return Vec::new();
    };
    marks
        .iter()
        .filter_map(|m| {
            let t = m
                .get("trust_mark_type")
                .or_else(|| m.get("id"))
                .and_then(Value::as_str)?;
            let jwt = m.get("trust_mark").and_then(Value::as_str)?;
            (t == tm_type).then(|| json!({"trust_mark_type": t, "trust_mark": jwt}))
        })
        .collect()
}

/// One of `entries` verifies relative to anchor `id` (see the module documentation).
async fn verify_through_anchor<E: CheckEnv>(
    id: &str,
    entries: &[Value],
    subject: &str,
    env: &E,
) -> Result<(), String> {
    let anchor = env.anchor(id).ok_or("not in the trust anchor repository")?;
    let now = env.now();
    let ec = env
        .fetcher()
        .entity_configuration(id)
        .await
        .map_err(|e| e.to_string())?;
    let validated = chain::validate_chain(&[ec], &anchor, now).map_err(|e| e.to_string())?;
    let anchor_claims = validated
        .statements
        .first()
        .map(|s| s.claims.clone())
        .unwrap_or_default();
    let subject_claims = json!({"trust_marks": entries});
    let subject_claims = subject_claims.as_object().cloned().unwrap_or_default();
    let admitted = candidates(&subject_claims, &anchor_claims);
    if admitted.is_empty() {
        return Err("its trust_mark_issuers admits no issuer of the entity's marks".into());
    }
    let mut reasons = Vec::new();
    for (entry, issuer) in admitted {
        let checked = async {
            let ec = env.fetcher().entity_configuration(&issuer).await?;
            let keys = self_signed_keys(&ec, &issuer, now)?;
            verify(entry, subject, &anchor_claims, &keys, now)
        };
        match checked.await {
            Ok(_) => return Ok(()),
            Err(e) => reasons.push(e.to_string()),
        }
    }
    Err(reasons.join("; "))
}

fn deny(why: impl Into<String>) -> Verdict {
    Verdict::Deny(Denial::forbidden(why))
}
