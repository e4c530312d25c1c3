//! The Subordinate Statement payload (spec §3.1.3, §8.1), built from a snapshot.
//!
//! Pure, like [`crate::entity_configuration`]: the fetch endpoint signs the result on a cache
//! miss and the Admin API shows it unsigned, so both always agree on what we vouch for.
//!
//! Lifetime precedence: the general Admin API setting (`PUT /subordinates/lifetime`) when set,
//! else the fetch endpoint's `statement_lifetime`, else 600000 s. The Admin API setting wins
//! because it is the narrower, explicit operator action about statements; the endpoint config
//! value always exists (with its default) once the endpoint does.

use serde_json::{Map, Value, json};

use crate::claims::{self, AdditionalClaim};
use crate::endpoint::{EndpointConfig, EndpointType};
use crate::jose::{Jwk, Jwks};
use crate::policy::used_operators;
use crate::snapshot::Snapshot;
use crate::subordinate::{DEFAULT_STATEMENT_LIFETIME, GeneralSettings, Subordinate};

/// The statement lifetime in seconds (see the module documentation for the precedence).
pub fn lifetime(snap: &Snapshot) -> i64 {
    if let Some(l) = snap.subordinates.general.lifetime.filter(|l| *l > 0) {
        return l;
    }
    match snap
        .registry
        .by_type
        .get(&EndpointType::Fetch)
        .map(|e| &e.config)
    {
        Some(EndpointConfig::Fetch(c)) if c.statement_lifetime > 0 => {
            i64::try_from(c.statement_lifetime).unwrap_or(DEFAULT_STATEMENT_LIFETIME)
        }
        _ => DEFAULT_STATEMENT_LIFETIME,
    }
}

/// `exp` of a key, when it has a non-zero one.
fn key_exp(k: &Jwk) -> Option<i64> {
    k.get("exp").and_then(Value::as_i64).filter(|e| *e != 0)
}

/// The keys published at `now`: those whose `exp` is strictly before `now` are dropped; `exp`
/// equal to `now`, and no or zero `exp`, are kept.
pub fn published_keys(sub: &Subordinate, now: i64) -> Vec<Jwk> {
    published(sub.jwks.jwks(), now)
}

fn published(stored: Jwks, now: i64) -> Vec<Jwk> {
    stored
        .keys
        .into_iter()
        .filter(|k| key_exp(k).is_none_or(|e| e >= now))
        .collect()
}

/// Effective values: the subordinate's own when set, else the general ones (never merged).
fn effective<'a>(own: &'a Option<Box<Value>>, general: &'a Option<Value>) -> Option<&'a Value> {
    own.as_deref().or(general.as_ref()).filter(|v| !v.is_null())
}

/// The claims of the statement about `sub` at `now`. `source_endpoint` is our fetch URL (fetch
/// responses) or `None` (the Admin API preview).
pub fn payload(
    snap: &Snapshot,
    sub: &Subordinate,
    now: i64,
    source_endpoint: Option<&str>,
) -> Map<String, Value> {
    let general: &GeneralSettings = &snap.subordinates.general;
    let mut claims = Map::new();
    // Additional claims first, so that the protocol claims below always win.
    let extra: &[AdditionalClaim] = if sub.additional_claims.is_empty() {
        &general.additional_claims
    } else {
        &sub.additional_claims
    };
    let mut crit = Vec::new();
    for c in extra.iter().filter(|c| !claims::is_reserved(&c.claim)) {
        claims.insert(c.claim.clone(), c.value.clone());
        if c.crit {
            crit.push(Value::String(c.claim.clone()));
        }
    }
    let stored = sub.jwks.jwks();
    let had_keys = !stored.keys.is_empty();
    let keys = published(stored, now);
    if keys.is_empty() && had_keys {
        tracing::warn!(sub = %sub.entity_id, "every stored key of the subordinate has expired; issuing an empty jwks");
    }
    claims.insert("iss".into(), json!(&*snap.entity_id));
    claims.insert("sub".into(), json!(&*sub.entity_id));
    claims.insert("iat".into(), json!(now));
    claims.insert("exp".into(), json!(expiry(snap, &keys, now)));
    claims.insert("jwks".into(), json!({ "keys": keys }));
    if let Some(m) = effective(&sub.metadata, &general.metadata) {
        claims.insert("metadata".into(), m.clone());
    }
    if let Some(p) = effective(&sub.metadata_policy, &general.metadata_policy) {
        claims.insert("metadata_policy".into(), p.clone());
        let used = used_operators(p);
        let policy_crit: Vec<&String> = general
            .metadata_policy_crit
            .iter()
            .filter(|op| used.contains(*op))
            .collect();
        if !policy_crit.is_empty() {
            claims.insert("metadata_policy_crit".into(), json!(policy_crit));
        }
    }
    if let Some(c) = effective(&sub.constraints, &general.constraints) {
        claims.insert("constraints".into(), c.clone());
    }
    if !crit.is_empty() {
        claims.insert("crit".into(), Value::Array(crit));
    }
    if let Some(url) = source_endpoint {
        claims.insert("source_endpoint".into(), json!(url));
    }
    claims
}

/// `exp`: now + lifetime, capped at the latest `exp` among the published subordinate keys
/// (interface rule 4; keys without `exp` do not lift the cap, as in the reference service),
/// and at the latest expiry of our own keys (a statement must not outlive every key that can
/// verify it, as for the Entity Configuration).
pub fn expiry(snap: &Snapshot, published: &[Jwk], now: i64) -> i64 {
    let mut exp = now + lifetime(snap);
    if let Some(cap) = published.iter().filter_map(key_exp).max() {
        exp = exp.min(cap);
    }
    if let Some(ours) = snap.keys.latest_expiry() {
        exp = exp.min(ours);
    }
    exp.max(now)
}

/// Earliest time after `now` at which the published key set changes (a key passes its `exp`),
/// so that a cached signed statement is re-issued then.
pub fn next_key_change(sub: &Subordinate, now: i64) -> Option<i64> {
    sub.jwks
        .jwks()
        .keys
        .iter()
        .filter_map(key_exp)
        .filter(|e| *e >= now)
        .map(|e| e + 1)
        .min()
}

#[cfg(test)]
#[path = "subordinate_statement_tests.rs"]
mod tests;
