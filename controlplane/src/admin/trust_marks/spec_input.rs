//! An issuance spec as sent and as shown: parsing and validation of the body (durations as
//! seconds or strings such as `24h`, extra claims that may not set protected claims, the
//! eligibility configuration), and the record an answer carries.

use pharos_shared::checks::Checker;
use pharos_shared::config::Duration;
use pharos_shared::trust_mark_issuer::{EligibilityMode, PROTECTED_CLAIMS};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use utoipa::ToSchema;

use super::types::check_type_name;
use crate::admin::error::{ApiError, ApiResult};
use crate::admin::extract::http_url;
use crate::db::trust_mark_specs::{SpecRow, SpecWrite};

/// Body of `POST` / `PUT` (and, merged over the stored spec, `PATCH`)
/// `/trust-marks/issuance-spec…`. `{trust_mark_type, lifetime}` alone is a complete spec.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SpecInput {
    /// The type issued (required).
    pub trust_mark_type: Option<String>,
    /// Validity of each mark: seconds or a duration string (`24h`, `7d`); 0 or absent = no `exp`.
    #[schema(value_type = Option<String>)]
    pub lifetime: Option<Value>,
    /// `ref` claim (URL).
    #[serde(rename = "ref")]
    pub ref_uri: Option<String>,
    /// `logo_uri` claim (URL).
    pub logo_uri: Option<String>,
    /// The owner's delegation JWT (`trust-mark-delegation+jwt`), checked when stored.
    pub delegation_jwt: Option<String>,
    /// Extra claims of every mark (not `iss`, `sub`, `iat`, `exp`, `jti`, `trust_mark_type`, …).
    #[schema(value_type = Option<Object>)]
    pub additional_claims: Option<Value>,
    /// Free text.
    pub description: Option<String>,
    /// `{mode: db_only|check_only|db_or_check|db_and_check, checker: {type, config}, check_cache_ttl}`.
    #[schema(value_type = Option<Object>)]
    pub eligibility_config: Option<Value>,
    /// Seconds (or a duration string) an issued JWT is handed out again at most (it is renewed
    /// sooner past `federation.trust_mark_renew_after_percent` of its lifetime); 0 = no such cap.
    #[schema(value_type = Option<String>)]
    pub cache_ttl: Option<Value>,
    /// Ignored (a record sent back as it was read).
    #[schema(ignore)]
    pub id: Option<Value>,
    /// Ignored.
    #[schema(ignore)]
    pub created_at: Option<Value>,
    /// Ignored.
    #[schema(ignore)]
    pub updated_at: Option<Value>,
}

fn bad(msg: String) -> ApiError {
    ApiError::BadRequest(msg)
}

/// Whole seconds of a duration given as a number or a string; absent or null = 0.
pub fn seconds(field: &str, v: Option<&Value>) -> ApiResult<i64> {
    let v = match v {
        None | Some(Value::Null) => return Ok(0),
        Some(v) => v,
    };
    let d = Duration::deserialize(v).map_err(|e| bad(format!("{field}: {e}")))?;
    i64::try_from(d.get().as_secs()).map_err(|_| bad(format!("{field}: duration too large")))
}

/// Extra claims as an object (absent or null = none) without protected claims.
pub fn claims_object(field: &str, v: Option<Value>) -> ApiResult<Map<String, Value>> {
    let m = match v {
        None | Some(Value::Null) => return Ok(Map::new()),
        Some(Value::Object(m)) => m,
        Some(_) => return Err(bad(format!("{field} must be a JSON object"))),
    };
    if let Some(k) = m.keys().find(|k| PROTECTED_CLAIMS.contains(&k.as_str())) {
        return Err(bad(format!(
            "{field}: claim {k:?} is set by the issuer and cannot be configured"
        )));
    }
    Ok(m)
}

/// The eligibility configuration, normalised to `{mode, checker, check_cache_ttl}`; absent or
/// null = none (`db_only`). The checker is kept as given once it names its type.
fn eligibility(v: Option<Value>) -> ApiResult<Option<Value>> {
    let mut m = match v {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(m)) => m,
        Some(_) => return Err(bad("eligibility_config must be a JSON object".into())),
    };
    // The enroll endpoint's flat form (`checker_type` + `checker_config`) is accepted too.
    if let Some(t) = m.remove("checker_type") {
        let config = m.remove("checker_config").unwrap_or(Value::Null);
        if m.contains_key("checker") {
            return Err(bad(
                "eligibility_config: give either checker or checker_type, not both".into(),
            ));
        }
        m.insert("checker".into(), json!({"type": t, "config": config}));
    }
    if let Some(k) = m
        .keys()
        .find(|k| !["mode", "checker", "check_cache_ttl"].contains(&k.as_str()))
    {
        return Err(bad(format!("eligibility_config: unknown field {k:?}")));
    }
    let mode = match m.get("mode") {
        None | Some(Value::Null) => EligibilityMode::DbOnly,
        Some(Value::String(s)) => EligibilityMode::parse(s).ok_or_else(|| {
            bad(format!(
                "eligibility_config.mode: unknown mode {s:?}; expected db_only, check_only, db_or_check or db_and_check"
            ))
        })?,
        Some(_) => return Err(bad("eligibility_config.mode must be a string".into())),
    };
    let checker = match m.get("checker") {
        None | Some(Value::Null) => Value::Null,
        Some(c @ Value::Object(_)) => {
            // Parsed as it will run, so a bad checker is refused now, naming the field.
            Checker::parse(c, "eligibility_config.checker").map_err(bad)?;
            c.clone()
        }
        Some(_) => {
            return Err(bad(
                "eligibility_config.checker must be a JSON object".into()
            ));
        }
    };
    let ttl = seconds(
        "eligibility_config.check_cache_ttl",
        m.get("check_cache_ttl"),
    )?;
    Ok(Some(
        json!({"mode": mode.as_str(), "checker": checker, "check_cache_ttl": ttl}),
    ))
}

fn url(field: &str, v: Option<String>) -> ApiResult<Option<String>> {
    match v.filter(|s| !s.is_empty()) {
        Some(u) => http_url(field, &u).map(|()| Some(u)),
        None => Ok(None),
    }
}

impl SpecInput {
    /// The validated fields (the delegation's signature is checked by the caller, which knows
    /// the type's owner).
    pub fn into_write(self) -> ApiResult<SpecWrite> {
        let trust_mark_type = self
            .trust_mark_type
            .ok_or_else(|| bad("trust_mark_type is required".into()))?;
        check_type_name(&trust_mark_type)?;
        Ok(SpecWrite {
            trust_mark_type,
            lifetime: seconds("lifetime", self.lifetime.as_ref())?,
            ref_uri: url("ref", self.ref_uri)?,
            logo_uri: url("logo_uri", self.logo_uri)?,
            delegation_jwt: self
                .delegation_jwt
                .map(|d| d.trim().to_string())
                .filter(|d| !d.is_empty()),
            additional_claims: claims_object("additional_claims", self.additional_claims)?,
            description: self.description.unwrap_or_default(),
            eligibility_config: eligibility(self.eligibility_config)?,
            cache_ttl: seconds("cache_ttl", self.cache_ttl.as_ref())?,
        })
    }
}

/// An issuance spec as the Admin API shows it (durations in seconds).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SpecRecord {
    /// Database id.
    pub id: i64,
    /// Creation time (Unix seconds).
    pub created_at: i64,
    /// Last update (Unix seconds).
    pub updated_at: i64,
    /// The type issued.
    pub trust_mark_type: String,
    /// Seconds each mark is valid (0 = no `exp`).
    pub lifetime: i64,
    /// `ref` claim.
    #[serde(rename = "ref")]
    pub ref_uri: Option<String>,
    /// `logo_uri` claim.
    pub logo_uri: Option<String>,
    /// The owner's delegation JWT.
    pub delegation_jwt: Option<String>,
    /// Extra claims of every mark.
    #[schema(value_type = Object)]
    pub additional_claims: Map<String, Value>,
    /// Free text.
    pub description: String,
    /// `{mode, checker, check_cache_ttl}` (null = `db_only`).
    #[schema(value_type = Option<Object>)]
    pub eligibility_config: Option<Value>,
    /// Seconds an issued JWT may be handed out again.
    pub cache_ttl: i64,
}

impl From<SpecRow> for SpecRecord {
    fn from(r: SpecRow) -> Self {
        let s = r.spec;
        Self {
            id: r.id,
            created_at: r.created_at,
            updated_at: r.updated_at,
            trust_mark_type: s.trust_mark_type,
            lifetime: s.lifetime,
            ref_uri: s.ref_uri,
            logo_uri: s.logo_uri,
            delegation_jwt: s.delegation_jwt,
            additional_claims: s.additional_claims,
            description: s.description,
            eligibility_config: s.eligibility_config,
            cache_ttl: s.cache_ttl,
        }
    }
}

/// `PATCH`: the stored spec in its input form with the patch's members laid over it
/// (a member set to null clears that field).
pub fn patched(stored: SpecRow, patch: Map<String, Value>) -> ApiResult<SpecInput> {
    let mut base = match serde_json::to_value(SpecRecord::from(stored)) {
        Ok(Value::Object(m)) => m,
        _ => return Err(ApiError::Internal("spec record is not an object".into())),
    };
    base.extend(patch);
    serde_json::from_value(Value::Object(base)).map_err(|e| bad(format!("invalid body: {e}")))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "spec_input_tests.rs"]
mod tests;
