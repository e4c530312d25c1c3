//! Unit tests for the `except` operator: operand type, merge (union), apply, each combination
//! rule, `metadata_policy_crit`, the write-time checks and the preview.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Map, Value, json};

use super::vector_tests::set_eq;
use super::*;
use crate::Error;

fn map(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap()
}

fn check(v: Value) -> crate::Result<()> {
    check_param_policy(&map(v), &[])
}

fn policy_message(r: crate::Result<()>) -> String {
    match r {
        Err(Error::InvalidPolicy(m)) => m,
        other => panic!("expected invalid_policy, got {other:?}"),
    }
}

fn apply(policy: Value, value: Option<Value>) -> crate::Result<Option<Value>> {
    apply_param_policy(&map(policy), value.as_ref())
}

#[test]
fn except_takes_an_array_of_set_elements() {
    assert!(check(json!({"except": ["a", 1, {"k": "v"}]})).is_ok());
    assert!(check(json!({"except": []})).is_ok());
    let m = policy_message(check(json!({"except": "a"})));
    assert!(m.starts_with("operator except requires an array"), "{m}");
    assert!(check(json!({"except": [null]})).is_err());
    assert!(check(json!({"except": [["a"]]})).is_err());
}

#[test]
fn except_merges_as_the_union() {
    let merged = merge_param_policy(
        &map(json!({"except": ["RS256", "ES256"]})),
        &map(json!({"except": ["RS384", "ES256"]})),
    )
    .unwrap();
    assert_eq!(
        Value::Object(merged),
        json!({"except": ["RS256", "ES256", "RS384"]})
    );
    // Only one side: copied.
    let merged = merge_param_policy(
        &map(json!({"essential": true})),
        &map(json!({"except": ["x"]})),
    )
    .unwrap();
    assert_eq!(
        Value::Object(merged),
        json!({"essential": true, "except": ["x"]})
    );
    // A subordinate cannot re-admit a value: its smaller set still merges to the superior's.
    let merged = merge_param_policy(
        &map(json!({"except": ["a", "b"]})),
        &map(json!({"except": []})),
    )
    .unwrap();
    assert_eq!(Value::Object(merged), json!({"except": ["a", "b"]}));
}

#[test]
fn except_removes_excepted_values_from_an_array() {
    let p = json!({"except": ["RS256", "RS384"]});
    assert_eq!(
        apply(p.clone(), Some(json!(["RS256", "RS512", "ES256", "RS384"]))).unwrap(),
        Some(json!(["RS512", "ES256"]))
    );
    // Emptied, the parameter stays present (as subset_of leaves `[]`).
    assert_eq!(
        apply(p.clone(), Some(json!(["RS256"]))).unwrap(),
        Some(json!([]))
    );
    assert_eq!(apply(p.clone(), None).unwrap(), None);
    // Numbers and objects compare by JSON equality.
    assert_eq!(
        apply(
            json!({"except": [1, {"a": 1}]}),
            Some(json!([1, 2, {"a": 1}, {"a": 2}]))
        )
        .unwrap(),
        Some(json!([2, {"a": 2}]))
    );
}

#[test]
fn except_refuses_a_single_excepted_value() {
    let p = json!({"except": ["client_secret_basic", 7]});
    match apply(p.clone(), Some(json!("client_secret_basic"))) {
        Err(Error::InvalidMetadata(m)) => {
            assert_eq!(
                m,
                "the value \"client_secret_basic\" is among the except values"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        apply(p.clone(), Some(json!(7))),
        Err(Error::InvalidMetadata(_))
    ));
    assert_eq!(
        apply(p, Some(json!("private_key_jwt"))).unwrap(),
        Some(json!("private_key_jwt"))
    );
}

#[test]
fn except_on_scope_removes_words() {
    let policy = json!({"openid_relying_party": {"scope": {"except": ["phone"]}}});
    let md = json!({"openid_relying_party": {"scope": "openid phone email"}});
    assert_eq!(
        apply_metadata_policy(&policy, &md).unwrap(),
        json!({"openid_relying_party": {"scope": "openid email"}})
    );
}

#[test]
fn except_refuses_a_value_an_add_or_a_superset_of_it_forbids() {
    let m = policy_message(check(json!({"value": "a", "except": ["a"]})));
    assert_eq!(m, "the value \"a\" is among the except values");
    let m = policy_message(check(json!({"value": ["a", "b"], "except": ["b", "c"]})));
    assert_eq!(m, "the value must not contain except values (\"b\")");
    let m = policy_message(check(json!({"add": ["a", "b"], "except": ["b"]})));
    assert_eq!(
        m,
        "the values of add must not be among the except values (\"b\")"
    );
    let m = policy_message(check(
        json!({"superset_of": ["a", "b"], "except": ["a", "b"]}),
    ));
    assert_eq!(
        m,
        "the values of superset_of must not be among the except values (\"a\", \"b\")"
    );
    // Disjoint: allowed.
    assert!(check(json!({"value": "a", "except": ["b"]})).is_ok());
    assert!(check(json!({"value": ["a"], "except": ["b"]})).is_ok());
    assert!(check(json!({"add": ["a"], "except": ["b"]})).is_ok());
    assert!(check(json!({"superset_of": ["a"], "except": ["b"]})).is_ok());
    // A null value removes the parameter; nothing is left to except.
    assert!(check(json!({"value": null, "except": ["a"]})).is_ok());
}

#[test]
fn except_combines_with_default_one_of_subset_of_and_essential() {
    // Even overlapping: the order of application settles them.
    for p in [
        json!({"default": "a", "except": ["a"]}),
        json!({"one_of": ["a", "b"], "except": ["a"]}),
        json!({"subset_of": ["a", "b"], "except": ["a"]}),
        json!({"essential": true, "except": ["a"]}),
        json!({"subset_of": ["a", "b"], "superset_of": ["b"], "except": ["a"], "essential": true}),
    ] {
        assert!(check(p.clone()).is_ok(), "{p}");
    }
    // default runs before except.
    assert!(matches!(
        apply(json!({"default": "a", "except": ["a"]}), None),
        Err(Error::InvalidMetadata(_))
    ));
    assert_eq!(
        apply(json!({"default": ["a", "b"], "except": ["a"]}), None).unwrap(),
        Some(json!(["b"]))
    );
    // one_of admits "a", except then refuses it.
    assert!(matches!(
        apply(
            json!({"one_of": ["a", "b"], "except": ["a"]}),
            Some(json!("a"))
        ),
        Err(Error::InvalidMetadata(_))
    ));
    // essential runs after except: an emptied array is present, an absent one is not.
    let p = json!({"essential": true, "except": ["a"]});
    assert_eq!(
        apply(p.clone(), Some(json!(["a"]))).unwrap(),
        Some(json!([]))
    );
    assert!(matches!(apply(p, None), Err(Error::InvalidMetadata(_))));
}

#[test]
fn a_merge_that_brings_a_forbidden_value_and_except_together_is_refused() {
    // Neither side alone is wrong; the merged policy is (§6.1.4.1 re-checks it).
    for (sup, sub) in [
        (json!({"value": "a"}), json!({"except": ["a"]})),
        (json!({"except": ["a"]}), json!({"add": ["a"]})),
        (json!({"superset_of": ["a"]}), json!({"except": ["a"]})),
    ] {
        assert!(
            matches!(
                merge_param_policy(&map(sup.clone()), &map(sub.clone())),
                Err(Error::InvalidPolicy(_))
            ),
            "{sup} + {sub}"
        );
    }
}

#[test]
fn except_is_implemented_so_it_may_be_critical() {
    assert!(implements("except"));
    assert!(check_crit_operator("except").is_ok());
    let crit = ["except".to_owned()];
    assert!(check_param_policy(&map(json!({"except": ["a"]})), &crit).is_ok());
    // A chain that marks it critical resolves, and the operator is enforced.
    let pol = json!({"openid_provider": {"grant_types_supported": {"except": ["implicit"]}}});
    let chain = [ChainStatementPolicy {
        metadata_policy: Some(&pol),
        metadata_policy_crit: Some(&crit),
        ..Default::default()
    }];
    let leaf =
        json!({"openid_provider": {"grant_types_supported": ["authorization_code", "implicit"]}});
    assert_eq!(
        resolve_metadata(&chain, &leaf).unwrap(),
        json!({"openid_provider": {"grant_types_supported": ["authorization_code"]}})
    );
    // Operators Pharos does not implement stay refused when critical, and ignored otherwise.
    let regexp = ["regexp".to_owned()];
    assert!(check_param_policy(&map(json!({"regexp": "^a"})), &regexp).is_err());
    assert!(check_crit_operator("regexp").is_err());
    assert!(check_param_policy(&map(json!({"regexp": "^a"})), &[]).is_ok());
}

#[test]
fn except_is_accepted_at_write_time_and_its_combinations_checked() {
    let rules = WriteRules::default();
    let ok = json!({"openid_provider": {"id_token_signing_alg_values_supported": {
        "subset_of": ["RS256", "ES256"], "except": ["RS256"]}}});
    assert!(check_policy_to_store(&ok, &rules).is_ok());
    let bad = json!({"oauth_client": {"token_endpoint_auth_method": {
        "value": "client_secret_basic", "except": ["client_secret_basic"]}}});
    let e = check_policy_to_store(&bad, &rules).unwrap_err();
    assert!(
        e.starts_with("metadata_policy: oauth_client.token_endpoint_auth_method: "),
        "{e}"
    );
    // The refusal of an unknown operator names except among those Pharos implements.
    let unknown = json!({"openid_provider": {"x": {"exceptt": ["a"]}}});
    let e = check_policy_to_store(&unknown, &rules).unwrap_err();
    assert!(e.contains("essential, except)"), "{e}");
}

#[test]
fn except_in_the_preview() {
    let input = json!({
        "policies": [
            {"grant_types": {"except": ["implicit"]}},
            {"grant_types": {"except": ["password"]}}
        ],
        "metadata": {"grant_types": ["authorization_code", "implicit", "password"]}
    });
    let out = preview(&input).unwrap();
    assert!(set_eq(
        &out,
        &json!({
            "merged_policy": {"grant_types": {"except": ["implicit", "password"]}},
            "metadata": {"grant_types": ["authorization_code"]}
        })
    ));
    let full = json!({
        "policies": [{"oauth_client": {"token_endpoint_auth_method": {"except": ["none"]}}}],
        "metadata": {"oauth_client": {"token_endpoint_auth_method": "none"}}
    });
    assert!(matches!(preview(&full), Err(Error::InvalidMetadata(_))));
}
