use std::sync::Arc;

use serde_json::{Value, json};

use super::*;
use crate::claims::AdditionalClaim;
use crate::endpoint::{EndpointConfig, EndpointType, FetchConfig};
use crate::jose::{Algorithm, Jwks, Signer as _, SigningKey};
use crate::snapshot::*;
use crate::subordinate::{GeneralSettings, SubordinateStatus, Subordinates};

const NOW: i64 = 1_000_000;

fn key(kid: &str, exp: Option<i64>) -> Jwk {
    let mut k = json!({"kty": "EC", "crv": "P-256", "kid": kid, "x": "x", "y": "y"})
        .as_object()
        .unwrap()
        .clone();
    if let Some(e) = exp {
        k.insert("exp".into(), json!(e));
    }
    k
}

fn sub(keys: Vec<Jwk>) -> Subordinate {
    Subordinate {
        id: 7,
        entity_id: "https://leaf.example".into(),
        status: SubordinateStatus::Active,
        registered_entity_types: ["openid_relying_party".into()].into(),
        jwks: Jwks { keys }.into(),
        metadata: None,
        metadata_policy: None,
        constraints: None,
        additional_claims: vec![],
        registered: 0,
        updated: 0,
        version: 1,
        statement: Default::default(),
    }
}

fn snap(general: GeneralSettings, fetch_lifetime: Option<u64>) -> Snapshot {
    let k = SigningKey::generate(Algorithm::ES256, 2048).unwrap();
    let published = vec![k.public_jwk().clone()];
    let entries = fetch_lifetime
        .map(|l| EndpointEntry {
            kind: EndpointType::Fetch,
            path: Some("/fetch".into()),
            url: None,
            auth_enabled: false,
            auth_trust_anchors: vec![],
            config: EndpointConfig::Fetch(FetchConfig {
                statement_lifetime: l,
            }),
        })
        .into_iter()
        .collect();
    Snapshot {
        ready: Default::default(),
        generation: 1,
        entity_id: "https://ta.example".into(),
        registry: Arc::new(Registry::new(entries, vec![])),
        entity_configuration: Arc::default(),
        trust_anchors: Arc::default(),
        keys: Arc::new(KeySet {
            signer: Arc::new(k),
            published,
            historical: vec![],
        }),
        subordinates: Arc::new(Subordinates::new([], Arc::new(general), 0)),
        trust_marks: Default::default(),
        collections: Default::default(),
        statements_generation: 1,
    }
}

fn kids(p: &Map<String, Value>) -> Vec<String> {
    p["jwks"]["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kid"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn key_expiry_filtering_at_the_boundaries() {
    let s = snap(GeneralSettings::default(), None);
    let sub = sub(vec![
        key("equal", Some(NOW)),
        key("past", Some(NOW - 1)),
        key("none", None),
        key("zero", Some(0)),
        key("future", Some(NOW + 10)),
    ]);
    let p = payload(&s, &sub, NOW, None);
    assert_eq!(kids(&p), ["equal", "none", "zero", "future"]);
    // Keys without exp do not lift the cap: the latest exp among published keys wins.
    assert_eq!(p["exp"], NOW + 10);
    assert_eq!(
        sub.jwks.jwks().keys.len(),
        5,
        "the stored set keeps every key"
    );
}

#[test]
fn all_expired_gives_empty_jwks_and_no_cap() {
    let s = snap(GeneralSettings::default(), None);
    let p = payload(&s, &sub(vec![key("a", Some(NOW - 5))]), NOW, None);
    assert_eq!(p["jwks"], json!({"keys": []}));
    assert_eq!(p["exp"], NOW + DEFAULT_STATEMENT_LIFETIME);
}

#[test]
fn exp_capped_at_latest_key_exp_only_when_earlier() {
    let s = snap(GeneralSettings::default(), Some(3600));
    let p = payload(
        &s,
        &sub(vec![key("a", Some(NOW + 100)), key("b", Some(NOW + 200))]),
        NOW,
        None,
    );
    assert_eq!(p["exp"], NOW + 200);
    let p = payload(&s, &sub(vec![key("a", Some(NOW + 100_000))]), NOW, None);
    assert_eq!(p["exp"], NOW + 3600);
    let p = payload(&s, &sub(vec![key("a", None)]), NOW, None);
    assert_eq!(p["exp"], NOW + 3600);
}

#[test]
fn lifetime_precedence_general_then_endpoint_then_default() {
    let g = GeneralSettings {
        lifetime: Some(60),
        ..Default::default()
    };
    assert_eq!(lifetime(&snap(g, Some(3600))), 60);
    assert_eq!(
        lifetime(&snap(GeneralSettings::default(), Some(3600))),
        3600
    );
    assert_eq!(lifetime(&snap(GeneralSettings::default(), None)), 600_000);
}

#[test]
fn per_subordinate_values_replace_general_ones() {
    let g = GeneralSettings {
        metadata_policy: Some(json!({"openid_relying_party": {"contacts": {"add": ["g@x"]}}})),
        constraints: Some(json!({"max_path_length": 1})),
        metadata: Some(json!({"openid_relying_party": {"client_name": "general"}})),
        additional_claims: vec![AdditionalClaim {
            claim: "x_general".into(),
            value: json!(1),
            crit: true,
        }],
        ..Default::default()
    };
    let s = snap(g, None);
    let mut leaf = sub(vec![key("a", None)]);
    let p = payload(&s, &leaf, NOW, Some("https://ta.example/fetch"));
    assert_eq!(
        p["metadata_policy"]["openid_relying_party"]["contacts"]["add"],
        json!(["g@x"])
    );
    assert_eq!(p["constraints"], json!({"max_path_length": 1}));
    assert_eq!(
        p["metadata"]["openid_relying_party"]["client_name"],
        "general"
    );
    assert_eq!(p["x_general"], 1);
    assert_eq!(p["crit"], json!(["x_general"]));
    assert_eq!(p["source_endpoint"], "https://ta.example/fetch");

    leaf.metadata_policy = Some(Box::new(
        json!({"openid_relying_party": {"scope": {"value": "openid"}}}),
    ));
    leaf.constraints = Some(Box::new(json!({"max_path_length": 0})));
    leaf.additional_claims = vec![
        AdditionalClaim {
            claim: "x_own".into(),
            value: json!("v"),
            crit: false,
        },
        AdditionalClaim {
            claim: "iss".into(),
            value: json!("https://evil"),
            crit: true,
        },
    ];
    let p = payload(&s, &leaf, NOW, None);
    assert!(
        p["metadata_policy"]["openid_relying_party"]
            .get("contacts")
            .is_none()
    );
    assert_eq!(p["constraints"], json!({"max_path_length": 0}));
    assert_eq!(p["x_own"], "v");
    assert!(p.get("x_general").is_none());
    assert_eq!(
        p["iss"], "https://ta.example",
        "additional claims never shadow protocol claims"
    );
    assert!(p.get("crit").is_none());
    assert!(p.get("source_endpoint").is_none());
}

#[test]
fn metadata_policy_crit_lists_only_used_operators() {
    let g = GeneralSettings {
        metadata_policy: Some(
            json!({"openid_relying_party": {"contacts": {"x_regex": "^a", "add": ["a"]}}}),
        ),
        metadata_policy_crit: vec!["x_regex".into(), "x_unused".into()],
        ..Default::default()
    };
    let s = snap(g, None);
    let p = payload(&s, &sub(vec![]), NOW, None);
    assert_eq!(p["metadata_policy_crit"], json!(["x_regex"]));
    let mut leaf = sub(vec![]);
    leaf.metadata_policy = Some(Box::new(
        json!({"openid_relying_party": {"contacts": {"add": ["a"]}}}),
    ));
    let p = payload(&s, &leaf, NOW, None);
    assert!(p.get("metadata_policy_crit").is_none());
}

#[test]
fn except_is_published_as_critical_when_used() {
    let g = GeneralSettings {
        metadata_policy: Some(
            json!({"openid_provider": {"grant_types_supported": {"except": ["implicit"]}}}),
        ),
        metadata_policy_crit: vec!["except".into()],
        ..Default::default()
    };
    let p = payload(&snap(g, None), &sub(vec![]), NOW, None);
    assert_eq!(p["metadata_policy_crit"], json!(["except"]));
}

#[test]
fn next_key_change_is_one_second_after_the_earliest_live_exp() {
    let leaf = sub(vec![
        key("a", Some(NOW + 5)),
        key("b", Some(NOW - 5)),
        key("c", None),
    ]);
    assert_eq!(next_key_change(&leaf, NOW), Some(NOW + 6));
    assert_eq!(next_key_change(&sub(vec![key("c", None)]), NOW), None);
}
