//! RFC 7638 JWK thumbprints, which Pharos uses as `kid` values (as the federation spec
//! recommends) and to compare keys independently of their optional members.

use sha2::{Digest, Sha256};

use super::{Jwk, b64_encode, str_member};
use crate::{Error, Result};

/// The members RFC 7638 hashes for each key type, already in lexicographic order.
fn required_members(kty: &str) -> Option<&'static [&'static str]> {
    match kty {
        "EC" => Some(&["crv", "kty", "x", "y"]),
        "RSA" => Some(&["e", "kty", "n"]),
        "OKP" => Some(&["crv", "kty", "x"]),
        // draft-ietf-cose-dilithium: the parameter set is part of the key, so `alg` is hashed.
        "AKP" => Some(&["alg", "kty", "pub"]),
        _ => None,
    }
}

/// Copies only the RFC 7638 required members of a public key (in lexicographic order).
///
/// Used both for thumbprints and for building a clean public JWK, so that private members
/// (`d`, `p`, ...) can never leak through either.
pub(crate) fn required_public_members(jwk: &Jwk) -> Result<Jwk> {
    let kty = str_member(jwk, "kty").ok_or_else(|| Error::Key("JWK has no \"kty\"".into()))?;
    let members =
        required_members(kty).ok_or_else(|| Error::Key(format!("unsupported JWK kty {kty:?}")))?;
    let mut out = Jwk::new();
    for name in members {
        let value = str_member(jwk, name)
            .ok_or_else(|| Error::Key(format!("{kty} JWK lacks string member {name:?}")))?;
        out.insert((*name).to_owned(), value.into());
    }
    Ok(out)
}

/// RFC 7638 SHA-256 thumbprint, base64url without padding.
///
/// Exists because the federation spec recommends thumbprints as `kid`s and josekit has no
/// helper. Only the required members are hashed (EC `{crv,kty,x,y}`, RSA `{e,kty,n}`, OKP
/// `{crv,kty,x}`, AKP `{alg,kty,pub}`), in lexicographic order without whitespace; any other
/// `kty` or a missing member is an error.
pub fn thumbprint(jwk: &Jwk) -> Result<String> {
    let members = required_public_members(jwk)?;
    // serde_json writes a map compactly and in insertion order, which is already sorted.
    let canonical = serde_json::to_string(&members)
        .map_err(|e| Error::Key(format!("cannot serialise JWK: {e}")))?;
    Ok(b64_encode(&Sha256::digest(canonical.as_bytes())))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing unwrap is a failing test
mod tests {
    use super::*;

    fn jwk(v: serde_json::Value) -> Jwk {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn rfc7638_section_3_1_example() {
        let key = jwk(serde_json::json!({
            "kty": "RSA",
            "n": "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw",
            "e": "AQAB",
            "alg": "RS256",
            "kid": "2011-04-29"
        }));
        assert_eq!(
            thumbprint(&key).unwrap(),
            "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"
        );
    }

    #[test]
    fn optional_and_private_members_do_not_change_the_thumbprint() {
        let base = jwk(
            serde_json::json!({"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}),
        );
        let mut extra = base.clone();
        extra.insert("kid".into(), "k".into());
        extra.insert("use".into(), "sig".into());
        extra.insert(
            "d".into(),
            "nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A".into(),
        );
        assert_eq!(thumbprint(&base).unwrap(), thumbprint(&extra).unwrap());
        let stripped = required_public_members(&extra).unwrap();
        assert!(!stripped.contains_key("d"));
        assert_eq!(stripped.keys().collect::<Vec<_>>(), vec!["crv", "kty", "x"]);
    }

    #[test]
    fn unknown_kty_and_missing_members_are_errors() {
        assert!(thumbprint(&jwk(serde_json::json!({"kty":"oct","k":"AAAA"}))).is_err());
        assert!(thumbprint(&jwk(serde_json::json!({"kty":"EC","crv":"P-256","x":"AA"}))).is_err());
        assert!(thumbprint(&jwk(serde_json::json!({"n":"AA","e":"AQAB"}))).is_err());
        assert!(thumbprint(&jwk(serde_json::json!({"kty":"RSA","n":1,"e":"AQAB"}))).is_err());
    }
}
