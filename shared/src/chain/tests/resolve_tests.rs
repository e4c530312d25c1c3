//! Resolution over in-memory federations: chains that must be found, and how one is chosen.

use serde_json::json;

use super::{Fed, NOW, chain_error, id, superior_metadata};
use crate::chain::{MAX_FETCHES, validate_chain};
use crate::jose::decode_unverified;

fn subjects(chain: &[String]) -> Vec<String> {
    chain
        .iter()
        .map(|t| {
            let c = decode_unverified(t).unwrap().claims;
            format!(
                "{}>{}",
                c["iss"].as_str().unwrap(),
                c["sub"].as_str().unwrap()
            )
        })
        .collect()
}

#[tokio::test]
async fn chain_ta_to_leaf() {
    let (ta, leaf) = (id("ta"), id("leaf"));
    let mut fed = Fed::default();
    fed.superior(&ta, &[]);
    fed.leaf(&leaf, &[&ta]);
    fed.subordinate(&ta, &leaf, json!({"exp": NOW + 100}));
    let anchors = [fed.anchor(&ta, true)];
    let r = fed.resolve(&leaf, &anchors).await.unwrap();
    assert_eq!(r.trust_anchor, ta);
    assert_eq!(
        subjects(&r.chain),
        [
            format!("{leaf}>{leaf}"),
            format!("{ta}>{leaf}"),
            format!("{ta}>{ta}")
        ]
    );
    assert_eq!(r.exp, NOW + 100);
    assert_eq!(r.metadata["openid_relying_party"]["client_name"], "leaf");
    assert_eq!(r.subject_claims["sub"], leaf.as_str());
    assert_eq!(r.anchor_claims["sub"], ta.as_str());
    // The resolved chain validates on its own, also without pinned keys.
    let v = validate_chain(&r.chain, &fed.anchor(&ta, false), NOW).unwrap();
    assert_eq!(v.metadata, r.metadata);
    assert_eq!(fed.fetches(), 3, "leaf EC, TA EC, one statement");
}

#[tokio::test]
async fn chain_through_intermediate_applies_policy_overlay_and_type_filter() {
    let (ta, ia, leaf) = (id("ta"), id("ia"), id("leaf"));
    let mut fed = Fed::default();
    fed.superior(&ta, &[]);
    fed.superior(&ia, &[&ta]);
    fed.leaf(&leaf, &[&ia]);
    fed.subordinate(
        &ta,
        &ia,
        json!({"metadata_policy": {"openid_relying_party": {
            "grant_types": {"subset_of": ["authorization_code", "refresh_token"]},
            "contacts": {"add": ["ops@ta.example"]},
        }}}),
    );
    fed.subordinate(
        &ia,
        &leaf,
        json!({
            "metadata": {"openid_relying_party": {"client_name": "renamed"}},
            "metadata_policy": {"openid_relying_party": {"contacts": {"add": ["ops@ia.example"]}}},
        }),
    );
    let anchors = [fed.anchor(&ta, true)];
    let r = fed.resolve(&leaf, &anchors).await.unwrap();
    assert_eq!(r.chain.len(), 4);
    let rp = &r.metadata["openid_relying_party"];
    assert_eq!(rp["grant_types"], json!(["authorization_code"]));
    assert_eq!(rp["client_name"], "renamed");
    let mut contacts: Vec<&str> = rp["contacts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    contacts.sort_unstable();
    assert_eq!(contacts, ["ops@ia.example", "ops@ta.example"]);

    // entity_type restricts the result; an absent type leaves an empty object.
    let leaf_fe = json!({"federation_entity": {"organization_name": "Leaf"},
        "openid_relying_party": {"client_name": "leaf"}});
    fed.entity(&leaf, &[&ia], leaf_fe, json!({}));
    let types = ["federation_entity".to_string()];
    let r = fed.resolve_types(&leaf, &anchors, &types).await.unwrap();
    assert_eq!(
        r.metadata,
        json!({"federation_entity": {"organization_name": "Leaf"}})
    );
    let types = ["openid_provider".to_string()];
    let r = fed.resolve_types(&leaf, &anchors, &types).await.unwrap();
    assert_eq!(r.metadata, json!({}));
}

#[tokio::test]
async fn chain_two_anchors_only_the_requested_one_is_used() {
    let (ta1, ta2, leaf) = (id("ta1"), id("ta2"), id("leaf"));
    let mut fed = Fed::default();
    fed.superior(&ta1, &[]);
    fed.superior(&ta2, &[]);
    fed.leaf(&leaf, &[&ta1, &ta2]);
    fed.subordinate(&ta1, &leaf, json!({}));
    fed.subordinate(&ta2, &leaf, json!({}));
    let anchors = [fed.anchor(&ta2, true)];
    let r = fed.resolve(&leaf, &anchors).await.unwrap();
    assert_eq!(r.trust_anchor, ta2);
    assert_eq!(r.anchor_claims["iss"], ta2.as_str());
    // Both requested: equal length and expiry, so the earlier anchor in the request wins.
    let both = [fed.anchor(&ta2, false), fed.anchor(&ta1, false)];
    assert_eq!(fed.resolve(&leaf, &both).await.unwrap().trust_anchor, ta2);
    // An unrelated anchor is not reachable.
    let other = [fed.anchor(&id("elsewhere"), false)];
    let msg = chain_error(fed.resolve(&leaf, &other).await);
    assert!(msg.contains("no valid trust chain"), "{msg}");
}

#[tokio::test]
async fn chain_choice_prefers_shortest_then_latest_expiry() {
    let (ta, ia, leaf) = (id("ta"), id("ia"), id("leaf"));
    let mut fed = Fed::default();
    fed.superior(&ta, &[]);
    fed.superior(&ia, &[&ta]);
    fed.leaf(&leaf, &[&ia, &ta]);
    fed.subordinate(&ta, &ia, json!({}));
    fed.subordinate(&ia, &leaf, json!({}));
    fed.subordinate(&ta, &leaf, json!({"exp": NOW + 50}));
    let anchors = [fed.anchor(&ta, true)];
    let r = fed.resolve(&leaf, &anchors).await.unwrap();
    assert_eq!(r.chain.len(), 3, "the direct chain is shorter");
    assert_eq!(r.exp, NOW + 50);

    // Two anchors at equal length: the later-expiring chain wins.
    let ta2 = id("ta2");
    fed.superior(&ta2, &[]);
    fed.leaf(&leaf, &[&ta, &ta2]);
    fed.subordinate(&ta2, &leaf, json!({"exp": NOW + 900}));
    let anchors = [fed.anchor(&ta, true), fed.anchor(&ta2, true)];
    let r = fed.resolve(&leaf, &anchors).await.unwrap();
    assert_eq!((r.trust_anchor.as_str(), r.exp), (ta2.as_str(), NOW + 900));
}

#[tokio::test]
async fn chain_subject_that_is_the_anchor_and_anchor_is_not_passed() {
    let (top, ta, ia, leaf) = (id("top"), id("ta"), id("ia"), id("leaf"));
    let mut fed = Fed::default();
    fed.superior(&top, &[]);
    fed.superior(&ta, &[&top]);
    fed.superior(&ia, &[&ta]);
    fed.leaf(&leaf, &[&ia]);
    fed.subordinate(&top, &ta, json!({}));
    fed.subordinate(&ta, &ia, json!({}));
    fed.subordinate(&ia, &leaf, json!({}));
    let anchors = [fed.anchor(&ta, true), fed.anchor(&top, true)];
    // The path stops at the first requested anchor; it never continues to `top`.
    let r = fed.resolve(&leaf, &anchors).await.unwrap();
    assert_eq!((r.trust_anchor.as_str(), r.chain.len()), (ta.as_str(), 4));
    // A subject that is itself a requested anchor resolves to its own EC.
    let r = fed.resolve(&ta, &anchors).await.unwrap();
    assert_eq!(r.chain.len(), 1);
    assert_eq!(r.metadata, superior_metadata(&ta));
}

#[tokio::test]
async fn chain_hostile_fan_out_is_bounded() {
    // Eight levels of 16 Entities, each hinting at all 16 of the next level, and a leaf with
    // 40 hints: the paths multiply, the fetches must not.
    let mut fed = Fed::default();
    let level = |d: usize| -> Vec<String> { (0..16).map(|i| id(&format!("l{d}e{i}"))).collect() };
    let mut below: Vec<String> = vec![id("leaf")];
    let mut hints: Vec<String> = level(0);
    hints.extend((0..24).map(|i| id(&format!("missing{i}"))));
    let refs: Vec<&str> = hints.iter().map(String::as_str).collect();
    fed.leaf(&below[0], &refs);
    for d in 0..8 {
        let this = level(d);
        let next = level(d + 1);
        let next_refs: Vec<&str> = next.iter().map(String::as_str).collect();
        for e in &this {
            let h = if d < 7 { &next_refs[..] } else { &[][..] };
            fed.superior(e, h);
            for b in &below {
                fed.subordinate(e, b, json!({}));
            }
        }
        below = this;
    }
    let anchors = [fed.anchor(&id("nowhere"), false)];
    let msg = chain_error(fed.resolve(&id("leaf"), &anchors).await);
    assert!(fed.fetches() <= MAX_FETCHES, "{} fetches", fed.fetches());
    assert!(msg.contains("fetch budget"), "{msg}");
    assert!(msg.contains("more"), "long failure lists are elided: {msg}");
}

#[test]
fn chain_resolve_future_is_send() {
    // The planes run resolution inside multi-threaded servers.
    fn assert_send<T: Send>(_: &T) {}
    let fed = Fed::default();
    let anchors = [crate::chain::AnchorSpec::default()];
    let req = crate::chain::ResolveRequest {
        subject: "https://leaf.example",
        anchors: &anchors,
        entity_types: &[],
        now: NOW,
        max_depth: crate::chain::DEFAULT_MAX_DEPTH,
    };
    let fut = crate::chain::resolve(&fed.fetcher, &req);
    assert_send(&fut);
}
