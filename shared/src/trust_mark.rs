//! Trust Mark validation (§7.3) against a Trust Anchor's `trust_mark_issuers` and
//! `trust_mark_owners` (§7.2 delegation), as a resolver must do before putting a mark into a
//! resolve response (§8.3.2).
//!
//! Pure: the Trust Mark Issuer's keys are a parameter. The data plane fetches the issuer's
//! Entity Configuration and hands it to [`self_signed_keys`] first.

use serde_json::{Map, Value};

use crate::jose::{self, Jwks};
use crate::media_types::ENTITY_STATEMENT_TYP;
use crate::time::CLOCK_SKEW;
use crate::{Error, Result};

/// JWT `typ` of a Trust Mark.
pub const TRUST_MARK_TYP: &str = "trust-mark+jwt";
/// JWT `typ` of a Trust Mark delegation.
pub const DELEGATION_TYP: &str = "trust-mark-delegation+jwt";

/// A Trust Mark that passed [`verify`]: what a resolve response carries, plus its expiry
/// (which lowers the response's `exp`).
#[derive(Clone, Debug, PartialEq)]
pub struct VerifiedTrustMark {
    /// `trust_mark_type`.
    pub trust_mark_type: String,
    /// The compact JWT as found in the subject's Entity Configuration.
    pub trust_mark: String,
    /// `exp`, when the mark has one.
    pub exp: Option<i64>,
}

impl VerifiedTrustMark {
    /// The `{"trust_mark_type", "trust_mark"}` object of an EC or resolve response (with the
    /// `id` alias when `legacy_id`, see [`crate::trust_mark_issuer::entry`]).
    pub fn to_json(&self, legacy_id: bool) -> Value {
        crate::trust_mark_issuer::entry(&self.trust_mark_type, &self.trust_mark, legacy_id)
    }
}

/// The Trust Mark type an entry of `trust_marks` or a Trust Mark's claims name:
/// `trust_mark_type`; with `draft_shapes`, when it is absent, the names of earlier drafts,
/// `trust_mark_id` or `id` (spid-cie-oidc, Sphereon). Old names that disagree name no type:
/// a mark whose type is ambiguous is not understood.
pub fn mark_type(obj: &Map<String, Value>, draft_shapes: bool) -> Option<&str> {
    if let Some(t) = obj.get("trust_mark_type") {
        return t.as_str();
    }
    if !draft_shapes {
        return None;
    }
    let by_id = obj.get("trust_mark_id").and_then(Value::as_str);
    let id = obj.get("id").and_then(Value::as_str);
    match (by_id, id) {
        (Some(a), Some(b)) if a != b => None,
        (Some(a), _) => Some(a),
        (None, b) => b,
    }
}

/// The anchor's `trust_mark_issuers`; with `draft_shapes`, when it is absent, the
/// `trust_marks_issuers` of earlier drafts (spid-cie-oidc before November 2023).
pub fn mark_issuers(anchor_claims: &Map<String, Value>, draft_shapes: bool) -> Option<&Value> {
    anchor_claims.get("trust_mark_issuers").or_else(|| {
        draft_shapes
            .then(|| anchor_claims.get("trust_marks_issuers"))
            .flatten()
    })
}

fn bad(msg: impl std::fmt::Display) -> Error {
    Error::Jws(format!("trust mark rejected: {msg}"))
}

/// The Trust Marks of a subject's EC claims that the anchor's `trust_mark_issuers` admits,
/// as `(entry, issuer)` pairs, so the caller knows whose keys to obtain. Entries that are
/// malformed or whose issuer the anchor does not recognise for the type are left out: the
/// response may contain only marks the anchor trusts (§8.3.2, §17.5). `draft_shapes`: see
/// [`mark_type`] and [`mark_issuers`].
pub fn candidates<'a>(
    subject_claims: &'a Map<String, Value>,
    anchor_claims: &Map<String, Value>,
    draft_shapes: bool,
) -> Vec<(&'a Value, String)> {
    let Some(marks) = subject_claims.get("trust_marks").and_then(Value::as_array) else {
        return Vec::new();
    };
    let issuers = mark_issuers(anchor_claims, draft_shapes);
    marks
        .iter()
        .filter_map(|entry| {
            let tm_type = mark_type(entry.as_object()?, draft_shapes)?;
            let jwt = entry.get("trust_mark")?.as_str()?;
            let iss = jose::decode_unverified(jwt)
                .ok()?
                .claims
                .get("iss")?
                .as_str()?
                .to_owned();
            let allowed = issuers?.get(tm_type)?.as_array()?;
            let admitted = allowed.is_empty() || allowed.iter().any(|a| a.as_str() == Some(&iss));
            admitted.then_some((entry, iss))
        })
        .collect()
}

/// Validate one Trust Mark entry of `subject`'s EC (§7.3) with the issuer's keys, relative to
/// the Trust Anchor whose EC claims are `anchor_claims`: `typ`, `sub`, `trust_mark_type`,
/// `iat`, `exp` (when present), the signature, and delegation when the anchor names an owner
/// for the type (§7.2.2). The caller has already applied the `trust_mark_issuers` policy
/// ([`candidates`]). With `draft_shapes` the type may be named as earlier drafts did
/// ([`mark_type`]); the result names it `trust_mark_type`, as the anchor admitted it.
pub fn verify(
    entry: &Value,
    subject: &str,
    anchor_claims: &Map<String, Value>,
    issuer_keys: &Jwks,
    now: i64,
    draft_shapes: bool,
) -> Result<VerifiedTrustMark> {
    let tm_type = entry
        .as_object()
        .and_then(|e| mark_type(e, draft_shapes))
        .ok_or_else(|| bad("entry has no trust_mark_type"))?;
    let jwt = entry
        .get("trust_mark")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("entry has no trust_mark"))?;
    let decoded = jose::verify(jwt, issuer_keys)?;
    jose::check_typ(&decoded, TRUST_MARK_TYP)?;
    let c = &decoded.claims;
    let iss = str_claim(c, "iss")?;
    if str_claim(c, "sub")? != subject {
        return Err(bad(format!("sub is not {subject}")));
    }
    if mark_type(c, draft_shapes).ok_or_else(|| bad("trust_mark_type missing"))? != tm_type {
        return Err(bad("trust_mark_type differs from the entry's"));
    }
    let exp = check_times(c, now)?;
    let owner = anchor_claims
        .get("trust_mark_owners")
        .and_then(|o| o.get(tm_type));
    match (owner, c.get("delegation")) {
        (Some(owner), Some(Value::String(d))) => check_delegation(d, owner, iss, tm_type, now)?,
        (Some(_), _) => return Err(bad("the type has an owner but no delegation is present")),
        (None, Some(_)) => return Err(bad("delegation present but the anchor names no owner")),
        (None, None) => {}
    }
    Ok(VerifiedTrustMark {
        trust_mark_type: tm_type.to_owned(),
        trust_mark: jwt.to_owned(),
        exp,
    })
}

/// §7.2.2: the delegation JWT is signed by the owner the anchor names (keys from
/// `trust_mark_owners[type].jwks`), delegates this type to this issuer, and is current.
fn check_delegation(jwt: &str, owner: &Value, issuer: &str, tm_type: &str, now: i64) -> Result<()> {
    let owner_id = owner
        .get("sub")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("trust_mark_owners entry has no sub"))?;
    let keys: Jwks = owner
        .get("jwks")
        .cloned()
        .and_then(|j| serde_json::from_value(j).ok())
        .ok_or_else(|| bad("trust_mark_owners entry has no usable jwks"))?;
    delegation_problem(jwt, owner_id, &keys, issuer, tm_type, now).map_err(bad)
}

/// The issuer's side of §7.2: a delegation JWT an administrator stores with an issuance spec
/// must be one a resolver will accept, so it is checked when stored rather than discovered
/// broken by every relying party. Same rule as a resolver applies ([`verify`]): `typ`
/// `trust-mark-delegation+jwt`, signed with one of `owner_jwks`, `iss` = `owner_id`, `sub` =
/// `issuer` (us), `trust_mark_type` = `tm_type`, `iat` not in the future, `exp` (when present)
/// in the future. The error names the problem, for the operator.
pub fn check_delegation_for_issuer(
    jwt: &str,
    owner_id: &str,
    owner_jwks: &Jwks,
    issuer: &str,
    tm_type: &str,
    now: i64,
) -> std::result::Result<(), String> {
    delegation_problem(jwt, owner_id, owner_jwks, issuer, tm_type, now)
}

/// The one delegation rule behind [`verify`] and [`check_delegation_for_issuer`].
fn delegation_problem(
    jwt: &str,
    owner_id: &str,
    keys: &Jwks,
    issuer: &str,
    tm_type: &str,
    now: i64,
) -> std::result::Result<(), String> {
    let unverified = jose::decode_unverified(jwt).map_err(|e| format!("delegation: {e}"))?;
    jose::check_typ(&unverified, DELEGATION_TYP).map_err(|e| format!("delegation: {e}"))?;
    let d = jose::verify(jwt, keys)
        .map_err(|e| format!("delegation is not signed by the owner's keys: {e}"))?;
    let c = &d.claims;
    if claim(c, "iss")? != owner_id {
        return Err("delegation is not issued by the owner".into());
    }
    if claim(c, "sub")? != issuer {
        return Err("delegation is for another issuer".into());
    }
    if claim(c, "trust_mark_type")? != tm_type {
        return Err("delegation is for another trust_mark_type".into());
    }
    times(c, now)
        .map(|_| ())
        .map_err(|e| format!("delegation: {e}"))
}

/// `iat` required and not in the future (with [`CLOCK_SKEW`]); `exp` optional and, when
/// present, in the future. Returns `exp`.
fn check_times(c: &Map<String, Value>, now: i64) -> Result<Option<i64>> {
    times(c, now).map_err(bad)
}

fn times(c: &Map<String, Value>, now: i64) -> std::result::Result<Option<i64>, String> {
    let iat = c.get("iat").and_then(Value::as_i64).ok_or("iat missing")?;
    if iat > now + CLOCK_SKEW {
        return Err("iat is in the future".into());
    }
    let exp = match c.get("exp") {
        None => None,
        Some(v) => Some(v.as_i64().ok_or("exp is not a number")?),
    };
    if exp.is_some_and(|e| e <= now) {
        return Err("expired".into());
    }
    Ok(exp)
}

fn str_claim<'a>(c: &'a Map<String, Value>, name: &str) -> Result<&'a str> {
    claim(c, name).map_err(bad)
}

fn claim<'a>(c: &'a Map<String, Value>, name: &str) -> std::result::Result<&'a str, String> {
    c.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{name} missing"))
}

/// The keys of `entity_id` from its Entity Configuration `jws`, after checking that the EC is
/// self-issued, self-signed, typed and current. Used to obtain a Trust Mark Issuer's keys.
pub fn self_signed_keys(jws: &str, entity_id: &str, now: i64) -> Result<Jwks> {
    let unverified = jose::decode_unverified(jws)?;
    let keys: Jwks = unverified
        .claims
        .get("jwks")
        .cloned()
        .and_then(|j| serde_json::from_value(j).ok())
        .ok_or_else(|| bad(format!("{entity_id}: Entity Configuration has no jwks")))?;
    let d = jose::verify(jws, &keys)?;
    jose::check_typ(&d, ENTITY_STATEMENT_TYP)?;
    let (iss, sub) = (str_claim(&d.claims, "iss")?, str_claim(&d.claims, "sub")?);
    if iss != entity_id || sub != entity_id {
        return Err(bad(format!("{entity_id}: EC is not self-issued")));
    }
    if check_times(&d.claims, now)?.is_none() {
        return Err(bad(format!("{entity_id}: EC has no exp")));
    }
    Ok(keys)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing unwrap is a failing test
#[path = "trust_mark_tests.rs"]
mod tests;
