//! Tests of signing keys.

use super::*;

#[test]
fn pem_round_trip_keeps_kid_and_public_jwk() {
    for alg in [Algorithm::ES256, Algorithm::Ed448, Algorithm::PS256] {
        let key = SigningKey::generate(alg, 2048).unwrap();
        assert!(key.private_pem().starts_with(PEM_BEGIN));
        let again = SigningKey::from_pem(alg, key.private_pem()).unwrap();
        assert_eq!(again.kid(), key.kid());
        assert_eq!(again.public_jwk(), key.public_jwk());
        assert_eq!(again.private_pem(), key.private_pem());
    }
}

#[test]
fn public_jwk_has_kid_use_alg_and_no_private_members() {
    let key = SigningKey::generate(Algorithm::ES384, 0).unwrap();
    let jwk = key.public_jwk();
    assert_eq!(jwk["kid"], key.kid());
    assert_eq!(jwk["use"], "sig");
    assert_eq!(jwk["alg"], "ES384");
    assert_eq!(jwk["crv"], "P-384");
    assert!(!jwk.contains_key("d"));
    assert_eq!(thumbprint(jwk).unwrap(), key.kid());
}

#[test]
fn from_pem_rejects_keys_that_do_not_fit_the_algorithm() {
    let ec = SigningKey::generate(Algorithm::ES256, 0).unwrap();
    let ed = SigningKey::generate(Algorithm::Ed25519, 0).unwrap();
    let rsa = SigningKey::generate(Algorithm::RS256, 2048).unwrap();
    assert!(SigningKey::from_pem(Algorithm::RS256, ec.private_pem()).is_err());
    assert!(SigningKey::from_pem(Algorithm::ES384, ec.private_pem()).is_err());
    assert!(SigningKey::from_pem(Algorithm::ES256K, ec.private_pem()).is_err());
    assert!(SigningKey::from_pem(Algorithm::Ed448, ed.private_pem()).is_err());
    assert!(SigningKey::from_pem(Algorithm::ES256, rsa.private_pem()).is_err());
    assert!(SigningKey::from_pem(Algorithm::EdDSA, rsa.private_pem()).is_err());
    // The same RSA key serves PS256 (plain rsaEncryption PKCS#8), with the same kid.
    let ps = SigningKey::from_pem(Algorithm::PS256, rsa.private_pem()).unwrap();
    assert_eq!(ps.kid(), rsa.kid());
    assert_eq!(ps.public_jwk()["alg"], "PS256");
}

#[test]
fn small_rsa_keys_and_non_pkcs8_pem_are_rejected() {
    assert!(SigningKey::generate(Algorithm::RS256, 1024).is_err());
    assert!(SigningKey::from_pem(Algorithm::ES256, "not a pem").is_err());
    let pem = "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n";
    assert!(SigningKey::from_pem(Algorithm::ES256, pem).is_err());
}

#[test]
fn debug_shows_no_key_material() {
    let key = SigningKey::generate(Algorithm::ES256, 0).unwrap();
    let debug = format!("{key:?}");
    assert!(debug.contains(key.kid()));
    assert!(!debug.contains("PRIVATE"));
    let body_line = key.private_pem().lines().nth(1).unwrap();
    assert!(!debug.contains(body_line));
}

#[test]
fn rsa_signers_ask_for_a_blocking_thread_ec_and_eddsa_do_not() {
    let rsa = SigningKey::generate(Algorithm::RS256, 2048).unwrap();
    let ps = SigningKey::from_pem(Algorithm::PS256, rsa.private_pem()).unwrap();
    assert!(rsa.is_blocking());
    assert!(ps.is_blocking());
    for alg in [Algorithm::ES256, Algorithm::ES512, Algorithm::Ed25519] {
        assert!(
            !SigningKey::generate(alg, 0).unwrap().is_blocking(),
            "{alg}"
        );
    }
}
