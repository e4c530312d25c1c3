//! Signing keys: the [`Signer`] abstraction and the in-memory [`SigningKey`].

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use josekit::jwk::KeyPair as _;
use josekit::jwk::alg::ed::EdCurve;
use josekit::jws::{self, JwsSigner};

use super::composite::{self, CompositeKey};
use super::ml_dsa::MlDsaKey;
use super::thumbprint::{required_public_members, thumbprint};
use super::{Algorithm, Jwk, b64_encode};
use crate::{Error, Result};

const PEM_BEGIN: &str = "-----BEGIN PRIVATE KEY-----";
const PEM_END: &str = "-----END PRIVATE KEY-----";

/// Anything that can produce a JWS signature (a private key in memory now; a PKCS#11 token
/// later).
///
/// It exists so that the JWS code never touches private key material itself: [`super::sign`]
/// only needs the algorithm, the `kid` and raw signatures.
pub trait Signer: Send + Sync + fmt::Debug {
    /// The JWS algorithm this signer produces; it goes into the `alg` header.
    fn alg(&self) -> Algorithm;
    /// The key id; it goes into the `kid` header and must match the published JWK.
    fn kid(&self) -> &str;
    /// Public JWK incl. "kid", "use":"sig", "alg", ready to publish in a `jwks` claim.
    fn public_jwk(&self) -> &Jwk;
    /// Signature over the JWS signing input, already in JWS form (ECDSA raw r||s).
    fn sign_bytes(&self, signing_input: &[u8]) -> Result<Vec<u8>>;
    /// Whether one signature takes long enough that an async caller must not wait for it on
    /// its own worker thread: an RSA signature costs about a millisecond, an ML-DSA one a few
    /// hundred microseconds with its rejection loop (EC and EdDSA tens of microseconds), a
    /// hardware token a round trip and a lock. Async callers hand these to a blocking thread.
    fn is_blocking(&self) -> bool {
        self.alg().is_rsa() || self.alg().is_ml_dsa()
    }
}

/// A private signing key held in memory.
///
/// It exists to bind a private key to exactly one algorithm and to its thumbprint `kid`, so a
/// key can never sign with an algorithm its published JWK does not announce. `Debug` shows
/// only the algorithm and `kid`, never key material.
pub struct SigningKey {
    alg: Algorithm,
    kid: String,
    public_jwk: Jwk,
    private_pem: String,
    signer: Inner,
}

/// What makes the signatures: josekit (OpenSSL) for the classic algorithms, libcrux
/// ML-DSA for FIPS 204 (OpenSSL before 3.5 has none), both for the composites.
enum Inner {
    Jose(Box<dyn JwsSigner>),
    MlDsa(MlDsaKey),
    Composite(CompositeKey),
}

fn key_err(what: &str, alg: Algorithm, e: impl fmt::Display) -> Error {
    Error::Key(format!("{what} for {alg}: {e}"))
}

fn ecdsa(alg: Algorithm) -> Option<jws::alg::ecdsa::EcdsaJwsAlgorithm> {
    match alg {
        Algorithm::ES256 => Some(jws::ES256),
        Algorithm::ES384 => Some(jws::ES384),
        Algorithm::ES512 => Some(jws::ES512),
        Algorithm::ES256K => Some(jws::ES256K),
        _ => None,
    }
}

fn rsassa(alg: Algorithm) -> Option<jws::alg::rsassa::RsassaJwsAlgorithm> {
    match alg {
        Algorithm::RS256 => Some(jws::RS256),
        Algorithm::RS384 => Some(jws::RS384),
        Algorithm::RS512 => Some(jws::RS512),
        _ => None,
    }
}

fn rsassa_pss(alg: Algorithm) -> Option<jws::alg::rsassa_pss::RsassaPssJwsAlgorithm> {
    match alg {
        Algorithm::PS256 => Some(jws::PS256),
        Algorithm::PS384 => Some(jws::PS384),
        Algorithm::PS512 => Some(jws::PS512),
        _ => None,
    }
}

/// Decodes a PKCS#8 (`BEGIN PRIVATE KEY`) PEM; errors never echo the input.
pub(crate) fn pkcs8_der_from_pem(pem: &str) -> Result<Vec<u8>> {
    let body = pem
        .trim()
        .strip_prefix(PEM_BEGIN)
        .and_then(|rest| rest.strip_suffix(PEM_END))
        .ok_or_else(|| Error::Key("expected a PKCS#8 PEM (BEGIN PRIVATE KEY)".into()))?;
    let b64: String = body.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    STANDARD
        .decode(b64)
        .map_err(|_| Error::Key("PKCS#8 PEM body is not valid base64".into()))
}

/// Encodes DER as PKCS#8 PEM with 64-character lines and `\n` line ends.
fn pem_from_pkcs8_der(der: &[u8]) -> String {
    let b64 = STANDARD.encode(der);
    let mut pem = String::with_capacity(b64.len() + b64.len() / 64 + 64);
    pem.push_str(PEM_BEGIN);
    pem.push('\n');
    let mut rest = b64.as_str();
    while !rest.is_empty() {
        let (line, tail) = rest.split_at(rest.len().min(64));
        pem.push_str(line);
        pem.push('\n');
        rest = tail;
    }
    pem.push_str(PEM_END);
    pem.push('\n');
    pem
}

impl SigningKey {
    /// Generates a fresh key for `alg`; `rsa_bits` (at least 2048) is used only by RS*/PS*.
    ///
    /// The `kid` is the RFC 7638 thumbprint of the public key, as the federation spec
    /// recommends.
    pub fn generate(alg: Algorithm, rsa_bits: u32) -> Result<Self> {
        if composite::params(alg).is_some() {
            return Self::from_composite(alg, CompositeKey::generate(alg)?);
        }
        if alg.is_ml_dsa() {
            return Self::from_ml_dsa(alg, MlDsaKey::generate(alg)?);
        }
        let pem = if let Some(ec) = ecdsa(alg) {
            ec.generate_key_pair()
                .map_err(|e| key_err("cannot generate key", alg, e))?
                .to_pem_private_key()
        } else if let Some(curve) = alg.signing_ed_curve() {
            let curve = if curve == "Ed448" {
                EdCurve::Ed448
            } else {
                EdCurve::Ed25519
            };
            jws::EdDSA
                .generate_key_pair(curve)
                .map_err(|e| key_err("cannot generate key", alg, e))?
                .to_pem_private_key()
        } else {
            // One plain rsaEncryption key serves RS* and PS*, so the stored PEM is portable.
            jws::RS256
                .generate_key_pair(rsa_bits)
                .map_err(|e| key_err("cannot generate key", alg, e))?
                .to_pem_private_key()
        };
        let pem = String::from_utf8(pem).map_err(|e| key_err("generated PEM", alg, e))?;
        Self::from_pem(alg, &pem)
    }

    /// Loads a PKCS#8 PEM private key for `alg`, checking that the key type (and curve, and
    /// RSA size of at least 2048 bits) fits the algorithm. A composite algorithm's key is in
    /// its stored form instead, the private `AKP` JWK (see [`Self::private_pem`]).
    pub fn from_pem(alg: Algorithm, pkcs8_pem: &str) -> Result<Self> {
        if composite::params(alg).is_some() {
            let jwk: Jwk = serde_json::from_str(pkcs8_pem)
                .map_err(|_| Error::Key(format!("an {alg} key is stored as its private JWK")))?;
            return super::from_private_jwk(&jwk, Some(alg));
        }
        let der = pkcs8_der_from_pem(pkcs8_pem)?;
        if alg.is_ml_dsa() {
            return Self::from_ml_dsa(alg, MlDsaKey::from_pkcs8_der(alg, &der)?);
        }
        let bad = |e: josekit::JoseError| key_err("key does not fit", alg, e);
        let (jwk, signer): (josekit::jwk::Jwk, Box<dyn JwsSigner>) = if let Some(a) = ecdsa(alg) {
            let kp = a.key_pair_from_der(&der).map_err(bad)?;
            (
                kp.to_jwk_public_key(),
                Box::new(a.signer_from_der(&der).map_err(bad)?),
            )
        } else if let Some(a) = rsassa(alg) {
            let kp = a.key_pair_from_der(&der).map_err(bad)?;
            (
                kp.to_jwk_public_key(),
                Box::new(a.signer_from_der(&der).map_err(bad)?),
            )
        } else if let Some(a) = rsassa_pss(alg) {
            // Accepts plain rsaEncryption PKCS#8 as well as RSASSA-PSS-restricted keys.
            let kp = a.key_pair_from_der(&der).map_err(bad)?;
            (
                kp.to_jwk_public_key(),
                Box::new(a.signer_from_der(&der).map_err(bad)?),
            )
        } else {
            let kp = jws::EdDSA.key_pair_from_der(&der).map_err(bad)?;
            let want = alg.signing_ed_curve();
            if want != Some(kp.curve().name()) {
                return Err(Error::Key(format!(
                    "key does not fit for {alg}: curve is {}",
                    kp.curve().name()
                )));
            }
            let signer = jws::EdDSA.signer_from_der(&der).map_err(bad)?;
            (kp.to_jwk_public_key(), Box::new(signer))
        };
        let public_jwk = required_public_members(jwk.as_ref())?;
        Self::assemble(
            alg,
            public_jwk,
            pem_from_pkcs8_der(&der),
            Inner::Jose(signer),
        )
    }

    /// An ML-DSA key: its JWK is `{"alg", "kty": "AKP", "pub"}` (draft-ietf-cose-dilithium),
    /// its stored form the PKCS#8 seed form of RFC 9881.
    pub(crate) fn from_ml_dsa(alg: Algorithm, key: MlDsaKey) -> Result<Self> {
        let mut jwk = Jwk::new();
        jwk.insert("alg".into(), alg.as_str().into());
        jwk.insert("kty".into(), "AKP".into());
        jwk.insert("pub".into(), b64_encode(&key.public_bytes()).into());
        let pem = pem_from_pkcs8_der(&key.to_pkcs8_der()?);
        Self::assemble(alg, jwk, pem, Inner::MlDsa(key))
    }

    /// A composite key (draft-ietf-jose-pq-composite-sigs-03): an `AKP` JWK like ML-DSA's, its
    /// `pub` and `priv` the two components concatenated. No PKCS#8 form of these keys is
    /// settled, so the stored form is the private JWK `{"alg", "kty", "priv"}`.
    pub(crate) fn from_composite(alg: Algorithm, key: CompositeKey) -> Result<Self> {
        let mut jwk = Jwk::new();
        jwk.insert("alg".into(), alg.as_str().into());
        jwk.insert("kty".into(), "AKP".into());
        let mut stored = jwk.clone();
        jwk.insert("pub".into(), b64_encode(&key.public_bytes()?).into());
        stored.insert("priv".into(), b64_encode(&key.private_bytes()?).into());
        let stored = serde_json::to_string(&stored)
            .map_err(|e| Error::Key(format!("cannot encode the {alg} key: {e}")))?;
        Self::assemble(alg, jwk, stored, Inner::Composite(key))
    }

    /// The key with its thumbprint `kid` and its published JWK (`use`, `alg`, `kid` added to
    /// the thumbprint's members).
    fn assemble(
        alg: Algorithm,
        mut public_jwk: Jwk,
        private: String,
        signer: Inner,
    ) -> Result<Self> {
        let kid = thumbprint(&public_jwk)?;
        public_jwk.insert("use".into(), "sig".into());
        public_jwk.insert("alg".into(), alg.as_str().into());
        public_jwk.insert("kid".into(), kid.clone().into());
        Ok(SigningKey {
            alg,
            kid,
            public_jwk,
            private_pem: private,
            signer,
        })
    }

    /// The private key's stored form, for the database or a file: a PKCS#8 PEM, except for the
    /// composite algorithms, whose private `AKP` JWK it is ([`Self::from_pem`] reads both).
    pub fn private_pem(&self) -> &str {
        &self.private_pem
    }

    /// The same key under another `kid`: for a key managed outside Pharos (an owner's key
    /// file) whose published JWK names it otherwise than by its thumbprint, so that the `kid`
    /// of a signature matches the key a verifier holds.
    pub fn with_kid(mut self, kid: &str) -> Self {
        self.kid = kid.to_owned();
        self.public_jwk.insert("kid".into(), kid.into());
        self
    }
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey")
            .field("alg", &self.alg)
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

impl Signer for SigningKey {
    fn alg(&self) -> Algorithm {
        self.alg
    }

    fn kid(&self) -> &str {
        &self.kid
    }

    fn public_jwk(&self) -> &Jwk {
        &self.public_jwk
    }

    fn sign_bytes(&self, signing_input: &[u8]) -> Result<Vec<u8>> {
        match &self.signer {
            Inner::Jose(s) => s
                .sign(signing_input)
                .map_err(|e| Error::Jws(format!("signing with {} failed: {e}", self.alg))),
            Inner::MlDsa(k) => k.sign(signing_input),
            Inner::Composite(k) => k.sign(signing_input),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing unwrap is a failing test
#[path = "key_tests.rs"]
mod tests;
