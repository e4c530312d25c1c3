//! JWK and JWK Set documents: parsing, the public-key-set rules and thumbprints.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pharos_shared::jose::{self, Jwks};

fuzz_target!(|data: &[u8]| {
    if let Ok(set) = serde_json::from_slice::<Jwks>(data) {
        let _ = jose::check_public_key_set(&set);
        for k in &set.keys {
            let _ = jose::thumbprint(k);
        }
    }
});
