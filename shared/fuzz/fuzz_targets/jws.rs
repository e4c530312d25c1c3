//! Compact JWS/JWT: decoding, `typ` checks and verification against a real key set.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use pharos_shared::jose::{self, Algorithm, Jwks, Signer, SigningKey};

fn keys() -> &'static Jwks {
    static K: OnceLock<Jwks> = OnceLock::new();
    K.get_or_init(|| {
        let k = SigningKey::generate(Algorithm::ES256, 0).expect("key");
        Jwks { keys: vec![k.public_jwk().clone()] }
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(token) = std::str::from_utf8(data) else { return };
    if let Ok(d) = jose::decode_unverified(token) {
        let _ = jose::check_typ(&d, "entity-statement+jwt");
    }
    let _ = jose::verify(token, keys());
});
