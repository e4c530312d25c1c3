//! The engine's trace is the engine's result: over every 2019 Connect2id case (TA and INT as
//! two statements) the traced resolution gives the untraced result or error, and each
//! parameter's operator steps run from its value before the policy to its resolved value,
//! each step starting where the previous one ended.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Value, json};

use super::vector_tests::load;
use super::*;

const RP: &str = "openid_relying_party";

/// The statements of a two-level chain: the TA's policy, then the intermediate's with an
/// optional `metadata` claim.
fn two_levels<'a>(
    ta: &'a Value,
    int: &'a Value,
    int_metadata: Option<&'a Value>,
) -> [ChainStatementPolicy<'a>; 2] {
    [
        ChainStatementPolicy {
            metadata_policy: Some(ta),
            ..Default::default()
        },
        ChainStatementPolicy {
            metadata_policy: Some(int),
            metadata: int_metadata,
            ..Default::default()
        },
    ]
}

/// Every parameter's steps chain from its value before the policy to its value after.
fn assert_steps_chain(t: &PolicyTrace, resolved: &Value) {
    let mut params: Vec<(&str, &str)> = t
        .operators
        .iter()
        .map(|s| (s.entity_type.as_str(), s.parameter.as_str()))
        .collect();
    params.dedup();
    for (et, p) in params {
        let steps: Vec<&OperatorStep> = t
            .operators
            .iter()
            .filter(|s| s.entity_type == et && s.parameter == p)
            .collect();
        assert_eq!(
            steps[0].before.as_ref(),
            t.before_policy[et].get(p),
            "{et}.{p}"
        );
        for w in steps.windows(2) {
            assert_eq!(w[0].after, w[1].before, "{et}.{p}");
        }
        assert_eq!(
            steps[steps.len() - 1].after.as_ref(),
            resolved[et].get(p),
            "{et}.{p}"
        );
    }
}

#[test]
fn the_trace_of_every_connect2id_case_is_the_engines_result() {
    let cases = load("connect2id-metadata-policy/metadata-policy-test-vectors-2025-02-13.json");
    let mut with_steps = 0;
    for case in cases.as_array().unwrap() {
        let et = case
            .get("entity_type")
            .and_then(Value::as_str)
            .unwrap_or(RP);
        let ta = json!({ et: case["TA"] });
        let int = json!({ et: case["INT"] });
        let leaf = json!({ et: case["metadata"] });
        let statements = two_levels(&ta, &int, None);
        let plain = resolve_metadata(&statements, &leaf);
        let mut t = PolicyTrace::default();
        let traced = resolve_metadata_traced(&statements, &leaf, Some(&mut t));
        match (&plain, &traced) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a, b, "case {}", case["n"]);
                assert_eq!(t.metadata.as_ref(), Some(a));
                assert_steps_chain(&t, a);
                with_steps += usize::from(!t.operators.is_empty());
            }
            (Err(a), Err(b)) => {
                assert_eq!(a.to_string(), b.to_string(), "case {}", case["n"]);
                assert!(t.metadata.is_none());
                // A failure is the last thing recorded: a merge without a result, or an
                // operator with its reason.
                let merge_failed = t.merges.last().is_some_and(|m| m.combined.is_none());
                let op_failed = t.operators.last().is_some_and(|s| s.error.is_some());
                let bad_input = t.merges.len() < 2 && !op_failed;
                assert!(merge_failed || op_failed || bad_input, "case {}", case["n"]);
            }
            _ => panic!("case {}: {plain:?} vs {traced:?}", case["n"]),
        }
    }
    assert!(with_steps > 1000, "{with_steps}");
}

#[test]
fn merges_overlay_filter_and_operators_are_recorded_in_the_specifications_order() {
    let ta = json!({RP: {"grant_types": {"subset_of": ["authorization_code", "refresh_token"]},
                         "contacts": {"add": ["fed@ta.example"]}}});
    let int = json!({RP: {"grant_types": {"superset_of": ["authorization_code"]},
                          "client_name": {"value": "I name"}}});
    let overlay =
        json!({RP: {"client_uri": "https://i.example/leaf"}, "openid_provider": {"x": 1}});
    let leaf = json!({RP: {"grant_types": ["authorization_code", "refresh_token", "implicit"],
                           "contacts": ["ops@leaf.example"], "client_name": "leaf"},
                      "oauth_resource": {"k": 1}});
    let constraints = Constraints {
        allowed_entity_types: Some(vec![RP.to_owned()]),
        ..Default::default()
    };
    let mut statements = two_levels(&ta, &int, Some(&overlay)).to_vec();
    statements[0].constraints = Some(&constraints);
    let mut t = PolicyTrace::default();
    let out = resolve_metadata_traced(&statements, &leaf, Some(&mut t)).unwrap();
    assert_eq!(out, resolve_metadata(&statements, &leaf).unwrap());

    assert_eq!(t.merges.len(), 2);
    assert_eq!(t.merges[0].combined.as_ref(), Some(&ta));
    let combined = t.merges[1].combined.as_ref().unwrap();
    assert_eq!(
        combined[RP]["grant_types"]["superset_of"],
        json!(["authorization_code"])
    );
    assert_eq!(combined[RP]["client_name"]["value"], "I name");
    // The superior's metadata claim before the policy, only for the leaf's Entity Types.
    let o = t.superior_metadata.as_ref().unwrap();
    assert_eq!(o.after[RP]["client_uri"], "https://i.example/leaf");
    assert!(o.after.get("openid_provider").is_none());
    assert_eq!(t.entity_type_filters[0].removed, ["oauth_resource"]);
    assert!(t.before_policy.get("oauth_resource").is_none());
    assert_eq!(t.before_policy[RP]["client_uri"], "https://i.example/leaf");

    let step = |p: &str, op: &str| {
        t.operators
            .iter()
            .find(|s| s.parameter == p && s.operator == op)
            .unwrap_or_else(|| panic!("{p} {op}"))
    };
    let s = step("grant_types", "subset_of");
    assert_eq!(
        s.before,
        Some(json!(["authorization_code", "refresh_token", "implicit"]))
    );
    assert_eq!(
        s.after,
        Some(json!(["authorization_code", "refresh_token"]))
    );
    let s = step("grant_types", "superset_of");
    assert_eq!(s.before, s.after);
    let s = step("contacts", "add");
    assert_eq!(s.after, Some(json!(["ops@leaf.example", "fed@ta.example"])));
    let s = step("client_name", "value");
    assert_eq!(
        (s.before.clone(), s.after.clone()),
        (Some(json!("leaf")), Some(json!("I name")))
    );
    assert_eq!(out[RP]["client_name"], "I name");
    assert_steps_chain(&t, &out);
}

#[test]
fn a_scope_is_shown_as_the_metadata_has_it() {
    let ta = json!({RP: {"scope": {"subset_of": ["openid", "email"], "default": "openid"}}});
    let int = json!({});
    let leaf = json!({RP: {"scope": "openid email phone"}});
    let mut t = PolicyTrace::default();
    let out = resolve_metadata_traced(&two_levels(&ta, &int, None), &leaf, Some(&mut t)).unwrap();
    assert_eq!(out[RP]["scope"], "openid email");
    let s = t
        .operators
        .iter()
        .find(|s| s.operator == "subset_of")
        .unwrap();
    assert_eq!(s.before, Some(json!("openid email phone")));
    assert_eq!(s.after, Some(json!("openid email")));
    let d = t
        .operators
        .iter()
        .find(|s| s.operator == "default")
        .unwrap();
    assert_eq!(d.operand, json!("openid"));
    assert_steps_chain(&t, &out);
}

#[test]
fn failures_end_the_trace_where_the_engine_stopped() {
    // A `value` conflict: the second merge has no result.
    let ta = json!({RP: {"client_name": {"value": "TA name"}}});
    let int = json!({RP: {"client_name": {"value": "I name"}}});
    let leaf = json!({RP: {"client_name": "leaf"}});
    let mut t = PolicyTrace::default();
    let e = resolve_metadata_traced(&two_levels(&ta, &int, None), &leaf, Some(&mut t)).unwrap_err();
    assert!(e.to_string().contains("values differ"), "{e}");
    assert_eq!(t.merges.len(), 2);
    assert!(t.merges[1].combined.is_none());
    assert!(t.operators.is_empty() && t.metadata.is_none());

    // An operator that refuses the value: its step carries the reason.
    let ta = json!({RP: {"client_name": {"one_of": ["other"]}}});
    let mut t = PolicyTrace::default();
    let e = resolve_metadata_traced(&two_levels(&ta, &json!({}), None), &leaf, Some(&mut t))
        .unwrap_err();
    let last = t.operators.last().unwrap();
    assert_eq!(last.operator, "one_of");
    assert_eq!(last.before, Some(json!("leaf")));
    assert!(last.error.as_deref().unwrap().contains("one_of"), "{e}");
}
