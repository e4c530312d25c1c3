//! Federations of Pharos instances on loopback (trust anchor → intermediate → leaf), resolved
//! by a Pharos resolver and by an independent client; then, one at a time, the faults a
//! resolver must catch: a loop in `authority_hints`, an expired statement, a wrong key, a
//! violated `max_path_length` and naming constraint, and a policy the leaf's metadata fails.

use std::sync::Arc;

use crate::interop::{node_available, node_resolve};
use crate::resolve::{enable_resolve, error_code, resolve, verified};
use crate::support::{Backend, Pharos, TestDb, backends, enc};
use pharos_shared::time::{Clock, ManualClock, SystemClock};
use reqwest::Method;
use serde_json::{Value, json};

/// One Pharos with its own database.
struct Node {
    p: Pharos,
    _db: TestDb,
}

impl Node {
    async fn start(b: Backend) -> Self {
        Self::with_clock(b, Arc::new(SystemClock)).await
    }

    async fn with_clock(b: Backend, clock: Arc<dyn Clock>) -> Self {
        let db = TestDb::new(b).await;
        let p = Pharos::start_with(&db, |_| {}, clock).await;
        Self { p, _db: db }
    }

    fn id(&self) -> String {
        self.p.entity_id().to_owned()
    }

    async fn admin(&self, method: Method, path: &str, body: Value) -> Value {
        let (s, v) = self.p.admin(method, path, Some(body)).await;
        assert!((200..300).contains(&s), "{path}: {s} {v}");
        v
    }

    /// Publishes a fetch endpoint, making this node a superior.
    async fn superior(&self, lifetime: u64) {
        let cfg =
            json!({"type": "fetch", "path": "/fetch", "config": {"statement_lifetime": lifetime}});
        self.admin(Method::POST, "/federation-endpoints", cfg).await;
    }

    /// Registers `sub` as an active subordinate with `jwks` (its real keys unless given).
    async fn add(&self, sub: &Node, jwks: Option<Value>) {
        let jwks = match jwks {
            Some(j) => j,
            None => sub.p.entity_configuration().await.claims["jwks"].clone(),
        };
        let body = json!({"entity_id": sub.id(), "jwks": jwks});
        self.admin(Method::POST, "/subordinates", body).await;
    }

    /// Adds `sup` to this node's `authority_hints`.
    async fn hint(&self, sup: &Node) {
        let body = json!({"entity_id": sup.id()});
        self.admin(Method::POST, "/entity-configuration/authority-hints", body)
            .await;
    }

    /// PUT on a subordinate's document, e.g. `constraints/max-path-length`.
    async fn put_sub(&self, sub: &Node, doc: &str, body: Value) {
        let path = format!("/subordinates/{}/{doc}", enc(&sub.id()));
        self.admin(Method::PUT, &path, body).await;
    }

    async fn delete_sub(&self, sub: &Node, doc: &str) {
        let path = format!("/subordinates/{}/{doc}", enc(&sub.id()));
        let (s, v) = self.p.admin(Method::DELETE, &path, None).await;
        assert!((200..300).contains(&s), "{path}: {s} {v}");
    }
}

/// TA → I → L, with L an RP and a policy of the TA on I's statement.
struct Fed {
    ta: Node,
    i: Node,
    l: Node,
}

async fn federation(b: Backend, i_clock: Arc<dyn Clock>) -> Fed {
    let (ta, i, l) = (
        Node::start(b).await,
        Node::with_clock(b, i_clock).await,
        Node::start(b).await,
    );
    ta.superior(86_400).await;
    i.superior(3600).await;
    let rp = json!({"client_name": "leaf", "contacts": ["ops@leaf.example"],
        "client_registration_types": ["automatic"]});
    l.admin(
        Method::PUT,
        "/entity-configuration/metadata/openid_relying_party",
        rp,
    )
    .await;
    ta.add(&i, None).await;
    i.hint(&ta).await;
    i.add(&l, None).await;
    l.hint(&i).await;
    let policy = json!({"openid_relying_party": {"contacts": {"add": ["fed@ta.example"]}}});
    ta.put_sub(&i, "metadata-policies", policy).await;
    Fed { ta, i, l }
}

/// A fresh resolver (its caches empty) for `anchor`.
async fn resolver(anchor: &str) -> Node {
    let r = Node::start(Backend::Sqlite).await;
    enable_resolve(&r.p, json!({"allowed_trust_anchors": [anchor]})).await;
    r
}

/// Resolves `sub` to `anchor` with a fresh resolver; status, body.
async fn fresh_resolve(sub: &str, anchor: &str) -> (u16, String) {
    let r = resolver(anchor).await;
    resolve(&r.p, sub, &[anchor], &[]).await
}

#[tokio::test]
async fn a_three_level_chain_resolves_with_policies_applied() {
    for b in backends() {
        let f = federation(b, Arc::new(SystemClock)).await;
        let r = resolver(&f.ta.id()).await;
        let (s, body) = resolve(&r.p, &f.l.id(), &[&f.ta.id()], &[]).await;
        assert_eq!(s, 200, "{b:?} {body}");
        let c = verified(&r.p, &body).await;
        assert_eq!(c["sub"], f.l.id());
        assert_eq!(c["trust_chain"].as_array().unwrap().len(), 4);
        let rp = &c["metadata"]["openid_relying_party"];
        assert_eq!(rp["client_name"], "leaf");
        let mut contacts: Vec<&str> = rp["contacts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        contacts.sort();
        assert_eq!(contacts, ["fed@ta.example", "ops@leaf.example"]);
        let exps: Vec<i64> = c["trust_chain"]
            .as_array()
            .unwrap()
            .iter()
            .map(|j| {
                let d = pharos_shared::jose::decode_unverified(j.as_str().unwrap()).unwrap();
                d.claims["exp"].as_i64().unwrap()
            })
            .collect();
        assert_eq!(c["exp"].as_i64(), exps.iter().min().copied());

        // A second Trust Anchor: L also under TA2 directly. Asking for both picks the
        // shorter chain; asking for TA2 alone gives the chain to TA2.
        let ta2 = Node::start(b).await;
        ta2.superior(86_400).await;
        ta2.add(&f.l, None).await;
        f.l.hint(&ta2).await;
        let r2 = Node::start(Backend::Sqlite).await;
        // Neither anchor is in r2's repository: it resolves towards any, explicitly.
        enable_resolve(&r2.p, json!({"allow_any_trust_anchor": true})).await;
        let (s, body) = resolve(&r2.p, &f.l.id(), &[&f.ta.id(), &ta2.id()], &[]).await;
        assert_eq!(s, 200, "{body}");
        let c = verified(&r2.p, &body).await;
        assert_eq!(c["trust_chain"].as_array().unwrap().len(), 3);
        let last = c["trust_chain"][2].as_str().unwrap();
        let ta_ec = pharos_shared::jose::decode_unverified(last).unwrap();
        assert_eq!(ta_ec.claims["sub"], ta2.id());
        let (s, body) = resolve(&r2.p, &f.l.id(), &[&f.ta.id()], &[]).await;
        assert_eq!(s, 200, "{body}");
        assert_eq!(
            verified(&r2.p, &body).await["trust_chain"]
                .as_array()
                .unwrap()
                .len(),
            4
        );

        // An independent client resolves the same chain.
        if b == Backend::Sqlite && node_available() {
            let v = node_resolve(&f.l.id(), &f.ta.id()).await;
            assert_eq!(v["chains"], 1, "{v}");
            // Its chain holds the statements without the anchor's EC: L, I→L, TA→I.
            assert_eq!(v["lengths"][0], 3, "{v}");
            let theirs = &v["metadata"]["openid_relying_party"];
            assert_eq!(theirs["client_name"], "leaf");
            let mut their_contacts: Vec<&str> = theirs["contacts"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap())
                .collect();
            their_contacts.sort();
            assert_eq!(their_contacts, contacts, "same policy outcome as ours");
        }
    }
}

#[tokio::test]
async fn faults_in_the_federation_are_reported() {
    let b = backends()[backends().len() - 1];
    let f = federation(b, Arc::new(SystemClock)).await;
    let (ta, l) = (f.ta.id(), f.l.id());

    // A loop: I and a sibling X are each other's superiors; L still resolves, via I only.
    let x = Node::start(b).await;
    x.superior(3600).await;
    x.add(&f.i, None).await;
    f.i.add(&x, None).await;
    f.i.hint(&x).await;
    x.hint(&f.i).await;
    let (s, body) = fresh_resolve(&l, &ta).await;
    assert_eq!(s, 200, "loop: {body}");

    // A wrong key: the TA registers I with someone else's keys.
    let other = f.l.p.entity_configuration().await.claims["jwks"].clone();
    let path = format!("/subordinates/{}/jwks", enc(&f.i.id()));
    f.ta.admin(Method::PUT, &path, other).await;
    let (s, body) = fresh_resolve(&l, &ta).await;
    assert_eq!(
        (s, error_code(&body).as_str()),
        (400, "invalid_trust_chain"),
        "{body}"
    );
    let real = f.i.p.entity_configuration().await.claims["jwks"].clone();
    f.ta.admin(Method::PUT, &path, real).await;
    assert_eq!(fresh_resolve(&l, &ta).await.0, 200);

    // max_path_length 0 on I: I may not have Intermediates below it, but L is below I
    // through I itself being one.
    f.ta.put_sub(&f.i, "constraints/max-path-length", json!(0))
        .await;
    let (s, body) = fresh_resolve(&l, &ta).await;
    assert_eq!(
        (s, error_code(&body).as_str()),
        (400, "invalid_trust_chain"),
        "{body}"
    );
    assert!(body.contains("max_path_length"), "{body}");
    f.ta.delete_sub(&f.i, "constraints/max-path-length").await;

    // A naming constraint that excludes the loopback host of every node.
    let nc = json!({"excluded": ["127.0.0.1"]});
    f.ta.put_sub(&f.i, "constraints/naming-constraints", nc)
        .await;
    let (s, body) = fresh_resolve(&l, &ta).await;
    assert_eq!(
        (s, error_code(&body).as_str()),
        (400, "invalid_trust_chain"),
        "{body}"
    );
    f.ta.delete_sub(&f.i, "constraints/naming-constraints")
        .await;

    // A policy the leaf's metadata fails.
    let policy = json!({"openid_relying_party": {"client_name": {"one_of": ["other"]}}});
    f.ta.put_sub(&f.i, "metadata-policies", policy).await;
    let (s, body) = fresh_resolve(&l, &ta).await;
    assert_eq!(
        (s, error_code(&body).as_str()),
        (400, "invalid_metadata"),
        "{body}"
    );
}

#[tokio::test]
async fn an_expired_statement_breaks_the_chain() {
    let b = Backend::Sqlite;
    // I's clock runs two hours behind: its one-hour statements about L are already expired.
    let now = SystemClock.now();
    let f = federation(b, ManualClock::new(now - 7200)).await;
    let (s, body) = fresh_resolve(&f.l.id(), &f.ta.id()).await;
    assert_eq!(
        (s, error_code(&body).as_str()),
        (400, "invalid_trust_chain"),
        "{body}"
    );
    assert!(body.contains("exp"), "{body}");
}

/// The `openid_relying_party` metadata of a verified resolve answer.
async fn rp_of(resolver: &Pharos, body: &str) -> Value {
    verified(resolver, body).await["metadata"]["openid_relying_party"].clone()
}

/// Issue 32: the resolver serves what the operator corrected. The anchor resolves; its own
/// statements change with its snapshot at once, a failure is not kept past a correction
/// upstream, and remote answers keep their lifetimes until `resolver flush` (API or CLI).
#[tokio::test]
async fn the_resolver_serves_what_the_operator_corrected() {
    let f = federation(Backend::Sqlite, Arc::new(SystemClock)).await;
    let (ta, i, l) = (&f.ta, &f.i, &f.l);
    // Failures are kept 0 s here, so the correction is seen by the very next request (the
    // default, a few seconds, is the resolver's unit tests' business).
    let cfg = json!({"allowed_trust_anchors": [ta.id()], "error_cache_seconds": 0});
    enable_resolve(&ta.p, cfg).await;
    let value = |v: &str| json!({"openid_relying_party": {"client_name": {"value": v}}});

    // Conflicting `value` policies on the anchor and the intermediate: an error.
    ta.put_sub(i, "metadata-policies", value("TA name")).await;
    i.put_sub(l, "metadata-policies", value("I name")).await;
    let (s, body) = resolve(&ta.p, &l.id(), &[&ta.id()], &[]).await;
    assert_eq!(
        (s, error_code(&body).as_str()),
        (400, "invalid_metadata"),
        "{body}"
    );

    // The intermediate's policy fixed: the next request resolves (the cached statement that
    // failed is fetched anew), without a restart and without waiting for its expiry.
    i.delete_sub(l, "metadata-policies").await;
    let (s, body) = resolve(&ta.p, &l.id(), &[&ta.id()], &[]).await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(rp_of(&ta.p, &body).await["client_name"], "TA name");

    // The anchor's own policy changed: the old answer is not served.
    ta.put_sub(i, "metadata-policies", value("TA name 2")).await;
    let (s, body) = resolve(&ta.p, &l.id(), &[&ta.id()], &[]).await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(rp_of(&ta.p, &body).await["client_name"], "TA name 2");

    // A remote change (the leaf's own metadata) keeps the cached answer until a flush: by
    // the CLI for the subject, then by the API for everything.
    let rp = |uri: &str| {
        json!({"client_name": "leaf", "contacts": ["ops@leaf.example"],
            "client_registration_types": ["automatic"], "client_uri": uri})
    };
    let path = "/entity-configuration/metadata/openid_relying_party";
    l.admin(Method::PUT, path, rp("https://leaf.example/1"))
        .await;
    let (_, body) = resolve(&ta.p, &l.id(), &[&ta.id()], &[]).await;
    assert_eq!(
        rp_of(&ta.p, &body).await["client_uri"],
        Value::Null,
        "cached"
    );
    let out = crate::cli_admin::admin(&ta.p, &["resolver", "flush", "--sub", &l.id()])
        .await
        .ok();
    assert!(out.contains(&l.id()), "{out}");
    let (_, body) = resolve(&ta.p, &l.id(), &[&ta.id()], &[]).await;
    assert_eq!(
        rp_of(&ta.p, &body).await["client_uri"],
        "https://leaf.example/1"
    );

    l.admin(Method::PUT, path, rp("https://leaf.example/2"))
        .await;
    let (s, v) =
        ta.p.admin(
            Method::POST,
            "/resolver/flush",
            Some(json!({"sub": "not a url"})),
        )
        .await;
    assert_eq!(
        (s, v["error"].as_str()),
        (400, Some("invalid_request")),
        "{v}"
    );
    let (s, v) =
        ta.p.admin(Method::POST, "/resolver/flush", Some(json!({})))
            .await;
    assert_eq!(s, 200, "{v}");
    let (_, body) = resolve(&ta.p, &l.id(), &[&ta.id()], &[]).await;
    assert_eq!(
        rp_of(&ta.p, &body).await["client_uri"],
        "https://leaf.example/2"
    );
}
