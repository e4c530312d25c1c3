//! Test-vector runs: all 2019 Connect2id metadata policy cases, the spec's worked examples, and
//! the `except` operator's cases (its definition's examples as go-oidfed/lib reproduces them,
//! its merge and apply rules, each refused and each allowed combination).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Map, Value, json};

use super::*;
use crate::Error;

/// Read a vector file from the repository copy (never from the team folder).
pub(super) fn load(rel: &str) -> Value {
    let path = format!("{}/../tests/vectors/{rel}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap()
}

/// Structural equality with arrays compared as sets (merged value order is undefined).
pub(super) fn set_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Array(x), Value::Array(y)) => {
            x.iter().all(|i| y.iter().any(|j| set_eq(i, j)))
                && y.iter().all(|j| x.iter().any(|i| set_eq(i, j)))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| set_eq(v, w)))
        }
        _ => a == b,
    }
}

fn code(e: &Error) -> &'static str {
    match e {
        Error::InvalidPolicy(_) => "invalid_policy",
        Error::InvalidMetadata(_) => "invalid_metadata",
        _ => "other",
    }
}

const RP: &str = "openid_relying_party";

/// Run one case in the Connect2id format (`entity_type`, absent there, defaults to
/// `openid_relying_party`); `Err` describes the mismatch.
fn run_case(case: &Value) -> Result<(), String> {
    let obj = |k: &str| case[k].as_object().cloned().unwrap_or_default();
    let (ta, int) = (obj("TA"), obj("INT"));
    let et = case
        .get("entity_type")
        .and_then(Value::as_str)
        .unwrap_or(RP);
    let expected_error = case.get("error").and_then(Value::as_str);
    let outcome = (|| -> crate::Result<(Value, Value)> {
        for side in [&ta, &int] {
            for ops in side.values() {
                check_param_policy(ops.as_object().unwrap_or(&Map::new()), &[])?;
            }
        }
        let merged = merge_metadata_policy(&json!({ et: ta }), &json!({ et: int }))?;
        let resolved = apply_metadata_policy(&merged, &json!({ et: case["metadata"] }))?;
        Ok((merged[et].clone(), resolved[et].clone()))
    })();
    match (outcome, expected_error) {
        (Err(e), Some(want)) if code(&e) == want => Ok(()),
        (Err(e), want) => Err(format!("got error {e}, expected {want:?}")),
        (Ok((merged, resolved)), None) => {
            if !set_eq(&merged, &case["merged"]) {
                return Err(format!("merged {merged} != {}", case["merged"]));
            }
            if !set_eq(&resolved, &case["resolved"]) {
                return Err(format!("resolved {resolved} != {}", case["resolved"]));
            }
            Ok(())
        }
        (Ok((merged, _)), Some(want)) => {
            // A case expecting invalid_metadata may still record the merged policy.
            if let Some(m) = case.get("merged")
                && !set_eq(&merged, m)
            {
                return Err(format!("merged {merged} != {m} and expected {want}"));
            }
            Err(format!("succeeded, expected {want}"))
        }
    }
}

#[test]
fn policy_connect2id_vectors_all_pass() {
    let cases = load("connect2id-metadata-policy/metadata-policy-test-vectors-2025-02-13.json");
    let cases = cases.as_array().unwrap();
    assert_eq!(cases.len(), 2019);
    let (mut passed, mut failed) = (0usize, 0usize);
    for case in cases {
        match run_case(case) {
            Ok(()) => passed += 1,
            Err(why) => {
                failed += 1;
                if failed <= 20 {
                    println!("case {} {}: {why}", case["n"], case["combination"]);
                }
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    assert_eq!(failed, 0);
}

#[test]
fn policy_except_vectors_all_pass() {
    let cases = load("except-operator/except-operator-vectors.json");
    let cases = cases.as_array().unwrap();
    assert_eq!(cases.len(), 26);
    let failed: Vec<String> = cases
        .iter()
        .filter_map(|case| {
            run_case(case)
                .err()
                .map(|why| format!("case {} ({}): {why}", case["n"], case["name"]))
        })
        .collect();
    assert!(failed.is_empty(), "{}", failed.join("\n"));
    // Every refused combination of the definition is among the cases.
    for combination in [
        ["value", "except"],
        ["add", "except"],
        ["superset_of", "except"],
    ] {
        assert!(
            cases
                .iter()
                .any(|c| c["combination"] == json!(combination) && c["error"] == "invalid_policy"),
            "{combination:?}"
        );
    }
}

#[test]
fn policy_spec_example_6_1_5() {
    let v = load("openid-federation-1_0-spec-examples/metadata-policy-example-6.1.5.json");
    let ta = &v["ta_subordinate_statement"];
    let int = &v["intermediate_subordinate_statement"];
    let merged = merge_metadata_policy(&ta["metadata_policy"], &int["metadata_policy"]).unwrap();
    assert!(set_eq(&merged, &v["expected_merged_policy"]), "{merged}");
    let chain = [
        ChainStatementPolicy {
            metadata_policy: Some(&ta["metadata_policy"]),
            ..Default::default()
        },
        ChainStatementPolicy {
            metadata_policy: Some(&int["metadata_policy"]),
            metadata: Some(&int["metadata"]),
            ..Default::default()
        },
    ];
    let resolved = resolve_metadata(&chain, &v["leaf_metadata"]).unwrap();
    assert!(
        set_eq(&resolved, &v["expected_resolved_metadata"]),
        "{resolved}"
    );
}

#[test]
fn policy_spec_table_essential_subset_of() {
    let v = load("openid-federation-1_0-spec-examples/essential-subset_of-table-6.1.3.1.8.json");
    let cases = v["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 6);
    for case in cases {
        let policy = json!({ RP: case["policy"] });
        let got = apply_metadata_policy(&policy, &json!({ RP: case["metadata"] }));
        match case.get("expected_error").and_then(Value::as_str) {
            Some(want) => assert_eq!(code(&got.unwrap_err()), want, "row {}", case["n"]),
            None => {
                let got = got.unwrap();
                assert!(
                    set_eq(&got[RP], &case["expected_resolved"]),
                    "row {}: {got}",
                    case["n"]
                );
            }
        }
    }
}

#[test]
fn policy_spec_appendix_a2_chain() {
    let v = load("openid-federation-1_0-spec-examples/appendix-a2-op-umu-trust-chain.json");
    let payloads = v["trust_chain_payloads"].as_array().unwrap();
    let leaf = &payloads[0];
    // Payloads run leaf, SS(umu.se), SS(swamid), SS(edugain), TA EC; the statements passed to
    // resolve_metadata run from the TA's statement down, so reverse the SSs.
    let statements: Vec<ChainStatementPolicy<'_>> = payloads[1..payloads.len() - 1]
        .iter()
        .rev()
        .map(|ss| ChainStatementPolicy {
            metadata_policy: ss.get("metadata_policy"),
            metadata: ss.get("metadata"),
            ..Default::default()
        })
        .collect();
    assert_eq!(statements.len(), 3);
    let resolved = resolve_metadata(&statements, &leaf["metadata"]).unwrap();
    assert!(
        set_eq(&resolved, &v["expected_resolved_metadata"]),
        "{resolved}"
    );
}
