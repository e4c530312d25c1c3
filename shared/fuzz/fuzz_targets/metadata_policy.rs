//! Metadata policies: checking (as the resolver does and as the Admin API does before storing),
//! merging a superior's and a subordinate's, and applying the result to metadata; the metadata
//! parameter types. Input: a JSON array `[superior, subordinate, metadata]`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pharos_shared::metadata_types::check_metadata;
use pharos_shared::policy::{
    WriteRules, apply_metadata_policy, check_metadata_policy, check_policy_to_store,
    merge_metadata_policy,
};
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(Value::Array(parts)) = serde_json::from_slice::<Value>(data) else { return };
    let null = Value::Null;
    let sup = parts.first().unwrap_or(&null);
    let sub = parts.get(1).unwrap_or(&null);
    let md = parts.get(2).unwrap_or(&null);
    let _ = check_metadata_policy(sup, &["crit_op".into()]);
    let _ = check_policy_to_store(sup, &WriteRules::default());
    if let Some(m) = md.as_object() {
        let _ = check_metadata(m, &[]);
    }
    if let Ok(merged) = merge_metadata_policy(sup, sub) {
        let _ = apply_metadata_policy(&merged, md);
    }
    let _ = apply_metadata_policy(sup, md);
});
