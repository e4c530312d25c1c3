//! `private_key_jwt` client assertions: decoding and the claims rules.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pharos_dataplane::client_auth::check_claims;
use pharos_shared::jose;

fuzz_target!(|data: &[u8]| {
    let Ok(token) = std::str::from_utf8(data) else { return };
    let claims = match jose::decode_unverified(token) {
        Ok(d) => d.claims,
        Err(_) => match serde_json::from_slice(data) {
            Ok(c) => c,
            Err(_) => return,
        },
    };
    let _ = check_claims(&claims, "https://op.example", 1_800_000_000, 300);
});
