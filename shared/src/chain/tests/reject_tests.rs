//! Resolution must fail: loops, lifetimes, keys, constraints, policies and `crit`.

use serde_json::json;

use super::{Fed, NOW, chain_error, id};
use crate::Error;

/// TA -> IA -> leaf, all published; `ta_about_ia` adds claims to the TA's statement.
fn three_levels(ta_about_ia: serde_json::Value) -> (Fed, String, String, String) {
    let (ta, ia, leaf) = (id("ta"), id("ia"), id("leaf"));
    let mut fed = Fed::default();
    fed.superior(&ta, &[]);
    fed.superior(&ia, &[&ta]);
    fed.leaf(&leaf, &[&ia]);
    fed.subordinate(&ta, &ia, ta_about_ia);
    fed.subordinate(&ia, &leaf, json!({}));
    (fed, ta, ia, leaf)
}

#[tokio::test]
async fn chain_reject_authority_hint_loop() {
    let (a, b, leaf, ta) = (id("a"), id("b"), id("leaf"), id("ta"));
    let mut fed = Fed::default();
    fed.superior(&ta, &[]);
    fed.superior(&a, &[&b]);
    fed.superior(&b, &[&a, &leaf]);
    fed.leaf(&leaf, &[&a]);
    fed.subordinate(&a, &leaf, json!({}));
    fed.subordinate(&b, &a, json!({}));
    fed.subordinate(&a, &b, json!({}));
    let anchors = [fed.anchor(&ta, false)];
    let msg = chain_error(fed.resolve(&leaf, &anchors).await);
    assert!(msg.contains(&format!("loop: {b} -> {a}")), "{msg}");
    assert!(msg.contains(&format!("loop: {b} -> {leaf}")), "{msg}");
}

#[tokio::test]
async fn chain_reject_expired_or_future_statement() {
    let (mut fed, _, ia, leaf) = three_levels(json!({}));
    fed.subordinate(&ia, &leaf, json!({"exp": NOW}));
    let anchors = [fed.anchor(&id("ta"), true)];
    let msg = chain_error(fed.resolve(&leaf, &anchors).await);
    assert!(msg.contains("ES[1]: exp"), "{msg}");
    // iat within the skew is accepted, beyond it rejected.
    fed.subordinate(&ia, &leaf, json!({"iat": NOW + 60}));
    fed.resolve(&leaf, &anchors).await.unwrap();
    fed.subordinate(&ia, &leaf, json!({"iat": NOW + 61}));
    let msg = chain_error(fed.resolve(&leaf, &anchors).await);
    assert!(msg.contains("iat"), "{msg}");
}

#[tokio::test]
async fn chain_reject_wrong_signing_key() {
    let (mut fed, ta, ia, leaf) = three_levels(json!({}));
    let anchors = [fed.anchor(&ta, true)];
    // The IA's statement about the leaf, signed by someone else.
    let claims = fed.claims(&ia, &leaf);
    let forged = fed.sign_as(&id("mallory"), &claims);
    fed.publish_statement(&ia, &leaf, forged);
    let msg = chain_error(fed.resolve(&leaf, &anchors).await);
    assert!(msg.contains("ES[1] (keys of ES[2])"), "{msg}");
    // The IA vouches for keys the leaf does not sign with: the leaf's EC fails.
    let mut claims = fed.claims(&ia, &leaf);
    claims["jwks"] = json!(fed.jwks(&id("mallory")));
    let stmt = fed.sign_as(&ia, &claims);
    fed.publish_statement(&ia, &leaf, stmt);
    let msg = chain_error(fed.resolve(&leaf, &anchors).await);
    assert!(msg.contains("ES[0] (keys of ES[1])"), "{msg}");
}

#[tokio::test]
async fn chain_reject_pinned_anchor_keys_that_differ() {
    let (fed, ta, _, leaf) = three_levels(json!({}));
    let pinned = [crate::chain::AnchorSpec {
        entity_id: ta.clone(),
        jwks: Some(Fed::default().jwks(&ta)),
        ..Default::default()
    }];
    let msg = chain_error(fed.resolve(&leaf, &pinned).await);
    assert!(msg.contains("Trust Anchor, pinned keys"), "{msg}");
}

#[tokio::test]
async fn chain_reject_max_path_length() {
    let (mut fed, ta, _, leaf) = three_levels(json!({"constraints": {"max_path_length": 0}}));
    let anchors = [fed.anchor(&ta, true)];
    let msg = chain_error(fed.resolve(&leaf, &anchors).await);
    assert!(msg.contains("max_path_length"), "{msg}");
    let (mut fed, ta, _, leaf) = three_levels(json!({"constraints": {"max_path_length": 1}}));
    let anchors = [fed.anchor(&ta, true)];
    fed.resolve(&leaf, &anchors).await.unwrap();
}

#[tokio::test]
async fn chain_reject_naming_constraint() {
    let c = json!({"constraints": {"naming_constraints": {"excluded": ["leaf.example"]}}});
    let (mut fed, ta, _, leaf) = three_levels(c);
    let anchors = [fed.anchor(&ta, true)];
    let msg = chain_error(fed.resolve(&leaf, &anchors).await);
    assert!(
        msg.contains("ES[2] constraints") && msg.contains("excluded"),
        "{msg}"
    );
    let c = json!({"constraints": {"naming_constraints": {"permitted": ["ia.example", "leaf.example"]}}});
    let (fed, ta, _, leaf) = three_levels(c);
    fed.resolve(&leaf, &[fed_anchor(&ta)]).await.unwrap();
}

fn fed_anchor(ta: &str) -> crate::chain::AnchorSpec {
    crate::chain::AnchorSpec {
        entity_id: ta.to_owned(),
        jwks: None,
        ..Default::default()
    }
}

#[tokio::test]
async fn chain_reject_failing_policy_as_invalid_metadata() {
    let policy = json!({"metadata_policy": {"openid_relying_party": {
        "client_name": {"one_of": ["Alice", "Bob"]},
    }}});
    let (fed, ta, _, leaf) = three_levels(policy);
    let r = fed.resolve(&leaf, &[fed_anchor(&ta)]).await;
    assert!(matches!(r, Err(Error::InvalidMetadata(_))), "{r:?}");
    // A malformed policy is a policy error.
    let policy = json!({"metadata_policy": {"openid_relying_party": {
        "client_name": {"one_of": "Alice"},
    }}});
    let (fed, ta, _, leaf) = three_levels(policy);
    let r = fed.resolve(&leaf, &[fed_anchor(&ta)]).await;
    assert!(matches!(r, Err(Error::InvalidPolicy(_))), "{r:?}");
}

#[tokio::test]
async fn chain_reject_unknown_crit_claim() {
    let (mut fed, ta, ia, leaf) = three_levels(json!({}));
    let md = json!({"openid_relying_party": {}});
    fed.entity(&leaf, &[&ia], md, json!({"crit": ["x_ext"], "x_ext": 1}));
    let msg = chain_error(fed.resolve(&leaf, &[fed_anchor(&ta)]).await);
    assert!(
        msg.contains("critical claim x_ext is not understood"),
        "{msg}"
    );
    // crit naming a standard claim is malformed as well.
    let md = json!({"openid_relying_party": {}});
    fed.entity(&leaf, &[&ia], md, json!({"crit": ["exp"]}));
    let msg = chain_error(fed.resolve(&leaf, &[fed_anchor(&ta)]).await);
    assert!(msg.contains("standard claim"), "{msg}");
}

#[tokio::test]
async fn chain_reject_misplaced_claims_and_missing_subject() {
    // An Entity Configuration may not carry metadata_policy.
    let (mut fed, ta, ia, leaf) = three_levels(json!({}));
    let md = json!({"openid_relying_party": {}});
    fed.entity(&leaf, &[&ia], md, json!({"metadata_policy": {}}));
    let msg = chain_error(fed.resolve(&leaf, &[fed_anchor(&ta)]).await);
    assert!(msg.contains("metadata_policy must not appear"), "{msg}");
    // A Subordinate Statement may not carry authority_hints.
    fed.leaf(&leaf, &[&ia]);
    fed.subordinate(&ia, &leaf, json!({"authority_hints": [ta]}));
    let msg = chain_error(fed.resolve(&leaf, &[fed_anchor(&ta)]).await);
    assert!(msg.contains("authority_hints must not appear"), "{msg}");
    // A subject without an Entity Configuration cannot be found.
    let r = fed.resolve(&id("ghost"), &[fed_anchor(&ta)]).await;
    assert!(matches!(r, Err(Error::Fetch(_))), "{r:?}");
    let r = fed.resolve(&leaf, &[]).await;
    assert!(matches!(r, Err(Error::InvalidTrustAnchor(_))), "{r:?}");
}

#[tokio::test]
async fn chain_reject_too_deep() {
    let mut fed = Fed::default();
    let ids: Vec<String> = (0..11).map(|i| id(&format!("e{i}"))).collect();
    fed.superior(&ids[10], &[]);
    for i in (0..10).rev() {
        fed.superior(&ids[i], &[&ids[i + 1]]);
        fed.subordinate(&ids[i + 1], &ids[i], json!({}));
    }
    let anchors = [fed_anchor(&ids[10])];
    let msg = chain_error(fed.resolve(&ids[0], &anchors).await);
    assert!(msg.contains("exceeds 8 levels"), "{msg}");
    fed.resolve(&ids[2], &anchors).await.unwrap();
}

/// Identifiers that break the Entity Identifier rules are never fetched: a statement could
/// otherwise point the resolver at any URL (query strings, other schemes, plain http hosts).
#[tokio::test]
async fn chain_reject_authority_hints_that_are_not_entity_identifiers() {
    let (ta, leaf) = (id("ta"), id("leaf"));
    let bad = [
        "https://ia.example?x=1",
        "https://ia.example#frag",
        "ftp://ia.example",
        "http://10.0.0.1:8080",
        "not a url",
    ];
    let mut fed = Fed::default();
    fed.superior(&ta, &[]);
    fed.leaf(&leaf, &bad);
    let anchors = [fed.anchor(&ta, true)];
    let before = fed.fetches();
    let msg = chain_error(fed.resolve(&leaf, &anchors).await);
    // Only the leaf's own Entity Configuration was fetched.
    assert_eq!(fed.fetches() - before, 1, "{msg}");
    for hint in bad {
        assert!(
            msg.contains(&format!(
                "{hint:?} is not a valid Entity Identifier, not fetched"
            )),
            "{msg}"
        );
    }
}

/// A subject that is not an Entity Identifier is not fetched either.
#[tokio::test]
async fn chain_reject_subject_that_is_not_an_entity_identifier() {
    let mut fed = Fed::default();
    let anchors = [fed.anchor(&id("ta"), true)];
    let err = fed.resolve("http://192.168.1.1/", &anchors).await;
    assert!(
        format!("{err:?}").contains("not a valid Entity Identifier"),
        "{err:?}"
    );
    assert_eq!(fed.fetches(), 0);
}

/// A superior's `federation_fetch_endpoint` is followed only when it is an https URL without
/// fragment and its Entity Configuration verifies with its own keys.
#[tokio::test]
async fn chain_reject_unverified_or_odd_fetch_endpoints() {
    let (ta, leaf) = (id("ta"), id("leaf"));
    for endpoint in [
        "http://ta.example/fetch",
        "https://ta.example/fetch#x",
        "file:///etc/passwd",
    ] {
        let mut fed = Fed::default();
        let md = json!({"federation_entity": {"federation_fetch_endpoint": endpoint}});
        fed.entity(&ta, &[], md, json!({}));
        fed.leaf(&leaf, &[&ta]);
        fed.subordinate(&ta, &leaf, json!({}));
        let anchors = [fed.anchor(&ta, true)];
        let msg = chain_error(fed.resolve(&leaf, &anchors).await);
        assert!(
            msg.contains("not an https URL without fragment, not fetched"),
            "{msg}"
        );
        assert_eq!(
            fed.fetches(),
            2,
            "only the two Entity Configurations: {msg}"
        );
    }
    // The superior's EC is signed by a key that is not in its jwks: its endpoint is not used.
    let (mut fed, ia) = (Fed::default(), id("ia"));
    fed.superior(&ta, &[]);
    fed.leaf(&leaf, &[&ia]);
    fed.subordinate(&ia, &leaf, json!({}));
    let mut claims = fed.claims(&ia, &ia);
    claims["metadata"] = super::superior_metadata(&ia);
    claims["authority_hints"] = json!([ta]);
    let forged = fed.sign_as(&id("mallory"), &claims);
    fed.fetcher.ecs.insert(ia.clone(), forged);
    let anchors = [fed.anchor(&ta, true)];
    let msg = chain_error(fed.resolve(&leaf, &anchors).await);
    assert!(msg.contains("does not verify with its own jwks"), "{msg}");
    assert_eq!(fed.fetches(), 2, "{msg}");
}
