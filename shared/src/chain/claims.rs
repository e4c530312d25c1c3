//! Syntax checks of individual claims (§3.2 steps 9, 13–22): `jwks`, `crit`, `metadata` and
//! the Trust Mark claims of Entity Configurations.

use serde_json::{Map, Value};

use super::invalid;
use crate::Result;
use crate::claims::STANDARD_CLAIMS;
use crate::jose::{self, Jwks};
use crate::trust_mark::mark_type;

/// Extension claims Pharos understands and may therefore accept in `crit`: none yet.
const UNDERSTOOD_EXTENSION_CLAIMS: [&str; 0] = [];

/// Claims only an Entity Configuration may carry (§3.1.2).
pub(crate) const EC_ONLY: [&str; 5] = [
    "authority_hints",
    "trust_anchor_hints",
    "trust_marks",
    "trust_mark_issuers",
    "trust_mark_owners",
];

/// Claims only a Subordinate Statement may carry (§3.1.3).
pub(crate) const SS_ONLY: [&str; 4] = [
    "constraints",
    "metadata_policy",
    "metadata_policy_crit",
    "source_endpoint",
];

/// `jwks` must be a JWK Set whose keys each have a `kty` and a unique, non-empty `kid`.
pub(crate) fn parse_jwks(v: Option<&Value>) -> Result<Jwks> {
    let v = v.ok_or_else(|| invalid("jwks is missing"))?;
    let jwks: Jwks = serde_json::from_value(v.clone())
        .map_err(|e| invalid(format!("jwks is not a JWK Set: {e}")))?;
    let mut kids = std::collections::BTreeSet::new();
    for key in &jwks.keys {
        if !key.get("kty").is_some_and(Value::is_string) {
            return Err(invalid("a key in jwks has no kty"));
        }
        match key.get("kid").and_then(Value::as_str) {
            Some(kid) if !kid.is_empty() && kids.insert(kid) => {}
            Some(kid) if !kid.is_empty() => {
                return Err(invalid(format!("kid {kid:?} appears twice in jwks")));
            }
            _ => return Err(invalid("a key in jwks has no kid")),
        }
    }
    Ok(jwks)
}

/// `crit` (§13.4): a non-empty array of distinct names of extension claims present in the
/// statement, every one of which must be understood.
pub(crate) fn check_crit(claims: &Map<String, Value>) -> Result<()> {
    let Some(v) = claims.get("crit") else {
        return Ok(());
    };
    let names = non_empty_strings("crit", v)?;
    for (i, name) in names.iter().enumerate() {
        if STANDARD_CLAIMS.contains(&name.as_str()) {
            return Err(invalid(format!("crit lists the standard claim {name}")));
        }
        if names[..i].contains(name) {
            return Err(invalid(format!("crit lists {name} twice")));
        }
        if !claims.contains_key(name) {
            return Err(invalid(format!("crit lists {name}, which is absent")));
        }
        if !UNDERSTOOD_EXTENSION_CLAIMS.contains(&name.as_str()) {
            return Err(invalid(format!("critical claim {name} is not understood")));
        }
    }
    Ok(())
}

/// `metadata` is an object of objects, with no `null` Entity Type or parameter values.
pub(crate) fn check_metadata(v: Option<&Value>) -> Result<()> {
    let Some(v) = v else { return Ok(()) };
    let types = v
        .as_object()
        .ok_or_else(|| invalid("metadata must be an object"))?;
    for (t, params) in types {
        let params = params
            .as_object()
            .ok_or_else(|| invalid(format!("metadata.{t} must be an object")))?;
        if let Some((p, _)) = params.iter().find(|(_, v)| v.is_null()) {
            return Err(invalid(format!("metadata.{t}.{p} is null")));
        }
    }
    Ok(())
}

/// A non-empty array of strings (the shape of `authority_hints`, `crit`, and friends).
pub(crate) fn non_empty_strings(name: &str, v: &Value) -> Result<Vec<String>> {
    let items = v
        .as_array()
        .filter(|a| !a.is_empty())
        .ok_or_else(|| invalid(format!("{name} must be a non-empty array")))?;
    items
        .iter()
        .map(|i| {
            i.as_str()
                .map(str::to_owned)
                .ok_or_else(|| invalid(format!("{name} must contain only strings")))
        })
        .collect()
}

/// `trust_marks`, `trust_mark_issuers` and `trust_mark_owners` have the shapes of §3.1.2, and
/// each Trust Mark's `trust_mark_type` equals the one inside its JWT (a syntax check only:
/// the marks themselves are evaluated later, §7.3). With `draft_shapes` the type may be named
/// as earlier drafts did ([`crate::trust_mark::mark_type`]), the anchor's issuers may come as
/// `trust_marks_issuers`, and `trust_marks` of a Subordinate Statement (`is_ec` false; where
/// spid-cie-oidc puts a copy) are not read at all.
pub(crate) fn check_trust_mark_claims(
    claims: &Map<String, Value>,
    draft_shapes: bool,
    is_ec: bool,
) -> Result<()> {
    let marks = claims.get("trust_marks").filter(|_| is_ec || !draft_shapes);
    if let Some(v) = marks {
        let marks = v
            .as_array()
            .ok_or_else(|| invalid("trust_marks must be an array"))?;
        for m in marks {
            let (Some(typ), Some(jwt)) = (
                m.as_object().and_then(|e| mark_type(e, draft_shapes)),
                m.get("trust_mark").and_then(Value::as_str),
            ) else {
                return Err(invalid(
                    "each trust_marks entry needs string trust_mark_type and trust_mark",
                ));
            };
            let inner = jose::decode_unverified(jwt)
                .map_err(|e| invalid(format!("trust mark {typ}: {e}")))?;
            if mark_type(&inner.claims, draft_shapes) != Some(typ) {
                return Err(invalid(format!(
                    "trust mark {typ}: the JWT's trust_mark_type differs"
                )));
            }
        }
    }
    if let Some(v) = crate::trust_mark::mark_issuers(claims, draft_shapes) {
        let ok = v.as_object().is_some_and(|m| {
            m.values().all(|issuers| {
                issuers
                    .as_array()
                    .is_some_and(|a| a.iter().all(Value::is_string))
            })
        });
        if !ok {
            return Err(invalid(
                "trust_mark_issuers must map types to arrays of Entity IDs",
            ));
        }
    }
    if let Some(v) = claims.get("trust_mark_owners") {
        let ok = v.as_object().is_some_and(|m| {
            m.values().all(|owner| {
                owner.get("sub").is_some_and(Value::is_string)
                    && owner.get("jwks").is_some_and(Value::is_object)
            })
        });
        if !ok {
            return Err(invalid(
                "trust_mark_owners must map types to objects with sub and jwks",
            ));
        }
    }
    Ok(())
}
