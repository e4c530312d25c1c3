//! Entity statements and trust chains: one statement per line, validated against an anchor.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pharos_shared::chain::{AnchorSpec, validate_chain};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let chain: Vec<String> = text.lines().map(str::to_owned).collect();
    let anchor = AnchorSpec {
        entity_id: "https://ta.example".into(),
        ..AnchorSpec::default()
    };
    let _ = validate_chain(&chain, &anchor, 1_800_000_000);
});
