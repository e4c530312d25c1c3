//! The trust marks this entity holds (its Entity Configuration's `trust_marks`): what a held
//! mark must be before it is stored, when it is due for renewal, how long to wait after
//! failures, and the self-issuance spec.
//!
//! Pure, like the rest of this crate: the control plane's Admin API and its refresher call
//! these with `now`, so the refresh policy is tested without clocks or sockets.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::jose::{self, Jwks};
use crate::time::CLOCK_SKEW;
use crate::trust_mark::TRUST_MARK_TYP;
use crate::trust_mark_issuer::{EligibilityMode, IssuanceSpec, PROTECTED_CLAIMS};

/// Default `min_lifetime`, seconds: a newly obtained mark must live at least this long.
pub const DEFAULT_MIN_LIFETIME: i64 = 10;
/// Default `refresh_grace_period`, seconds: renew once the mark has this little life left.
pub const DEFAULT_GRACE_PERIOD: i64 = 3_600;
/// Default `refresh_rate_limit`, seconds: shortest spacing between two attempts.
pub const DEFAULT_RATE_LIMIT: i64 = 60;
/// Longest wait after consecutive failures (lighthouse: one hour).
pub const MAX_RETRY: i64 = 3_600;
/// The backoff factor stops doubling here (×64, as lighthouse).
const MAX_DOUBLINGS: u32 = 6;

/// What a checked mark says that the refresher needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldMark {
    /// `iss`: where a refreshed mark is obtained.
    pub iss: String,
    /// `iat`.
    pub iat: i64,
    /// `exp`, when the mark has one.
    pub exp: Option<i64>,
}

/// The type a mark we hold names: the one rule of [`crate::trust_mark::mark_type`], with the
/// draft-era names always understood (a mark we hold is judged by its issuer, not by a chain).
/// (lighthouse reads only `id`, reference §13.9; we read the current claim first.)
pub fn mark_type(claims: &Map<String, Value>) -> Option<&str> {
    crate::trust_mark::mark_type(claims, true)
}

/// Checks a trust mark we are to hold for `tm_type`: a JWS with `typ: trust-mark+jwt`, `sub`
/// = `us`, the type matching, a string `iss`, `iat` not in the future, and an `exp` (when
/// present) more than `min_lifetime` seconds away. With `issuer_keys` the signature is
/// verified too (marks fetched from an issuer, whose self-signed keys the caller obtained).
/// The error names the problem; the Admin API shows it as is.
pub fn check(
    jwt: &str,
    us: &str,
    tm_type: &str,
    issuer_keys: Option<&Jwks>,
    now: i64,
    min_lifetime: i64,
) -> Result<HeldMark, String> {
    let decoded = match issuer_keys {
        Some(keys) => jose::verify(jwt, keys)
            .map_err(|e| format!("trust_mark signature does not verify: {e}"))?,
        None => jose::decode_unverified(jwt)
            .map_err(|e| format!("trust_mark is not a signed JWT: {e}"))?,
    };
    jose::check_typ(&decoded, TRUST_MARK_TYP).map_err(|e| format!("trust_mark: {e}"))?;
    let c = &decoded.claims;
    let text = |name: &str| c.get(name).and_then(Value::as_str);
    match text("sub") {
        Some(sub) if sub == us => {}
        Some(sub) => return Err(format!("trust_mark sub is {sub:?}, not this entity {us:?}")),
        None => return Err("trust_mark has no sub".into()),
    }
    match mark_type(c) {
        Some(t) if t == tm_type => {}
        Some(t) => return Err(format!("trust_mark is of type {t:?}, not {tm_type:?}")),
        None => return Err("trust_mark has no trust_mark_type".into()),
    }
    let iss = text("iss").ok_or("trust_mark has no iss")?.to_owned();
    let iat = c
        .get("iat")
        .and_then(Value::as_i64)
        .ok_or("trust_mark has no numeric iat")?;
    if iat > now + CLOCK_SKEW {
        return Err("trust_mark iat is in the future".into());
    }
    let exp = match c.get("exp") {
        None => None,
        Some(v) => Some(v.as_i64().ok_or("trust_mark exp is not a number")?),
    };
    if let Some(e) = exp {
        if e <= now {
            return Err("trust_mark has expired".into());
        }
        if e - now < min_lifetime {
            return Err(format!(
                "trust_mark expires in {} s, less than min_lifetime {min_lifetime} s",
                e - now
            ));
        }
    }
    Ok(HeldMark { iss, iat, exp })
}

/// Shortest spacing of two status checks of a held external mark, seconds.
pub const MIN_STATUS_INTERVAL: i64 = 60;
/// Longest spacing of two status checks of a held external mark, seconds.
pub const MAX_STATUS_INTERVAL: i64 = 3_600;

/// How often the issuer is asked whether a held external mark is still valid: the row's
/// `refresh_rate_limit`, within [`MIN_STATUS_INTERVAL`]..=[`MAX_STATUS_INTERVAL`].
pub fn status_interval(rate_limit: i64) -> i64 {
    rate_limit.clamp(MIN_STATUS_INTERVAL, MAX_STATUS_INTERVAL)
}

/// The `status` of a trust mark status response (§8.4.2), verified with the issuer's keys
/// and bound to the mark asked about: `active`, `expired`, `revoked`, `invalid` or another
/// value an issuer defines.
pub fn status_of(
    response: &str,
    trust_mark: &str,
    issuer: &str,
    keys: &Jwks,
) -> Result<String, String> {
    let d = jose::verify(response, keys)
        .map_err(|e| format!("status response signature does not verify: {e}"))?;
    jose::check_typ(&d, "trust-mark-status-response+jwt")
        .map_err(|e| format!("status response: {e}"))?;
    let c = &d.claims;
    if c.get("iss").and_then(Value::as_str) != Some(issuer) {
        return Err("status response is not from the mark's issuer".into());
    }
    if c.get("trust_mark").and_then(Value::as_str) != Some(trust_mark) {
        return Err("status response is about another trust mark".into());
    }
    c.get("status")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| "status response has no status".into())
}

/// Whether `sub` is in a Trust Marked Entities Listing answer (§8.5.2: a JSON array of Entity
/// Identifiers) asked with `sub`; `None` when the answer is not such an array, which says
/// nothing about the mark (an issuer that cannot be understood is not taken as withdrawing
/// it).
pub fn listed(response: &str, sub: &str) -> Option<bool> {
    let ids: Vec<String> = serde_json::from_str(response).ok()?;
    Some(ids.iter().any(|id| id == sub))
}

/// Whether a status means the mark must no longer be published.
pub fn withdrawn(status: &str) -> bool {
    matches!(status, "revoked" | "invalid")
}

/// When a held mark is due for renewal: at once when there is none usable (`None`), never
/// when it has no `exp`, else when its remaining life reaches `grace` seconds.
pub fn renewal_at(held: Option<&HeldMark>, grace: i64) -> Option<i64> {
    match held {
        None => Some(i64::MIN),
        Some(m) => m.exp.map(|e| e.saturating_sub(grace.max(0))),
    }
}

/// The wait after `failures` consecutive failed attempts (at least one): the rate limit,
/// doubled per failure up to ×64, never more than [`MAX_RETRY`].
pub fn retry_delay(rate_limit: i64, failures: u32) -> i64 {
    let factor = 1_i64 << failures.clamp(1, MAX_DOUBLINGS);
    rate_limit.max(1).saturating_mul(factor).min(MAX_RETRY)
}

/// Seconds given as a JSON integer, a numeric string or a duration string (`"24h"`, `"7d"`).
pub fn seconds(v: &Value) -> Result<i64, String> {
    match v {
        Value::Number(n) => n
            .as_i64()
            .ok_or_else(|| format!("{n} is not a whole number of seconds")),
        Value::String(s) => s.trim().parse::<i64>().or_else(|_| {
            humantime::parse_duration(s.trim())
                .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
                .map_err(|e| format!("{s:?} is not a duration: {e}"))
        }),
        Value::Null => Ok(0),
        other => Err(format!("{other} is not a number of seconds")),
    }
}

fn de_seconds<'de, D: serde::Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    seconds(&Value::deserialize(d)?).map_err(serde::de::Error::custom)
}

/// How we issue a mark to ourselves (`self_issuance_spec`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SelfIssuance {
    /// Seconds each mark is valid (integer or duration string); 0 = no `exp`.
    #[serde(default, deserialize_with = "de_seconds")]
    pub lifetime: i64,
    /// `ref` claim.
    #[serde(rename = "ref", default, skip_serializing_if = "Option::is_none")]
    pub ref_uri: Option<String>,
    /// `logo_uri` claim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logo_uri: Option<String>,
    /// Extra claims of the mark.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub additional_claims: Map<String, Value>,
}

impl SelfIssuance {
    /// Refuses a negative lifetime and extra claims that the issuer decides (`iss`, `exp`, …).
    pub fn check(&self) -> Result<(), String> {
        if self.lifetime < 0 {
            return Err("self_issuance_spec.lifetime must not be negative".into());
        }
        if let Some(k) = self
            .additional_claims
            .keys()
            .find(|k| PROTECTED_CLAIMS.contains(&k.as_str()))
        {
            return Err(format!(
                "self_issuance_spec.additional_claims may not set {k:?}"
            ));
        }
        Ok(())
    }

    /// The issuance spec of `tm_type` this describes, for
    /// [`crate::trust_mark_issuer::mark_claims`].
    pub fn spec(&self, tm_type: &str) -> IssuanceSpec {
        IssuanceSpec {
            id: 0,
            trust_mark_type: tm_type.to_owned(),
            lifetime: (self.lifetime > 0).then_some(self.lifetime),
            ref_uri: self.ref_uri.clone(),
            logo_uri: self.logo_uri.clone(),
            delegation_jwt: None,
            additional_claims: self.additional_claims.clone(),
            eligibility: EligibilityMode::DbOnly,
            checker: None,
            check_cache_ttl: 0,
            cache_ttl: 0,
            version: 0,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "trust_mark_holder_tests.rs"]
mod tests;
