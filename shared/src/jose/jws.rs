//! Compact JWS: building signed tokens and splitting them into their parts.

use serde_json::{Map, Value};

use super::{Signer, b64_decode, b64_encode};
use crate::{Error, Result};

/// Header members that [`sign`] sets itself and callers must not override.
const RESERVED_HEADER: [&str; 3] = ["alg", "kid", "typ"];

/// A JWS split and decoded but NOT verified (for reading `iss`/`kid` before choosing keys).
///
/// It exists because federation code must read a statement's issuer and `kid` to find the
/// keys that verify it. Nothing in it may be trusted until [`super::verify`] has returned it.
#[derive(Clone, Debug, PartialEq)]
pub struct Decoded {
    /// The protected header.
    pub header: Map<String, Value>,
    /// The payload (JWT claims set).
    pub claims: Map<String, Value>,
}

/// A compact JWS taken apart: what verification needs besides the decoded JSON.
pub(crate) struct Split<'a> {
    /// Decoded header and claims.
    pub decoded: Decoded,
    /// `base64url(header) "." base64url(payload)`, the bytes the signature covers.
    pub signing_input: &'a str,
    /// The raw signature bytes.
    pub signature: Vec<u8>,
}

fn json_object(what: &str, b64: &str) -> Result<Map<String, Value>> {
    let bytes = b64_decode(what, b64)?;
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(Error::Jws(format!("JWS {what} is not a JSON object"))),
        Err(e) => Err(Error::Jws(format!("JWS {what} is not valid JSON: {e}"))),
    }
}

/// Splits a compact JWS into exactly three non-empty parts and decodes them.
pub(crate) fn split(token: &str) -> Result<Split<'_>> {
    let mut parts = token.split('.');
    let (Some(h), Some(p), Some(s), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(Error::Jws("a compact JWS has exactly three parts".into()));
    };
    if h.is_empty() || p.is_empty() || s.is_empty() {
        return Err(Error::Jws(
            "JWS header, payload and signature must be non-empty".into(),
        ));
    }
    let header = json_object("header", h)?;
    match header.get("alg") {
        Some(Value::String(alg)) if alg.eq_ignore_ascii_case("none") => {
            return Err(Error::Jws("JWS alg \"none\" is not allowed".into()));
        }
        Some(Value::String(_)) => {}
        _ => return Err(Error::Jws("JWS header has no string \"alg\"".into())),
    }
    let claims = json_object("payload", p)?;
    let signature = b64_decode("signature", s)?;
    let signing_input = token
        .get(..h.len() + 1 + p.len())
        .ok_or_else(|| Error::Jws("cannot locate the JWS signing input".into()))?;
    Ok(Split {
        decoded: Decoded { header, claims },
        signing_input,
        signature,
    })
}

/// Decodes a compact JWS without verifying it: exactly 3 parts, header and payload JSON
/// objects, a string `alg` that is not `none`.
///
/// Exists to read `iss`/`kid` before the verifying keys are known; see [`Decoded`].
pub fn decode_unverified(token: &str) -> Result<Decoded> {
    split(token).map(|s| s.decoded)
}

/// Builds a compact JWS: protected header `{"alg","kid","typ"}` plus `extra_header` members
/// (e.g. `trust_chain`), payload = the serde_json serialisation of `claims`.
///
/// Exists so that every token Pharos issues carries the `typ` and `kid` the federation spec
/// requires. `extra_header` may not override `alg`, `kid` or `typ`.
pub fn sign(
    signer: &dyn Signer,
    typ: &str,
    claims: &Map<String, Value>,
    extra_header: Option<&Map<String, Value>>,
) -> Result<String> {
    let mut header = Map::new();
    header.insert("alg".into(), signer.alg().as_str().into());
    header.insert("kid".into(), signer.kid().into());
    header.insert("typ".into(), typ.into());
    for (name, value) in extra_header.into_iter().flatten() {
        if RESERVED_HEADER.contains(&name.as_str()) {
            return Err(Error::Jws(format!("extra header may not set {name:?}")));
        }
        header.insert(name.clone(), value.clone());
    }
    let header = serde_json::to_vec(&header)
        .map_err(|e| Error::Jws(format!("cannot serialise JWS header: {e}")))?;
    let payload = serde_json::to_vec(claims)
        .map_err(|e| Error::Jws(format!("cannot serialise JWS payload: {e}")))?;
    let mut token = b64_encode(&header);
    token.push('.');
    token.push_str(&b64_encode(&payload));
    let signature = {
        let _span =
            crate::trace_span!("sign", jws.alg = signer.alg().as_str(), jws.typ = typ).entered();
        signer.sign_bytes(token.as_bytes())?
    };
    token.push('.');
    token.push_str(&b64_encode(&signature));
    Ok(token)
}

/// Checks the `typ` header, which the federation spec requires callers to enforce for every
/// token kind (a missing or different `typ` MUST cause rejection).
///
/// Media types compare case-insensitively and an `application/` prefix is ignored
/// (RFC 7515 §4.1.9), so `application/entity-statement+jwt` matches `entity-statement+jwt`.
pub fn check_typ(decoded: &Decoded, expected: &str) -> Result<()> {
    fn short(t: &str) -> &str {
        match (t.get(..12), t.get(12..)) {
            (Some(p), Some(rest)) if p.eq_ignore_ascii_case("application/") => rest,
            _ => t,
        }
    }
    match decoded.header.get("typ").and_then(Value::as_str) {
        Some(typ) if short(typ).eq_ignore_ascii_case(short(expected)) => Ok(()),
        Some(typ) => Err(Error::Jws(format!(
            "JWS typ is {typ:?}, expected {expected:?}"
        ))),
        None => Err(Error::Jws(format!("JWS has no typ, expected {expected:?}"))),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing unwrap is a failing test
mod tests {
    use super::*;
    use crate::jose::{Algorithm, SigningKey};

    fn claims() -> Map<String, Value> {
        serde_json::json!({"iss": "https://a.example", "sub": "https://a.example"})
            .as_object()
            .unwrap()
            .clone()
    }

    #[test]
    fn header_has_typ_alg_kid_and_extra_members_and_payload_is_claims() {
        let key = SigningKey::generate(Algorithm::ES256, 0).unwrap();
        let extra = serde_json::json!({"trust_chain": ["a", "b"]});
        let token = sign(&key, "entity-statement+jwt", &claims(), extra.as_object()).unwrap();
        let d = decode_unverified(&token).unwrap();
        assert_eq!(d.header["alg"], "ES256");
        assert_eq!(d.header["kid"], key.kid());
        assert_eq!(d.header["typ"], "entity-statement+jwt");
        assert_eq!(d.header["trust_chain"], serde_json::json!(["a", "b"]));
        assert_eq!(d.claims, claims());
        check_typ(&d, "entity-statement+jwt").unwrap();
        check_typ(&d, "application/Entity-Statement+JWT").unwrap();
        assert!(check_typ(&d, "resolve-response+jwt").is_err());
    }

    #[test]
    fn extra_header_cannot_override_alg_kid_typ() {
        let key = SigningKey::generate(Algorithm::ES256, 0).unwrap();
        for name in RESERVED_HEADER {
            let mut extra = Map::new();
            extra.insert(name.into(), "x".into());
            assert!(sign(&key, "jwt", &claims(), Some(&extra)).is_err());
        }
    }

    #[test]
    fn malformed_tokens_are_rejected() {
        let h = b64_encode(br#"{"alg":"ES256"}"#);
        let p = b64_encode(br#"{"iss":"x"}"#);
        let none = b64_encode(br#"{"alg":"none"}"#);
        let arr = b64_encode(b"[1]");
        for bad in [
            format!("{h}.{p}"),
            format!("{h}.{p}.AA.AA"),
            format!("{h}.{p}."),
            format!("{none}.{p}.AAAA"),
            format!("{none}.{p}."),
            format!("{}.{p}.AAAA", b64_encode(b"{}")),
            format!("{arr}.{p}.AAAA"),
            format!("{h}.{arr}.AAAA"),
            format!("{h}.{p}.AA=="),
            format!("{h}.!!.AAAA"),
        ] {
            assert!(decode_unverified(&bad).is_err(), "accepted {bad}");
        }
        assert!(decode_unverified(&format!("{h}.{p}.AAAA")).is_ok());
    }

    #[test]
    fn missing_typ_is_rejected() {
        let d = Decoded {
            header: Map::new(),
            claims: Map::new(),
        };
        assert!(check_typ(&d, "jwt").is_err());
    }
}
