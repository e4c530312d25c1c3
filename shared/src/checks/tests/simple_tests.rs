//! `none`, `entity_id`, `authority_hints`, `db_list` and nesting with `multiple_and` /
//! `multiple_or`.

use serde_json::json;

use super::MemEnv;
use crate::chain::tests::id;
use crate::checks::{Denial, Verdict};
use crate::trust_mark_issuer::Standing;

fn env_with_leaf() -> (MemEnv, String) {
    let mut env = MemEnv::default();
    let leaf = id("leaf");
    env.fed.leaf(&leaf, &[&id("ia")]);
    (env, leaf)
}

fn denied(v: Verdict) -> Denial {
    match v {
        Verdict::Deny(d) => d,
        Verdict::Pass => panic!("expected a denial"),
    }
}

fn allow(entity_id: &str) -> serde_json::Value {
    json!({"type": "entity_id", "config": {"entity_ids": [entity_id]}})
}

fn hint(superior: &str) -> serde_json::Value {
    json!({"type": "authority_hints", "config": {"entity_id": superior}})
}

#[tokio::test]
async fn none_passes_and_entity_id_allows_only_listed_entities() {
    let (env, leaf) = env_with_leaf();
    assert_eq!(
        env.check(json!({"type": "none"}), &leaf).await,
        Verdict::Pass
    );
    assert_eq!(env.check(allow(&leaf), &leaf).await, Verdict::Pass);
    let d = denied(env.check(allow(&id("other")), &leaf).await);
    assert_eq!((d.status, d.error.as_str()), (400, "invalid_request"));
}

#[tokio::test]
async fn authority_hints_must_name_the_superior() {
    let (env, leaf) = env_with_leaf();
    assert_eq!(env.check(hint(&id("ia")), &leaf).await, Verdict::Pass);
    let d = denied(env.check(hint(&id("elsewhere")), &leaf).await);
    assert_eq!(d.status, 400);
    assert!(d.error_description.contains(&id("elsewhere")));
}

#[tokio::test]
async fn db_list_answers_the_stored_standing() {
    let (mut env, leaf) = env_with_leaf();
    let db = json!({"type": "db_list"});
    let tm = "https://tm.example/t";
    let key = (tm.to_owned(), leaf.clone());
    env.standings.insert(key.clone(), Standing::Entitled);
    assert_eq!(
        env.check_as(db.clone(), &leaf, Some(tm)).await,
        Verdict::Pass
    );
    for (standing, status) in [
        (Standing::Blocked, 403),
        (Standing::Pending, 202),
        (Standing::NotEntitled, 404),
    ] {
        env.standings.insert(key.clone(), standing);
        let d = denied(env.check_as(db.clone(), &leaf, Some(tm)).await);
        assert_eq!(d.status, status, "{standing:?}");
    }
    // Outside trust mark eligibility there is no standing to read.
    assert_eq!(denied(env.check(db, &leaf).await).status, 500);
}

#[tokio::test]
async fn nested_and_or_combine_as_configured() {
    let (env, leaf) = env_with_leaf();
    let yes = hint(&id("ia"));
    let no = allow(&id("other"));
    let or = |v: Vec<serde_json::Value>| json!({"type": "multiple_or", "config": v});
    let and = |v: Vec<serde_json::Value>| json!({"type": "multiple_and", "config": v});
    // or(no, and(yes, none)) passes through the second branch.
    let c = or(vec![
        no.clone(),
        and(vec![yes.clone(), json!({"type": "none"})]),
    ]);
    assert_eq!(env.check(c, &leaf).await, Verdict::Pass);
    // and(yes, or(no, no)) fails with or's denial.
    let c = and(vec![yes.clone(), or(vec![no.clone(), no.clone()])]);
    let d = denied(env.check(c, &leaf).await);
    assert_eq!((d.status, d.error.as_str()), (403, "forbidden"));
    assert_eq!(d.error_description, "no enrollment check passed");
    // and returns the first failure as it is.
    let c = and(vec![yes.clone(), no.clone(), hint(&id("x"))]);
    let d = denied(env.check(c, &leaf).await);
    assert_eq!(d.error_description, "this entity is not allowed");
    // The flat lighthouse form nests too.
    let c = json!({"checker_type": "multiple_and", "checker_config": [yes, {"type": "none"}]});
    assert_eq!(env.check(c, &leaf).await, Verdict::Pass);
}
