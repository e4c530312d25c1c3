//! The JWS algorithms Pharos signs and verifies with, and what each one needs from a key.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// JWS algorithms Pharos signs and verifies with.
///
/// It exists so that the rest of Pharos names algorithms with a closed, typo-proof type instead
/// of strings; `none` and the HMAC (`HS*`) algorithms are deliberately absent, so they can
/// never be chosen or accepted. The variant names are the JOSE `alg` names, which is also how
/// the type is (de)serialised.
///
/// `EdDSA` (RFC 8037) signs with an Ed25519 key; `Ed25519` and `Ed448` are the fully specified
/// names of RFC 9864. When *verifying*, `EdDSA` accepts Ed25519 and Ed448 keys (as RFC 8037
/// allows), while `Ed25519`/`Ed448` accept only their own curve.
///
/// `ML-DSA-44`, `ML-DSA-65` and `ML-DSA-87` are FIPS 204 signatures as "ML-DSA for JOSE and
/// COSE" (draft-ietf-cose-dilithium) puts them in a JWS: an `AKP` key whose `alg` names the
/// parameter set, pure ML-DSA over the JWS signing input with an empty context. The six
/// composites (`ML-DSA-44-ES256` …) are those of draft-ietf-jose-pq-composite-sigs-03: an ML-DSA
/// and a classic signature over one message representative, concatenated, with `AKP` keys.
#[allow(clippy::upper_case_acronyms)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Algorithm {
    /// ECDSA with P-256 and SHA-256.
    ES256,
    /// ECDSA with P-384 and SHA-384.
    ES384,
    /// ECDSA with P-521 and SHA-512.
    ES512,
    /// ECDSA with secp256k1 and SHA-256 (RFC 8812).
    ES256K,
    /// EdDSA (RFC 8037); Pharos generates Ed25519 keys for it.
    EdDSA,
    /// EdDSA with Ed25519 (RFC 9864 fully specified name).
    Ed25519,
    /// EdDSA with Ed448 (RFC 9864 fully specified name).
    Ed448,
    /// RSASSA-PSS with SHA-256.
    PS256,
    /// RSASSA-PSS with SHA-384.
    PS384,
    /// RSASSA-PSS with SHA-512.
    PS512,
    /// RSASSA-PKCS1-v1_5 with SHA-256 (the federation's SHOULD-support algorithm).
    RS256,
    /// RSASSA-PKCS1-v1_5 with SHA-384.
    RS384,
    /// RSASSA-PKCS1-v1_5 with SHA-512.
    RS512,
    /// ML-DSA-44 (FIPS 204, security category 2).
    #[serde(rename = "ML-DSA-44")]
    MlDsa44,
    /// ML-DSA-65 (FIPS 204, security category 3).
    #[serde(rename = "ML-DSA-65")]
    MlDsa65,
    /// ML-DSA-87 (FIPS 204, security category 5).
    #[serde(rename = "ML-DSA-87")]
    MlDsa87,
    /// ML-DSA-44 with ECDSA P-256, SHA-256 pre-hash (draft-ietf-jose-pq-composite-sigs-03).
    #[serde(rename = "ML-DSA-44-ES256")]
    MlDsa44Es256,
    /// ML-DSA-65 with ECDSA P-256, SHA-512 pre-hash (draft-ietf-jose-pq-composite-sigs-03).
    #[serde(rename = "ML-DSA-65-ES256")]
    MlDsa65Es256,
    /// ML-DSA-87 with ECDSA P-384, SHA-512 pre-hash (draft-ietf-jose-pq-composite-sigs-03).
    #[serde(rename = "ML-DSA-87-ES384")]
    MlDsa87Es384,
    /// ML-DSA-44 with Ed25519, SHA-512 pre-hash (draft-ietf-jose-pq-composite-sigs-03).
    #[serde(rename = "ML-DSA-44-Ed25519")]
    MlDsa44Ed25519,
    /// ML-DSA-65 with Ed25519, SHA-512 pre-hash (draft-ietf-jose-pq-composite-sigs-03).
    #[serde(rename = "ML-DSA-65-Ed25519")]
    MlDsa65Ed25519,
    /// ML-DSA-87 with Ed448, SHAKE256 pre-hash (draft-ietf-jose-pq-composite-sigs-03).
    #[serde(rename = "ML-DSA-87-Ed448")]
    MlDsa87Ed448,
}

/// The key family an algorithm needs, with the curve where the family has several.
///
/// Exists so that key loading and key selection in `verify` agree on which keys fit an `alg`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KeyKind {
    /// `kty` "EC" on the named curve (`crv`).
    Ec(&'static str),
    /// `kty` "RSA".
    Rsa,
    /// `kty` "OKP" on one of the named curves (`crv`).
    Okp(&'static [&'static str]),
    /// `kty` "AKP" (draft-ietf-cose-dilithium): the key's own `alg` names the parameter set,
    /// so it must equal the algorithm (checked where the key's `alg` is at hand).
    Akp,
}

impl Algorithm {
    /// Every supported algorithm, e.g. for `endpoint_auth_signing_alg_values_supported`.
    pub const ALL: &'static [Algorithm] = &[
        Algorithm::ES256,
        Algorithm::ES384,
        Algorithm::ES512,
        Algorithm::ES256K,
        Algorithm::EdDSA,
        Algorithm::Ed25519,
        Algorithm::Ed448,
        Algorithm::PS256,
        Algorithm::PS384,
        Algorithm::PS512,
        Algorithm::RS256,
        Algorithm::RS384,
        Algorithm::RS512,
        Algorithm::MlDsa44,
        Algorithm::MlDsa65,
        Algorithm::MlDsa87,
        Algorithm::MlDsa44Es256,
        Algorithm::MlDsa65Es256,
        Algorithm::MlDsa87Es384,
        Algorithm::MlDsa44Ed25519,
        Algorithm::MlDsa65Ed25519,
        Algorithm::MlDsa87Ed448,
    ];

    /// The composite ML-DSA algorithms (draft-ietf-jose-pq-composite-sigs-03).
    pub const COMPOSITES: [Algorithm; 6] = [
        Algorithm::MlDsa44Es256,
        Algorithm::MlDsa65Es256,
        Algorithm::MlDsa87Es384,
        Algorithm::MlDsa44Ed25519,
        Algorithm::MlDsa65Ed25519,
        Algorithm::MlDsa87Ed448,
    ];

    /// The JOSE `alg` name, used in headers, JWKs and metadata.
    pub fn as_str(self) -> &'static str {
        match self {
            Algorithm::ES256 => "ES256",
            Algorithm::ES384 => "ES384",
            Algorithm::ES512 => "ES512",
            Algorithm::ES256K => "ES256K",
            Algorithm::EdDSA => "EdDSA",
            Algorithm::Ed25519 => "Ed25519",
            Algorithm::Ed448 => "Ed448",
            Algorithm::PS256 => "PS256",
            Algorithm::PS384 => "PS384",
            Algorithm::PS512 => "PS512",
            Algorithm::RS256 => "RS256",
            Algorithm::RS384 => "RS384",
            Algorithm::RS512 => "RS512",
            Algorithm::MlDsa44 => "ML-DSA-44",
            Algorithm::MlDsa65 => "ML-DSA-65",
            Algorithm::MlDsa87 => "ML-DSA-87",
            Algorithm::MlDsa44Es256 => "ML-DSA-44-ES256",
            Algorithm::MlDsa65Es256 => "ML-DSA-65-ES256",
            Algorithm::MlDsa87Es384 => "ML-DSA-87-ES384",
            Algorithm::MlDsa44Ed25519 => "ML-DSA-44-Ed25519",
            Algorithm::MlDsa65Ed25519 => "ML-DSA-65-Ed25519",
            Algorithm::MlDsa87Ed448 => "ML-DSA-87-Ed448",
        }
    }

    /// Every supported name, joined by `sep` (for messages that list the choices).
    pub fn names(sep: &str) -> String {
        let names: Vec<&str> = Self::ALL.iter().map(|a| a.as_str()).collect();
        names.join(sep)
    }

    /// Whether keys of this algorithm are RSA keys (their modulus size is configured).
    pub fn is_rsa(self) -> bool {
        matches!(self.key_kind(), KeyKind::Rsa)
    }

    /// Whether this is an ML-DSA algorithm, alone (FIPS 204) or composite with a classic one:
    /// the algorithms of `AKP` keys.
    pub fn is_ml_dsa(self) -> bool {
        matches!(self.key_kind(), KeyKind::Akp)
    }

    /// Which keys can verify this algorithm.
    pub(crate) fn key_kind(self) -> KeyKind {
        match self {
            Algorithm::ES256 => KeyKind::Ec("P-256"),
            Algorithm::ES384 => KeyKind::Ec("P-384"),
            Algorithm::ES512 => KeyKind::Ec("P-521"),
            Algorithm::ES256K => KeyKind::Ec("secp256k1"),
            Algorithm::EdDSA => KeyKind::Okp(&["Ed25519", "Ed448"]),
            Algorithm::Ed25519 => KeyKind::Okp(&["Ed25519"]),
            Algorithm::Ed448 => KeyKind::Okp(&["Ed448"]),
            Algorithm::PS256
            | Algorithm::PS384
            | Algorithm::PS512
            | Algorithm::RS256
            | Algorithm::RS384
            | Algorithm::RS512 => KeyKind::Rsa,
            Algorithm::MlDsa44
            | Algorithm::MlDsa65
            | Algorithm::MlDsa87
            | Algorithm::MlDsa44Es256
            | Algorithm::MlDsa65Es256
            | Algorithm::MlDsa87Es384
            | Algorithm::MlDsa44Ed25519
            | Algorithm::MlDsa65Ed25519
            | Algorithm::MlDsa87Ed448 => KeyKind::Akp,
        }
    }

    /// The curve Pharos uses when it generates or loads a *signing* key for an EdDSA variant.
    pub(crate) fn signing_ed_curve(self) -> Option<&'static str> {
        match self {
            Algorithm::EdDSA | Algorithm::Ed25519 => Some("Ed25519"),
            Algorithm::Ed448 => Some("Ed448"),
            _ => None,
        }
    }

    /// True when a JWK (`kty`, `crv`) can verify this algorithm.
    pub(crate) fn fits_key(self, kty: Option<&str>, crv: Option<&str>) -> bool {
        match (self.key_kind(), kty) {
            (KeyKind::Ec(want), Some("EC")) => crv == Some(want),
            (KeyKind::Rsa, Some("RSA")) => true,
            (KeyKind::Okp(curves), Some("OKP")) => crv.is_some_and(|c| curves.contains(&c)),
            (KeyKind::Akp, Some("AKP")) => true,
            _ => false,
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Algorithm {
    type Err = Error;

    /// Parses a JOSE `alg` name (case-sensitive); `none`, `HS*` and unknown names are errors.
    fn from_str(s: &str) -> Result<Self> {
        Algorithm::ALL
            .iter()
            .copied()
            .find(|a| a.as_str() == s)
            .ok_or_else(|| Error::Jws(format!("unsupported JWS alg {s:?}")))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing unwrap is a failing test
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_display_fromstr_and_serde() {
        for alg in Algorithm::ALL {
            let name = alg.to_string();
            assert_eq!(name.parse::<Algorithm>().unwrap(), *alg);
            let json = serde_json::to_string(alg).unwrap();
            assert_eq!(json, format!("\"{name}\""));
            assert_eq!(serde_json::from_str::<Algorithm>(&json).unwrap(), *alg);
        }
        assert_eq!(Algorithm::EdDSA.to_string(), "EdDSA");
        assert_eq!(Algorithm::ES256K.to_string(), "ES256K");
        assert_eq!(Algorithm::MlDsa65.to_string(), "ML-DSA-65");
        assert_eq!(
            "ML-DSA-87".parse::<Algorithm>().unwrap(),
            Algorithm::MlDsa87
        );
    }

    #[test]
    fn none_hmac_and_wrong_case_are_rejected() {
        for bad in [
            "none",
            "HS256",
            "HS512",
            "es256",
            "",
            "EDDSA",
            "MlDsa65",
            "ml-dsa-65",
        ] {
            assert!(bad.parse::<Algorithm>().is_err(), "{bad} accepted");
            assert!(serde_json::from_str::<Algorithm>(&format!("\"{bad}\"")).is_err());
        }
    }

    #[test]
    fn key_fit_follows_kty_and_curve() {
        assert!(Algorithm::ES256.fits_key(Some("EC"), Some("P-256")));
        assert!(!Algorithm::ES256.fits_key(Some("EC"), Some("P-384")));
        assert!(!Algorithm::RS256.fits_key(Some("EC"), Some("P-256")));
        assert!(Algorithm::PS512.fits_key(Some("RSA"), None));
        assert!(Algorithm::EdDSA.fits_key(Some("OKP"), Some("Ed448")));
        assert!(!Algorithm::Ed25519.fits_key(Some("OKP"), Some("Ed448")));
        assert!(!Algorithm::Ed448.fits_key(Some("OKP"), None));
        assert!(Algorithm::MlDsa44.fits_key(Some("AKP"), None));
        assert!(!Algorithm::MlDsa44.fits_key(Some("OKP"), Some("Ed25519")));
        assert!(!Algorithm::ES256.fits_key(Some("AKP"), None));
    }
}
