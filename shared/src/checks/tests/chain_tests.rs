//! `trust_path` and `trust_mark` over an in-memory federation of real signed statements:
//! ta ← ia ← leaf, a trust mark issuer `tmi` and a type owner `owner`.

use serde_json::{Value, json};

use super::MemEnv;
use crate::chain::tests::{NOW, id, superior_metadata};
use crate::checks::Verdict;
use crate::jose::sign;
use crate::trust_mark::{DELEGATION_TYP, TRUST_MARK_TYP};

const TYPE: &str = "https://tm.example/certified";

/// ta ← ia ← leaf, the leaf's EC carrying `marks`; ta's EC carries `ta_extra`.
fn federation(marks: Value, ta_extra: Value) -> MemEnv {
    let mut env = MemEnv::default();
    let (ta, ia, leaf) = (id("ta"), id("ia"), id("leaf"));
    let f = &mut env.fed;
    f.entity(&ta, &[], superior_metadata(&ta), ta_extra);
    f.superior(&ia, &[&ta]);
    let md = json!({"openid_relying_party": {"client_name": "leaf"}});
    f.entity(&leaf, &[&ia], md, json!({"trust_marks": marks}));
    f.subordinate(&ta, &ia, json!({}));
    f.subordinate(&ia, &leaf, json!({}));
    f.superior(&id("tmi"), &[&ta]);
    f.subordinate(&ta, &id("tmi"), json!({}));
    f.superior(&id("owner"), &[]);
    env
}

fn trust_path(anchor: &str) -> Value {
    json!({"type": "trust_path", "config": {"trust_anchors": [anchor]}})
}

fn status(v: Verdict) -> u16 {
    match v {
        Verdict::Pass => 200,
        Verdict::Deny(d) => {
            assert_eq!(d.error, "forbidden", "{d:?}");
            d.status
        }
    }
}

#[tokio::test]
async fn trust_path_needs_a_valid_chain_to_a_repository_anchor() {
    let mut env = federation(json!([]), json!({}));
    let (ta, leaf) = (id("ta"), id("leaf"));
    // Not in the repository: does not count, even though the chain exists.
    assert_eq!(status(env.check(trust_path(&ta), &leaf).await), 403);
    env.repository_anchor(&ta, false);
    assert_eq!(status(env.check(trust_path(&ta), &leaf).await), 200);
    env.repository_anchor(&ta, true);
    assert_eq!(status(env.check(trust_path(&ta), &leaf).await), 200);
    // The subject being the anchor passes.
    assert_eq!(status(env.check(trust_path(&ta), &ta).await), 200);
    // Keys pinned in the repository that the anchor does not use: no valid chain.
    let wrong = env.fed.jwks(&id("nobody"));
    env.anchors.get_mut(&ta).unwrap().jwks = Some(wrong);
    assert_eq!(status(env.check(trust_path(&ta), &leaf).await), 403);
    assert_eq!(status(env.check(trust_path(&ta), &ta).await), 403);
    // An anchor the leaf does not chain to.
    let other = id("other-ta");
    env.fed.superior(&other, &[]);
    env.repository_anchor(&other, false);
    assert_eq!(status(env.check(trust_path(&other), &leaf).await), 403);
}

/// A mark of `TYPE` for the leaf signed by `signer` (as issuer `tmi`), with `extra` claims.
fn mark(env: &mut MemEnv, signer: &str, extra: Value) -> String {
    let mut c = json!({"iss": id("tmi"), "sub": id("leaf"), "trust_mark_type": TYPE,
        "iat": NOW - 5, "exp": NOW + 600});
    c.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    sign(
        env.fed.key(signer),
        TRUST_MARK_TYP,
        c.as_object().unwrap(),
        None,
    )
    .unwrap()
}

fn delegation(env: &mut MemEnv) -> String {
    let c = json!({"iss": id("owner"), "sub": id("tmi"), "trust_mark_type": TYPE, "iat": NOW - 5});
    sign(
        env.fed.key(&id("owner")),
        DELEGATION_TYP,
        c.as_object().unwrap(),
        None,
    )
    .unwrap()
}

/// A federation whose leaf carries the mark `make` builds (in an entry named `key`).
fn with_mark(ta_extra: Value, key: &str, make: impl FnOnce(&mut MemEnv) -> String) -> MemEnv {
    let mut env = federation(json!([]), json!({}));
    let jwt = make(&mut env);
    let marks = json!([{key: TYPE, "trust_mark": jwt}]);
    // Rebuild with the same keys: the entities' keys live in `fed`, not in the statements.
    let (ta, leaf, ia) = (id("ta"), id("leaf"), id("ia"));
    env.fed.entity(&ta, &[], superior_metadata(&ta), ta_extra);
    let md = json!({"openid_relying_party": {"client_name": "leaf"}});
    env.fed
        .entity(&leaf, &[&ia], md, json!({"trust_marks": marks}));
    env.repository_anchor(&ta, false);
    env
}

fn by_anchor() -> Value {
    json!({"type": "trust_mark", "config": {"trust_mark_type": TYPE, "trust_anchors": [id("ta")]}})
}

fn by_keys(env: &mut MemEnv, owner: bool) -> Value {
    let mut config =
        json!({"trust_mark_type": TYPE, "trust_mark_issuer_jwks": env.fed.jwks(&id("tmi"))});
    if owner {
        config["trust_mark_owner"] =
            json!({"entity_id": id("owner"), "jwks": env.fed.jwks(&id("owner"))});
    }
    json!({"type": "trust_mark", "config": config})
}

#[tokio::test]
async fn trust_mark_through_an_anchor_passes_only_when_the_mark_verifies() {
    let leaf = id("leaf");
    let admits = json!({"trust_mark_issuers": {TYPE: [id("tmi")]}});
    let env = with_mark(admits.clone(), "trust_mark_type", |e| {
        mark(e, &id("tmi"), json!({}))
    });
    assert_eq!(status(env.check(by_anchor(), &leaf).await), 200);
    // The earlier drafts' `id` entry name is accepted.
    let env = with_mark(admits.clone(), "id", |e| mark(e, &id("tmi"), json!({})));
    assert_eq!(status(env.check(by_anchor(), &leaf).await), 200);
    // Reference §13 item 2 passes these; they must fail: issuer not admitted, wrong key,
    // expired, anchor not in the repository.
    let others = json!({"trust_mark_issuers": {TYPE: [id("someone-else")]}});
    let env = with_mark(others, "trust_mark_type", |e| {
        mark(e, &id("tmi"), json!({}))
    });
    assert_eq!(status(env.check(by_anchor(), &leaf).await), 403);
    let env = with_mark(admits.clone(), "trust_mark_type", |e| {
        mark(e, &id("ia"), json!({}))
    });
    assert_eq!(status(env.check(by_anchor(), &leaf).await), 403);
    let expired = json!({"exp": NOW - 1});
    let env = with_mark(admits.clone(), "trust_mark_type", |e| {
        mark(e, &id("tmi"), expired)
    });
    assert_eq!(status(env.check(by_anchor(), &leaf).await), 403);
    let mut env = with_mark(admits, "trust_mark_type", |e| {
        mark(e, &id("tmi"), json!({}))
    });
    env.anchors.clear();
    assert_eq!(status(env.check(by_anchor(), &leaf).await), 403);
}

#[tokio::test]
async fn trust_mark_through_an_anchor_needs_the_issuer_chained_to_it_unless_allowed() {
    let leaf = id("leaf");
    let admits = json!({"trust_mark_issuers": {TYPE: [id("tmi")]}});
    let mut env = with_mark(admits, "trust_mark_type", |e| {
        mark(e, &id("tmi"), json!({}))
    });
    // The anchor stops vouching for the issuer; it still lists it.
    let gone = env.fed.sign_as(&id("nobody"), &json!({}));
    env.fed.publish_statement(&id("ta"), &id("tmi"), gone);
    let v = env.check(by_anchor(), &leaf).await;
    let Verdict::Deny(d) = &v else {
        panic!("{v:?}")
    };
    assert!(
        d.error_description.contains("has no trust chain to"),
        "{d:?}"
    );
    // The anchor's record allows listed issuers on their own word.
    env.anchors
        .get_mut(&id("ta"))
        .unwrap()
        .trust_mark_issuer_self_signed = true;
    assert_eq!(status(env.check(by_anchor(), &leaf).await), 200);
}

#[tokio::test]
async fn trust_mark_through_an_anchor_checks_the_owners_delegation() {
    let leaf = id("leaf");
    let owners = |env: &mut MemEnv| {
        json!({"trust_mark_issuers": {TYPE: []},
            "trust_mark_owners": {TYPE: {"sub": id("owner"), "jwks": env.fed.jwks(&id("owner"))}}})
    };
    // Keys are per `MemEnv`: the owner's keys come from the env that signs.
    let env = {
        let mut env = federation(json!([]), json!({}));
        let ta_extra = owners(&mut env);
        let d = delegation(&mut env);
        let jwt = mark(&mut env, &id("tmi"), json!({"delegation": d}));
        rebuild(env, ta_extra, jwt)
    };
    assert_eq!(status(env.check(by_anchor(), &leaf).await), 200);
    // No delegation although the anchor names an owner.
    let env = {
        let mut env = federation(json!([]), json!({}));
        let ta_extra = owners(&mut env);
        let jwt = mark(&mut env, &id("tmi"), json!({}));
        rebuild(env, ta_extra, jwt)
    };
    assert_eq!(status(env.check(by_anchor(), &leaf).await), 403);
}

fn rebuild(mut env: MemEnv, ta_extra: Value, jwt: String) -> MemEnv {
    let (ta, leaf, ia) = (id("ta"), id("leaf"), id("ia"));
    env.fed.entity(&ta, &[], superior_metadata(&ta), ta_extra);
    let md = json!({"openid_relying_party": {"client_name": "leaf"}});
    let marks = json!([{"trust_mark_type": TYPE, "trust_mark": jwt}]);
    env.fed
        .entity(&leaf, &[&ia], md, json!({"trust_marks": marks}));
    env.repository_anchor(&ta, false);
    env
}

#[tokio::test]
async fn trust_mark_with_issuer_keys_verifies_directly_and_checks_delegation() {
    let leaf = id("leaf");
    let mut env = with_mark(json!({}), "trust_mark_type", |e| {
        mark(e, &id("tmi"), json!({}))
    });
    let c = by_keys(&mut env, false);
    assert_eq!(status(env.check(c, &leaf).await), 200);
    // An owner configured: the mark must carry its delegation.
    let c = by_keys(&mut env, true);
    assert_eq!(status(env.check(c, &leaf).await), 403);
    // Keys of another issuer.
    let mut c = by_keys(&mut env, false);
    c["config"]["trust_mark_issuer_jwks"] = serde_json::to_value(env.fed.jwks(&id("ia"))).unwrap();
    assert_eq!(status(env.check(c, &leaf).await), 403);
    // A delegated mark: passes with the owner configured, fails without.
    let mut env = federation(json!([]), json!({}));
    let d = delegation(&mut env);
    let jwt = mark(&mut env, &id("tmi"), json!({"delegation": d}));
    let mut env = rebuild(env, json!({}), jwt);
    let c = by_keys(&mut env, true);
    assert_eq!(status(env.check(c, &leaf).await), 200);
    let c = by_keys(&mut env, false);
    assert_eq!(status(env.check(c, &leaf).await), 403);
    // No mark of the type at all.
    let mut env = federation(json!([]), json!({}));
    let c = by_keys(&mut env, false);
    assert_eq!(status(env.check(c, &leaf).await), 403);
}
