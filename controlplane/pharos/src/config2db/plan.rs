//! From what the legacy file says ([`Legacy`]) to the rows it stands for ([`Plan`]): trust
//! anchors deduplicated by entity identifier, endpoints with their auth anchors resolved.
//!
//! Pure (the `jwks_file` reader is a parameter). Every row is validated with the rules the
//! Admin API applies, so the migration cannot store what `pharos serve` would refuse to load.

use pharos_shared::endpoint::{EndpointConfig, EndpointType};
use pharos_shared::jose::{Jwks, check_public_key_set};
use serde_json::Value;

use super::legacy::{Legacy, Mention};

/// Which sections to migrate (`--only`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sections {
    /// `trust_anchors`.
    pub trust_anchors: bool,
    /// `endpoints`.
    pub endpoints: bool,
}

impl Sections {
    /// Every section.
    pub const ALL: Self = Self {
        trust_anchors: true,
        endpoints: true,
    };

    /// Parses `--only` (a comma list); `None` = every section.
    pub fn parse(only: Option<&str>) -> Result<Self, String> {
        let Some(only) = only else {
            return Ok(Self::ALL);
        };
        let mut s = Self {
            trust_anchors: false,
            endpoints: false,
        };
        for name in only.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match name {
                "trust_anchors" => s.trust_anchors = true,
                "endpoints" => s.endpoints = true,
                other => {
                    return Err(format!(
                        "invalid --only: unknown section {other:?} (sections: trust_anchors, endpoints)"
                    ));
                }
            }
        }
        if !s.trust_anchors && !s.endpoints {
            return Err("invalid --only: no sections to migrate".into());
        }
        Ok(s)
    }
}

/// A trust anchor row to be.
#[derive(Debug, Clone, PartialEq)]
pub struct Anchor {
    /// Entity identifier.
    pub entity_id: String,
    /// Keys from the file (`None`: none given anywhere).
    pub jwks: Option<Jwks>,
    /// Poll the anchor's keys; always true for an anchor without keys, so that its first poll
    /// seeds them (0.21 fetched them from the anchor's Entity Configuration).
    pub enable_jwks_update: bool,
    /// Poll interval, seconds.
    pub key_poll_interval: i64,
    /// Where it was first found (the dry run prints it).
    pub source: String,
}

/// An endpoint row to be.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    /// Type.
    pub kind: String,
    /// Served path.
    pub path: Option<String>,
    /// Published URL.
    pub url: Option<String>,
    /// Client authentication.
    pub auth_enabled: bool,
    /// Type-specific configuration.
    pub config: Value,
    /// Auth trust anchors (entity identifiers), linked by id.
    pub auth_trust_anchors: Vec<String>,
    /// Its key in the old file (for messages).
    pub yaml_key: String,
}

/// Every row the file stands for, in creation order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Plan {
    /// Trust anchors (empty unless the section is selected).
    pub anchors: Vec<Anchor>,
    /// Endpoints (empty unless the section is selected).
    pub endpoints: Vec<Endpoint>,
}

fn keys_of(
    m: &Mention,
    read: &dyn Fn(&str) -> Result<String, String>,
    accepted_kty: &[String],
) -> Result<Option<Jwks>, String> {
    let value = match (&m.jwks_file, &m.jwks) {
        (Some(file), _) => {
            let text = read(file).map_err(|e| format!("{}: jwks_file {file}: {e}", m.place))?;
            serde_json::from_str::<Value>(&text)
                .map_err(|e| format!("{}: jwks_file {file} is not JSON: {e}", m.place))?
        }
        (None, Some(v)) => v.clone(),
        (None, None) => return Ok(None),
    };
    let jwks: Jwks =
        serde_json::from_value(value).map_err(|e| format!("{}: not a JWK Set: {e}", m.place))?;
    check_public_key_set(&jwks, accepted_kty).map_err(|e| format!("{}: jwks.{e}", m.place))?;
    Ok(Some(jwks))
}

/// The trust anchors: first mention wins the flags; keys may come from any mention, but two
/// different key sets for one identifier are an error naming both places.
fn anchors(
    l: &Legacy,
    read: &dyn Fn(&str) -> Result<String, String>,
    accepted_kty: &[String],
    problems: &mut Vec<String>,
) -> Vec<Anchor> {
    let mut out: Vec<Anchor> = Vec::new();
    let mut keys_from: Vec<Option<String>> = Vec::new();
    for m in &l.mentions {
        let jwks = match keys_of(m, read, accepted_kty) {
            Ok(j) => j,
            Err(e) => {
                problems.push(e);
                continue;
            }
        };
        match out.iter().position(|a| a.entity_id == m.entity_id) {
            None => {
                keys_from.push(jwks.as_ref().map(|_| m.place.clone()));
                out.push(Anchor {
                    entity_id: m.entity_id.clone(),
                    enable_jwks_update: m.enable_jwks_update || jwks.is_none(),
                    jwks,
                    key_poll_interval: m.key_poll_interval,
                    source: m.source.clone(),
                });
            }
            Some(i) => match (&out[i].jwks, jwks) {
                (_, None) => {}
                (Some(have), Some(new)) if *have != new => problems.push(format!(
                    "conflicting JWKS for trust anchor {}: {} and {}",
                    m.entity_id,
                    keys_from[i].as_deref().unwrap_or("?"),
                    m.place
                )),
                (Some(_), Some(_)) => {}
                (None, Some(new)) => {
                    out[i].jwks = Some(new);
                    keys_from[i] = Some(m.place.clone());
                }
            },
        }
    }
    out
}

fn endpoints(l: &Legacy, problems: &mut Vec<String>) -> Vec<Endpoint> {
    let mut out: Vec<Endpoint> = Vec::new();
    for e in &l.endpoints {
        let here = format!("endpoints.{}", e.yaml_key);
        let auth_enabled = e.auth_enabled || l.all_require_auth;
        let auth_trust_anchors = if e.auth_trust_anchors.is_empty() && auth_enabled {
            l.auth_fallback.clone()
        } else {
            e.auth_trust_anchors.clone()
        };
        if let Some(kind) = EndpointType::parse(e.kind)
            && let Err(err) = EndpointConfig::parse(kind, &e.config)
        {
            problems.push(format!("{here}: {err}"));
        }
        if let Err(err) = pharos_controlplane::admin::endpoints::validate_path(e.path.clone()) {
            problems.push(format!("{here}.path: {err}"));
        }
        if let Some(p) = &e.path
            && let Some(other) = out.iter().find(|o| o.path.as_ref() == Some(p))
        {
            problems.push(format!(
                "{here}.path: {p:?} is also the path of endpoints.{}",
                other.yaml_key
            ));
        }
        out.push(Endpoint {
            kind: e.kind.to_string(),
            path: e.path.clone(),
            url: e.url.clone(),
            auth_enabled,
            config: e.config.clone(),
            auth_trust_anchors,
            yaml_key: e.yaml_key.to_string(),
        });
    }
    out
}

/// The rows of the selected sections, or every problem found (`accepted_kty`:
/// `federation.accept.key_types`, for the anchors' keys).
pub fn plan(
    l: &Legacy,
    sections: Sections,
    read: &dyn Fn(&str) -> Result<String, String>,
    accepted_kty: &[String],
) -> Result<Plan, Vec<String>> {
    let mut problems = Vec::new();
    let mut plan = Plan::default();
    if sections.trust_anchors {
        plan.anchors = anchors(l, read, accepted_kty, &mut problems);
    }
    if sections.endpoints {
        plan.endpoints = endpoints(l, &mut problems);
    }
    if problems.is_empty() {
        Ok(plan)
    } else {
        Err(problems)
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
