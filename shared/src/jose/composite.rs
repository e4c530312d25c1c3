//! Composite ML-DSA signatures as draft-ietf-jose-pq-composite-sigs-03 defines them for JOSE:
//! an ML-DSA signature and a classic one (ECDSA or EdDSA) over the same message representative
//!
//! `M' = "CompositeAlgorithmSignatures2025" || label || 0x00 || PH(M)`
//!
//! (M the JWS signing input, PH the algorithm's pre-hash), the ML-DSA one with the label as its
//! context; the signature is the two concatenated, ML-DSA first, and so are the `AKP` key's
//! `pub` and `priv` (the ML-DSA seed, then the classic private key). The classic components use
//! JOSE's raw encodings: ECDSA `r || s`, the private scalar `d` and the point `x || y` at the
//! curve's full size; EdDSA its raw keys (RFC 8032).
//!
//! The arithmetic is libcrux's ML-DSA and OpenSSL's ECDSA and EdDSA; this module only
//! frames them.

use openssl::bn::{BigNum, BigNumContext};
use openssl::ec::{EcGroup, EcKey, EcPoint};
use openssl::ecdsa::EcdsaSig;
use openssl::hash::{Hasher, MessageDigest};
use openssl::nid::Nid;
use openssl::pkey::{Id, PKey, Private};
use sha2::Digest as _;

use super::Algorithm;
use super::ml_dsa::{self, MlDsaKey, SEED_LEN};
use crate::{Error, Result};

/// The prefix of every message representative ("CompositeAlgorithmSignatures2025").
const PREFIX: &[u8] = b"CompositeAlgorithmSignatures2025";

/// The classic half of a composite.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Classic {
    P256,
    P384,
    Ed25519,
    Ed448,
}

impl Classic {
    fn public_len(self) -> usize {
        match self {
            Self::P256 => 64,
            Self::P384 => 96,
            Self::Ed25519 => 32,
            Self::Ed448 => 57,
        }
    }

    fn private_len(self) -> usize {
        match self {
            Self::P256 | Self::Ed25519 => 32,
            Self::P384 => 48,
            Self::Ed448 => 57,
        }
    }

    fn signature_len(self) -> usize {
        match self {
            Self::P256 | Self::Ed25519 => 64,
            Self::P384 => 96,
            Self::Ed448 => 114,
        }
    }

    /// The JWS algorithm of an ECDSA half (its digest and curve).
    fn ecdsa(self) -> Option<(Algorithm, Nid)> {
        match self {
            Self::P256 => Some((Algorithm::ES256, Nid::X9_62_PRIME256V1)),
            Self::P384 => Some((Algorithm::ES384, Nid::SECP384R1)),
            _ => None,
        }
    }

    fn ed_id(self) -> Id {
        if self == Self::Ed448 {
            Id::ED448
        } else {
            Id::ED25519
        }
    }
}

/// The pre-hash of the signing input.
#[derive(Clone, Copy, Debug)]
enum PreHash {
    Sha256,
    Sha512,
    /// SHAKE256 with a 64-byte output.
    Shake256,
}

/// One composite algorithm's parts (draft-ietf-jose-pq-composite-sigs-03, tables 2 and 4).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Params {
    ml_dsa: Algorithm,
    classic: Classic,
    pre_hash: PreHash,
    label: &'static [u8],
}

/// The parts of a composite `alg`, `None` for the others.
pub(crate) fn params(alg: Algorithm) -> Option<Params> {
    use Algorithm as A;
    let (ml_dsa, classic, pre_hash, label): (_, _, _, &[u8]) = match alg {
        A::MlDsa44Es256 => (
            A::MlDsa44,
            Classic::P256,
            PreHash::Sha256,
            b"COMPSIG-MLDSA44-ECDSA-P256-SHA256",
        ),
        A::MlDsa65Es256 => (
            A::MlDsa65,
            Classic::P256,
            PreHash::Sha512,
            b"COMPSIG-MLDSA65-ECDSA-P256-SHA512",
        ),
        A::MlDsa87Es384 => (
            A::MlDsa87,
            Classic::P384,
            PreHash::Sha512,
            b"COMPSIG-MLDSA87-ECDSA-P384-SHA512",
        ),
        A::MlDsa44Ed25519 => (
            A::MlDsa44,
            Classic::Ed25519,
            PreHash::Sha512,
            b"COMPSIG-MLDSA44-Ed25519-SHA512",
        ),
        A::MlDsa65Ed25519 => (
            A::MlDsa65,
            Classic::Ed25519,
            PreHash::Sha512,
            b"COMPSIG-MLDSA65-Ed25519-SHA512",
        ),
        A::MlDsa87Ed448 => (
            A::MlDsa87,
            Classic::Ed448,
            PreHash::Shake256,
            b"COMPSIG-MLDSA87-Ed448-SHAKE256",
        ),
        _ => return None,
    };
    Some(Params {
        ml_dsa,
        classic,
        pre_hash,
        label,
    })
}

impl Params {
    /// The `pub` length: the ML-DSA public key, then the classic one.
    pub(crate) fn public_len(&self) -> usize {
        ml_dsa::public_len(self.ml_dsa).unwrap_or(0) + self.classic.public_len()
    }

    /// The `priv` length: the 32-byte ML-DSA seed, then the classic private key.
    pub(crate) fn private_len(&self) -> usize {
        SEED_LEN + self.classic.private_len()
    }

    fn ml_public_len(&self) -> usize {
        ml_dsa::public_len(self.ml_dsa).unwrap_or(0)
    }

    fn ml_signature_len(&self) -> usize {
        ml_dsa::signature_len(self.ml_dsa).unwrap_or(0)
    }

    /// `M' = Prefix || Label || 0x00 || PH(M)`.
    pub(crate) fn message(&self, input: &[u8]) -> Result<Vec<u8>> {
        let mut m = Vec::with_capacity(PREFIX.len() + self.label.len() + 1 + 64);
        m.extend_from_slice(PREFIX);
        m.extend_from_slice(self.label);
        m.push(0);
        match self.pre_hash {
            PreHash::Sha256 => m.extend_from_slice(&sha2::Sha256::digest(input)),
            PreHash::Sha512 => m.extend_from_slice(&sha2::Sha512::digest(input)),
            PreHash::Shake256 => {
                let mut out = [0u8; 64];
                let mut h = Hasher::new(MessageDigest::shake_256()).map_err(ossl)?;
                h.update(input).map_err(ossl)?;
                h.finish_xof(&mut out).map_err(ossl)?;
                m.extend_from_slice(&out);
            }
        }
        Ok(m)
    }
}

fn ossl(e: openssl::error::ErrorStack) -> Error {
    Error::Key(format!("OpenSSL: {e}"))
}

/// The classic private key of a composite.
enum ClassicKey {
    Ecdsa(EcKey<Private>),
    Ed(PKey<Private>),
}

/// A composite private key.
pub(crate) struct CompositeKey {
    params: Params,
    ml: MlDsaKey,
    classic: ClassicKey,
}

impl CompositeKey {
    /// A fresh key: a random ML-DSA seed and a fresh classic key.
    pub(crate) fn generate(alg: Algorithm) -> Result<Self> {
        let params = params(alg).ok_or_else(|| not_composite(alg))?;
        let ml = MlDsaKey::generate(params.ml_dsa)?;
        let classic = match params.classic.ecdsa() {
            Some((_, nid)) => {
                let group = EcGroup::from_curve_name(nid).map_err(ossl)?;
                ClassicKey::Ecdsa(EcKey::generate(&group).map_err(ossl)?)
            }
            None if params.classic == Classic::Ed448 => {
                ClassicKey::Ed(PKey::generate_ed448().map_err(ossl)?)
            }
            None => ClassicKey::Ed(PKey::generate_ed25519().map_err(ossl)?),
        };
        Ok(Self {
            params,
            ml,
            classic,
        })
    }

    /// The key of an `AKP` JWK's `priv` (seed, then the classic private key).
    pub(crate) fn from_private(alg: Algorithm, private: &[u8]) -> Result<Self> {
        let params = params(alg).ok_or_else(|| not_composite(alg))?;
        if private.len() != params.private_len() {
            return Err(Error::Key(format!(
                "an {alg} private key is {} bytes, not {}",
                params.private_len(),
                private.len()
            )));
        }
        let (seed, classic) = private.split_at(SEED_LEN);
        let ml = MlDsaKey::from_seed(params.ml_dsa, seed)?;
        let bad = |_| {
            Error::Key(format!(
                "the classic part of the {alg} private key is invalid"
            ))
        };
        let classic = match params.classic.ecdsa() {
            Some((_, nid)) => {
                let group = EcGroup::from_curve_name(nid).map_err(ossl)?;
                let d = BigNum::from_slice(classic).map_err(ossl)?;
                let mut ctx = BigNumContext::new().map_err(ossl)?;
                let mut point = EcPoint::new(&group).map_err(ossl)?;
                point.mul_generator2(&group, &d, &mut ctx).map_err(bad)?;
                let key = EcKey::from_private_components(&group, &d, &point).map_err(bad)?;
                key.check_key().map_err(bad)?;
                ClassicKey::Ecdsa(key)
            }
            None => ClassicKey::Ed(
                PKey::private_key_from_raw_bytes(classic, params.classic.ed_id()).map_err(bad)?,
            ),
        };
        Ok(Self {
            params,
            ml,
            classic,
        })
    }

    /// `priv`: the ML-DSA seed, then the classic private key (raw, full size).
    pub(crate) fn private_bytes(&self) -> Result<Vec<u8>> {
        let mut out = self.ml.seed().to_vec();
        match &self.classic {
            ClassicKey::Ecdsa(k) => {
                let len = i32::try_from(self.params.classic.private_len()).unwrap_or(0);
                out.extend(k.private_key().to_vec_padded(len).map_err(ossl)?);
            }
            ClassicKey::Ed(k) => out.extend(k.raw_private_key().map_err(ossl)?),
        }
        Ok(out)
    }

    /// `pub`: the ML-DSA public key, then the classic one (`x || y`, or the EdDSA key).
    pub(crate) fn public_bytes(&self) -> Result<Vec<u8>> {
        let mut out = self.ml.public_bytes();
        match &self.classic {
            ClassicKey::Ecdsa(k) => {
                let mut ctx = BigNumContext::new().map_err(ossl)?;
                let (mut x, mut y) = (BigNum::new().map_err(ossl)?, BigNum::new().map_err(ossl)?);
                k.public_key()
                    .affine_coordinates(k.group(), &mut x, &mut y, &mut ctx)
                    .map_err(ossl)?;
                let len = i32::try_from(self.params.classic.public_len() / 2).unwrap_or(0);
                out.extend(x.to_vec_padded(len).map_err(ossl)?);
                out.extend(y.to_vec_padded(len).map_err(ossl)?);
            }
            ClassicKey::Ed(k) => out.extend(k.raw_public_key().map_err(ossl)?),
        }
        Ok(out)
    }

    /// The composite signature over the JWS signing input.
    pub(crate) fn sign(&self, input: &[u8]) -> Result<Vec<u8>> {
        let p = &self.params;
        let m = p.message(input)?;
        let mut out = self.ml.sign_with_context(&m, p.label)?;
        match &self.classic {
            ClassicKey::Ecdsa(k) => {
                // ES384's digest for P-384, ES256's for P-256 (RFC 7518 §3.4).
                let digest = if p.classic == Classic::P384 {
                    sha2::Sha384::digest(&m).to_vec()
                } else {
                    sha2::Sha256::digest(&m).to_vec()
                };
                let sig = EcdsaSig::sign(&digest, k).map_err(ossl)?;
                let len = i32::try_from(p.classic.signature_len() / 2).unwrap_or(0);
                out.extend(sig.r().to_vec_padded(len).map_err(ossl)?);
                out.extend(sig.s().to_vec_padded(len).map_err(ossl)?);
            }
            ClassicKey::Ed(k) => {
                let mut signer = openssl::sign::Signer::new_without_digest(k).map_err(ossl)?;
                out.extend(signer.sign_oneshot_to_vec(&m).map_err(ossl)?);
            }
        }
        Ok(out)
    }
}

fn not_composite(alg: Algorithm) -> Error {
    Error::Key(format!("{alg} is not a composite ML-DSA algorithm"))
}

/// Checks a composite signature with a composite `pub`: both halves must verify. Lengths are
/// checked before any arithmetic.
pub(crate) fn verify(
    alg: Algorithm,
    public: &[u8],
    input: &[u8],
    signature: &[u8],
) -> std::result::Result<(), String> {
    let p = params(alg).ok_or_else(|| format!("{alg} is not a composite algorithm"))?;
    if public.len() != p.public_len() {
        return Err(format!(
            "the public key is {} bytes, not {}",
            public.len(),
            p.public_len()
        ));
    }
    let want = p.ml_signature_len() + p.classic.signature_len();
    if signature.len() != want {
        return Err(format!(
            "the signature is {} bytes, not {want}",
            signature.len()
        ));
    }
    let (ml_public, classic_public) = public.split_at(p.ml_public_len());
    let (ml_signature, classic_signature) = signature.split_at(p.ml_signature_len());
    let m = p.message(input).map_err(|e| e.to_string())?;
    ml_dsa::verify_with_context(p.ml_dsa, ml_public, &m, ml_signature, p.label)
        .map_err(|e| format!("ML-DSA part: {e}"))?;
    match p.classic.ecdsa() {
        Some((ecdsa, _)) => {
            let (x, y) = classic_public.split_at(classic_public.len() / 2);
            super::verify::verify_ecdsa_raw(ecdsa, x, y, &m, classic_signature)
        }
        None => {
            let key = PKey::public_key_from_raw_bytes(classic_public, p.classic.ed_id())
                .map_err(|_| "the EdDSA public key is invalid".to_owned())?;
            let mut verifier =
                openssl::sign::Verifier::new_without_digest(&key).map_err(|e| e.to_string())?;
            match verifier.verify_oneshot(classic_signature, &m) {
                Ok(true) => Ok(()),
                _ => Err("the signature does not match".into()),
            }
        }
    }
    .map_err(|e| format!("classic part: {e}"))
}

/// Checks the classic half of a composite `pub` (an ECDSA point on its curve), for the public
/// key parser; the lengths are the caller's.
pub(crate) fn check_public(alg: Algorithm, public: &[u8]) -> std::result::Result<(), String> {
    let Some(p) = params(alg) else {
        return Ok(());
    };
    let Some((_, nid)) = p.classic.ecdsa() else {
        return Ok(());
    };
    let classic = public.get(p.ml_public_len()..).unwrap_or_default();
    let (x, y) = classic.split_at(classic.len() / 2);
    let off = || "the ECDSA point is not on its curve".to_owned();
    let group = EcGroup::from_curve_name(nid).map_err(|_| off())?;
    let (x, y) = (
        BigNum::from_slice(x).map_err(|_| off())?,
        BigNum::from_slice(y).map_err(|_| off())?,
    );
    let key = EcKey::from_public_key_affine_coordinates(&group, &x, &y).map_err(|_| off())?;
    key.check_key().map_err(|_| off())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing unwrap is a failing test
mod tests {
    use super::*;

    #[test]
    fn each_half_is_needed_and_the_private_form_gives_back_the_key() {
        for alg in Algorithm::COMPOSITES {
            let key = CompositeKey::generate(alg).unwrap();
            let public = key.public_bytes().unwrap();
            let p = params(alg).unwrap();
            assert_eq!(public.len(), p.public_len(), "{alg}");
            let sig = key.sign(b"h.p").unwrap();
            verify(alg, &public, b"h.p", &sig).unwrap();
            assert!(verify(alg, &public, b"h.q", &sig).is_err());
            // Breaking either half breaks the whole.
            for at in [10, sig.len() - 5] {
                let mut bad = sig.clone();
                bad[at] ^= 1;
                assert!(verify(alg, &public, b"h.p", &bad).is_err(), "{alg} at {at}");
            }
            let again = CompositeKey::from_private(alg, &key.private_bytes().unwrap()).unwrap();
            assert_eq!(again.public_bytes().unwrap(), public, "{alg}");
            check_public(alg, &public).unwrap();
        }
    }
}
