//! Private keys an operator keeps in a file (a PKCS#8 PEM or a private JWK), loaded into a
//! [`SigningKey`].
//!
//! Exists for tools that sign on an operator's behalf outside the service's own key store, such
//! as `pharos admin delegation create` signing a trust mark delegation with the owner's key.
//! Errors never echo key material.

use josekit::jwk::KeyPair as _;
use josekit::jwk::alg::ec::EcKeyPair;
use josekit::jwk::alg::ed::EdKeyPair;
use josekit::jwk::alg::rsa::RsaKeyPair;

use super::{Algorithm, Jwk, Signer as _, SigningKey};
use crate::{Error, Result};

/// Algorithms tried, in order, for a PEM key when none is named: the key type and curve decide.
const PEM_GUESSES: [Algorithm; 10] = [
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::ES512,
    Algorithm::ES256K,
    Algorithm::Ed25519,
    Algorithm::Ed448,
    Algorithm::RS256,
    Algorithm::MlDsa44,
    Algorithm::MlDsa65,
    Algorithm::MlDsa87,
];

/// Loads a private key from a file's text: a PKCS#8 PEM (`BEGIN PRIVATE KEY`) or a private
/// JWK (JSON object with `d`, or `priv` for `AKP`). `alg` names the algorithm; without it the
/// JWK's `alg` member, or else the key type and curve, decide (RSA keys sign with RS256). A
/// JWK's `kid` is kept, so that the signature names the key as the owner published it.
pub fn load_private_key(text: &str, alg: Option<Algorithm>) -> Result<SigningKey> {
    let text = text.trim();
    if text.starts_with('{') {
        let jwk: Jwk = serde_json::from_str(text)
            .map_err(|_| Error::Key("the key file is not a JSON object (JWK)".into()))?;
        return from_private_jwk(&jwk, alg);
    }
    if !text.starts_with("-----BEGIN PRIVATE KEY-----") {
        return Err(Error::Key(
            "the key file is neither a PKCS#8 PEM (BEGIN PRIVATE KEY) nor a JWK".into(),
        ));
    }
    match alg {
        Some(a) => SigningKey::from_pem(a, text),
        None => PEM_GUESSES
            .iter()
            .find_map(|a| SigningKey::from_pem(*a, text).ok())
            .ok_or_else(|| Error::Key("the PEM key fits no supported algorithm".into())),
    }
}

/// A private JWK as a [`SigningKey`] (see [`load_private_key`]).
pub fn from_private_jwk(jwk: &Jwk, alg: Option<Algorithm>) -> Result<SigningKey> {
    if jwk.get("kty").and_then(|v| v.as_str()) == Some("AKP") {
        return from_akp_jwk(jwk, alg);
    }
    if !jwk.contains_key("d") {
        return Err(Error::Key("the JWK has no private part (d)".into()));
    }
    let member = |name: &str| jwk.get(name).and_then(|v| v.as_str()).unwrap_or("");
    let named = match member("alg") {
        "" => None,
        a => Some(a.parse::<Algorithm>()?),
    };
    let jose = josekit::jwk::Jwk::from_map(jwk.clone())
        .map_err(|_| Error::Key("the JWK is not a valid key".into()))?;
    let bad = |_| {
        Error::Key(format!(
            "the {} JWK is not a valid private key",
            member("kty")
        ))
    };
    let (pem, default) = match member("kty") {
        "EC" => {
            let default = match member("crv") {
                "P-384" => Algorithm::ES384,
                "P-521" => Algorithm::ES512,
                "secp256k1" => Algorithm::ES256K,
                _ => Algorithm::ES256,
            };
            (
                EcKeyPair::from_jwk(&jose)
                    .map_err(bad)?
                    .to_pem_private_key(),
                default,
            )
        }
        "OKP" => {
            let default = if member("crv") == "Ed448" {
                Algorithm::Ed448
            } else {
                Algorithm::Ed25519
            };
            (
                EdKeyPair::from_jwk(&jose)
                    .map_err(bad)?
                    .to_pem_private_key(),
                default,
            )
        }
        "RSA" => (
            RsaKeyPair::from_jwk(&jose)
                .map_err(bad)?
                .to_pem_private_key(),
            Algorithm::RS256,
        ),
        other => return Err(Error::Key(format!("unsupported key type {other:?}"))),
    };
    let pem = String::from_utf8(pem).map_err(|_| Error::Key("cannot encode the key".into()))?;
    let key = SigningKey::from_pem(alg.or(named).unwrap_or(default), &pem)?;
    Ok(match member("kid") {
        "" => key,
        kid => key.with_kid(kid),
    })
}

/// A private `AKP` JWK (draft-ietf-cose-dilithium): `alg` names the parameter set, `priv` is
/// the 32-byte seed (for a composite, the seed and then the classic private key), and `pub`,
/// when present, must be the public key that `priv` makes, or the key is refused (a `pub` that
/// does not match would publish one key and sign with another).
fn from_akp_jwk(jwk: &Jwk, alg: Option<Algorithm>) -> Result<SigningKey> {
    let member = |name: &str| jwk.get(name).and_then(|v| v.as_str());
    let named: Algorithm = member("alg")
        .ok_or_else(|| Error::Key("an AKP JWK needs alg (its parameter set)".into()))?
        .parse()?;
    if alg.is_some_and(|a| a != named) || !named.is_ml_dsa() {
        return Err(Error::Key(format!(
            "the AKP JWK is for {named}, not {}",
            alg.unwrap_or(named)
        )));
    }
    let private = member("priv")
        .ok_or_else(|| Error::Key("the JWK has no private part (priv)".into()))
        .and_then(|p| super::b64_decode("priv", p))
        .map_err(|_| Error::Key("the AKP JWK's priv is not base64url".into()))?;
    let key = if super::composite::params(named).is_some() {
        let key = super::composite::CompositeKey::from_private(named, &private)?;
        SigningKey::from_composite(named, key)?
    } else {
        SigningKey::from_ml_dsa(named, super::ml_dsa::MlDsaKey::from_seed(named, &private)?)?
    };
    if member("pub")
        .is_some_and(|p| Some(p) != key.public_jwk().get("pub").and_then(|v| v.as_str()))
    {
        return Err(Error::Key(
            "the AKP JWK's pub is not the public key of its priv".into(),
        ));
    }
    Ok(match member("kid") {
        None | Some("") => key,
        Some(kid) => key.with_kid(kid),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)] // a failing unwrap is a failing test
mod tests {
    use super::*;

    fn private_jwk(key: &SigningKey) -> Jwk {
        let der = key.private_pem();
        let pair = EcKeyPair::from_pem(der.as_bytes(), None).unwrap();
        let mut jwk: Jwk = pair.to_jwk_private_key().into();
        jwk.insert("kid".into(), "owner-1".into());
        jwk
    }

    #[test]
    fn a_pem_key_is_loaded_with_its_algorithm_guessed_from_the_curve() {
        let k = SigningKey::generate(Algorithm::ES384, 0).unwrap();
        let loaded = load_private_key(k.private_pem(), None).unwrap();
        assert_eq!(loaded.alg(), Algorithm::ES384);
        assert_eq!(loaded.kid(), k.kid());
        let ed = SigningKey::generate(Algorithm::Ed25519, 0).unwrap();
        assert_eq!(
            load_private_key(ed.private_pem(), None).unwrap().alg(),
            Algorithm::Ed25519
        );
    }

    #[test]
    fn a_private_jwk_keeps_its_kid_and_signs_verifiably() {
        let k = SigningKey::generate(Algorithm::ES256, 0).unwrap();
        let jwk = private_jwk(&k);
        let loaded = load_private_key(&serde_json::to_string(&jwk).unwrap(), None).unwrap();
        assert_eq!(loaded.alg(), Algorithm::ES256);
        assert_eq!(loaded.kid(), "owner-1");
        assert_eq!(loaded.public_jwk()["kid"], "owner-1");
        assert!(!loaded.public_jwk().contains_key("d"));
        let claims = serde_json::json!({"iss": "a"});
        let token = crate::jose::sign(&loaded, "x+jwt", claims.as_object().unwrap(), None).unwrap();
        let jwks = crate::jose::Jwks {
            keys: vec![loaded.public_jwk().clone()],
        };
        crate::jose::verify(&token, &jwks).unwrap();
    }

    #[test]
    fn an_akp_jwk_signs_when_its_pub_is_its_seeds_and_is_refused_otherwise() {
        let k = SigningKey::generate(Algorithm::MlDsa65, 0).unwrap();
        let pem = k.private_pem();
        // The seed form's last 32 bytes of DER are the seed (RFC 9881 `[0] IMPLICIT`).
        let der = super::super::key::pkcs8_der_from_pem(pem).unwrap();
        let seed = super::super::b64_encode(&der[der.len() - 32..]);
        let mut jwk = k.public_jwk().clone();
        jwk.insert("priv".into(), seed.into());
        let loaded = load_private_key(&serde_json::to_string(&jwk).unwrap(), None).unwrap();
        assert_eq!(loaded.alg(), Algorithm::MlDsa65);
        assert_eq!(loaded.public_jwk()["pub"], k.public_jwk()["pub"]);
        assert_eq!(
            load_private_key(pem, None).unwrap().alg(),
            Algorithm::MlDsa65
        );

        let other = SigningKey::generate(Algorithm::MlDsa65, 0).unwrap();
        let mut wrong = jwk.clone();
        wrong.insert("pub".into(), other.public_jwk()["pub"].clone());
        let e = from_private_jwk(&wrong, None).unwrap_err();
        assert!(
            e.to_string().contains("not the public key of its priv"),
            "{e}"
        );
        assert!(from_private_jwk(&jwk, Some(Algorithm::MlDsa44)).is_err());
        let mut no_alg = jwk.clone();
        no_alg.remove("alg");
        assert!(from_private_jwk(&no_alg, None).is_err());
    }

    #[test]
    fn public_keys_and_garbage_are_refused_without_echoing_them() {
        let k = SigningKey::generate(Algorithm::ES256, 0).unwrap();
        let mut public = k.public_jwk().clone();
        public.remove("d");
        let e = load_private_key(&serde_json::to_string(&public).unwrap(), None).unwrap_err();
        assert!(e.to_string().contains("no private part"), "{e}");
        let e = load_private_key("secret-garbage", None).unwrap_err();
        assert!(!e.to_string().contains("secret-garbage"), "{e}");
    }
}
