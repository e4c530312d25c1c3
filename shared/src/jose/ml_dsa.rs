//! ML-DSA (FIPS 204) keys and signatures as JOSE uses them (draft-ietf-cose-dilithium): the
//! `AKP` key type with the encoded public key in `pub` and the 32-byte seed as the private key,
//! pure ML-DSA over the JWS signing input with an empty context.
//!
//! The arithmetic is RustCrypto's `ml-dsa`; this module only chooses the parameter set from the
//! JOSE `alg`, so that the rest of the JOSE code handles one key type whatever the set.

use ::ml_dsa::common::getrandom::SysRng;
use ::ml_dsa::common::rand_core::TryRng as _;
use ::ml_dsa::pkcs8::{DecodePrivateKey as _, EncodePrivateKey as _};
use ::ml_dsa::{EncodedSignature, EncodedVerifyingKey, ExpandedSigningKey, MlDsaParams, Seed};
use ::ml_dsa::{MlDsa44, MlDsa65, MlDsa87, Signature, SigningKey, VerifyingKey};

use super::Algorithm;
use crate::{Error, Result};

/// The length of the private seed (FIPS 204 ξ), the `priv` member of an `AKP` JWK.
pub(crate) const SEED_LEN: usize = 32;

/// The encoded public key's length in bytes for an ML-DSA `alg` (FIPS 204 Table 2), `None` for
/// other algorithms.
pub(crate) fn public_len(alg: Algorithm) -> Option<usize> {
    match alg {
        Algorithm::MlDsa44 => Some(1312),
        Algorithm::MlDsa65 => Some(1952),
        Algorithm::MlDsa87 => Some(2592),
        _ => None,
    }
}

/// The signature's length in bytes for an ML-DSA `alg` (FIPS 204 Table 2), `None` for others.
pub(crate) fn signature_len(alg: Algorithm) -> Option<usize> {
    match alg {
        Algorithm::MlDsa44 => Some(2420),
        Algorithm::MlDsa65 => Some(3309),
        Algorithm::MlDsa87 => Some(4627),
        _ => None,
    }
}

/// An ML-DSA private key of one of the three parameter sets.
pub(crate) enum MlDsaKey {
    L44(Box<Key<MlDsa44>>),
    L65(Box<Key<MlDsa65>>),
    L87(Box<Key<MlDsa87>>),
}

/// One parameter set's key: the seed (what is stored) and the expanded key (what signs, made
/// once; boxed in [`MlDsaKey`], as it is tens of kilobytes).
pub(crate) struct Key<P: MlDsaParams> {
    seed: Seed,
    expanded: ExpandedSigningKey<P>,
}

impl<P> Key<P>
where
    P: MlDsaParams
        + ::ml_dsa::pkcs8::spki::AssociatedAlgorithmIdentifier<
            Params = ::ml_dsa::pkcs8::der::AnyRef<'static>,
        >,
{
    fn of_seed(seed: Seed) -> Box<Self> {
        Box::new(Self {
            expanded: ExpandedSigningKey::from_seed(&seed),
            seed,
        })
    }

    fn of_pkcs8(der: &[u8]) -> std::result::Result<Box<Self>, ::ml_dsa::pkcs8::Error> {
        Ok(Self::of_seed(
            SigningKey::<P>::from_pkcs8_der(der)?.to_seed(),
        ))
    }

    fn to_pkcs8(&self) -> std::result::Result<Vec<u8>, ::ml_dsa::pkcs8::Error> {
        let der = SigningKey::<P>::from_seed(&self.seed).to_pkcs8_der()?;
        Ok(der.as_bytes().to_vec())
    }

    fn public(&self) -> Vec<u8> {
        self.expanded.verifying_key().encode().to_vec()
    }

    fn sign(&self, input: &[u8], context: &[u8]) -> Result<Vec<u8>> {
        self.expanded
            .sign_randomized(input, context, &mut SysRng)
            .map(|s| s.encode().to_vec())
            .map_err(|_| Error::Jws("ML-DSA signing failed (no randomness?)".into()))
    }
}

fn not_ml_dsa(alg: Algorithm) -> Error {
    Error::Key(format!("{alg} is not an ML-DSA algorithm"))
}

impl MlDsaKey {
    /// A fresh key from the operating system's randomness.
    pub(crate) fn generate(alg: Algorithm) -> Result<Self> {
        let mut seed = Seed::default();
        SysRng
            .try_fill_bytes(&mut seed)
            .map_err(|e| Error::Key(format!("no randomness for an {alg} key: {e}")))?;
        Self::from_seed(alg, &seed)
    }

    /// The key of a 32-byte seed (a JWK's `priv`).
    pub(crate) fn from_seed(alg: Algorithm, seed: &[u8]) -> Result<Self> {
        let seed = Seed::try_from(seed).map_err(|_| {
            Error::Key(format!(
                "an ML-DSA private key is a {SEED_LEN}-byte seed, not {} bytes",
                seed.len()
            ))
        })?;
        Ok(match alg {
            Algorithm::MlDsa44 => Self::L44(Key::of_seed(seed)),
            Algorithm::MlDsa65 => Self::L65(Key::of_seed(seed)),
            Algorithm::MlDsa87 => Self::L87(Key::of_seed(seed)),
            other => return Err(not_ml_dsa(other)),
        })
    }

    /// The key of a PKCS#8 DER in the seed form of RFC 9881 (`id-ml-dsa-*` with the
    /// `[0]` seed); the OID must be the one of `alg`.
    pub(crate) fn from_pkcs8_der(alg: Algorithm, der: &[u8]) -> Result<Self> {
        let bad = |e: ::ml_dsa::pkcs8::Error| {
            Error::Key(format!(
                "key does not fit for {alg}: not an {alg} PKCS#8 key in seed form ({e})"
            ))
        };
        Ok(match alg {
            Algorithm::MlDsa44 => Self::L44(Key::of_pkcs8(der).map_err(bad)?),
            Algorithm::MlDsa65 => Self::L65(Key::of_pkcs8(der).map_err(bad)?),
            Algorithm::MlDsa87 => Self::L87(Key::of_pkcs8(der).map_err(bad)?),
            other => return Err(not_ml_dsa(other)),
        })
    }

    /// PKCS#8 DER in the seed form (what Pharos stores and writes to key files).
    pub(crate) fn to_pkcs8_der(&self) -> Result<Vec<u8>> {
        match self {
            Self::L44(k) => k.to_pkcs8(),
            Self::L65(k) => k.to_pkcs8(),
            Self::L87(k) => k.to_pkcs8(),
        }
        .map_err(|e| Error::Key(format!("cannot encode the ML-DSA key: {e}")))
    }

    /// The encoded public key (FIPS 204 pkEncode), the `pub` member of the JWK.
    pub(crate) fn public_bytes(&self) -> Vec<u8> {
        match self {
            Self::L44(k) => k.public(),
            Self::L65(k) => k.public(),
            Self::L87(k) => k.public(),
        }
    }

    /// A hedged ML-DSA signature (FIPS 204 Algorithm 2 with fresh randomness) over `input`
    /// with the empty context, as the JOSE draft requires.
    pub(crate) fn sign(&self, input: &[u8]) -> Result<Vec<u8>> {
        self.sign_with_context(input, &[])
    }

    /// The same with a context string (the composite algorithms pass their label).
    pub(crate) fn sign_with_context(&self, input: &[u8], context: &[u8]) -> Result<Vec<u8>> {
        match self {
            Self::L44(k) => k.sign(input, context),
            Self::L65(k) => k.sign(input, context),
            Self::L87(k) => k.sign(input, context),
        }
    }

    /// The 32-byte seed (the private key as the JOSE drafts encode it).
    pub(crate) fn seed(&self) -> [u8; SEED_LEN] {
        let seed = match self {
            Self::L44(k) => &k.seed,
            Self::L65(k) => &k.seed,
            Self::L87(k) => &k.seed,
        };
        seed.0
    }
}

/// Checks an ML-DSA `signature` over `input` with an encoded public key; lengths are checked
/// before any arithmetic.
pub(crate) fn verify(
    alg: Algorithm,
    public: &[u8],
    input: &[u8],
    signature: &[u8],
) -> std::result::Result<(), String> {
    verify_with_context(alg, public, input, signature, &[])
}

/// [`verify`] with a context string (the composite algorithms' label).
pub(crate) fn verify_with_context(
    alg: Algorithm,
    public: &[u8],
    input: &[u8],
    signature: &[u8],
    context: &[u8],
) -> std::result::Result<(), String> {
    match alg {
        Algorithm::MlDsa44 => verify_with::<MlDsa44>(public, input, signature, context),
        Algorithm::MlDsa65 => verify_with::<MlDsa65>(public, input, signature, context),
        Algorithm::MlDsa87 => verify_with::<MlDsa87>(public, input, signature, context),
        other => Err(format!("{other} is not an ML-DSA algorithm")),
    }
}

fn verify_with<P: MlDsaParams>(
    public: &[u8],
    input: &[u8],
    signature: &[u8],
    context: &[u8],
) -> std::result::Result<(), String> {
    let public = EncodedVerifyingKey::<P>::try_from(public).map_err(|_| {
        format!(
            "the public key is {} bytes, not the set's size",
            public.len()
        )
    })?;
    let encoded = EncodedSignature::<P>::try_from(signature).map_err(|_| {
        format!(
            "the signature is {} bytes, not the set's size",
            signature.len()
        )
    })?;
    let signature =
        Signature::<P>::decode(&encoded).ok_or("the signature is not a valid encoding")?;
    if VerifyingKey::<P>::decode(&public).verify_with_context(input, context, &signature) {
        Ok(())
    } else {
        Err("the signature does not match".into())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing unwrap is a failing test
mod tests {
    use super::*;

    const SETS: [Algorithm; 3] = [Algorithm::MlDsa44, Algorithm::MlDsa65, Algorithm::MlDsa87];

    #[test]
    fn a_signature_verifies_with_its_public_key_and_nothing_else() {
        for alg in SETS {
            let key = MlDsaKey::generate(alg).unwrap();
            assert_eq!(key.public_bytes().len(), public_len(alg).unwrap());
            let sig = key.sign(b"header.payload").unwrap();
            verify(alg, &key.public_bytes(), b"header.payload", &sig).unwrap();
            assert!(verify(alg, &key.public_bytes(), b"header.payloaD", &sig).is_err());
            let other = MlDsaKey::generate(alg).unwrap();
            assert!(verify(alg, &other.public_bytes(), b"header.payload", &sig).is_err());
            assert!(verify(alg, &key.public_bytes(), b"header.payload", &sig[1..]).is_err());
        }
        // A key of another parameter set is refused by its size, not misread.
        let k44 = MlDsaKey::generate(Algorithm::MlDsa44).unwrap();
        let sig = k44.sign(b"x").unwrap();
        assert!(verify(Algorithm::MlDsa65, &k44.public_bytes(), b"x", &sig).is_err());
    }

    #[test]
    fn the_seed_and_the_pkcs8_form_give_back_the_same_key() {
        for alg in SETS {
            let key = MlDsaKey::generate(alg).unwrap();
            let der = key.to_pkcs8_der().unwrap();
            let again = MlDsaKey::from_pkcs8_der(alg, &der).unwrap();
            assert_eq!(again.public_bytes(), key.public_bytes());
            // Seed form: the private key OCTET STRING holds [0] IMPLICIT OCTET STRING (32).
            let seed = &der[der.len() - SEED_LEN..];
            let from_seed = MlDsaKey::from_seed(alg, seed).unwrap();
            assert_eq!(from_seed.public_bytes(), key.public_bytes());
        }
        let k = MlDsaKey::generate(Algorithm::MlDsa44).unwrap();
        let der = k.to_pkcs8_der().unwrap();
        assert!(MlDsaKey::from_pkcs8_der(Algorithm::MlDsa65, &der).is_err());
        assert!(MlDsaKey::from_seed(Algorithm::MlDsa44, &[0; 31]).is_err());
    }
}
