//! Trust marks in an Entity Configuration: the entry's shape, its JWT and delegation, checked
//! against an anchor's claims. Input: `[entry, anchor_claims]` as JSON, or a bare JWT.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pharos_shared::jose::Jwks;
use pharos_shared::trust_mark::{self_signed_keys, verify};
use serde_json::{Map, Value, json};

fuzz_target!(|data: &[u8]| {
    let keys = Jwks { keys: Vec::new() };
    if let Ok(Value::Array(parts)) = serde_json::from_slice::<Value>(data) {
        let entry = parts.first().cloned().unwrap_or(Value::Null);
        let anchor: Map<String, Value> = parts
            .get(1)
            .and_then(|v| v.as_object().cloned())
            .unwrap_or_default();
        for draft in [false, true] {
            let _ = verify(&entry, "https://leaf.example", &anchor, &keys, 1_800_000_000, draft);
        }
        return;
    }
    let Ok(jwt) = std::str::from_utf8(data) else { return };
    let _ = self_signed_keys(jwt, "https://tmi.example", 1_800_000_000);
    let entry = json!({"trust_mark_type": "https://tm.example/t", "trust_mark": jwt});
    let _ = verify(&entry, "https://leaf.example", &Map::new(), &keys, 1_800_000_000, true);
});
