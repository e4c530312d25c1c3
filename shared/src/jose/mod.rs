//! JOSE for Pharos: JWS algorithms, JWKs and JWK Sets, RFC 7638 thumbprints, signing keys and
//! compact JWS signing and verification.
//!
//! josekit (OpenSSL) does the raw cryptography only, libcrux-ml-dsa that of ML-DSA. The JWS
//! framing (header, base64url, signing input), key selection and algorithm checks are done
//! here, so that josekit can later be swapped (e.g. for RustCrypto or a PKCS#11 token behind
//! [`Signer`]) without touching callers, and so that none of josekit's JWT conveniences (which
//! check only signatures) can be mistaken for validation.

mod algorithm;
mod composite;
mod jws;
mod key;
mod key_file;
mod ml_dsa;
mod public_key;
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
pub use public_key::{
    EcCurve, KNOWN_KEY_TYPES, KeyError, OkpCurve, PublicKey, RSA_MAX_BITS, RSA_MIN_BITS,
    parse_public_key, parse_public_key_set,
};
pub use thumbprint::thumbprint;
pub use verify::{
    MAX_CANDIDATES_WITHOUT_KID, MAX_RSA_BITS, MAX_RSA_EXPONENT, MIN_RSA_BITS, verify,
    verify_client_assertion,
};

use crate::{Error, Result};

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
/// JWK Set push, an enrolment, `pharos config2db`): every key a valid public key of a known
/// `kty` (or one of `accepted`, `federation.accept.key_types`) with a non-empty `kid` unique in
/// the set ([`parse_public_key_set`]). One rule for every entry point, so a key set accepted by
/// one path cannot be refused by another. The message names the key (`keys[1].x: …`) and is
/// shown to the sender as-is.
pub fn check_public_key_set(jwks: &Jwks, accepted: &[String]) -> std::result::Result<(), String> {
    parse_public_key_set(&jwks.keys, accepted).map(drop)
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
