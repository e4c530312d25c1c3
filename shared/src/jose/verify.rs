//! Verifying compact JWS against a JWK Set.

use std::sync::OnceLock;

use josekit::jws::{self, JwsVerifier};
use openssl::bn::{BigNum, BigNumContext};
use openssl::ec::{EcGroup, EcKey, EcPoint};
use openssl::ecdsa::EcdsaSig;
use openssl::nid::Nid;
use serde_json::Value;
use sha2::Digest;

use super::jws::split;
use super::{Algorithm, Decoded, Jwk, Jwks, b64_decode, str_member};
use crate::{Error, Result};

/// Checks `signature` over `input` with one public JWK, after Pharos's own checks (see
/// [`usable`]). ECDSA keys take [`verify_ecdsa`]; the others josekit's verifiers.
fn check_signature(alg: Algorithm, key: &Jwk, input: &[u8], signature: &[u8]) -> Result<()> {
    let kid = usable(alg, key)?;
    if alg.is_ml_dsa() {
        let public = b64_decode("AKP public key pub", str_member(key, "pub").unwrap_or(""))?;
        let checked = if super::composite::params(alg).is_some() {
            super::composite::verify(alg, &public, input, signature)
        } else {
            super::ml_dsa::verify(alg, &public, input, signature)
        };
        return checked
            .map_err(|e| Error::Jws(format!("key {kid:?}: signature check failed: {e}")));
    }
    if let Some(curve) = ecdsa_curve(alg) {
        return verify_ecdsa(&curve?, key, input, signature)
            .map_err(|e| Error::Jws(format!("key {kid:?}: signature check failed: {e}")));
    }
    verifier_for(alg, key, kid)?
        .verify(input, signature)
        .map_err(|e| Error::Jws(format!("signature check failed: {e}")))
}

/// The key's `kid` (for messages) once the key fits `alg`: its `kty`/`crv`, its own `alg`
/// member when it has one (an `AKP` key must have one: it names the parameter set), and the
/// RSA bounds.
fn usable(alg: Algorithm, key: &Jwk) -> Result<&str> {
    let kid = str_member(key, "kid").unwrap_or("(none)");
    if !alg.fits_key(str_member(key, "kty"), str_member(key, "crv")) {
        return Err(Error::Jws(format!("key {kid:?} cannot verify {alg}")));
    }
    match key.get("alg") {
        None if alg.is_ml_dsa() => {
            return Err(Error::Jws(format!(
                "key {kid:?} has no alg; an AKP key names its parameter set there"
            )));
        }
        None => {}
        Some(Value::String(a)) if a == alg.as_str() => {}
        Some(other) => {
            return Err(Error::Jws(format!(
                "key {kid:?} is for alg {other}, not {alg}"
            )));
        }
    }
    if str_member(key, "kty") == Some("RSA") {
        check_rsa_bounds(key, kid)?;
    }
    Ok(kid)
}

/// Builds a josekit verifier for one public JWK that [`usable`] accepted.
fn verifier_for(alg: Algorithm, key: &Jwk, kid: &str) -> Result<Box<dyn JwsVerifier>> {
    // `alg` was checked by `usable`; josekit would reject the RFC 9864 names it does not know.
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
        Algorithm::MlDsa44
        | Algorithm::MlDsa65
        | Algorithm::MlDsa87
        | Algorithm::MlDsa44Es256
        | Algorithm::MlDsa65Es256
        | Algorithm::MlDsa87Es384
        | Algorithm::MlDsa44Ed25519
        | Algorithm::MlDsa65Ed25519
        | Algorithm::MlDsa87Ed448 => {
            return Err(Error::Jws(format!(
                "key {kid:?}: {alg} is not a josekit algorithm"
            )));
        }
    };
    verifier.map_err(|e| Error::Jws(format!("key {kid:?} unusable for {alg}: {e}")))
}

/// An ECDSA curve as JWS uses it: the byte length of a coordinate and of each half of a
/// signature, the digest of the signing input, and OpenSSL's group with its field prime, made
/// once per process (making a group costs ~120,000 instructions).
struct EcdsaCurve {
    len: usize,
    digest: DigestFn,
    group: &'static (EcGroup, BigNum),
}

/// A curve's group and field prime, made on first use (`None`: this OpenSSL lacks the curve).
type GroupCell = OnceLock<Option<(EcGroup, BigNum)>>;

/// A JWS digest of the signing input.
type DigestFn = fn(&[u8]) -> Vec<u8>;

/// The group of `nid` and its prime `p`, made on first use.
fn group(cell: &'static GroupCell, nid: Nid) -> Option<&'static (EcGroup, BigNum)> {
    cell.get_or_init(|| {
        let group = EcGroup::from_curve_name(nid).ok()?;
        let (mut p, mut a, mut b) = (
            BigNum::new().ok()?,
            BigNum::new().ok()?,
            BigNum::new().ok()?,
        );
        let mut ctx = BigNumContext::new().ok()?;
        group
            .components_gfp(&mut p, &mut a, &mut b, &mut ctx)
            .ok()?;
        Some((group, p))
    })
    .as_ref()
}

/// The curve of an ECDSA `alg` (RFC 7518 §3.4, RFC 8812 for ES256K); `None` for the others,
/// and for a curve this OpenSSL lacks (then the key is reported unusable).
fn ecdsa_curve(alg: Algorithm) -> Option<Result<EcdsaCurve>> {
    static P256: GroupCell = OnceLock::new();
    static K256: GroupCell = OnceLock::new();
    static P384: GroupCell = OnceLock::new();
    static P521: GroupCell = OnceLock::new();
    let sha256 = |b: &[u8]| sha2::Sha256::digest(b).to_vec();
    let (cell, nid, len, digest): (_, _, _, DigestFn) = match alg {
        Algorithm::ES256 => (&P256, Nid::X9_62_PRIME256V1, 32, sha256),
        Algorithm::ES256K => (&K256, Nid::SECP256K1, 32, sha256),
        Algorithm::ES384 => (&P384, Nid::SECP384R1, 48, |b| {
            sha2::Sha384::digest(b).to_vec()
        }),
        Algorithm::ES512 => (&P521, Nid::SECP521R1, 66, |b| {
            sha2::Sha512::digest(b).to_vec()
        }),
        _ => return None,
    };
    Some(
        group(cell, nid)
            .map(|group| EcdsaCurve { len, digest, group })
            .ok_or_else(|| Error::Jws(format!("{alg} is not available in this OpenSSL"))),
    )
}

/// An ECDSA signature check with OpenSSL's ECDSA on a key made from the JWK's coordinates.
///
/// Not through josekit: its verifier encodes the JWK as DER and decodes it again, and
/// OpenSSL 3's decoder spends ~1.2 million instructions per key on it, more than the signature
/// arithmetic itself (callgrind of a cold 3-level resolve, issue 34). Nor through
/// `EcKey::from_public_key_affine_coordinates`, whose full key check multiplies the point by
/// the group order (~600,000 instructions): every curve here has cofactor 1, so a point on
/// the curve is in the prime-order group, and the coordinates are checked to lie in the field
/// and on the curve (`set_affine_coordinates_gfp` refuses a point off it). The JWS signature is
/// `r || s`, each half `len` bytes (RFC 7518 §3.4); any other length is refused.
fn verify_ecdsa(
    curve: &EcdsaCurve,
    key: &Jwk,
    input: &[u8],
    signature: &[u8],
) -> std::result::Result<(), String> {
    let member = |name: &str| {
        b64_decode(name, str_member(key, name).unwrap_or("")).map_err(|e| e.to_string())
    };
    ecdsa_check(curve, &member("x")?, &member("y")?, input, signature)
}

/// An ECDSA check of `signature` (`r || s`) over `input` with `alg`'s curve and the public point
/// (`x`, `y`, each the curve's full coordinate size): the JWS path above and the classic
/// component of a composite signature (`super::composite`).
pub(crate) fn verify_ecdsa_raw(
    alg: Algorithm,
    x: &[u8],
    y: &[u8],
    input: &[u8],
    signature: &[u8],
) -> std::result::Result<(), String> {
    let curve = ecdsa_curve(alg)
        .ok_or_else(|| format!("{alg} is not an ECDSA algorithm"))?
        .map_err(|e| e.to_string())?;
    ecdsa_check(&curve, x, y, input, signature)
}

fn ecdsa_check(
    curve: &EcdsaCurve,
    x: &[u8],
    y: &[u8],
    input: &[u8],
    signature: &[u8],
) -> std::result::Result<(), String> {
    let (group, p) = curve.group;
    let coordinate = |name: &str, b: &[u8]| {
        if b.len() != curve.len {
            return Err(format!("{name} is not {} bytes", curve.len));
        }
        let n = BigNum::from_slice(b).map_err(|e| e.to_string())?;
        if n >= *p {
            return Err(format!("{name} lies outside the curve's field"));
        }
        Ok(n)
    };
    let (x, y) = (coordinate("x", x)?, coordinate("y", y)?);
    let off_curve = "the key's point is not on its curve";
    let mut ctx = BigNumContext::new().map_err(|e| e.to_string())?;
    let mut point = EcPoint::new(group).map_err(|e| e.to_string())?;
    point
        .set_affine_coordinates_gfp(group, &x, &y, &mut ctx)
        .map_err(|_| off_curve.to_owned())?;
    if !point.is_on_curve(group, &mut ctx).unwrap_or(false) {
        return Err(off_curve.into());
    }
    let public = EcKey::from_public_key(group, &point).map_err(|e| e.to_string())?;
    if signature.len() != 2 * curve.len {
        return Err(format!(
            "an ECDSA signature here is {} bytes, not {}",
            2 * curve.len,
            signature.len()
        ));
    }
    let (r, s) = signature.split_at(curve.len);
    let half = |b: &[u8]| BigNum::from_slice(b).map_err(|e| e.to_string());
    let sig = EcdsaSig::from_private_components(half(r)?, half(s)?).map_err(|e| e.to_string())?;
    match sig.verify(&(curve.digest)(input), &public) {
        Ok(true) => Ok(()),
        _ => Err("the signature does not match".into()),
    }
}

/// Smallest RSA modulus accepted for verification, in bits: what NIST SP 800-57 still allows
/// and what Pharos itself generates ([`super::SigningKey::generate`] refuses less).
pub const MIN_RSA_BITS: usize = 2048;
/// Largest RSA modulus accepted for verification, in bits. Verification cost grows with the
/// square of the modulus; no federation key in use is larger than 4096 bits, 8192 leaves room
/// and keeps one verification under a millisecond.
pub const MAX_RSA_BITS: usize = 8192;
/// Largest RSA public exponent accepted (exclusive bound 2^32, RFC 8017 allows up to n - 1).
/// Verification costs one squaring per exponent bit: a modulus-sized exponent makes each
/// check as slow as a private-key operation. Every real key uses 65537.
pub const MAX_RSA_EXPONENT: u64 = u32::MAX as u64;
/// How many keys a client assertion without `kid` may be tried against (RFC 7523 does not
/// require `kid`). A client publishes one or two signing keys; more candidates only multiply
/// the work a forged assertion costs us.
pub const MAX_CANDIDATES_WITHOUT_KID: usize = 3;

/// Which tokens may omit `kid`, and so how keys are chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum KidRule {
    /// Federation JWTs (statements, Trust Marks, delegations, status responses, signed JWK
    /// Sets, lists): `kid` is REQUIRED and selects exactly one key.
    Required,
    /// Client assertions (`private_key_jwt`): without `kid`, at most
    /// [`MAX_CANDIDATES_WITHOUT_KID`] fitting keys are tried.
    Optional,
}

/// Verifies a federation JWT (compact JWS) against a key set and returns its decoded parts.
///
/// Exists because josekit's JWT helpers check only signatures and trust the token's own
/// header; here the algorithm is checked against the key. The specification requires a `kid`
/// header on every federation JWT and unique `kid`s in a key set (§3, §7, §8): a token
/// without a string `kid`, a set with two keys of the same `kid`, and a `kid` not in the set
/// are refused, so each token costs at most one signature check. `none`, `HS*` and unknown
/// algorithms are rejected, as is a `crit` header (Pharos understands no JWS extensions). A
/// key's own `alg` member, if present, must equal the header `alg`; RSA keys must lie within
/// [`MIN_RSA_BITS`]..=[`MAX_RSA_BITS`] with an odd exponent below [`MAX_RSA_EXPONENT`].
/// Does NOT check `exp`/`iat`/`typ`: callers do (see [`super::check_typ`]).
pub fn verify(token: &str, jwks: &Jwks) -> Result<Decoded> {
    verify_with(token, jwks, KidRule::Required)
}

/// Verifies a client assertion (`private_key_jwt`, RFC 7523), the one JWT Pharos accepts
/// without `kid`: then the first [`MAX_CANDIDATES_WITHOUT_KID`] keys whose type fits the
/// `alg` are tried, and no more. With a `kid`, the rules of [`verify`] apply.
pub fn verify_client_assertion(token: &str, jwks: &Jwks) -> Result<Decoded> {
    verify_with(token, jwks, KidRule::Optional)
}

fn verify_with(token: &str, jwks: &Jwks, rule: KidRule) -> Result<Decoded> {
    let parts = split(token)?;
    let header = &parts.decoded.header;
    let alg: Algorithm = str_member(header, "alg")
        .ok_or_else(|| Error::Jws("JWS header has no string \"alg\"".into()))?
        .parse()?;
    if header.contains_key("crit") {
        return Err(Error::Jws("JWS \"crit\" header is not supported".into()));
    }
    let candidates: Vec<&Jwk> = match (header.get("kid"), rule) {
        (Some(Value::String(kid)), _) => vec![by_kid(jwks, kid)?],
        (Some(_), _) => return Err(Error::Jws("JWS \"kid\" must be a string".into())),
        (None, KidRule::Required) => {
            return Err(Error::Jws(
                "JWS header has no \"kid\" (required on federation JWTs)".into(),
            ));
        }
        (None, KidRule::Optional) => jwks
            .keys
            .iter()
            .filter(|k| alg.fits_key(str_member(k, "kty"), str_member(k, "crv")))
            .take(MAX_CANDIDATES_WITHOUT_KID)
            .collect(),
    };
    let mut last = Error::Jws(format!("no key in the set can verify {alg}"));
    for key in candidates {
        let input = parts.signing_input.as_bytes();
        match check_signature(alg, key, input, &parts.signature) {
            Ok(()) => return Ok(parts.decoded),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// The one key of `jwks` named `kid`. A set naming two keys alike is refused whole, whichever
/// `kid` is asked for: the specification requires unique `kid`s, and a set that breaks that
/// rule is not one to choose from.
fn by_kid<'a>(jwks: &'a Jwks, kid: &str) -> Result<&'a Jwk> {
    let mut seen = std::collections::HashSet::with_capacity(jwks.keys.len());
    let mut found = None;
    for k in &jwks.keys {
        if let Some(id) = str_member(k, "kid") {
            if !seen.insert(id) {
                return Err(Error::Jws(format!(
                    "the key set has more than one key with kid {id:?}"
                )));
            }
            if id == kid {
                found = Some(k);
            }
        }
    }
    found.ok_or_else(|| Error::Jws(format!("kid {kid:?} is not in the key set")))
}

/// RSA keys within the size and exponent bounds (see [`MAX_RSA_BITS`], [`MAX_RSA_EXPONENT`]),
/// checked before any arithmetic so that a hostile key costs nothing.
fn check_rsa_bounds(key: &Jwk, kid: &str) -> Result<()> {
    let n = b64_decode("RSA modulus n", str_member(key, "n").unwrap_or(""))?;
    let n = significant(&n);
    let bits = n
        .first()
        .map_or(0, |top| n.len() * 8 - top.leading_zeros() as usize);
    if !(MIN_RSA_BITS..=MAX_RSA_BITS).contains(&bits) {
        return Err(Error::Jws(format!(
            "key {kid:?}: RSA modulus of {bits} bits is outside {MIN_RSA_BITS}..={MAX_RSA_BITS}"
        )));
    }
    let e = b64_decode("RSA exponent e", str_member(key, "e").unwrap_or(""))?;
    let e = significant(&e);
    let exponent = (e.len() <= 8).then(|| e.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b)));
    match exponent {
        Some(e) if e >= 3 && e % 2 == 1 && e <= MAX_RSA_EXPONENT => Ok(()),
        _ => Err(Error::Jws(format!(
            "key {kid:?}: RSA public exponent must be odd, at least 3 and below 2^32"
        ))),
    }
}

/// Big-endian bytes without leading zeros.
fn significant(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|b| *b != 0).unwrap_or(bytes.len());
    &bytes[start..]
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing unwrap is a failing test
#[path = "verify_tests.rs"]
mod tests;
