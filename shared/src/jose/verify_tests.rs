//! Tests of `verify` (a separate file only to keep `verify.rs` short).

use serde_json::{Map, Value, json};

use super::*;
use crate::jose::{Signer, SigningKey, b64_decode, b64_encode, parse_public_key, sign, thumbprint};

fn claims() -> Map<String, Value> {
    json!({"iss": "https://op.example", "sub": "https://op.example", "iat": 1})
        .as_object()
        .unwrap()
        .clone()
}

fn key(alg: Algorithm) -> SigningKey {
    SigningKey::generate(alg, 2048).unwrap()
}

fn set(keys: &[&Jwk]) -> Jwks {
    Jwks {
        keys: keys.iter().map(|k| (*k).clone()).collect(),
    }
}

/// Signs an arbitrary header with `key`, for tokens `sign` refuses to build.
fn sign_raw(key: &SigningKey, header: Value) -> String {
    let input = format!(
        "{}.{}",
        b64_encode(&serde_json::to_vec(&header).unwrap()),
        b64_encode(&serde_json::to_vec(&claims()).unwrap())
    );
    let sig = key.sign_bytes(input.as_bytes()).unwrap();
    format!("{input}.{}", b64_encode(&sig))
}

#[test]
fn every_algorithm_round_trips_with_jws_signature_sizes() {
    for &alg in Algorithm::ALL {
        let k = key(alg);
        let token = sign(&k, "entity-statement+jwt", &claims(), None).unwrap();
        let decoded = verify(&token, &set(&[k.public_jwk()])).unwrap();
        assert_eq!(decoded.claims, claims(), "{alg}");
        assert_eq!(decoded.header["alg"], alg.as_str());
        let sig = b64_decode("sig", token.rsplit('.').next().unwrap()).unwrap();
        let want = match alg {
            Algorithm::ES256 | Algorithm::ES256K | Algorithm::EdDSA | Algorithm::Ed25519 => 64,
            Algorithm::ES384 => 96,
            Algorithm::ES512 => 132,
            Algorithm::Ed448 => 114,
            Algorithm::MlDsa44 => 2420,
            Algorithm::MlDsa65 => 3309,
            Algorithm::MlDsa87 => 4627,
            Algorithm::MlDsa44Es256 | Algorithm::MlDsa44Ed25519 => 2420 + 64,
            Algorithm::MlDsa65Es256 | Algorithm::MlDsa65Ed25519 => 3309 + 64,
            Algorithm::MlDsa87Es384 => 4627 + 96,
            Algorithm::MlDsa87Ed448 => 4627 + 114,
            _ => 256,
        };
        assert_eq!(sig.len(), want, "{alg} signature length");
    }
}

/// The ECDSA path (OpenSSL's ECDSA on the JWK's coordinates, not josekit's verifier) refuses
/// what josekit refused: a signature of the wrong length, a point off the curve, coordinates
/// of the wrong size or beyond the field's prime, and a zero `r`.
#[test]
fn ecdsa_refuses_odd_signatures_and_keys() {
    for alg in [
        Algorithm::ES256,
        Algorithm::ES384,
        Algorithm::ES512,
        Algorithm::ES256K,
    ] {
        let k = key(alg);
        let jwks = set(&[k.public_jwk()]);
        let token = sign(&k, "jwt", &claims(), None).unwrap();
        let (head, sig) = token.rsplit_once('.').unwrap();
        let sig = b64_decode("sig", sig).unwrap();
        let with = |s: &[u8]| format!("{head}.{}", b64_encode(s));
        assert!(verify(&with(&sig), &jwks).is_ok(), "{alg}");
        assert!(verify(&with(&sig[1..]), &jwks).is_err(), "{alg}: short");
        assert!(
            verify(&with(&[sig.as_slice(), &[0]].concat()), &jwks).is_err(),
            "{alg}: long"
        );
        let mut zero_r = sig.clone();
        zero_r[..sig.len() / 2].fill(0);
        assert!(verify(&with(&zero_r), &jwks).is_err(), "{alg}: r = 0");
        let mut off_curve = k.public_jwk().clone();
        let mut y = b64_decode("y", off_curve["y"].as_str().unwrap()).unwrap();
        *y.last_mut().unwrap() ^= 1;
        off_curve.insert("y".into(), b64_encode(&y).into());
        let err = verify(&token, &set(&[&off_curve])).unwrap_err().to_string();
        assert!(err.contains("not on its curve"), "{alg}: {err}");
        let mut short_x = k.public_jwk().clone();
        let x = b64_decode("x", short_x["x"].as_str().unwrap()).unwrap();
        short_x.insert("x".into(), b64_encode(&x[1..]).into());
        assert!(verify(&token, &set(&[&short_x])).is_err(), "{alg}: short x");
        let mut beyond_p = k.public_jwk().clone();
        beyond_p.insert("x".into(), b64_encode(&vec![0xff; x.len()]).into());
        let err = verify(&token, &set(&[&beyond_p])).unwrap_err().to_string();
        assert!(err.contains("outside the curve's field"), "{alg}: {err}");
    }
}

#[test]
fn a_different_key_with_the_same_kid_fails() {
    for alg in [Algorithm::ES256, Algorithm::RS256, Algorithm::Ed25519] {
        let (k, other) = (key(alg), key(alg));
        let token = sign(&k, "jwt", &claims(), None).unwrap();
        let mut impostor = other.public_jwk().clone();
        impostor.insert("kid".into(), k.kid().into());
        assert!(verify(&token, &set(&[&impostor])).is_err(), "{alg}");
    }
}

#[test]
fn tampered_payload_or_signature_fails() {
    let k = key(Algorithm::ES256);
    let jwks = set(&[k.public_jwk()]);
    let token = sign(&k, "jwt", &claims(), None).unwrap();
    let parts: Vec<&str> = token.split('.').collect();
    let mut evil = claims();
    evil.insert("sub".into(), "https://evil.example".into());
    let forged = b64_encode(&serde_json::to_vec(&evil).unwrap());
    assert!(verify(&format!("{}.{forged}.{}", parts[0], parts[2]), &jwks).is_err());
    let mut sig = b64_decode("sig", parts[2]).unwrap();
    sig[10] ^= 1;
    let bad_sig = format!("{}.{}.{}", parts[0], parts[1], b64_encode(&sig));
    assert!(verify(&bad_sig, &jwks).is_err());
    assert!(verify(&token, &jwks).is_ok());
}

#[test]
fn alg_none_hmac_and_crit_are_rejected() {
    let k = key(Algorithm::ES256);
    let jwks = set(&[k.public_jwk()]);
    let body = b64_encode(&serde_json::to_vec(&claims()).unwrap());
    let none = b64_encode(br#"{"alg":"none"}"#);
    assert!(verify(&format!("{none}.{body}."), &jwks).is_err());
    assert!(verify(&format!("{none}.{body}.AAAA"), &jwks).is_err());
    let hs = sign_raw(&k, json!({"alg": "HS256", "kid": k.kid()}));
    assert!(verify(&hs, &jwks).is_err());
    let crit = sign_raw(
        &k,
        json!({"alg": "ES256", "kid": k.kid(), "crit": ["exp"], "exp": 1}),
    );
    assert!(verify(&crit, &jwks).is_err());
}

#[test]
fn unknown_kid_fails_and_a_federation_jwt_without_kid_is_refused() {
    let (k, other, rsa) = (
        key(Algorithm::ES256),
        key(Algorithm::ES256),
        key(Algorithm::RS256),
    );
    let token = sign(&k, "jwt", &claims(), None).unwrap();
    let e = verify(&token, &set(&[other.public_jwk(), rsa.public_jwk()])).unwrap_err();
    assert!(e.to_string().contains("is not in the key set"), "{e}");
    let no_kid = sign_raw(&k, json!({"alg": "ES256", "typ": "jwt"}));
    let e = verify(&no_kid, &set(&[k.public_jwk()])).unwrap_err();
    assert!(e.to_string().contains("no \"kid\""), "{e}");
}

#[test]
fn a_key_set_with_duplicate_kids_is_refused_whichever_kid_is_asked_for() {
    let (k, other) = (key(Algorithm::ES256), key(Algorithm::ES256));
    let token = sign(&k, "jwt", &claims(), None).unwrap();
    let mut twin = other.public_jwk().clone();
    twin.insert("kid".into(), k.kid().into());
    // The right key comes first: without the rule the token would verify.
    let e = verify(&token, &set(&[k.public_jwk(), &twin])).unwrap_err();
    assert!(e.to_string().contains("more than one key with kid"), "{e}");
    // A duplicate elsewhere in the set spoils it too.
    let mut a = other.public_jwk().clone();
    a.insert("kid".into(), "dup".into());
    let e = verify(&token, &set(&[k.public_jwk(), &a, &a])).unwrap_err();
    assert!(e.to_string().contains("more than one key with kid"), "{e}");
    // Client assertions name their key by kid under the same rule.
    assert!(verify_client_assertion(&token, &set(&[k.public_jwk(), &twin])).is_err());
}

#[test]
fn a_client_assertion_without_kid_tries_only_the_first_fitting_keys() {
    let k = key(Algorithm::ES256);
    let others: Vec<SigningKey> = (0..MAX_CANDIDATES_WITHOUT_KID)
        .map(|_| key(Algorithm::ES256))
        .collect();
    let rsa = key(Algorithm::RS256);
    let no_kid = sign_raw(&k, json!({"alg": "ES256", "typ": "jwt"}));
    // Within the cap (keys of another type are not candidates): verifies.
    let mut within: Vec<&Jwk> = vec![rsa.public_jwk()];
    within.extend(
        others
            .iter()
            .take(MAX_CANDIDATES_WITHOUT_KID - 1)
            .map(|o| o.public_jwk()),
    );
    within.push(k.public_jwk());
    assert_eq!(
        verify_client_assertion(&no_kid, &set(&within))
            .unwrap()
            .claims,
        claims()
    );
    // Behind the cap: not tried.
    let mut beyond: Vec<&Jwk> = others.iter().map(|o| o.public_jwk()).collect();
    beyond.push(k.public_jwk());
    assert!(verify_client_assertion(&no_kid, &set(&beyond)).is_err());
    assert!(verify_client_assertion(&no_kid, &Jwks::default()).is_err());
}

/// `k`'s public JWK with its modulus or exponent replaced (base64url of big-endian bytes).
fn rsa_with(k: &SigningKey, member: &str, bytes: &[u8]) -> Jwk {
    let mut jwk = k.public_jwk().clone();
    jwk.insert(member.into(), b64_encode(bytes).into());
    jwk
}

#[test]
fn rsa_keys_outside_the_size_and_exponent_bounds_are_refused_before_any_arithmetic() {
    let k = key(Algorithm::RS256);
    let token = sign(&k, "jwt", &claims(), None).unwrap();
    let refused = |jwk: &Jwk, why: &str| {
        let e = verify(&token, &set(&[jwk])).unwrap_err().to_string();
        assert!(e.contains(why), "{e}");
    };
    // 16384-bit and 8200-bit moduli (odd, top bit set): refused for their size.
    let mut huge = vec![0xffu8; 2048];
    huge[2047] |= 1;
    refused(&rsa_with(&k, "n", &huge), "RSA modulus of 16384 bits");
    refused(
        &rsa_with(&k, "n", &huge[..1025]),
        "RSA modulus of 8200 bits",
    );
    // 1024 bits, even with leading zero bytes that do not count.
    let mut small = vec![0u8; 3];
    small.extend([0xffu8; 128]);
    refused(&rsa_with(&k, "n", &small), "RSA modulus of 1024 bits");
    // Exponents: a modulus-sized one, 2^32 + 1, an even one, 1.
    refused(&rsa_with(&k, "e", &huge[..256]), "public exponent");
    refused(&rsa_with(&k, "e", &[1, 0, 0, 0, 1]), "public exponent");
    refused(&rsa_with(&k, "e", &[1, 0, 0]), "public exponent");
    refused(&rsa_with(&k, "e", &[1]), "public exponent");
    // The bounds themselves: 65537 (with a leading zero) and the real 2048-bit modulus pass.
    assert!(verify(&token, &set(&[&rsa_with(&k, "e", &[0, 1, 0, 1])])).is_ok());
}

#[test]
fn an_8192_bit_modulus_is_within_the_bounds() {
    let k = key(Algorithm::RS256);
    let token = sign(&k, "jwt", &claims(), None).unwrap();
    let mut n = vec![0xffu8; 1024];
    n[1023] |= 1;
    // Not the signer's key, so the signature fails, but the bound let it through.
    let e = verify(&token, &set(&[&rsa_with(&k, "n", &n)]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("signature check failed"), "{e}");
}

#[test]
fn key_alg_member_must_match_and_kid_cannot_switch_key_type() {
    let rsa = key(Algorithm::RS256);
    let ps = SigningKey::from_pem(Algorithm::PS256, rsa.private_pem()).unwrap();
    let token = sign(&ps, "jwt", &claims(), None).unwrap();
    // Same key, but published for RS256 only: a PS256 token must not verify with it.
    assert!(verify(&token, &set(&[rsa.public_jwk()])).is_err());
    let mut no_alg = rsa.public_jwk().clone();
    no_alg.remove("alg");
    assert!(verify(&token, &set(&[&no_alg])).is_ok());
    // A kid naming an RSA key cannot be used with an EC alg (or vice versa).
    let ec = key(Algorithm::ES256);
    let confused = sign_raw(&ec, json!({"alg": "ES256", "kid": rsa.kid()}));
    assert!(verify(&confused, &set(&[rsa.public_jwk(), ec.public_jwk()])).is_err());
}

#[test]
fn fully_specified_eddsa_names_pin_the_curve() {
    let ed448 = key(Algorithm::Ed448);
    let mut jwk = ed448.public_jwk().clone();
    jwk.remove("alg");
    let as_ed25519 = sign_raw(&ed448, json!({"alg": "Ed25519", "kid": ed448.kid()}));
    assert!(verify(&as_ed25519, &set(&[&jwk])).is_err());
    let as_eddsa = sign_raw(&ed448, json!({"alg": "EdDSA", "kid": ed448.kid()}));
    assert!(verify(&as_eddsa, &set(&[&jwk])).is_ok());
}

#[test]
fn rfc7515_a3_es256_vector_verifies() {
    // Produced by another implementation: proves the raw r||s signature format.
    let token = "eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ.DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-F4GawxaepmXFCgfTjDxw5djxLa8ISlSApmWQxfKTUJqPP3-Kg6NU1Q";
    let jwk = json!({"kty": "EC", "crv": "P-256",
        "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
        "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"});
    let jwks = set(&[jwk.as_object().unwrap()]);
    // The vector has no kid: only the client assertion rule lets it through.
    assert!(verify(token, &jwks).is_err());
    let decoded = verify_client_assertion(token, &jwks).unwrap();
    assert_eq!(decoded.claims["iss"], "joe");
    let tampered = token.replace(".eyJpc3", ".eyJpC3");
    assert!(verify_client_assertion(&tampered, &jwks).is_err());
}

#[test]
fn spec_4_3_rs256_trust_chain_verifies_link_by_link() {
    let vector: Value = serde_json::from_str(include_str!(
        "../../../tests/vectors/openid-federation-1_0-spec-examples/trust-chain-signed-4.3.json"
    ))
    .unwrap();
    let chain: Vec<&str> = vector["trust_chain"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    let ta: Jwks = serde_json::from_value(vector["trust_anchor"]["jwks"].clone()).unwrap();
    let last = chain.len() - 1;
    let ta_ec = verify(chain[last], &ta).unwrap();
    crate::jose::check_typ(&ta_ec, "entity-statement+jwt").unwrap();
    for j in 0..last {
        // ES[j] is signed by a key in ES[j+1].jwks (ES[0] by its own jwks).
        let issuer = if j == 0 { chain[0] } else { chain[j + 1] };
        let issuer = crate::jose::decode_unverified(issuer).unwrap();
        let keys: Jwks = serde_json::from_value(issuer.claims["jwks"].clone()).unwrap();
        verify(chain[j], &keys).unwrap();
    }
    let leaf = crate::jose::decode_unverified(chain[0]).unwrap();
    let leaf_keys: Jwks = serde_json::from_value(leaf.claims["jwks"].clone()).unwrap();
    assert!(verify(chain[last], &leaf_keys).is_err());
    for k in &ta.keys {
        assert!(thumbprint(k).is_ok());
    }
}

/// The JOSE examples of draft-ietf-cose-dilithium-09 (appendix; `examples/jose/examples/` of
/// cose-wg/draft-ietf-cose-dilithium at 7f2084b): the seed (`priv`, 32 zero bytes) makes the
/// published `pub` and `kid` (the AKP thumbprint), the draft's compact JWS verifies, a flipped
/// bit does not, and a signature of ours with the seed's key verifies against the draft's JWK.
#[test]
fn draft_cose_dilithium_jose_examples() {
    let vectors = [
        include_str!("../../../tests/vectors/cose-dilithium/ML_DSA_44.jose.json"),
        include_str!("../../../tests/vectors/cose-dilithium/ML_DSA_65.jose.json"),
        include_str!("../../../tests/vectors/cose-dilithium/ML_DSA_87.jose.json"),
    ];
    for text in vectors {
        let v: Value = serde_json::from_str(text).unwrap();
        let jwk: Jwk = v["jwk"].as_object().unwrap().clone();
        let alg: Algorithm = jwk["alg"].as_str().unwrap().parse().unwrap();
        // The draft's own thumbprint of its key.
        assert_eq!(thumbprint(&jwk).unwrap(), jwk["kid"], "{alg} kid");
        // The seed makes the same key: our signer publishes the draft's pub under the same kid.
        let ours = crate::jose::from_private_jwk(&jwk, None).unwrap();
        assert_eq!(ours.public_jwk()["pub"], jwk["pub"], "{alg} pub");
        assert_eq!(ours.kid(), jwk["kid"]);
        let mut public = jwk.clone();
        public.remove("priv");
        // The draft's JWS (its payload is text, not claims: checked below `verify`'s parsing).
        let token = v["jws"].as_str().unwrap();
        let (input, sig) = token.rsplit_once('.').unwrap();
        let sig = b64_decode("sig", sig).unwrap();
        assert_eq!(
            hex(input.as_bytes()),
            v["raw_to_be_signed"],
            "{alg} signing input"
        );
        assert_eq!(hex(&sig), v["raw_signature"]);
        check_signature(alg, &public, input.as_bytes(), &sig).unwrap();
        let mut flipped = sig.clone();
        flipped[7] ^= 1;
        assert!(check_signature(alg, &public, input.as_bytes(), &flipped).is_err());
        // Ours, verified with the draft's public JWK.
        let token = sign(&ours, "entity-statement+jwt", &claims(), None).unwrap();
        verify(&token, &set(&[&public])).unwrap();
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A client assertion signed with ML-DSA (`private_key_jwt` of an ML-DSA client): without
/// `kid`, only `AKP` keys are candidates, and one of another parameter set is tried and
/// refused by its `alg`, not misread; a header `alg` other than the key's is refused with a
/// `kid` too.
#[test]
fn ml_dsa_client_assertions_and_alg_strictness() {
    let k = key(Algorithm::MlDsa44);
    let other_set = key(Algorithm::MlDsa65);
    let es = key(Algorithm::ES256);
    let no_kid = sign_raw(&k, json!({"alg": "ML-DSA-44", "typ": "jwt"}));
    let keys = set(&[es.public_jwk(), other_set.public_jwk(), k.public_jwk()]);
    assert_eq!(
        verify_client_assertion(&no_kid, &keys).unwrap().claims,
        claims()
    );
    assert!(verify_client_assertion(&no_kid, &set(&[other_set.public_jwk()])).is_err());
    // The header names ML-DSA-65 for an ML-DSA-44 key (signature made with that key).
    let lying = sign_raw(
        &k,
        json!({"alg": "ML-DSA-65", "kid": k.kid(), "typ": "jwt"}),
    );
    let e = verify(&lying, &set(&[k.public_jwk()]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("is for alg \"ML-DSA-44\", not ML-DSA-65"), "{e}");
    // An AKP key without its alg cannot verify anything.
    let mut bare = k.public_jwk().clone();
    bare.remove("alg");
    let signed = sign_raw(
        &k,
        json!({"alg": "ML-DSA-44", "kid": k.kid(), "typ": "jwt"}),
    );
    let e = verify(&signed, &set(&[&bare])).unwrap_err().to_string();
    assert!(e.contains("has no alg"), "{e}");
}

/// The JOSE examples of draft-ietf-jose-pq-composite-sigs-03 (`examples/jose/examples/` of
/// ietf-wg-jose/draft-ietf-jose-pq-composite-sigs at tag -03): the private JWK (`priv`: the
/// ML-DSA seed, then the classic private key) makes the published `pub` and `kid`; our message
/// representative is the draft's `raw_to_be_signed`; the draft's JWS verifies, a flipped bit in
/// either half does not; our signature verifies with the draft's public JWK.
#[test]
fn draft_jose_pq_composite_sigs_examples() {
    let vectors = [
        include_str!("../../../tests/vectors/jose-pq-composite/ML-DSA-44-ES256.jose.json"),
        include_str!("../../../tests/vectors/jose-pq-composite/ML-DSA-65-ES256.jose.json"),
        include_str!("../../../tests/vectors/jose-pq-composite/ML-DSA-87-ES384.jose.json"),
        include_str!("../../../tests/vectors/jose-pq-composite/ML-DSA-44-Ed25519.jose.json"),
        include_str!("../../../tests/vectors/jose-pq-composite/ML-DSA-65-Ed25519.jose.json"),
        include_str!("../../../tests/vectors/jose-pq-composite/ML-DSA-87-Ed448.jose.json"),
    ];
    for text in vectors {
        let v: Value = serde_json::from_str(text).unwrap();
        let jwk: Jwk = v["jwk"].as_object().unwrap().clone();
        let alg: Algorithm = jwk["alg"].as_str().unwrap().parse().unwrap();
        assert_eq!(thumbprint(&jwk).unwrap(), jwk["kid"], "{alg} kid");
        let ours = crate::jose::from_private_jwk(&jwk, None).unwrap();
        assert_eq!(ours.public_jwk()["pub"], jwk["pub"], "{alg} pub");
        assert_eq!(ours.kid(), jwk["kid"]);
        let mut public = jwk.clone();
        public.remove("priv");
        parse_public_key(&public, &[]).unwrap();
        let token = v["jws"].as_str().unwrap();
        let (input, sig) = token.rsplit_once('.').unwrap();
        let sig = b64_decode("sig", sig).unwrap();
        let params = super::super::composite::params(alg).unwrap();
        let m = params.message(input.as_bytes()).unwrap();
        assert_eq!(
            hex(&m),
            v["raw_to_be_signed"],
            "{alg} message representative"
        );
        assert_eq!(hex(&sig), v["raw_composite_signature"], "{alg}");
        check_signature(alg, &public, input.as_bytes(), &sig).unwrap();
        for at in [9, sig.len() - 9] {
            let mut flipped = sig.clone();
            flipped[at] ^= 1;
            assert!(
                check_signature(alg, &public, input.as_bytes(), &flipped).is_err(),
                "{alg}"
            );
        }
        let token = sign(&ours, "entity-statement+jwt", &claims(), None).unwrap();
        verify(&token, &set(&[&public])).unwrap();
    }
}
