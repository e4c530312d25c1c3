//! Public JWKs parsed into typed keys before anything stores or signs them ("parse, don't
//! validate"): one parser for every boundary that takes keys from outside (the Admin API's
//! subordinate, trust anchor and trust mark key sets, pushed and enrolled key sets, `pharos
//! config2db`), so a key accepted by one path cannot be refused by another.
//!
//! What a key must be (RFC 7517, RFC 7518 §6, RFC 8037):
//! - `EC`: `crv` P-256, P-384, P-521 or secp256k1; `x` and `y` base64url of exactly the
//!   curve's coordinate size; the point on the curve (checked by OpenSSL, never by curve
//!   arithmetic of our own).
//! - `OKP`: `crv` Ed25519, Ed448, X25519 or X448; `x` base64url of the curve's key size.
//! - `AKP` (draft-ietf-cose-dilithium): `alg` ML-DSA-44, ML-DSA-65 or ML-DSA-87; `pub`
//!   base64url of exactly that parameter set's public key size; or one of the composites of
//!   draft-ietf-jose-pq-composite-sigs-03, whose `pub` is the ML-DSA key and the classic one
//!   (an ECDSA point must lie on its curve).
//! - `RSA`: `n` and `e` base64url; a modulus of [`RSA_MIN_BITS`]..=[`RSA_MAX_BITS`] bits; an
//!   odd exponent of at least 3 and at most 256 bits (FIPS 186-5's bound).
//! - no private members (`d`, `p`, `q`, `dp`, `dq`, `qi`, `oth`, `k`, `priv`), so no
//!   symmetric key either;
//! - any other `kty` only when the operator listed it in `federation.accept.key_types`.
//!
//! Errors name the member (`x: not base64url`); callers prefix where the key was
//! (`jwks.keys[1].`).

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use openssl::bn::BigNum;
use openssl::ec::{EcGroup, EcKey};
use openssl::nid::Nid;
use serde_json::Value;

use super::Jwk;

/// The smallest RSA modulus accepted, in bits (the size Pharos itself generates at least).
pub const RSA_MIN_BITS: u32 = 2048;
/// The largest RSA modulus accepted, in bits: larger keys cost a verifier seconds.
pub const RSA_MAX_BITS: u32 = 8192;
/// The largest RSA public exponent accepted, in bits (FIPS 186-5: e < 2^256).
const RSA_MAX_E_BITS: u32 = 256;

/// JWK members that only a private (or symmetric) key has.
const PRIVATE_MEMBERS: [&str; 9] = ["d", "p", "q", "dp", "dq", "qi", "oth", "k", "priv"];

/// The key types parsed in full.
pub const KNOWN_KEY_TYPES: [&str; 4] = ["EC", "RSA", "OKP", "AKP"];

/// An elliptic curve of `kty` `EC`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EcCurve {
    /// NIST P-256 (ES256).
    P256,
    /// NIST P-384 (ES384).
    P384,
    /// NIST P-521 (ES512).
    P521,
    /// secp256k1 (ES256K, RFC 8812).
    Secp256k1,
}

impl EcCurve {
    /// Every curve, in the order error messages list them.
    pub const ALL: [EcCurve; 4] = [Self::P256, Self::P384, Self::P521, Self::Secp256k1];

    /// The JWK `crv` name.
    pub fn name(self) -> &'static str {
        match self {
            Self::P256 => "P-256",
            Self::P384 => "P-384",
            Self::P521 => "P-521",
            Self::Secp256k1 => "secp256k1",
        }
    }

    /// The size of one coordinate in bytes (RFC 7518 §6.2.1.2: always the full size).
    pub fn coordinate_len(self) -> usize {
        match self {
            Self::P256 | Self::Secp256k1 => 32,
            Self::P384 => 48,
            Self::P521 => 66,
        }
    }

    fn nid(self) -> Nid {
        match self {
            Self::P256 => Nid::X9_62_PRIME256V1,
            Self::P384 => Nid::SECP384R1,
            Self::P521 => Nid::SECP521R1,
            Self::Secp256k1 => Nid::SECP256K1,
        }
    }
}

/// A curve of `kty` `OKP` (RFC 8037).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OkpCurve {
    /// Ed25519 signatures.
    Ed25519,
    /// Ed448 signatures.
    Ed448,
    /// X25519 key agreement.
    X25519,
    /// X448 key agreement.
    X448,
}

impl OkpCurve {
    /// Every curve, in the order error messages list them.
    pub const ALL: [OkpCurve; 4] = [Self::Ed25519, Self::Ed448, Self::X25519, Self::X448];

    /// The JWK `crv` name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Ed25519 => "Ed25519",
            Self::Ed448 => "Ed448",
            Self::X25519 => "X25519",
            Self::X448 => "X448",
        }
    }

    /// The size of the public key `x` in bytes.
    pub fn key_len(self) -> usize {
        match self {
            Self::Ed25519 | Self::X25519 => 32,
            Self::Ed448 => 57,
            Self::X448 => 56,
        }
    }
}

/// A public key, as far as Pharos understands it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PublicKey {
    /// An EC key whose point is on its curve.
    Ec(EcCurve),
    /// An OKP key of the curve's size.
    Okp(OkpCurve),
    /// An RSA key of this many modulus bits.
    Rsa(u32),
    /// An ML-DSA key (`AKP`) of the parameter set its `alg` names.
    Akp(super::Algorithm),
    /// A key of a `kty` the operator accepts without Pharos parsing it.
    Accepted(String),
}

/// Why a JWK was refused: the member (empty for the key as a whole) and the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyError {
    /// The JWK member at fault (`x`, `crv`, …), or empty.
    pub member: &'static str,
    /// What is wrong with it.
    pub reason: String,
}

impl KeyError {
    fn new(member: &'static str, reason: impl Into<String>) -> Self {
        Self {
            member,
            reason: reason.into(),
        }
    }

    /// The message with the member named after `at` (e.g. `jwks.keys[1]`).
    pub fn at(&self, at: &str) -> String {
        if self.member.is_empty() {
            format!("{at}: {}", self.reason)
        } else {
            format!("{at}.{}: {}", self.member, self.reason)
        }
    }
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.member.is_empty() {
            f.write_str(&self.reason)
        } else {
            write!(f, "{}: {}", self.member, self.reason)
        }
    }
}

/// A required string member.
fn string<'a>(jwk: &'a Jwk, member: &'static str) -> Result<&'a str, KeyError> {
    match jwk.get(member) {
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(KeyError::new(member, "must be a string")),
        None => Err(KeyError::new(member, "missing")),
    }
}

/// A required base64url (no padding, canonical) member, decoded.
fn bytes(jwk: &Jwk, member: &'static str) -> Result<Vec<u8>, KeyError> {
    URL_SAFE_NO_PAD
        .decode(string(jwk, member)?)
        .map_err(|_| KeyError::new(member, "not base64url"))
}

/// A required fixed-size base64url member.
fn sized(jwk: &Jwk, member: &'static str, len: usize, crv: &str) -> Result<Vec<u8>, KeyError> {
    let b = bytes(jwk, member)?;
    if b.len() != len {
        return Err(KeyError::new(
            member,
            format!("{} bytes, {crv} needs {len}", b.len()),
        ));
    }
    Ok(b)
}

/// The number of significant bits of a big-endian unsigned integer.
fn bit_len(b: &[u8]) -> u32 {
    match b.iter().position(|x| *x != 0) {
        Some(i) => {
            let rest = u32::try_from(b.len() - i - 1).unwrap_or(u32::MAX / 16);
            rest * 8 + (8 - b[i].leading_zeros())
        }
        None => 0,
    }
}

fn ec(jwk: &Jwk) -> Result<PublicKey, KeyError> {
    let crv = string(jwk, "crv")?;
    let curve = EcCurve::ALL
        .into_iter()
        .find(|c| c.name() == crv)
        .ok_or_else(|| {
            let names: Vec<&str> = EcCurve::ALL.iter().map(|c| c.name()).collect();
            KeyError::new(
                "crv",
                format!("{crv:?} is not an EC curve ({})", names.join(", ")),
            )
        })?;
    let len = curve.coordinate_len();
    let x = sized(jwk, "x", len, crv)?;
    let y = sized(jwk, "y", len, crv)?;
    let not_on_curve = || KeyError::new("", format!("the point (x, y) is not on {crv}"));
    let group = EcGroup::from_curve_name(curve.nid()).map_err(|_| not_on_curve())?;
    let x = BigNum::from_slice(&x).map_err(|_| not_on_curve())?;
    let y = BigNum::from_slice(&y).map_err(|_| not_on_curve())?;
    // Refuses coordinates out of the field's range and points off the curve or at infinity.
    let key =
        EcKey::from_public_key_affine_coordinates(&group, &x, &y).map_err(|_| not_on_curve())?;
    key.check_key().map_err(|_| not_on_curve())?;
    Ok(PublicKey::Ec(curve))
}

fn okp(jwk: &Jwk) -> Result<PublicKey, KeyError> {
    let crv = string(jwk, "crv")?;
    let curve = OkpCurve::ALL
        .into_iter()
        .find(|c| c.name() == crv)
        .ok_or_else(|| {
            let names: Vec<&str> = OkpCurve::ALL.iter().map(|c| c.name()).collect();
            KeyError::new(
                "crv",
                format!("{crv:?} is not an OKP curve ({})", names.join(", ")),
            )
        })?;
    sized(jwk, "x", curve.key_len(), crv)?;
    Ok(PublicKey::Okp(curve))
}

fn rsa(jwk: &Jwk) -> Result<PublicKey, KeyError> {
    let n = bytes(jwk, "n")?;
    let bits = bit_len(&n);
    if !(RSA_MIN_BITS..=RSA_MAX_BITS).contains(&bits) {
        return Err(KeyError::new(
            "n",
            format!("a {bits}-bit modulus; {RSA_MIN_BITS} to {RSA_MAX_BITS} bits are accepted"),
        ));
    }
    if n.last().is_none_or(|b| b % 2 == 0) {
        return Err(KeyError::new("n", "an RSA modulus is odd"));
    }
    let e = bytes(jwk, "e")?;
    let e_bits = bit_len(&e);
    if !(2..=RSA_MAX_E_BITS).contains(&e_bits) || e.last().is_none_or(|b| b % 2 == 0) {
        return Err(KeyError::new(
            "e",
            format!("the exponent must be odd, at least 3 and at most {RSA_MAX_E_BITS} bits"),
        ));
    }
    Ok(PublicKey::Rsa(bits))
}

fn akp(jwk: &Jwk) -> Result<PublicKey, KeyError> {
    let alg = string(jwk, "alg")?;
    let (alg, len) = super::Algorithm::ALL
        .iter()
        .find_map(|a| Some((*a, akp_public_len(*a)?)).filter(|(a, _)| a.as_str() == alg))
        .ok_or_else(|| {
            KeyError::new(
                "alg",
                format!(
                    "{alg:?} is not an AKP algorithm (ML-DSA-44, ML-DSA-65, ML-DSA-87 or a \
                     composite)"
                ),
            )
        })?;
    let public = sized(jwk, "pub", len, alg.as_str())?;
    super::composite::check_public(alg, &public).map_err(|e| KeyError::new("pub", e))?;
    Ok(PublicKey::Akp(alg))
}

/// The `pub` length of an `AKP` algorithm: ML-DSA's, or a composite's two parts.
fn akp_public_len(alg: super::Algorithm) -> Option<usize> {
    super::ml_dsa::public_len(alg).or_else(|| Some(super::composite::params(alg)?.public_len()))
}

/// Parses one public JWK (`accepted`: the `kty` values accepted without parsing, from
/// `federation.accept.key_types`). `kid` is the key set's business ([`parse_public_key_set`]).
pub fn parse_public_key(jwk: &Jwk, accepted: &[String]) -> Result<PublicKey, KeyError> {
    if let Some(m) = PRIVATE_MEMBERS.iter().find(|m| jwk.contains_key(**m)) {
        return Err(KeyError::new(
            m,
            "a private key member: only public keys are accepted",
        ));
    }
    match string(jwk, "kty")? {
        "EC" => ec(jwk),
        "OKP" => okp(jwk),
        "RSA" => rsa(jwk),
        "AKP" => akp(jwk),
        other if accepted.iter().any(|a| a == other) => Ok(PublicKey::Accepted(other.to_owned())),
        other => Err(KeyError::new(
            "kty",
            format!(
                "{other:?} is not a key type Pharos knows ({}; others only when listed in \
                 federation.accept.key_types)",
                KNOWN_KEY_TYPES.join(", ")
            ),
        )),
    }
}

/// Parses a JWK Set's keys: each a valid public key ([`parse_public_key`]) with a non-empty
/// `kid` unique in the set. The message names the key as `keys[i]` and its member.
pub fn parse_public_key_set(keys: &[Jwk], accepted: &[String]) -> Result<Vec<PublicKey>, String> {
    let mut kids = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(keys.len());
    for (i, k) in keys.iter().enumerate() {
        let at = format!("keys[{i}]");
        let key = parse_public_key(k, accepted).map_err(|e| e.at(&at))?;
        match k.get("kid") {
            Some(Value::String(kid)) if !kid.is_empty() => {
                if !kids.insert(kid.as_str()) {
                    return Err(format!("{at}.kid: duplicate kid {kid:?}"));
                }
            }
            Some(Value::String(_)) | None => {
                return Err(format!("{at}.kid: every JWK needs a non-empty kid"));
            }
            Some(_) => return Err(format!("{at}.kid: must be a string")),
        }
        out.push(key);
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing unwrap is a failing test
#[path = "public_key_tests.rs"]
mod tests;
