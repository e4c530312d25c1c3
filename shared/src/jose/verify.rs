//! Verifying compact JWS against a JWK Set.

use josekit::jws::{self, JwsVerifier};
use serde_json::Value;

use super::jws::split;
use super::{Algorithm, Decoded, Jwk, Jwks, str_member};
use crate::{Error, Result};

/// Builds a josekit verifier for one public JWK, after Pharos's own checks.
fn verifier_for(alg: Algorithm, key: &Jwk) -> Result<Box<dyn JwsVerifier>> {
    let kid = str_member(key, "kid").unwrap_or("(none)");
    if !alg.fits_key(str_member(key, "kty"), str_member(key, "crv")) {
        return Err(Error::Jws(format!("key {kid:?} cannot verify {alg}")));
    }
    match key.get("alg") {
        None => {}
        Some(Value::String(a)) if a == alg.as_str() => {}
        Some(other) => {
            return Err(Error::Jws(format!(
                "key {kid:?} is for alg {other}, not {alg}"
            )));
        }
    }
    // `alg` was checked above; josekit would reject the RFC 9864 names it does not know.
    let mut map = key.clone();
    map.remove("alg");
    let jwk = josekit::jwk::Jwk::from_map(map)
        .map_err(|e| Error::Jws(format!("key {kid:?} is not a valid JWK: {e}")))?;
    let verifier: std::result::Result<Box<dyn JwsVerifier>, _> = match alg {
        Algorithm::ES256 => jws::ES256.verifier_from_jwk(&jwk).map(|v| Box::new(v) as _),
        Algorithm::ES384 => jws::ES384.verifier_from_jwk(&jwk).map(|v| Box::new(v) as _),
        Algorithm::ES512 => jws::ES512.verifier_from_jwk(&jwk).map(|v| Box::new(v) as _),
        Algorithm::ES256K => jws::ES256K
            .verifier_from_jwk(&jwk)
            .map(|v| Box::new(v) as _),
        Algorithm::EdDSA | Algorithm::Ed25519 | Algorithm::Ed448 => {
            jws::EdDSA.verifier_from_jwk(&jwk).map(|v| Box::new(v) as _)
        }
        Algorithm::PS256 => jws::PS256.verifier_from_jwk(&jwk).map(|v| Box::new(v) as _),
        Algorithm::PS384 => jws::PS384.verifier_from_jwk(&jwk).map(|v| Box::new(v) as _),
        Algorithm::PS512 => jws::PS512.verifier_from_jwk(&jwk).map(|v| Box::new(v) as _),
        Algorithm::RS256 => jws::RS256.verifier_from_jwk(&jwk).map(|v| Box::new(v) as _),
        Algorithm::RS384 => jws::RS384.verifier_from_jwk(&jwk).map(|v| Box::new(v) as _),
        Algorithm::RS512 => jws::RS512.verifier_from_jwk(&jwk).map(|v| Box::new(v) as _),
    };
    verifier.map_err(|e| Error::Jws(format!("key {kid:?} unusable for {alg}: {e}")))
}

/// Verifies a compact JWS against a key set and returns its decoded parts.
///
/// Exists because josekit's JWT helpers check only signatures and trust the token's own
/// header; here the algorithm is checked against the key. Keys are chosen by the header `kid`
/// when present (a `kid` not in the set is an error), else every key whose `kty`/`crv` fits
/// the `alg` is tried. `none`, `HS*` and unknown algorithms are rejected, as is a `crit`
/// header (Pharos understands no JWS extensions). A key's own `alg` member, if present, must
/// equal the header `alg`. Does NOT check `exp`/`iat`/`typ`: callers do (see
/// [`super::check_typ`]).
pub fn verify(token: &str, jwks: &Jwks) -> Result<Decoded> {
    let parts = split(token)?;
    let header = &parts.decoded.header;
    let alg: Algorithm = str_member(header, "alg")
        .ok_or_else(|| Error::Jws("JWS header has no string \"alg\"".into()))?
        .parse()?;
    if header.contains_key("crit") {
        return Err(Error::Jws("JWS \"crit\" header is not supported".into()));
    }
    let candidates: Vec<&Jwk> = match header.get("kid") {
        Some(Value::String(kid)) => {
            let found: Vec<&Jwk> = jwks
                .keys
                .iter()
                .filter(|k| str_member(k, "kid") == Some(kid.as_str()))
                .collect();
            if found.is_empty() {
                return Err(Error::Jws(format!("kid {kid:?} is not in the key set")));
            }
            found
        }
        Some(_) => return Err(Error::Jws("JWS \"kid\" must be a string".into())),
        None => jwks
            .keys
            .iter()
            .filter(|k| alg.fits_key(str_member(k, "kty"), str_member(k, "crv")))
            .collect(),
    };
    let mut last = Error::Jws(format!("no key in the set can verify {alg}"));
    for key in candidates {
        let checked = verifier_for(alg, key).and_then(|v| {
            v.verify(parts.signing_input.as_bytes(), &parts.signature)
                .map_err(|e| Error::Jws(format!("signature check failed: {e}")))
        });
        match checked {
            Ok(()) => return Ok(parts.decoded),
            Err(e) => last = e,
        }
    }
    Err(last)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing unwrap is a failing test
#[path = "verify_tests.rs"]
mod tests;
