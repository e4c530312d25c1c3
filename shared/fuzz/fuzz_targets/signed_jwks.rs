//! Signed JWK Sets pushed to the JWKS update endpoint, and the new-key rules.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pharos_shared::key_update::{check_new_keys, parse_signed_jwks};

fuzz_target!(|data: &[u8]| {
    let Ok(token) = std::str::from_utf8(data) else { return };
    let _ = parse_signed_jwks(token, 1_800_000_000);
    if let Ok(set) = serde_json::from_slice(data) {
        let _ = check_new_keys(&set, None);
        let _ = check_new_keys(&set, Some(&[]));
    }
});
