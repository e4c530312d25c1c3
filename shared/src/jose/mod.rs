//! JOSE for Pharos: JWS algorithms, JWKs and JWK Sets, RFC 7638 thumbprints, signing keys and
//! compact JWS signing and verification.
//!
//! josekit (OpenSSL) does the raw cryptography only. The JWS framing (header, base64url,
//! signing input), key selection and algorithm checks are done here, so that josekit can later
//! be swapped (e.g. for RustCrypto or a PKCS#11 token behind [`Signer`]) without touching
//! callers, and so that none of josekit's JWT conveniences (which check only signatures) can
//! be mistaken for validation.

mod algorithm;
mod jws;
mod key;
mod key_file;
pub mod seal;
mod thumbprint;
mod verify;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};

pub use algorithm::Algorithm;
pub use jws::{Decoded, check_typ, decode_unverified, sign};
pub use key::{Signer, SigningKey};
pub use key_file::{from_private_jwk, load_private_key};
pub use thumbprint::thumbprint;
pub use verify::{
    MAX_CANDIDATES_WITHOUT_KID, MAX_RSA_BITS, MAX_RSA_EXPONENT, MIN_RSA_BITS, verify,
    verify_client_assertion,
};

use crate::{Error, Result};

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod key_set_tests {
    use super::*;
    use serde_json::json;

    fn set(v: serde_json::Value) -> Jwks {
        serde_json::from_value(json!({ "keys": v })).unwrap()
    }

    #[test]
    fn public_key_sets_need_kty_unique_kids_and_no_private_members() {
        assert!(
            check_public_key_set(&set(
                json!([{"kty": "EC", "kid": "a"}, {"kty": "EC", "kid": "b"}])
            ))
            .is_ok()
        );
        assert!(check_public_key_set(&set(json!([{"kid": "a"}]))).is_err());
        assert!(
            check_public_key_set(&set(
                json!([{"kty": "EC", "kid": "a"}, {"kty": "EC", "kid": "a"}])
            ))
            .is_err()
        );
        assert!(check_public_key_set(&set(json!([{"kty": "EC", "kid": ""}]))).is_err());
        assert!(check_public_key_set(&set(json!([{"kty": "EC", "kid": "a", "d": "x"}]))).is_err());
        assert!(check_public_key_set(&set(json!([{"kty": "oct", "kid": "a", "k": "x"}]))).is_err());
    }
}

/// A JSON Web Key (RFC 7517) as a plain JSON object.
///
/// Kept as a JSON map rather than a typed struct so that members Pharos does not know (e.g.
/// `iat`/`exp`/`revoked` of historical keys) survive a round trip untouched.
pub type Jwk = serde_json::Map<String, serde_json::Value>;

/// A JWK Set (RFC 7517 §5), the form of the federation `jwks` claim.
///
/// Exists so that key sets (de)serialise as `{"keys":[...]}` and can be passed to [`verify`].
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct Jwks {
    /// The keys, in publication order.
    pub keys: Vec<Jwk>,
}

/// Checks a JWK Set that someone hands us to publish or to trust (Admin API input, a signed
/// JWK Set push): every key names its `kty`, carries a non-empty `kid` unique in the set, and
/// holds no private members. One rule for every entry point, so a key set accepted by one
/// path cannot be refused by another. The message is shown to the sender as-is.
pub fn check_public_key_set(jwks: &Jwks) -> std::result::Result<(), String> {
    let mut kids = std::collections::HashSet::new();
    for k in &jwks.keys {
        if str_member(k, "kty").is_none() {
            return Err("every JWK needs a kty".into());
        }
        match str_member(k, "kid") {
            Some(kid) if !kid.is_empty() => {
                if !kids.insert(kid) {
                    return Err(format!("duplicate kid {kid:?}"));
                }
            }
            _ => return Err("every JWK needs a non-empty kid".into()),
        }
        if ["d", "p", "q", "dp", "dq", "qi", "k"]
            .iter()
            .any(|m| k.contains_key(*m))
        {
            return Err("a JWK Set must contain public keys only".into());
        }
    }
    Ok(())
}

/// base64url without padding, the encoding of every JWS part and JWK member.
pub(crate) fn b64_encode(data: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(data)
}

/// Strict base64url-without-padding decoding (padding and non-canonical trailing bits rejected).
pub(crate) fn b64_decode(what: &str, data: &str) -> Result<Vec<u8>> {
    URL_SAFE_NO_PAD
        .decode(data)
        .map_err(|e| Error::Jws(format!("{what} is not valid base64url: {e}")))
}

/// Reads a string member of a JSON object, `None` when absent or not a string.
pub(crate) fn str_member<'a>(map: &'a Jwk, name: &str) -> Option<&'a str> {
    map.get(name).and_then(serde_json::Value::as_str)
}
