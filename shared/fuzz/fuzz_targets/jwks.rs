//! JWK and JWK Set documents: parsing, the typed public key parser (EC points on their curve,
//! OKP and RSA sizes, private members, unknown key types with and without an accepted list),
//! the public-key-set rules and thumbprints.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pharos_shared::jose::{self, Jwks};

fuzz_target!(|data: &[u8]| {
    if let Ok(set) = serde_json::from_slice::<Jwks>(data) {
        let accepted = ["AKP".to_owned()];
        let _ = jose::check_public_key_set(&set, &[]);
        let _ = jose::check_public_key_set(&set, &accepted);
        for k in &set.keys {
            let _ = jose::parse_public_key(k, &[]);
            let _ = jose::thumbprint(k);
        }
    }
});
