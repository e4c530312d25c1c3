//! Obtaining an entity's own Entity Configuration for a check (enroll, enroll_request, trust
//! mark eligibility): fetched with the data plane's fetcher, so the resolver's outbound rules
//! apply (size, timeout, private-address policy, the `application/entity-statement+jwt` media
//! type), and accepted only when it is self-issued by `sub`, self-signed, typed and current.
//! One function for every caller, so no endpoint checks less than another.

use pharos_shared::chain::Fetcher;
use pharos_shared::jose;
use pharos_shared::trust_mark::self_signed_keys;
use serde_json::{Map, Value};

/// An Entity Configuration whose self-signature verified.
#[derive(Debug, Clone, PartialEq)]
pub struct Fetched {
    /// Its claims.
    pub claims: Map<String, Value>,
    /// The compact JWS as served.
    pub jws: String,
    /// The keys of its `metadata` (the entity types it declares), in document order.
    pub entity_types: Vec<String>,
}

impl Fetched {
    /// The EC's `jwks` claim (present: the self-signature was verified with it).
    pub fn jwks(&self) -> Option<&Value> {
        self.claims.get("jwks")
    }
}

/// Fetches `sub`'s Entity Configuration and verifies that it is issued by and about `sub`,
/// signed with a key of its own `jwks`, of type `entity-statement+jwt`, and not expired at
/// `now`. The error is a sentence for the requester (no internal detail beyond the fetch).
pub async fn fetch_configuration<F: Fetcher>(
    fetcher: &F,
    sub: &str,
    now: i64,
) -> Result<Fetched, String> {
    let jws = fetcher
        .entity_configuration(sub)
        .await
        .map_err(|e| format!("cannot obtain the entity configuration of {sub}: {e}"))?;
    verify_configuration(&jws, sub, now)
}

/// The checks of [`fetch_configuration`] on a JWS already in hand.
pub fn verify_configuration(jws: &str, sub: &str, now: i64) -> Result<Fetched, String> {
    self_signed_keys(jws, sub, now)
        .map_err(|e| format!("the entity configuration of {sub} is not valid: {e}"))?;
    let claims = jose::decode_unverified(jws)
        .map_err(|e| format!("the entity configuration of {sub} is not valid: {e}"))?
        .claims;
    let entity_types = claims
        .get("metadata")
        .and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    Ok(Fetched {
        claims,
        jws: jws.to_owned(),
        entity_types,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
#[path = "entity_tests.rs"]
mod tests;
