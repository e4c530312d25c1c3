//! Checks of new keys arriving from outside: a fetched Entity Configuration (key refreshers and
//! the jwks_update_trigger endpoint) and a pushed signed JWK Set (the jwks_update endpoint).
//!
//! Pure: the caller fetches, looks up the stored keys and passes `now`.

use serde_json::Value;

use crate::jose::{self, Jwks};
use crate::media_types::ENTITY_STATEMENT_TYP;

/// `typ` of a signed JWK Set (OpenID Federation §5.2.1) and the media type of its push.
pub const JWK_SET_TYP: &str = "jwk-set+jwt";
/// The exact `Content-Type` the jwks_update endpoint accepts.
pub const JWK_SET_CONTENT_TYPE: &str = "application/jwk-set+jwt";

/// Why new keys were not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyCheckError {
    /// The token is malformed or its claims are wrong.
    #[error("{0}")]
    Invalid(String),
    /// The signature does not verify with the stored keys.
    #[error("signature does not verify with the stored keys: {0}")]
    Signature(String),
}

/// Keys taken from a verified Entity Configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigurationKeys {
    /// Its `jwks`.
    pub jwks: Jwks,
    /// Its `exp`, when present and non-zero.
    pub exp: Option<i64>,
}

fn invalid(m: impl Into<String>) -> KeyCheckError {
    KeyCheckError::Invalid(m.into())
}

/// Checks `jws`, the Entity Configuration of `entity_id` at `now`: `typ`, `iss` = `sub` =
/// `entity_id`, a `jwks`, a signature by one of `stored` — or, when nothing is stored yet
/// (first-poll seed), by one of its own keys — and that it is current (`exp`, when present,
/// not passed; `iat`, when present, not in the future): an expired configuration replayed by
/// whoever sits on the path must not put old keys back.
pub fn check_configuration(
    jws: &str,
    entity_id: &str,
    stored: Option<&Jwks>,
    now: i64,
) -> Result<ConfigurationKeys, KeyCheckError> {
    let decoded = jose::decode_unverified(jws).map_err(|e| invalid(e.to_string()))?;
    jose::check_typ(&decoded, ENTITY_STATEMENT_TYP).map_err(|e| invalid(e.to_string()))?;
    let claim = |n: &str| decoded.claims.get(n).and_then(Value::as_str);
    if claim("iss") != Some(entity_id) || claim("sub") != Some(entity_id) {
        return Err(invalid(format!(
            "not the Entity Configuration of {entity_id}"
        )));
    }
    let own: Jwks = decoded
        .claims
        .get("jwks")
        .cloned()
        .and_then(|j| serde_json::from_value(j).ok())
        .ok_or_else(|| invalid("the Entity Configuration has no valid jwks"))?;
    let keys = match stored {
        Some(s) if !s.keys.is_empty() => s,
        _ => &own,
    };
    jose::verify(jws, keys).map_err(|e| KeyCheckError::Signature(e.to_string()))?;
    let exp = decoded
        .claims
        .get("exp")
        .and_then(Value::as_i64)
        .filter(|e| *e > 0);
    if exp.is_some_and(|e| e < now) {
        return Err(invalid("the Entity Configuration has expired"));
    }
    if decoded
        .claims
        .get("iat")
        .and_then(Value::as_i64)
        .is_some_and(|iat| iat > now + crate::time::CLOCK_SKEW)
    {
        return Err(invalid("the Entity Configuration's iat is in the future"));
    }
    Ok(ConfigurationKeys { jwks: own, exp })
}

/// Checks a pushed or enrolled JWK Set's own keys: non-empty, and a valid public key set
/// ([`crate::jose::check_public_key_set`], the same rule as the Admin API's). `accepted`: the
/// `kty` values accepted without parsing (`federation.accept.key_types`); `None` defers that
/// one decision to whoever holds the configuration (the data plane's form check of a push,
/// which the control plane repeats with `Some`).
pub fn check_new_keys(jwks: &Jwks, accepted: Option<&[String]>) -> Result<(), String> {
    if jwks.keys.is_empty() {
        return Err("keys must not be empty".into());
    }
    let own: Vec<String>;
    let accepted = match accepted {
        Some(a) => a,
        None => {
            own = jwks
                .keys
                .iter()
                .filter_map(|k| k.get("kty").and_then(Value::as_str))
                .map(str::to_owned)
                .collect();
            &own
        }
    };
    jose::check_public_key_set(jwks, accepted)
}

/// A signed JWK Set whose form has been checked but whose signature has not. It can only be
/// made by [`parse_signed_jwks`] and keeps the token it was read from, so whoever checks the
/// signature later checks exactly the token these claims came from.
#[derive(Debug, Clone, PartialEq)]
pub struct SignedJwks {
    /// `iss` = `sub`: the subordinate whose keys these are.
    pub sub: String,
    /// The new keys.
    pub keys: Jwks,
    /// When it was made: a push must be newer than the last one accepted.
    pub iat: i64,
    token: String,
}

impl SignedJwks {
    /// The compact JWS the claims were read from.
    pub fn token(&self) -> &str {
        &self.token
    }
}

/// Checks the form of a pushed signed JWK Set at `now`: `typ`, a `kid` header, `iss` = `sub`,
/// non-empty `keys` with unique non-empty `kid`s, an `iat` not in the future (it orders pushes:
/// the control plane accepts only one newer than the last it stored, so a captured older push
/// cannot put a removed key back), and an `exp` (if any) not passed.
pub fn parse_signed_jwks(token: &str, now: i64) -> Result<SignedJwks, KeyCheckError> {
    let bad = |m: &str| invalid(format!("invalid signed JWK Set: {m}"));
    let d = jose::decode_unverified(token).map_err(|e| bad(&e.to_string()))?;
    jose::check_typ(&d, JWK_SET_TYP).map_err(|e| bad(&e.to_string()))?;
    match d.header.get("kid").and_then(Value::as_str) {
        Some(k) if !k.is_empty() => {}
        _ => return Err(bad("header kid is missing")),
    }
    let claim = |n: &str| {
        d.claims
            .get(n)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let (Some(iss), Some(sub)) = (claim("iss"), claim("sub")) else {
        return Err(bad("iss and sub are required"));
    };
    if iss != sub {
        return Err(bad("iss and sub differ"));
    }
    let keys = d
        .claims
        .get("keys")
        .cloned()
        .map(|k| serde_json::json!({ "keys": k }))
        .and_then(|j| serde_json::from_value::<Jwks>(j).ok())
        .ok_or_else(|| bad("keys must be an array of JWKs"))?;
    check_new_keys(&keys, None).map_err(|e| bad(&e))?;
    for name in ["iat", "exp"] {
        if d.claims.get(name).is_some_and(|v| !v.is_i64()) {
            return Err(bad(&format!("{name} must be a number")));
        }
    }
    if let Some(exp) = d.claims.get("exp").and_then(Value::as_i64)
        && exp < now
    {
        return Err(bad("expired"));
    }
    let iat = d
        .claims
        .get("iat")
        .and_then(Value::as_i64)
        .ok_or_else(|| bad("iat is required (pushes are ordered by it)"))?;
    if iat > now + crate::time::CLOCK_SKEW {
        return Err(bad("iat is in the future"));
    }
    Ok(SignedJwks {
        sub: sub.to_owned(),
        keys,
        iat,
        token: token.to_owned(),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
#[path = "key_update_tests.rs"]
mod tests;
