//! Admin API request bodies: every body type's parse and the checks its route runs before it
//! reads the database (subordinates, keys, trust anchors, endpoints, users, trust mark types,
//! owners, issuers, specs and subjects, documents, claims, plain-text bodies).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = pharos_controlplane::admin::body_checks::check_all(data);
});
