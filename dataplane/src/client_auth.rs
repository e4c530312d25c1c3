//! `private_key_jwt` client authentication (OpenID Federation §8.8, RFC 7523) for endpoints
//! with `auth_enabled`: the dispatcher runs [`authenticate`] before the endpoint's handler.
//!
//! The client's keys come from a trust chain, resolved with the data plane's resolver, to one
//! of the endpoint's `auth_trust_anchors`, whose keys are read live from the snapshot's trust
//! anchor repository (a key change there applies to the very next request: pinned keys are
//! part of the resolver's cache key). Malformed requests are 400 `invalid_request`; anything
//! that fails to authenticate the client (audience, lifetime, replay, trust, signature) is
//! 401 `invalid_client`, as RFC 7523 §3.2 prescribes for client assertions.

use axum::http::StatusCode;
use pharos_shared::chain::is_entity_identifier;
use pharos_shared::endpoint::ResolveConfig;
use pharos_shared::jose::{self, Jwks};
use pharos_shared::snapshot::{EndpointEntry, Snapshot};
use serde_json::{Map, Value};

use crate::DataPlane;
use crate::error::FedError;
use crate::resolver::{Local, Query, grace_rule, resolve_config};

/// The only `client_assertion_type` accepted.
pub const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
/// Tolerated clock difference for `iat` in the future, seconds.
pub const IAT_SKEW: i64 = 5;
/// The form parameters that belong to authentication, not to the endpoint.
pub const AUTH_PARAMS: [&str; 2] = ["client_assertion_type", "client_assertion"];

fn unauthorized(d: impl Into<String>) -> FedError {
    FedError::new(StatusCode::UNAUTHORIZED, "invalid_client", d)
}

fn param<'a>(form: &'a [(String, String)], name: &str) -> Option<&'a str> {
    form.iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// Authenticates the client of a request whose (form) parameters are `form`; returns the
/// client's entity identifier.
pub async fn authenticate(
    dp: &DataPlane,
    snap: &Snapshot,
    entry: &EndpointEntry,
    form: &[(String, String)],
) -> Result<String, FedError> {
    if param(form, "client_assertion_type") != Some(ASSERTION_TYPE) {
        return Err(FedError::invalid_request(format!(
            "client_assertion_type must be {ASSERTION_TYPE}"
        )));
    }
    let assertion = param(form, "client_assertion")
        .filter(|a| !a.is_empty())
        .ok_or_else(|| FedError::invalid_request("client_assertion is required"))?;
    let now = dp.now();
    let claims = jose::decode_unverified(assertion)
        .map_err(|e| FedError::invalid_request(format!("client_assertion is not a JWT: {e}")))?
        .claims;
    let checked = check_claims(&claims, &snap.entity_id, now, dp.max_assertion_lifetime)?;
    // Without a resolve endpoint the resolver's defaults apply (borrowed: no copy per request).
    static DEFAULT: std::sync::LazyLock<ResolveConfig> = std::sync::LazyLock::new(Default::default);
    let cfg = resolve_config(snap).unwrap_or(&DEFAULT);
    self_signed(dp, cfg, assertion, &checked.client, now).await?;
    let keys = client_keys(dp, cfg, entry, snap, &checked.client, now).await?;
    jose::verify_client_assertion(assertion, &keys)
        .map_err(|e| unauthorized(format!("client_assertion signature: {e}")))?;
    if !dp
        .replay
        .first_use(&checked.client, &checked.jti, checked.exp, now)
        .await?
    {
        return Err(unauthorized("client_assertion jti has been used before"));
    }
    Ok(checked.client)
}

/// What the claims checks established.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// `iss` = `sub`.
    pub client: String,
    /// `jti`.
    pub jti: String,
    /// `exp`.
    pub exp: i64,
}

/// The claims rules, in order: `iss`, `sub` (equal), `aud` exactly `us` (a string, or an
/// array holding only it), `exp` required and not passed, `iat` (if any) at most
/// [`IAT_SKEW`] seconds ahead, `nbf` (if any) not ahead either, a lifetime (`exp` − `iat`, or
/// `exp` − now without `iat`) of at most `max_lifetime` seconds, `jti` required.
pub fn check_claims(
    c: &Map<String, Value>,
    us: &str,
    now: i64,
    max_lifetime: i64,
) -> Result<Checked, FedError> {
    let text = |n: &str| c.get(n).and_then(Value::as_str).filter(|s| !s.is_empty());
    let (Some(iss), Some(sub)) = (text("iss"), text("sub")) else {
        return Err(FedError::invalid_request(
            "client_assertion needs iss and sub",
        ));
    };
    if iss != sub {
        return Err(unauthorized("client_assertion iss and sub differ"));
    }
    let aud_ok = match c.get("aud") {
        None => return Err(FedError::invalid_request("client_assertion needs aud")),
        Some(Value::String(a)) => a == us,
        Some(Value::Array(a)) => !a.is_empty() && a.iter().all(|v| v.as_str() == Some(us)),
        Some(_) => false,
    };
    if !aud_ok {
        return Err(unauthorized(format!(
            "client_assertion aud must be exactly {us}"
        )));
    }
    let Some(exp) = c.get("exp").and_then(Value::as_i64) else {
        return Err(FedError::invalid_request(
            "client_assertion needs a numeric exp",
        ));
    };
    if exp < now {
        return Err(unauthorized("client_assertion has expired"));
    }
    let time = |name: &str| match c.get(name) {
        None => Ok(None),
        Some(v) => v.as_i64().map(Some).ok_or_else(|| {
            FedError::invalid_request(format!("client_assertion {name} must be a number"))
        }),
    };
    let iat = time("iat")?;
    if iat.is_some_and(|iat| iat > now + IAT_SKEW) {
        return Err(unauthorized("client_assertion iat is in the future"));
    }
    if time("nbf")?.is_some_and(|nbf| nbf > now + IAT_SKEW) {
        return Err(unauthorized("client_assertion is not valid yet (nbf)"));
    }
    if exp.saturating_sub(iat.unwrap_or(now)) > max_lifetime {
        return Err(unauthorized(format!(
            "client_assertion lives longer than {max_lifetime} seconds"
        )));
    }
    let jti = text("jti").ok_or_else(|| FedError::invalid_request("client_assertion needs jti"))?;
    Ok(Checked {
        client: iss.to_owned(),
        jti: jti.to_owned(),
        exp,
    })
}

/// Before any trust chain is resolved for it, the assertion must verify with the keys the
/// client's own Entity Configuration publishes: one (cached) fetch, so that an assertion nobody
/// could sign does not make the server walk a federation on a stranger's behalf (an
/// unauthenticated request costs no more than a resolve of that entity would).
async fn self_signed(
    dp: &DataPlane,
    cfg: &ResolveConfig,
    assertion: &str,
    client: &str,
    now: i64,
) -> Result<(), FedError> {
    if !url::Url::parse(client).is_ok_and(|u| is_entity_identifier(&u)) {
        return Err(unauthorized(
            "client_assertion iss is not a valid Entity Identifier",
        ));
    }
    let unknown = || unauthorized("client is not a member of any trusted federation");
    let ec = dp
        .resolve
        .resolver
        .entity_configuration(client, grace_rule(cfg), now, &Local::default())
        .await
        .map_err(|_| unknown())?;
    let claims = jose::decode_unverified(&ec).map_err(|_| unknown())?.claims;
    let own = |n: &str| claims.get(n).and_then(Value::as_str) == Some(client);
    if !own("iss") || !own("sub") {
        return Err(unknown());
    }
    let jwks: Jwks = claims
        .get("jwks")
        .cloned()
        .and_then(|j| serde_json::from_value(j).ok())
        .ok_or_else(|| unauthorized("the client's entity configuration has no jwks"))?;
    jose::verify(&ec, &jwks).map_err(|_| unknown())?;
    jose::verify_client_assertion(assertion, &jwks)
        .map(|_| ())
        .map_err(|e| unauthorized(format!("client_assertion signature: {e}")))
}

/// The client's Federation Entity Keys: the `jwks` of its Entity Configuration in a valid
/// trust chain to one of the endpoint's anchors. Anchors not in the repository, or whose keys
/// are not known yet, are skipped: authentication never trusts an anchor on first use.
async fn client_keys(
    dp: &DataPlane,
    cfg: &ResolveConfig,
    entry: &EndpointEntry,
    snap: &Snapshot,
    client: &str,
    now: i64,
) -> Result<Jwks, FedError> {
    let anchors: Vec<_> = entry
        .auth_trust_anchors
        .iter()
        .map(|a| snap.trust_anchors.spec(a))
        .filter(|a| a.jwks.as_ref().is_some_and(|j| !j.keys.is_empty()))
        .collect();
    if anchors.is_empty() {
        return Err(unauthorized("no resolvable trust anchors configured"));
    }
    let q = Query {
        subject: client.to_owned(),
        anchors,
        entity_types: Vec::new(),
        local: Local::of(snap, cfg),
    };
    let res = dp
        .resolve
        .resolver
        .resolve(&q, grace_rule(cfg), now)
        .await
        .map_err(|e| {
            unauthorized(format!(
                "client is not a member of any trusted federation: {e}"
            ))
        })?;
    res.chain
        .subject_claims
        .get("jwks")
        .cloned()
        .and_then(|j| serde_json::from_value(j).ok())
        .ok_or_else(|| unauthorized("the client's entity configuration has no jwks"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "client_auth_tests.rs"]
mod tests;
