//! The explainer over an in-memory three-level federation: the same metadata as resolve,
//! every operator's before and after from the engine, and for each broken chain (an expired
//! intermediate statement, a subordinate key mismatch, a `value` conflict) the failing step.

use serde_json::{Value, json};

use super::{Fed, NOW, id};
use crate::chain::{DEFAULT_MAX_DEPTH, Explanation, ResolveRequest, explain};
use crate::jose::sign;
use crate::trust_mark::TRUST_MARK_TYP;

const RP: &str = "openid_relying_party";

/// TA → I → L: the TA's policy on I restricts `grant_types` and adds a contact; I's policy on
/// L requires `authorization_code`, and I's statement carries a `metadata` claim.
fn three_levels() -> (Fed, String, String, String) {
    let (ta, i, l) = (id("ta"), id("i"), id("l"));
    let mut fed = Fed::default();
    fed.superior(&ta, &[]);
    fed.superior(&i, &[&ta]);
    let md = json!({RP: {"client_name": "leaf", "contacts": ["ops@l.example"],
        "grant_types": ["authorization_code", "refresh_token", "implicit"]}});
    fed.entity(&l, &[&i], md, json!({}));
    let ta_policy = json!({RP: {"grant_types": {"subset_of": ["authorization_code", "refresh_token"]},
                                "contacts": {"add": ["fed@ta.example"]}}});
    fed.subordinate(&ta, &i, json!({"metadata_policy": ta_policy}));
    let i_policy = json!({RP: {"grant_types": {"superset_of": ["authorization_code"]}}});
    let overlay = json!({RP: {"client_uri": "https://i.example/l"}});
    fed.subordinate(
        &i,
        &l,
        json!({"metadata_policy": i_policy, "metadata": overlay}),
    );
    (fed, ta, i, l)
}

async fn explained(fed: &mut Fed, subject: &str, ta: &str) -> Explanation {
    let anchors = [fed.anchor(ta, true)];
    let req = ResolveRequest {
        subject,
        anchors: &anchors,
        entity_types: &[],
        now: NOW,
        max_depth: DEFAULT_MAX_DEPTH,
    };
    explain(&fed.fetcher, &req).await
}

#[tokio::test]
async fn a_valid_chain_is_explained_with_the_engines_values() {
    let (mut fed, ta, i, l) = three_levels();
    let x = explained(&mut fed, &l, &ta).await;
    assert!(x.failed.is_none(), "{:?}", x.failed);
    let anchors = [fed.anchor(&ta, true)];
    let resolved = fed.resolve(&l, &anchors).await.unwrap();
    assert_eq!(x.metadata.as_ref(), Some(&resolved.metadata));
    assert_eq!(x.trust_anchor.as_deref(), Some(ta.as_str()));
    // Each statement, with issuer, subject, kid, expiry and the keys that verified it.
    let who: Vec<(Option<&str>, Option<&str>)> = x
        .chain
        .statements
        .iter()
        .map(|s| (s.iss.as_deref(), s.sub.as_deref()))
        .collect();
    let (ta_, i_, l_) = (Some(ta.as_str()), Some(i.as_str()), Some(l.as_str()));
    assert_eq!(who, [(l_, l_), (i_, l_), (ta_, i_), (ta_, ta_)]);
    for s in &x.chain.statements {
        assert!(s.kid.is_some() && s.exp == Some(NOW + 3600), "{s:?}");
        assert!(
            s.signature.as_deref().unwrap().starts_with("verified"),
            "{s:?}"
        );
    }
    // Merged level by level, the TA's first; I's metadata claim before the policy.
    let p = x.chain.policy.as_ref().unwrap();
    assert_eq!(
        p.merges.iter().map(|m| m.statement).collect::<Vec<_>>(),
        [2, 1]
    );
    assert_eq!(
        p.superior_metadata.as_ref().unwrap().after[RP]["client_uri"],
        "https://i.example/l"
    );
    assert_eq!(p.before_policy[RP]["client_uri"], "https://i.example/l");
    // Every operator's last effect on a parameter is the resolved value.
    for s in &p.operators {
        let last = p
            .operators
            .iter()
            .rfind(|o| o.parameter == s.parameter)
            .unwrap();
        assert_eq!(last.after.as_ref(), resolved.metadata[RP].get(&s.parameter));
    }
    let subset = p
        .operators
        .iter()
        .find(|o| o.operator == "subset_of")
        .unwrap();
    assert_eq!(
        subset.before,
        Some(json!(["authorization_code", "refresh_token", "implicit"]))
    );
    assert_eq!(
        subset.after,
        Some(json!(["authorization_code", "refresh_token"]))
    );
    let text = serde_json::to_string(&x).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    assert!(v["failed"].is_null() && v["statements"].is_array() && v["policy"].is_object());
}

#[tokio::test]
async fn an_expired_intermediate_statement_is_the_failing_step() {
    let (mut fed, ta, i, l) = three_levels();
    fed.subordinate(&ta, &i, json!({"exp": NOW - 5}));
    let x = explained(&mut fed, &l, &ta).await;
    let f = x.failed.unwrap();
    assert!(
        f.step
            .contains(&format!("Subordinate Statement of {ta} about {i}")),
        "{f:?}"
    );
    assert!(
        f.message.contains("exp") && f.message.contains("past"),
        "{f:?}"
    );
    assert!(f.rule.contains("expired"), "{f:?}");
    assert!(x.metadata.is_none());
    let s = &x.chain.statements[2];
    assert_eq!(s.exp, Some(NOW - 5));
    assert!(s.problem.is_some());
}

#[tokio::test]
async fn a_subordinate_key_mismatch_is_the_failing_step() {
    let (mut fed, ta, i, l) = three_levels();
    // I publishes someone else's keys for L.
    let other = fed.jwks(&id("other"));
    fed.subordinate(&i, &l, json!({"jwks": other}));
    let x = explained(&mut fed, &l, &ta).await;
    let f = x.failed.unwrap();
    assert!(f.step.starts_with("the signature of statement 0"), "{f:?}");
    assert!(
        f.step.contains(&format!("Entity Configuration of {l}")),
        "{f:?}"
    );
    assert!(f.rule.contains("keys of the statement above"), "{f:?}");
    let s = &x.chain.statements[0];
    assert!(
        s.signature.is_none() && s.problem.as_deref().unwrap().contains("ES[0]"),
        "{s:?}"
    );
}

#[tokio::test]
async fn a_value_conflict_is_the_failing_merge() {
    let (mut fed, ta, i, l) = three_levels();
    let value = |v: &str| json!({"metadata_policy": {RP: {"client_name": {"value": v}}}});
    fed.subordinate(&ta, &i, value("TA name"));
    fed.subordinate(&i, &l, value("I name"));
    let x = explained(&mut fed, &l, &ta).await;
    let f = x.failed.unwrap();
    assert!(
        f.step.contains(&format!(
            "metadata policy of statement 1, the Subordinate Statement of {i}"
        )),
        "{f:?}"
    );
    assert!(f.message.contains("values differ"), "{f:?}");
    assert!(f.rule.contains("conflict"), "{f:?}");
    // The statements and their signatures were fine.
    assert!(x.chain.statements.iter().all(|s| s.signature.is_some()));
}

#[tokio::test]
async fn an_unreachable_subject_names_the_fetch() {
    let (mut fed, ta, _, _) = three_levels();
    let x = explained(&mut fed, &id("nobody"), &ta).await;
    let f = x.failed.unwrap();
    assert!(
        f.step.contains("fetching the Entity Configuration"),
        "{f:?}"
    );
}

/// A Trust Mark of `iss` about `sub` of type `tm_type`, signed with `signer`'s key.
fn mark(fed: &mut Fed, signer: &str, iss: &str, sub: &str, tm_type: &str) -> serde_json::Value {
    let claims = json!({"iss": iss, "sub": sub, "trust_mark_type": tm_type, "iat": NOW - 10});
    let jwt = sign(
        fed.key(signer),
        TRUST_MARK_TYP,
        claims.as_object().unwrap(),
        None,
    )
    .unwrap();
    json!({"trust_mark_type": tm_type, "trust_mark": jwt})
}

#[tokio::test]
async fn each_trust_mark_is_kept_or_dropped_with_its_reason() {
    let (mut fed, ta, i, l) = three_levels();
    let (gold, silver, bronze) = (
        "https://ta.example/gold",
        "https://ta.example/silver",
        "https://x.example/bronze",
    );
    // The anchor issues gold and silver itself and admits only itself for them.
    let admitted = json!({"trust_mark_issuers": {gold: [ta.clone()], silver: [ta.clone()]}});
    fed.entity(&ta, &[], super::superior_metadata(&ta), admitted);
    let marks = vec![
        mark(&mut fed, &ta, &ta, &l, gold),
        // Claims the anchor as issuer, signed by someone else.
        mark(&mut fed, &i, &ta, &l, silver),
        // A type the anchor does not know.
        mark(&mut fed, &i, &i, &l, bronze),
    ];
    let md = json!({RP: {"client_name": "leaf", "contacts": ["ops@l.example"],
        "grant_types": ["authorization_code", "refresh_token", "implicit"]}});
    fed.entity(&l, &[&i], md, json!({"trust_marks": marks}));
    let x = explained(&mut fed, &l, &ta).await;
    assert!(x.failed.is_none(), "{:?}", x.failed);
    let got: Vec<(Option<&str>, bool)> = x
        .trust_marks
        .iter()
        .map(|m| (m.trust_mark_type.as_deref(), m.kept))
        .collect();
    assert_eq!(
        got,
        [
            (Some(gold), true),
            (Some(silver), false),
            (Some(bronze), false)
        ]
    );
    assert!(
        x.trust_marks[0].reason.starts_with("kept"),
        "{:?}",
        x.trust_marks[0]
    );
    assert!(
        x.trust_marks[1].reason.starts_with("dropped: "),
        "{:?}",
        x.trust_marks[1]
    );
    assert!(
        x.trust_marks[2].reason.contains("trust_mark_issuers"),
        "{:?}",
        x.trust_marks[2]
    );
    // The kept marks are those resolve keeps.
    let anchors = [fed.anchor(&ta, true)];
    let r = fed.resolve(&l, &anchors).await.unwrap();
    let (kept, _) = crate::trust_mark_issuer_keys::verified_marks(
        &fed.fetcher,
        &anchors[0],
        &r.anchor_claims,
        &r.subject_claims,
        &l,
        NOW,
    )
    .await;
    let kept: Vec<&str> = kept.iter().map(|m| m.trust_mark_type.as_str()).collect();
    assert_eq!(kept, [gold]);
}
