//! `trust_mark`: the entity's Entity Configuration carries a Trust Mark of the configured
//! type that verifies (§7.3) — the correct logic; lighthouse's anchor branch is inverted
//! (reference §13 item 2).
//!
//! - With `trust_anchors`: each anchor (from the repository) has its Entity Configuration
//!   fetched and verified (pinned keys, else self-signed); the mark must come from an issuer
//!   its `trust_mark_issuers` admits, verify with that issuer's keys (established through a
//!   trust chain to that anchor, [`crate::trust_mark_issuer_keys`]), and carry a delegation from the owner its `trust_mark_owners`
//!   names, if any — exactly what a resolver applies ([`crate::trust_mark`]).
//! - With `trust_mark_issuer_jwks`: verified with those keys directly; delegation checked
//!   against `trust_mark_owner` when configured (then required), and a mark carrying a
//!   delegation is refused without one.
//!
//! Either way that passes is enough.

use serde_json::{Map, Value, json};

use super::{Candidate, CheckEnv, Denial, TrustMarkCheck, Verdict};
use crate::chain::{self, Fetcher};
use crate::trust_mark::{candidates, mark_type, verify};
use crate::trust_mark_issuer_keys::verified_marks;

/// Runs a `trust_mark` check.
pub(super) async fn check<E: CheckEnv>(
    c: &TrustMarkCheck,
    cand: &Candidate<'_>,
    env: &E,
) -> Verdict {
    let entries = entries_of_type(cand.configuration, &c.trust_mark_type, env.draft_shapes());
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
            match verify(
                entry,
                cand.entity_id,
                &owners,
                keys,
                env.now(),
                env.draft_shapes(),
            ) {
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
/// "trust_mark"}` (with `draft_shapes`, earlier drafts' `id` / `trust_mark_id` name the type).
fn entries_of_type(
    configuration: &Map<String, Value>,
    tm_type: &str,
    draft_shapes: bool,
) -> Vec<Value> {
    let Some(marks) = configuration.get("trust_marks").and_then(Value::as_array) else {
        return Vec::new();
    };
    marks
        .iter()
        .filter_map(|m| {
            let t = mark_type(m.as_object()?, draft_shapes)?;
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
    if candidates(&subject_claims, &anchor_claims, anchor.interop.draft_shapes).is_empty() {
        return Err("its trust_mark_issuers admits no issuer of the entity's marks".into());
    }
    let (marks, refused) = verified_marks(
        env.fetcher(),
        &anchor,
        &anchor_claims,
        &subject_claims,
        subject,
        now,
    )
    .await;
    if marks.is_empty() {
        Err(refused.join("; "))
    } else {
        Ok(())
    }
}

fn deny(why: impl Into<String>) -> Verdict {
    Verdict::Deny(Denial::forbidden(why))
}
