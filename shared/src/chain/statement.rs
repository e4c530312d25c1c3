//! Decoding one Entity Statement and the checks of §3.2 that need no other statement: `typ`,
//! `kid`, required claims, lifetime, `jwks` syntax, `crit`, and where each claim may appear.

use serde_json::{Map, Value};

use super::claims::{
    EC_ONLY, SS_ONLY, check_crit, check_metadata, check_trust_mark_claims, non_empty_strings,
    parse_jwks,
};
use super::{CLOCK_SKEW, invalid};
use crate::Result;
use crate::jose::{self, Jwks};
use crate::media_types::ENTITY_STATEMENT_TYP;
use crate::policy::Constraints;

/// One decoded Entity Statement whose own syntax and lifetime have been checked.
///
/// Exists so that chain validation works on typed claims rather than raw JSON. On its own it
/// is NOT signature-verified; statements inside a [`super::ValidatedChain`] are.
#[derive(Clone, Debug, PartialEq)]
pub struct Statement {
    /// The compact JWS as received.
    pub jws: String,
    /// The protected header.
    pub header: Map<String, Value>,
    /// All claims, including those also held in typed form below.
    pub claims: Map<String, Value>,
    /// `iss`: the issuer's Entity ID.
    pub iss: String,
    /// `sub`: the subject's Entity ID.
    pub sub: String,
    /// `iat`, Unix seconds.
    pub iat: i64,
    /// `exp`, Unix seconds.
    pub exp: i64,
    /// `jwks`: the subject's Federation Entity Keys.
    pub jwks: Jwks,
    /// `constraints` (Subordinate Statements only).
    pub constraints: Option<Constraints>,
    /// `metadata_policy_crit` (Subordinate Statements only).
    pub metadata_policy_crit: Option<Vec<String>>,
}

impl Statement {
    /// Whether this is an Entity Configuration (`iss == sub`) rather than a Subordinate
    /// Statement.
    pub fn is_configuration(&self) -> bool {
        self.iss == self.sub
    }

    /// The `authority_hints` entries (empty when absent), for walking up the federation.
    pub fn authority_hints(&self) -> Vec<&str> {
        authority_hints(&self.claims)
    }
}

/// The string entries of a claims set's `authority_hints`, used before a statement is parsed.
pub(crate) fn authority_hints(claims: &Map<String, Value>) -> Vec<&str> {
    claims
        .get("authority_hints")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// What [`parse`] accepts beyond the final text (see [`crate::interop`]).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Lenience {
    /// `constraints` in this Entity Configuration: set for the Trust Anchor's own, unless
    /// `anchor_ec_constraints` is `refuse`.
    pub ec_constraints: bool,
    /// Draft-era shapes: Trust Mark type names, `trust_marks_issuers`, `trust_marks` in a
    /// Subordinate Statement (accepted and not read).
    pub draft_shapes: bool,
}

/// Decode `jws` and run the single-statement checks of §3.2 at time `now`, accepting what
/// `lenience` allows besides.
pub(crate) fn parse(jws: &str, now: i64, lenience: Lenience) -> Result<Statement> {
    let decoded = jose::decode_unverified(jws).map_err(|e| invalid(e.to_string()))?;
    jose::check_typ(&decoded, ENTITY_STATEMENT_TYP).map_err(|e| invalid(e.to_string()))?;
    match decoded.header.get("kid") {
        Some(Value::String(kid)) if !kid.is_empty() => {}
        _ => return Err(invalid("header has no non-empty kid")),
    }
    for h in ["trust_chain", "peer_trust_chain"] {
        if decoded.header.contains_key(h) {
            return Err(invalid(format!(
                "entity statements must not carry a {h} header"
            )));
        }
    }
    let claims = decoded.claims;
    let iss = entity_id(&claims, "iss")?;
    let sub = entity_id(&claims, "sub")?;
    let iat = numeric_date(&claims, "iat")?;
    let exp = numeric_date(&claims, "exp")?;
    if iat > now + CLOCK_SKEW {
        return Err(invalid(format!("iat {iat} is in the future (now {now})")));
    }
    if exp <= now {
        return Err(invalid(format!("exp {exp} is in the past (now {now})")));
    }
    let jwks = parse_jwks(claims.get("jwks"))?;
    check_crit(&claims)?;
    let is_ec = iss == sub;
    let misplaced = if is_ec { &SS_ONLY[..] } else { &EC_ONLY[..] };
    let tolerated = |c: &str| match (is_ec, c) {
        (true, "constraints") => lenience.ec_constraints,
        (false, "trust_marks") => lenience.draft_shapes,
        _ => false,
    };
    if let Some(c) = misplaced
        .iter()
        .find(|c| claims.contains_key(**c) && !tolerated(c))
    {
        let kind = if is_ec {
            "an Entity Configuration"
        } else {
            "a Subordinate Statement"
        };
        return Err(invalid(format!("{c} must not appear in {kind}")));
    }
    check_metadata(claims.get("metadata"))?;
    for name in [
        "authority_hints",
        "trust_anchor_hints",
        "metadata_policy_crit",
    ] {
        if let Some(v) = claims.get(name) {
            non_empty_strings(name, v)?;
        }
    }
    if claims
        .get("source_endpoint")
        .is_some_and(|v| !v.is_string())
    {
        return Err(invalid("source_endpoint must be a string"));
    }
    if claims
        .get("metadata_policy")
        .is_some_and(|v| !v.is_object())
    {
        return Err(invalid("metadata_policy must be an object"));
    }
    check_trust_mark_claims(&claims, lenience.draft_shapes, is_ec)?;
    let constraints = match claims.get("constraints") {
        None => None,
        Some(v) => Some(
            serde_json::from_value(v.clone())
                .map_err(|e| invalid(format!("constraints are malformed: {e}")))?,
        ),
    };
    let metadata_policy_crit = claims
        .get("metadata_policy_crit")
        .map(|v| non_empty_strings("metadata_policy_crit", v))
        .transpose()?;
    Ok(Statement {
        jws: jws.to_owned(),
        header: decoded.header,
        claims,
        iss,
        sub,
        iat,
        exp,
        jwks,
        constraints,
        metadata_policy_crit,
    })
}

/// A claim holding an Entity Identifier: an `https` URL with a host and without query or
/// fragment (§1.2). Plain `http` is accepted for loopback hosts only (see
/// [`is_loopback_host`]), so that federations of instances on one machine (development,
/// the whole-process tests) can be resolved; no remote Entity can use it.
fn entity_id(claims: &Map<String, Value>, name: &str) -> Result<String> {
    let s = claims
        .get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| invalid(format!("{name} is missing or not a string")))?;
    let url = url::Url::parse(s).map_err(|e| invalid(format!("{name} {s:?}: {e}")))?;
    if !is_entity_identifier(&url) {
        return Err(invalid(format!(
            "{name} {s:?} is not a valid Entity Identifier"
        )));
    }
    Ok(s.to_owned())
}

/// Whether `url` is an Entity Identifier: `https` (or `http` on a loopback host), with a host,
/// without query or fragment. The one rule for identifiers read from statements and from
/// requests naming an entity (enroll).
pub fn is_entity_identifier(url: &url::Url) -> bool {
    let scheme_ok = match url.scheme() {
        "https" => true,
        "http" => url.host().is_some_and(is_loopback_host),
        _ => false,
    };
    scheme_ok && url.host_str().is_some() && url.query().is_none() && url.fragment().is_none()
}

/// A NumericDate claim; fractional seconds are truncated.
fn numeric_date(claims: &Map<String, Value>, name: &str) -> Result<i64> {
    let v = claims
        .get(name)
        .ok_or_else(|| invalid(format!("{name} is missing")))?;
    v.as_i64()
        .or_else(|| v.as_f64().filter(|f| f.is_finite()).map(|f| f as i64))
        .ok_or_else(|| invalid(format!("{name} is not a NumericDate")))
}

/// Whether `host` is a loopback address or `localhost`, the only hosts for which an `http`
/// Entity Identifier is accepted.
pub(crate) fn is_loopback_host(host: url::Host<&str>) -> bool {
    match host {
        url::Host::Domain(d) => d.eq_ignore_ascii_case("localhost"),
        url::Host::Ipv4(ip) => ip.is_loopback(),
        url::Host::Ipv6(ip) => ip.is_loopback(),
    }
}
