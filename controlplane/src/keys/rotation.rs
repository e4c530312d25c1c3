//! Key rotation settings (stored in the database, scope `signing`, name `rotation`) and the
//! resolution of the key announcement lead time.
//!
//! The lead time is how long a new key sits in our published `jwks` before it signs anything.
//! It must cover at least one Entity Configuration lifetime: a client that fetched our
//! configuration just before the new key appeared keeps using that copy until it expires, and
//! must already know the key when the first statement signed with it reaches it.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::db::{Db, settings};
use crate::error::{Error, Result};

/// Name of the setting under [`settings::SIGNING`].
const NAME: &str = "rotation";

/// The automatic rotation policy; durations in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RotationSettings {
    /// Whether keys are rotated automatically.
    pub enabled: bool,
    /// Lifetime of a generated key, from its first use (`nbf`) to its `exp`, seconds.
    pub interval: i64,
    /// How long the previous key keeps verifying after its successor took over, seconds.
    pub overlap: i64,
    /// Fixed announcement lead time, seconds (0 = derived, see [`lead_time`]).
    pub key_announcement_lead_time: i64,
    /// Lead time as a multiple of the Entity Configuration lifetime (0 = not used).
    pub key_announcement_lead_time_ec_multiplier: f64,
}

impl Default for RotationSettings {
    /// The reference service's defaults, so that an operator moving over sees the same policy.
    fn default() -> Self {
        Self {
            enabled: false,
            interval: 600_000,
            overlap: 3_600,
            key_announcement_lead_time: 0,
            key_announcement_lead_time_ec_multiplier: 0.0,
        }
    }
}

impl RotationSettings {
    /// Rejects policies the planner cannot honour.
    pub fn validate(&self) -> Result<()> {
        if self.interval <= 0 {
            return Err(Error::RotationPolicy("interval must be positive"));
        }
        if self.overlap < 0 || self.key_announcement_lead_time < 0 {
            return Err(Error::RotationPolicy(
                "overlap and key_announcement_lead_time must not be negative",
            ));
        }
        if self.overlap >= self.interval {
            return Err(Error::RotationPolicy(
                "overlap must be shorter than interval (a key must sign for a while)",
            ));
        }
        let m = self.key_announcement_lead_time_ec_multiplier;
        if !m.is_finite() || m < 0.0 {
            return Err(Error::RotationPolicy(
                "key_announcement_lead_time_ec_multiplier must be a non-negative number",
            ));
        }
        Ok(())
    }
}

/// The stored policy, or the defaults when none was ever stored.
pub async fn load(db: &Db) -> Result<RotationSettings> {
    Ok(match settings::get(db, settings::SIGNING, NAME).await? {
        Some(v @ Value::Object(_)) => serde_json::from_value(v).unwrap_or_default(),
        _ => RotationSettings::default(),
    })
}

/// Stores the policy inside the caller's transaction.
pub async fn store(db: &Db, c: &mut sqlx::AnyConnection, s: &RotationSettings) -> Result<()> {
    let v = serde_json::to_value(s).map_err(|e| Error::Internal(e.to_string()))?;
    settings::set(db, c, settings::SIGNING, NAME, &v).await
}

/// A resolved lead time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeadTime {
    /// Seconds.
    pub secs: i64,
    /// The configured value was shorter than one EC lifetime and was replaced by it.
    pub floored: bool,
}

/// Resolves the lead time exactly as the service interface orders it: multiplier × EC lifetime
/// if the multiplier is positive; else the fixed value if positive; else the larger of 5 × EC
/// lifetime and 24 h; never below one EC lifetime.
pub fn lead_time(s: &RotationSettings, ec_lifetime: i64) -> LeadTime {
    let m = s.key_announcement_lead_time_ec_multiplier;
    let configured = if m > 0.0 {
        (m * ec_lifetime as f64).ceil() as i64
    } else if s.key_announcement_lead_time > 0 {
        s.key_announcement_lead_time
    } else {
        (5 * ec_lifetime).max(86_400)
    };
    if configured < ec_lifetime {
        LeadTime {
            secs: ec_lifetime,
            floored: true,
        }
    } else {
        LeadTime {
            secs: configured,
            floored: false,
        }
    }
}

/// [`lead_time`] plus the warning the interface asks for when the floor applies.
pub fn resolve_lead_time(s: &RotationSettings, ec_lifetime: i64) -> i64 {
    let lt = lead_time(s, ec_lifetime);
    if lt.floored {
        tracing::warn!(
            key_announcement_lead_time = s.key_announcement_lead_time,
            key_announcement_lead_time_ec_multiplier = s.key_announcement_lead_time_ec_multiplier,
            ec_lifetime,
            "configured key announcement lead time is shorter than one entity configuration \
             lifetime; using the entity configuration lifetime instead"
        );
    }
    lt.secs
}

#[cfg(test)]
#[path = "rotation_tests.rs"]
mod tests;
