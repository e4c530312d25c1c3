//! Unit tests for operators, merging, crit handling, resolution, `used_operators` and `preview`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Map, Value, json};

use super::vector_tests::set_eq;
use super::*;
use crate::Error;

fn map(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap()
}

fn is_policy_err<T: std::fmt::Debug>(r: crate::Result<T>) -> bool {
    matches!(r, Err(Error::InvalidPolicy(_)))
}

fn is_metadata_err<T: std::fmt::Debug>(r: crate::Result<T>) -> bool {
    matches!(r, Err(Error::InvalidMetadata(_)))
}

#[test]
fn policy_operator_types_and_combinations() {
    assert!(check_param_policy(&map(json!({"essential": "yes"})), &[]).is_err());
    assert!(check_param_policy(&map(json!({"subset_of": "a"})), &[]).is_err());
    assert!(check_param_policy(&map(json!({"add": [null]})), &[]).is_err());
    assert!(check_param_policy(&map(json!({"default": null})), &[]).is_err());
    assert!(check_param_policy(&map(json!({"add": ["a"], "one_of": ["a"]})), &[]).is_err());
    assert!(check_param_policy(&map(json!({"one_of": ["a"], "subset_of": ["a"]})), &[]).is_err());
    assert!(check_param_policy(&map(json!({"value": "x", "one_of": ["a"]})), &[]).is_err());
    assert!(check_param_policy(&map(json!({"value": "a", "one_of": ["a", "b"]})), &[]).is_ok());
    assert!(
        check_param_policy(&map(json!({"subset_of": ["a"], "superset_of": ["a"]})), &[]).is_ok()
    );
    assert!(
        check_param_policy(&map(json!({"subset_of": ["a"], "superset_of": ["b"]})), &[]).is_err()
    );
}

#[test]
fn policy_unknown_operators_and_crit() {
    let p = map(json!({"regexp": "^https://", "essential": true}));
    assert!(check_param_policy(&p, &[]).is_ok());
    assert!(is_policy_err(check_param_policy(
        &p,
        &["regexp".to_string()]
    )));
    // A standard operator listed as critical is understood.
    assert!(check_param_policy(&p, &["essential".to_string()]).is_ok());
    // Unknown operators are ignored on application.
    assert_eq!(
        apply_param_policy(&p, Some(&json!("ftp://x"))).unwrap(),
        Some(json!("ftp://x"))
    );
    // resolve_metadata collects crit from every statement.
    let pol = json!({"openid_provider": {"issuer": {"regexp": "x"}}});
    let crit = ["regexp".to_string()];
    let chain = [
        ChainStatementPolicy {
            metadata_policy_crit: Some(&crit),
            ..Default::default()
        },
        ChainStatementPolicy {
            metadata_policy: Some(&pol),
            ..Default::default()
        },
    ];
    assert!(is_policy_err(resolve_metadata(
        &chain,
        &json!({"openid_provider": {}})
    )));
}

#[test]
fn policy_merge_rules() {
    let merged = merge_param_policy(
        &map(json!({"one_of": ["a", "b"], "essential": false})),
        &map(json!({"one_of": ["b", "c"], "essential": true})),
    )
    .unwrap();
    assert_eq!(
        Value::Object(merged),
        json!({"one_of": ["b"], "essential": true})
    );
    assert!(is_policy_err(merge_param_policy(
        &map(json!({"one_of": ["a"]})),
        &map(json!({"one_of": ["b"]}))
    )));
    assert!(is_policy_err(merge_param_policy(
        &map(json!({"default": 1})),
        &map(json!({"default": 2}))
    )));
    let sup = json!({"openid_provider": {"a": {"add": ["x"]}}});
    let sub =
        json!({"openid_provider": {"a": {"add": ["y"]}, "b": {"value": 1}}, "oauth_client": {}});
    let m = merge_metadata_policy(&sup, &sub).unwrap();
    assert!(set_eq(
        &m,
        &json!({"openid_provider": {"a": {"add": ["x", "y"]}, "b": {"value": 1}}, "oauth_client": {}})
    ));
    assert!(is_policy_err(merge_metadata_policy(
        &json!({"t": {"p": 1}}),
        &json!({})
    )));
}

#[test]
fn policy_apply_scope_and_entity_types() {
    let policy = json!({
        "openid_relying_party": {"scope": {"subset_of": ["openid", "email"], "add": ["openid"]}},
        "openid_provider": {"issuer": {"essential": true}}
    });
    let md = json!({"openid_relying_party": {"scope": "email profile"}});
    let out = apply_metadata_policy(&policy, &md).unwrap();
    assert_eq!(
        out,
        json!({"openid_relying_party": {"scope": "email openid"}})
    );
}

#[test]
fn policy_resolve_overlay_and_allowed_types() {
    let pol = json!({"openid_relying_party": {"client_name": {"essential": true}}});
    let overlay =
        json!({"openid_relying_party": {"client_name": "X"}, "openid_provider": {"a": 1}});
    let c = Constraints {
        allowed_entity_types: Some(vec![]),
        ..Default::default()
    };
    let leaf = json!({"openid_relying_party": {}, "federation_entity": {"n": 1}});
    let overlay_only = [ChainStatementPolicy {
        metadata_policy: Some(&pol),
        metadata: Some(&overlay),
        ..Default::default()
    }];
    let got = resolve_metadata(&overlay_only, &leaf).unwrap();
    assert_eq!(
        got,
        json!({"openid_relying_party": {"client_name": "X"}, "federation_entity": {"n": 1}})
    );
    let filtered = [ChainStatementPolicy {
        metadata_policy: Some(&pol),
        constraints: Some(&c),
        ..Default::default()
    }];
    assert_eq!(
        resolve_metadata(&filtered, &leaf).unwrap(),
        json!({"federation_entity": {"n": 1}})
    );
    assert!(is_metadata_err(resolve_metadata(
        &[ChainStatementPolicy {
            metadata_policy: Some(&pol),
            ..Default::default()
        }],
        &leaf
    )));
}

#[test]
fn policy_used_operators() {
    let p = json!({
        "openid_provider": {"a": {"value": 1, "essential": true}, "b": {"regexp": "x"}},
        "openid_relying_party": {"c": {"subset_of": []}}
    });
    let ops: Vec<String> = used_operators(&p).into_iter().collect();
    assert_eq!(ops, ["essential", "regexp", "subset_of", "value"]);
    assert!(used_operators(&json!(null)).is_empty());
}

#[test]
fn policy_preview_claim_level_and_full() {
    let input = json!({
        "policies": [
            {"grant_types": {"subset_of": ["authorization_code", "refresh_token"]}},
            {"grant_types": {"subset_of": ["authorization_code"]}, "contacts": {"add": ["a@x"]}}
        ],
        "metadata": {"grant_types": ["authorization_code", "implicit"]}
    });
    let out = preview(&input).unwrap();
    assert!(set_eq(
        &out,
        &json!({
            "merged_policy": {"grant_types": {"subset_of": ["authorization_code"]}, "contacts": {"add": ["a@x"]}},
            "metadata": {"grant_types": ["authorization_code"], "contacts": ["a@x"]}
        })
    ));
    let full = json!({
        "policies": [{"openid_provider": {"x": {"default": 1}}}, {}],
        "metadata": {"openid_provider": {}}
    });
    assert_eq!(
        preview(&full).unwrap(),
        json!({
            "merged_policy": {"openid_provider": {"x": {"default": 1}}},
            "metadata": {"openid_provider": {"x": 1}}
        })
    );
}

#[test]
fn policy_preview_errors() {
    assert!(is_policy_err(preview(&json!({"metadata": {}}))));
    assert!(is_policy_err(preview(&json!({"policies": [1]}))));
    let mixed = json!({"policies": [{"p": {"value": 1}}, {"t": {"p": {"value": 1}}}]});
    assert!(is_policy_err(preview(&mixed)));
    let conflict = json!({"policies": [{"p": {"value": 1}}, {"p": {"value": 2}}], "metadata": {}});
    assert!(is_policy_err(preview(&conflict)));
    let bad_md = json!({"policies": [{"p": {"one_of": ["a"]}}], "metadata": {"p": "b"}});
    assert!(is_metadata_err(preview(&bad_md)));
    let essential = json!({"policies": [{"p": {"essential": true}}], "metadata": {}});
    assert!(is_metadata_err(preview(&essential)));
}
