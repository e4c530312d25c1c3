//! Tests of the typed public key parser.

use serde_json::json;

use super::*;
use crate::jose::{Algorithm, Signer, SigningKey};

fn jwk(v: serde_json::Value) -> Jwk {
    v.as_object().unwrap().clone()
}

fn parse(v: serde_json::Value) -> Result<PublicKey, String> {
    parse_public_key(&jwk(v), &[]).map_err(|e| e.to_string())
}

/// A generated key's public JWK.
fn public(alg: Algorithm) -> Jwk {
    SigningKey::generate(alg, 2048)
        .unwrap()
        .public_jwk()
        .clone()
}

#[test]
fn generated_keys_of_every_algorithm_parse() {
    for alg in Algorithm::ALL {
        let key = parse_public_key(&public(*alg), &[]).unwrap();
        let expected = match alg.as_str() {
            "ES256" => PublicKey::Ec(EcCurve::P256),
            "ES384" => PublicKey::Ec(EcCurve::P384),
            "ES512" => PublicKey::Ec(EcCurve::P521),
            "ES256K" => PublicKey::Ec(EcCurve::Secp256k1),
            "Ed448" => PublicKey::Okp(OkpCurve::Ed448),
            "EdDSA" | "Ed25519" => PublicKey::Okp(OkpCurve::Ed25519),
            name if name.starts_with("ML-DSA-") => PublicKey::Akp(*alg),
            _ => PublicKey::Rsa(2048),
        };
        assert_eq!(key, expected, "{alg}");
    }
}

#[test]
fn the_issue_s_malformed_keys_are_refused_naming_the_member() {
    assert_eq!(
        parse(json!({"kty": "FOO", "kid": "a"})).unwrap_err(),
        "kty: \"FOO\" is not a key type Pharos knows (EC, RSA, OKP, AKP; others only when listed in \
         federation.accept.key_types)"
    );
    assert_eq!(
        parse(json!({"kty": "EC", "kid": "a"})).unwrap_err(),
        "crv: missing"
    );
    let mut k = public(Algorithm::ES256);
    k.insert("x".into(), "not base64 !!".into());
    assert_eq!(
        parse(Value::Object(k.clone())).unwrap_err(),
        "x: not base64url"
    );
    k.insert("x".into(), "AAAA".into());
    assert_eq!(
        parse(Value::Object(k)).unwrap_err(),
        "x: 3 bytes, P-256 needs 32"
    );
}

#[test]
fn a_point_off_the_curve_is_refused() {
    let mut k = public(Algorithm::ES256);
    // Flip the last bit of y: (x, y') is not on the curve.
    let mut y = URL_SAFE_NO_PAD.decode(k["y"].as_str().unwrap()).unwrap();
    if let Some(b) = y.last_mut() {
        *b ^= 1;
    }
    k.insert("y".into(), URL_SAFE_NO_PAD.encode(&y).into());
    assert_eq!(
        parse(Value::Object(k)).unwrap_err(),
        "the point (x, y) is not on P-256"
    );
    // Coordinates beyond the field are refused too, whatever they reduce to.
    let mut k = public(Algorithm::ES256);
    k.insert("x".into(), URL_SAFE_NO_PAD.encode([0xff; 32]).into());
    assert!(parse(Value::Object(k)).is_err());
}

#[test]
fn curves_and_sizes_must_match() {
    let mut k = public(Algorithm::ES384);
    k.insert("crv".into(), "P-256".into());
    assert_eq!(
        parse(Value::Object(k)).unwrap_err(),
        "x: 48 bytes, P-256 needs 32"
    );
    let mut k = public(Algorithm::Ed25519);
    k.insert("crv".into(), "Ed448".into());
    assert_eq!(
        parse(Value::Object(k.clone())).unwrap_err(),
        "x: 32 bytes, Ed448 needs 57"
    );
    k.insert("crv".into(), "P-256".into());
    assert!(
        parse(Value::Object(k))
            .unwrap_err()
            .starts_with("crv: \"P-256\" is not an OKP curve")
    );
    assert!(parse(json!({"kty": "EC", "crv": 1})).unwrap_err() == "crv: must be a string");
}

#[test]
fn rsa_size_and_exponent_are_bounded() {
    let k = public(Algorithm::RS256);
    let n = URL_SAFE_NO_PAD.decode(k["n"].as_str().unwrap()).unwrap();
    let with = |n: &[u8], e: &[u8]| {
        let mut k = k.clone();
        k.insert("n".into(), URL_SAFE_NO_PAD.encode(n).into());
        k.insert("e".into(), URL_SAFE_NO_PAD.encode(e).into());
        parse(Value::Object(k))
    };
    assert_eq!(with(&n, &[1, 0, 1]), Ok(PublicKey::Rsa(2048)));
    assert_eq!(with(&n, &[3]), Ok(PublicKey::Rsa(2048)));
    // A leading zero octet (some libraries add one) does not change the size.
    assert_eq!(
        with(&[&[0u8][..], &n].concat(), &[1, 0, 1]),
        Ok(PublicKey::Rsa(2048))
    );
    assert!(
        with(&n[..128], &[1, 0, 1])
            .unwrap_err()
            .starts_with("n: a 1024-bit modulus")
    );
    assert!(
        with(&vec![0xff; 1025], &[1, 0, 1])
            .unwrap_err()
            .starts_with("n: a 8200-bit")
    );
    let mut even = n.clone();
    if let Some(b) = even.last_mut() {
        *b &= 0xfe;
    }
    assert_eq!(
        with(&even, &[1, 0, 1]).unwrap_err(),
        "n: an RSA modulus is odd"
    );
    for e in [&[1u8][..], &[2], &[1, 0, 0], &[], &[0xff; 33]] {
        assert!(with(&n, e).unwrap_err().starts_with("e: "), "{e:?}");
    }
}

#[test]
fn private_members_and_symmetric_keys_are_refused() {
    for m in ["d", "p", "q", "dp", "dq", "qi", "oth", "k", "priv"] {
        let mut k = public(Algorithm::ES256);
        k.insert(m.into(), "AAAA".into());
        assert_eq!(
            parse(Value::Object(k)).unwrap_err(),
            format!("{m}: a private key member: only public keys are accepted")
        );
    }
    assert!(parse(json!({"kty": "oct", "k": "AAAA"})).is_err());
}

#[test]
fn an_accepted_kty_is_kept_as_given() {
    let accepted = ["XYZ".to_owned()];
    let k = jwk(json!({"kty": "XYZ", "kid": "a", "pub": "AAAA"}));
    assert_eq!(
        parse_public_key(&k, &accepted),
        Ok(PublicKey::Accepted("XYZ".into()))
    );
    assert!(parse_public_key(&k, &[]).is_err());
    // Private members stay refused whatever the kty.
    let k = jwk(json!({"kty": "XYZ", "kid": "a", "priv": "AAAA"}));
    assert!(parse_public_key(&k, &accepted).is_err());
}

#[test]
fn key_sets_name_the_key_and_need_unique_kids() {
    let a = public(Algorithm::ES256);
    let mut b = public(Algorithm::Ed25519);
    assert_eq!(
        parse_public_key_set(&[a.clone(), b.clone()], &[])
            .unwrap()
            .len(),
        2
    );
    b.insert("x".into(), "!".into());
    assert_eq!(
        parse_public_key_set(&[a.clone(), b], &[]).unwrap_err(),
        "keys[1].x: not base64url"
    );
    let mut c = a.clone();
    c.remove("kid");
    assert_eq!(
        parse_public_key_set(&[c], &[]).unwrap_err(),
        "keys[0].kid: every JWK needs a non-empty kid"
    );
    assert!(
        parse_public_key_set(&[a.clone(), a], &[])
            .unwrap_err()
            .starts_with("keys[1].kid: duplicate kid")
    );
}

#[test]
fn akp_keys_need_an_ml_dsa_alg_and_a_pub_of_its_size() {
    let k = public(Algorithm::MlDsa65);
    assert_eq!(
        parse(Value::Object(k.clone())),
        Ok(PublicKey::Akp(Algorithm::MlDsa65))
    );
    let mut wrong = k.clone();
    wrong.insert("alg".into(), "ML-DSA-44".into());
    assert_eq!(
        parse(Value::Object(wrong)).unwrap_err(),
        "pub: 1952 bytes, ML-DSA-44 needs 1312"
    );
    let mut no_alg = k.clone();
    no_alg.remove("alg");
    assert_eq!(parse(Value::Object(no_alg)).unwrap_err(), "alg: missing");
    let mut es = k.clone();
    es.insert("alg".into(), "ES256".into());
    assert!(
        parse(Value::Object(es))
            .unwrap_err()
            .starts_with("alg: \"ES256\" is not an AKP")
    );
    let mut private = k;
    private.insert("priv".into(), "AAAA".into());
    assert!(
        parse(Value::Object(private))
            .unwrap_err()
            .starts_with("priv: a private key member")
    );
}
