//! Tests of [`super`] over an in-memory federation (the chain tests' builder).

use serde_json::{Value, json};

use super::*;
use crate::chain::tests::{Fed, NOW, id, superior_metadata};
use crate::jose::{self, sign};

const TYPE: &str = "https://ta.example/marks/good";

/// A federation: `ta` lists `tmi` and `gone` as issuers of [`TYPE`]; `tmi` has a statement
/// from `ta`, `gone` (removed from the federation) still publishes a configuration naming
/// `ta` but `ta` no longer vouches for it. `leaf` carries one mark from each.
async fn federation() -> (Fed, Map<String, Value>, Map<String, Value>) {
    let mut fed = Fed::default();
    let (ta, tmi, gone, leaf) = (id("ta"), id("tmi"), id("gone"), id("leaf"));
    fed.entity(
        &ta,
        &[],
        superior_metadata(&ta),
        json!({"trust_mark_issuers": {TYPE: [tmi, gone]}}),
    );
    fed.leaf(&tmi, &[&ta]);
    fed.subordinate(&ta, &tmi, json!({}));
    fed.leaf(&gone, &[&ta]);
    let marks: Vec<Value> = [&tmi, &gone]
        .iter()
        .map(|iss| {
            let claims = json!({"iss": iss, "sub": leaf, "trust_mark_type": TYPE, "iat": NOW - 5});
            let jwt = sign(
                fed.key(iss),
                "trust-mark+jwt",
                claims.as_object().unwrap(),
                None,
            );
            json!({"trust_mark_type": TYPE, "trust_mark": jwt.unwrap()})
        })
        .collect();
    let ec = fed.fetcher.entity_configuration(&ta).await.unwrap();
    let anchor_claims = jose::decode_unverified(&ec).unwrap().claims;
    let subject = json!({"sub": leaf, "trust_marks": marks});
    (fed, anchor_claims, subject.as_object().unwrap().clone())
}

fn issuers(marks: &[VerifiedTrustMark]) -> Vec<String> {
    marks
        .iter()
        .map(|m| {
            let c = jose::decode_unverified(&m.trust_mark).unwrap().claims;
            c["iss"].as_str().unwrap().to_owned()
        })
        .collect()
}

#[tokio::test]
async fn an_issuer_without_a_chain_to_the_anchor_is_not_trusted_by_default() {
    let (mut fed, anchor_claims, subject) = federation().await;
    let anchor = fed.anchor(&id("ta"), false);
    let (marks, refused) = verified_marks(
        &fed.fetcher,
        &anchor,
        &anchor_claims,
        &subject,
        &id("leaf"),
        NOW,
    )
    .await;
    assert_eq!(issuers(&marks), vec![id("tmi")]);
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(refused[0].contains("has no trust chain to"), "{refused:?}");
    let keys = issuer_keys(&fed.fetcher, &anchor, &anchor_claims, &id("tmi"), NOW).await;
    assert_eq!(keys.unwrap().trust, IssuerTrust::Chain);
}

#[tokio::test]
async fn the_anchor_record_may_allow_listed_issuers_on_their_own_word() {
    let (mut fed, anchor_claims, subject) = federation().await;
    let anchor = AnchorSpec {
        trust_mark_issuer_self_signed: true,
        ..fed.anchor(&id("ta"), false)
    };
    let (marks, refused) = verified_marks(
        &fed.fetcher,
        &anchor,
        &anchor_claims,
        &subject,
        &id("leaf"),
        NOW,
    )
    .await;
    assert_eq!(issuers(&marks), vec![id("tmi"), id("gone")], "{refused:?}");
    let keys = issuer_keys(&fed.fetcher, &anchor, &anchor_claims, &id("gone"), NOW)
        .await
        .unwrap();
    assert_eq!(keys.trust, IssuerTrust::SelfSigned);
}

#[tokio::test]
async fn self_signed_keys_verify_only_types_the_anchor_lists_the_issuer_for() {
    let (mut fed, _, _) = federation().await;
    let (ta, gone, leaf) = (id("ta"), id("gone"), id("leaf"));
    // "Anyone may issue" the other type: not a listing of `gone`.
    let other = "https://ta.example/marks/other";
    let anchor_claims = json!({"trust_mark_issuers": {TYPE: [gone], other: []}});
    let anchor_claims = anchor_claims.as_object().unwrap();
    let anchor = AnchorSpec {
        trust_mark_issuer_self_signed: true,
        ..fed.anchor(&ta, false)
    };
    let keys = issuer_keys(&fed.fetcher, &anchor, anchor_claims, &gone, NOW)
        .await
        .unwrap();
    let claims = json!({"iss": gone, "sub": leaf, "trust_mark_type": other, "iat": NOW - 5});
    let jwt = sign(
        fed.key(&gone),
        "trust-mark+jwt",
        claims.as_object().unwrap(),
        None,
    )
    .unwrap();
    let entry = json!({"trust_mark_type": other, "trust_mark": jwt});
    let e = verify_mark(&entry, &leaf, &anchor, anchor_claims, &keys, NOW).unwrap_err();
    assert!(e.to_string().contains("not listed for the type"), "{e}");
    // Unlisted anywhere: not even fetched on its own word.
    let anchor_claims = json!({"trust_mark_issuers": {other: []}});
    let e = issuer_keys(
        &fed.fetcher,
        &anchor,
        anchor_claims.as_object().unwrap(),
        &gone,
        NOW,
    )
    .await
    .unwrap_err();
    assert!(e.to_string().contains("has no trust chain to"), "{e}");
}

#[tokio::test]
async fn the_anchor_issuing_uses_its_own_keys_and_issuers_are_bounded_per_subject() {
    let (mut fed, anchor_claims, _) = federation().await;
    let (ta, leaf) = (id("ta"), id("leaf"));
    let anchor = fed.anchor(&ta, false);
    let keys = issuer_keys(&fed.fetcher, &anchor, &anchor_claims, &ta, NOW)
        .await
        .unwrap();
    assert_eq!(
        (keys.trust, keys.keys),
        (IssuerTrust::Anchor, fed.jwks(&ta))
    );
    // Marks from many issuers the anchor admits ("anyone may issue"): only the first
    // MAX_ISSUERS_PER_SUBJECT are resolved, the rest left out without a fetch.
    let many: Vec<Value> = (0..MAX_ISSUERS_PER_SUBJECT + 3)
        .map(|i| {
            let iss = id(&format!("i{i}"));
            let claims = json!({"iss": iss, "sub": leaf, "trust_mark_type": TYPE, "iat": NOW});
            let jwt = sign(
                fed.key(&iss),
                "trust-mark+jwt",
                claims.as_object().unwrap(),
                None,
            );
            json!({"trust_mark_type": TYPE, "trust_mark": jwt.unwrap()})
        })
        .collect();
    let open = json!({"trust_mark_issuers": {TYPE: []}});
    let subject = json!({"trust_marks": many});
    let before = fed.fetches();
    let (marks, refused) = verified_marks(
        &fed.fetcher,
        &anchor,
        open.as_object().unwrap(),
        subject.as_object().unwrap(),
        &leaf,
        NOW,
    )
    .await;
    assert!(marks.is_empty());
    assert_eq!(refused.len(), MAX_ISSUERS_PER_SUBJECT + 3);
    assert_eq!(
        fed.fetches() - before,
        MAX_ISSUERS_PER_SUBJECT,
        "one EC fetch per issuer"
    );
}
