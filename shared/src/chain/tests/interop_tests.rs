//! The draft-era leniencies of chain validation (`crate::interop`, `docs/interop.md`): a
//! SPID/CIE-style anchor with `constraints` in its own Entity Configuration under each
//! `anchor_ec_constraints` rule, and the shapes spid-cie-oidc puts into statements.

use serde_json::json;

use super::{Fed, chain_error, id};
use crate::chain::AnchorSpec;
use crate::interop::{AnchorEcConstraints, Interop};

/// TA → IA → leaf, plus a leaf directly under TA; the TA's EC carries `constraints`.
fn spid_style(constraints: serde_json::Value) -> Fed {
    let (ta, ia) = (id("ta"), id("ia"));
    let mut fed = Fed::default();
    fed.entity(
        &ta,
        &[],
        super::superior_metadata(&ta),
        json!({"constraints": constraints}),
    );
    fed.superior(&ia, &[&ta]);
    fed.subordinate(&ta, &ia, json!({}));
    fed.leaf(&id("leaf"), &[&ia]);
    fed.subordinate(&ia, &id("leaf"), json!({}));
    fed.leaf(&id("direct"), &[&ta]);
    fed.subordinate(&ta, &id("direct"), json!({}));
    fed
}

fn anchor(rule: AnchorEcConstraints) -> AnchorSpec {
    AnchorSpec {
        entity_id: id("ta"),
        jwks: None,
        interop: Interop {
            anchor_ec_constraints: rule,
            draft_shapes: true,
        },
        ..AnchorSpec::default()
    }
}

#[tokio::test]
async fn apply_enforces_max_path_length_as_the_anchors_statement_would() {
    let fed = spid_style(json!({"max_path_length": 0}));
    let msg = chain_error(
        fed.resolve(&id("leaf"), &[anchor(AnchorEcConstraints::Apply)])
            .await,
    );
    assert!(msg.contains("max_path_length 0"), "{msg}");
    assert!(msg.contains("Trust Anchor's Entity Configuration"), "{msg}");
    let direct = fed
        .resolve(&id("direct"), &[anchor(AnchorEcConstraints::Apply)])
        .await
        .unwrap();
    assert_eq!(direct.chain.len(), 3);
    let fed = spid_style(json!({"max_path_length": 1}));
    let r = fed
        .resolve(&id("leaf"), &[anchor(AnchorEcConstraints::Apply)])
        .await
        .unwrap();
    assert_eq!(r.chain.len(), 4);
}

#[tokio::test]
async fn apply_enforces_naming_and_allowed_entity_types() {
    let fed = spid_style(json!({"naming_constraints": {"excluded": ["leaf.example"]}}));
    let msg = chain_error(
        fed.resolve(&id("leaf"), &[anchor(AnchorEcConstraints::Apply)])
            .await,
    );
    assert!(msg.contains("excluded"), "{msg}");
    let fed = spid_style(json!({"allowed_entity_types": ["openid_provider"]}));
    let r = fed
        .resolve(&id("leaf"), &[anchor(AnchorEcConstraints::Apply)])
        .await
        .unwrap();
    assert!(
        r.metadata.get("openid_relying_party").is_none(),
        "{}",
        r.metadata
    );
    let r = fed
        .resolve(&id("leaf"), &[anchor(AnchorEcConstraints::Ignore)])
        .await
        .unwrap();
    assert!(r.metadata.get("openid_relying_party").is_some());
}

#[tokio::test]
async fn ignore_accepts_and_refuse_refuses_every_chain() {
    let fed = spid_style(json!({"max_path_length": 0}));
    let ignore = [anchor(AnchorEcConstraints::Ignore)];
    assert_eq!(
        fed.resolve(&id("leaf"), &ignore).await.unwrap().chain.len(),
        4
    );
    for subject in ["leaf", "direct", "ta"] {
        let msg = chain_error(
            fed.resolve(&id(subject), &[anchor(AnchorEcConstraints::Refuse)])
                .await,
        );
        assert!(
            msg.contains("constraints must not appear in an Entity Configuration"),
            "{subject}: {msg}"
        );
    }
}

/// Only the anchor's own EC is tolerated: constraints in a leaf's EC stay refused.
#[tokio::test]
async fn constraints_in_a_leaf_configuration_stay_refused() {
    let mut fed = spid_style(json!({"max_path_length": 1}));
    let leaf = id("leaf2");
    fed.entity(
        &leaf,
        &[&id("ta")],
        json!({"openid_relying_party": {}}),
        json!({"constraints": {"max_path_length": 3}}),
    );
    fed.subordinate(&id("ta"), &leaf, json!({}));
    let msg = chain_error(
        fed.resolve(&leaf, &[anchor(AnchorEcConstraints::Apply)])
            .await,
    );
    assert!(msg.contains("ES[0]"), "{msg}");
}

/// spid-cie-oidc copies the subject's trust marks into its Subordinate Statements, and leaves
/// name a mark's type `id` (or `trust_mark_id`); strict refuses both, as the final text does.
#[tokio::test]
async fn spid_statement_shapes_are_accepted_unless_strict() {
    let (ta, leaf) = (id("ta"), id("old"));
    let mut fed = spid_style(json!({"max_path_length": 1}));
    let k = crate::jose::SigningKey::generate(crate::jose::Algorithm::ES256, 0).unwrap();
    let tm_claims = json!({"iss": ta, "sub": leaf, "id": "https://tm/x", "iat": super::NOW});
    let tm = crate::jose::sign(&k, "trust-mark+jwt", tm_claims.as_object().unwrap(), None).unwrap();
    let marks = json!([{"id": "https://tm/x", "trust_mark": tm}]);
    fed.entity(
        &leaf,
        &[&ta],
        json!({"openid_relying_party": {}}),
        json!({"trust_marks": marks}),
    );
    fed.subordinate(&ta, &leaf, json!({"trust_marks": marks}));
    let r = fed
        .resolve(&leaf, &[anchor(AnchorEcConstraints::Apply)])
        .await;
    assert_eq!(r.unwrap().chain.len(), 3);
    let strict = AnchorSpec {
        interop: Interop::STRICT,
        ..anchor(AnchorEcConstraints::Refuse)
    };
    // Without the anchor's constraints, so that only the statement shapes are judged.
    fed.superior(&ta, &[]);
    let msg = chain_error(fed.resolve(&leaf, std::slice::from_ref(&strict)).await);
    assert!(
        msg.contains("ES[0]: each trust_marks entry needs string trust_mark_type"),
        "{msg}"
    );
    fed.entity(
        &leaf,
        &[&ta],
        json!({"openid_relying_party": {}}),
        json!({}),
    );
    let msg = chain_error(fed.resolve(&leaf, &[strict]).await);
    assert!(
        msg.contains("trust_marks must not appear in a Subordinate Statement"),
        "{msg}"
    );
}
