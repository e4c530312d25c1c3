//! Subordinates joining and updating their keys: enroll, enroll_request, jwks_update_trigger
//! and jwks_update.

use std::sync::Arc;

use pharos_shared::jose;
use pharos_shared::time::Clock;
use reqwest::Method;
use serde_json::{Value, json};

use super::harness::*;
use crate::support::{Backend, Pharos, TestDb, enable, enc};

/// The enroll and enroll_request endpoints: the statement an enrollment answers with, and what
/// each stored status and a refused entity get; a superior and two entities on three loopback
/// addresses.
#[tokio::test]
async fn enrollment() {
    let clock = stopped_clock();
    let (_dbs, [sup, leaf, stranger]) = on_three_loopbacks(&clock).await;
    let mut w = Wire::new(clock.now());
    w.learn(&sup, "superior").await;
    w.learn(&leaf, "leaf").await;
    w.learn(&stranger, "stranger").await;
    enable(&sup, "fetch", "/fetch", json!({})).await;
    enable(&sup, "enroll", "/enroll", json!({})).await;
    enable(&sup, "enroll_request", "/enroll-request", json!({})).await;
    for p in [&leaf, &stranger] {
        let rp = json!({"client_name": "leaf", "client_registration_types": ["automatic"]});
        ok(
            p,
            Method::PUT,
            "/entity-configuration/metadata/openid_relying_party",
            rp,
        )
        .await;
    }
    let hint = json!({"entity_id": sup.entity_id()});
    ok(
        &leaf,
        Method::POST,
        "/entity-configuration/authority-hints",
        hint,
    )
    .await;
    let (l_id, x_id) = (leaf.entity_id().to_owned(), stranger.entity_id().to_owned());
    let ask = |path: &str, sub: &str, types: &[&str]| {
        let mut q = url::form_urlencoded::Serializer::new(String::new());
        q.append_pair("sub", sub);
        for t in types {
            q.append_pair("entity_type", t);
        }
        format!("{path}?{}", q.finish())
    };
    let set_status = async |status: &str| {
        let path = format!("/subordinates/{}/status", enc(&l_id));
        let (s, v) = sup.admin_raw(Method::PUT, &path, Some(status)).await;
        assert_eq!(s, 200, "{v}");
    };

    // Asked before the leaf is enrolled (later its stored status answers first).
    let undeclared = w
        .get(&sup, &ask("/enroll", &l_id, &["openid_provider"]))
        .await;
    let mut answers = vec![(
        format!("GET /enroll?sub={l_id}&entity_type=openid_relying_party (new)"),
        w.get(&sup, &ask("/enroll", &l_id, &["openid_relying_party"]))
            .await,
    )];
    answers.push((
        format!("GET /enroll-request?sub={l_id} (active)"),
        w.get(&sup, &ask("/enroll-request", &l_id, &[])).await,
    ));
    set_status("pending").await;
    for path in ["/enroll", "/enroll-request"] {
        answers.push((
            format!("GET {path}?sub={l_id} (pending)"),
            w.get(&sup, &ask(path, &l_id, &[])).await,
        ));
    }
    set_status("blocked").await;
    for path in ["/enroll", "/enroll-request"] {
        answers.push((
            format!("GET {path}?sub={l_id} (blocked)"),
            w.get(&sup, &ask(path, &l_id, &[])).await,
        ));
    }
    set_status("inactive").await;
    answers.push((
        format!("GET /enroll?sub={l_id} (inactive)"),
        w.get(&sup, &ask("/enroll", &l_id, &[])).await,
    ));
    w.snapshot("enrollment", &w.each(answers));

    let errors = w.each(vec![
        ("GET /enroll".into(), w.get(&sup, "/enroll").await),
        (
            format!("GET /enroll?sub={x_id} (not naming the superior)"),
            w.get(&sup, &ask("/enroll", &x_id, &[])).await,
        ),
        (
            format!("GET /enroll-request?sub={x_id} (not naming the superior)"),
            w.get(&sup, &ask("/enroll-request", &x_id, &[])).await,
        ),
        (
            format!("GET /enroll?sub={l_id}&entity_type=openid_provider (undeclared type)"),
            undeclared,
        ),
        (
            "GET /enroll?sub=http://127.0.0.1:9 (unreachable)".into(),
            w.get(&sup, &ask("/enroll", "http://127.0.0.1:9", &[]))
                .await,
        ),
    ]);
    w.snapshot("enrollment_errors", &errors);
    for p in [stranger, leaf, sup] {
        p.stop().await;
    }
}

/// The jwks_update_trigger and jwks_update endpoints (Pharos extensions): the trigger's answer
/// before and after the subordinate rotated its keys, a signed push, and their refusals; a
/// superior and its subordinate on two loopback addresses.
#[tokio::test]
async fn key_updates() {
    let b = Backend::Sqlite;
    let (db_s, db_l) = (TestDb::new(b).await, TestDb::new(b).await);
    let clock = stopped_clock();
    let dyn_clock = || clock.clone() as Arc<dyn Clock>;
    let sup = Pharos::start_at(&db_s, "127.0.0.1", |_| {}, dyn_clock()).await;
    let leaf = Pharos::start_at(&db_l, "127.0.0.2", |_| {}, dyn_clock()).await;
    let mut w = Wire::new(clock.now());
    w.learn(&sup, "superior").await;
    w.learn(&leaf, "leaf").await;
    enable(&sup, "fetch", "/fetch", json!({})).await;
    enable(&sup, "jwks_update_trigger", "/jwks-trigger", json!({})).await;
    enable(&sup, "jwks_update", "/jwks-update", json!({})).await;
    let l_id = leaf.entity_id().to_owned();
    let jwks = leaf.entity_configuration().await.claims["jwks"].clone();
    let body = json!({"entity_id": l_id, "jwks": jwks});
    ok(&sup, Method::POST, "/subordinates", body).await;

    let trigger = async |w: &Wire, body: Value| {
        let r = sup.client.post(sup.main_url("/jwks-trigger")).json(&body);
        w.seen(r.send().await.unwrap()).await
    };
    let push = async |w: &Wire, content_type: &str, body: String| {
        let r = sup
            .client
            .post(sup.main_url("/jwks-update"))
            .header("content-type", content_type)
            .body(body);
        w.seen(r.send().await.unwrap()).await
    };
    let ct = "application/jwk-set+jwt";
    let mut answers = vec![(
        format!("POST /jwks-trigger {{\"sub\": \"{l_id}\"}} (keys unchanged)"),
        trigger(&w, json!({"sub": l_id})).await,
    )];
    // The leaf announces its next key (published, not yet signing): the trigger picks it up.
    let policy = json!({"enabled": true, "interval": 7200, "overlap": 3600});
    ok(&leaf, Method::PUT, "/kms/rotation", policy).await;
    let cp = &leaf.app.as_ref().unwrap().control;
    cp.rotate_keys(cp.now()).await.unwrap();
    w.learn(&leaf, "leaf").await;
    answers.push((
        format!("POST /jwks-trigger {{\"sub\": \"{l_id}\"}} (next key announced)"),
        trigger(&w, json!({"sub": l_id})).await,
    ));
    // Then rotates at once: its new keys are pushed, signed by a key the superior stores.
    let old = crate::client_auth::signer(&leaf);
    let before = leaf.entity_configuration().await.claims["jwks"].clone();
    let (s, v) = leaf.admin(Method::POST, "/kms/rotate", None).await;
    assert_eq!(s, 202, "{v}");
    published_anew(&leaf, &before).await;
    settled(&leaf).await;
    w.learn(&leaf, "leaf").await;
    let keys = leaf.entity_configuration().await.claims["jwks"]["keys"].clone();
    let now = clock.now();
    let claims = json!({"iss": l_id, "sub": l_id, "iat": now, "exp": now + 60, "keys": keys});
    let signed = |claims: &Value| {
        jose::sign(
            old.as_ref(),
            "jwk-set+jwt",
            claims.as_object().unwrap(),
            None,
        )
        .unwrap()
    };
    let accepted = signed(&claims);
    answers.push((
        "POST /jwks-update (signed by a stored key)".into(),
        push(&w, ct, accepted.clone()).await,
    ));
    w.snapshot("key_updates", &w.each(answers));

    let stranger = json!({"iss": "https://x.example.org", "sub": "https://x.example.org",
        "iat": now, "keys": keys});
    // Rotated at once again: its configuration is signed by a key the superior does not know.
    let before = leaf.entity_configuration().await.claims["jwks"].clone();
    let (s, v) = leaf.admin(Method::POST, "/kms/rotate", None).await;
    assert_eq!(s, 202, "{v}");
    published_anew(&leaf, &before).await;
    settled(&leaf).await;
    w.learn(&leaf, "leaf").await;
    let errors = w.each(vec![
        (
            format!("POST /jwks-trigger {{\"sub\": \"{l_id}\"}} (signed by an unknown key)"),
            trigger(&w, json!({"sub": l_id})).await,
        ),
        ("POST /jwks-trigger {}".into(), trigger(&w, json!({})).await),
        (
            "POST /jwks-trigger {\"sub\": \"https://x.example.org\"}".into(),
            trigger(&w, json!({"sub": "https://x.example.org"})).await,
        ),
        (
            "POST /jwks-update (Content-Type application/jwt)".into(),
            push(&w, "application/jwt", accepted.clone()).await,
        ),
        (
            "POST /jwks-update (empty body)".into(),
            push(&w, ct, String::new()).await,
        ),
        (
            "POST /jwks-update (a replay)".into(),
            push(&w, ct, accepted).await,
        ),
        (
            "POST /jwks-update (an unknown subordinate)".into(),
            push(&w, ct, signed(&stranger)).await,
        ),
        ("GET /jwks-update".into(), w.get(&sup, "/jwks-update").await),
    ]);
    w.snapshot("key_updates_errors", &errors);
    for p in [leaf, sup] {
        p.stop().await;
    }
}

/// Waits until `leaf` publishes keys other than `before`: a rotation is answered 202 and
/// published a moment later, and the snapshot names keys in the order they are learnt.
async fn published_anew(leaf: &Pharos, before: &Value) {
    crate::support::eventually("the rotated keys are published", || async {
        leaf.entity_configuration().await.claims["jwks"] != *before
    })
    .await;
}

/// Brings `leaf`'s keys to where its key task takes them after a rotation (with a rotation
/// policy, the next key is announced at once), so that what the snapshot numbers does not
/// depend on whether that task ran before the keys were learnt.
async fn settled(leaf: &Pharos) {
    let cp = &leaf.app.as_ref().unwrap().control;
    cp.rotate_keys(cp.now()).await.unwrap();
}
