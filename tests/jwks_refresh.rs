//! A leaf Pharos rotates its keys; its superior (a Pharos with the leaf as subordinate)
//! notices by polling, by trigger and by signed push, and its next fetched statement carries
//! the new keys, with the matching history events.

use std::sync::Arc;

use crate::fetch_list::{enable, fetch};
use crate::support::{Pharos, TestDb, backends, enc};
use pharos_shared::jose::{self, Jwks, Signer};
use reqwest::Method;
use serde_json::{Value, json};

/// The leaf's published keys as its Entity Configuration shows them.
pub async fn published(p: &Pharos) -> Jwks {
    serde_json::from_value(p.entity_configuration().await.claims["jwks"].clone()).unwrap()
}

pub fn kids(j: &Value) -> Vec<String> {
    let mut k: Vec<String> = j["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kid"].as_str().unwrap().to_owned())
        .collect();
    k.sort();
    k
}

/// Superior and leaf; the superior serves fetch, the trigger and the push endpoints and has
/// the leaf as an active subordinate with the leaf's current keys.
pub async fn federation(db_s: &TestDb, db_l: &TestDb, poll: bool) -> (Pharos, Pharos) {
    let leaf = Pharos::start(db_l).await;
    let sup = Pharos::start(db_s).await;
    enable(&sup, "fetch", "/fetch", json!({})).await;
    enable(&sup, "jwks_update_trigger", "/jwks-trigger", json!({})).await;
    enable(&sup, "jwks_update", "/jwks-update", json!({})).await;
    let body = json!({"entity_id": leaf.entity_id(), "status": "active",
        "jwks": published(&leaf).await, "enable_jwks_update": poll, "jwks_poll_interval": 3600});
    let (s, v) = sup.admin(Method::POST, "/subordinates", Some(body)).await;
    assert_eq!(s, 201, "{v}");
    if poll {
        // The running refresher learns about the new subordinate in the background; a tick
        // driven by the test before that would find nothing to poll. Wait until it knows.
        let refreshers = &sup.app.as_ref().unwrap().refreshers;
        for _ in 0..250 {
            if refreshers.next_wake().await.is_some() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert!(
            refreshers.next_wake().await.is_some(),
            "the subordinate is never scheduled"
        );
    }
    (sup, leaf)
}

/// Rotates the leaf's keys; returns the key that signed before the rotation.
pub async fn rotate(leaf: &Pharos) -> Arc<dyn Signer> {
    let old = leaf
        .app
        .as_ref()
        .unwrap()
        .control
        .snapshot()
        .keys
        .signer
        .clone();
    let (s, v) = leaf.admin(Method::POST, "/kms/rotate", None).await;
    assert_eq!(s, 202, "{v}");
    old
}

/// Announces the leaf's next key the way scheduled rotation does: published now, signing
/// later, so that the current key still signs the configuration that announces it. Returns
/// the published keys (both).
async fn announce(leaf: &Pharos) -> Jwks {
    let signing = leaf.entity_configuration().await.header["kid"].clone();
    let policy = json!({"enabled": true, "interval": 7200, "overlap": 3600});
    let (s, v) = leaf.admin(Method::PUT, "/kms/rotation", Some(policy)).await;
    assert_eq!(s, 200, "{v}");
    let cp = &leaf.app.as_ref().unwrap().control;
    cp.rotate_keys(cp.now()).await.unwrap();
    let ec = leaf.entity_configuration().await;
    assert_eq!(
        ec.header["kid"], signing,
        "the announced key does not sign yet"
    );
    let keys = published(leaf).await;
    assert_eq!(keys.keys.len(), 2);
    keys
}

/// History event types of the leaf at the superior, newest first.
async fn history(sup: &Pharos, leaf: &Pharos) -> Vec<(String, String)> {
    let path = format!("/subordinates/{}/history", enc(leaf.entity_id()));
    let (s, h) = sup.admin(Method::GET, &path, None).await;
    assert_eq!(s, 200, "{h}");
    h["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let m = e["message"].as_str().unwrap_or_default().to_owned();
            (e["type"].as_str().unwrap().to_owned(), m)
        })
        .collect()
}

pub async fn assert_statement_has(sup: &Pharos, leaf: &Pharos, keys: &Jwks) {
    let st = fetch(sup, leaf.entity_id()).await;
    assert_eq!(kids(&st["jwks"]), kids(&json!(keys)));
}

#[tokio::test]
async fn polling_picks_up_a_rotation() {
    for b in backends() {
        let (db_s, db_l) = (TestDb::new(b).await, TestDb::new(b).await);
        let (sup, leaf) = federation(&db_s, &db_l, true).await;
        let after = announce(&leaf).await;
        // Drive the refresher past the poll interval instead of waiting an hour.
        let now = sup.clock.now();
        sup.app.as_ref().unwrap().refreshers.tick(now + 3_601).await;
        assert_statement_has(&sup, &leaf, &after).await;
        let h = history(&sup, &leaf).await;
        assert_eq!(h[0].0, "jwks_refreshed", "{b:?} {h:?}");
        assert!(h[0].1.starts_with("added: "), "{h:?}");
        sup.stop().await;
        leaf.stop().await;
    }
}

pub async fn trigger(sup: &Pharos, body: Value) -> (u16, Value) {
    let r = sup
        .client
        .post(sup.main_url("/jwks-trigger"))
        .json(&body)
        .send()
        .await
        .unwrap();
    let s = r.status().as_u16();
    (s, r.json().await.unwrap())
}

#[tokio::test]
async fn the_trigger_picks_up_a_rotation() {
    for b in backends() {
        let (db_s, db_l) = (TestDb::new(b).await, TestDb::new(b).await);
        let (sup, leaf) = federation(&db_s, &db_l, false).await;
        let before = published(&leaf).await;
        let sub = leaf.entity_id();
        let after = announce(&leaf).await;
        assert_eq!(
            trigger(&sup, json!({"sub": sub})).await,
            (200, json!({"sub": sub, "changed": true}))
        );
        assert_statement_has(&sup, &leaf, &after).await;
        // A form body works as well; nothing changed this time.
        let r = sup
            .client
            .post(sup.main_url("/jwks-trigger"))
            .form(&[("sub", sub)])
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.json::<Value>().await.unwrap()["changed"], false);
        let h = history(&sup, &leaf).await;
        let types: Vec<&str> = h.iter().map(|e| e.0.as_str()).take(3).collect();
        assert_eq!(
            types,
            [
                "jwks_update_triggered",
                "jwks_update_triggered",
                "jwks_refreshed"
            ]
        );
        assert_eq!(h[1].1, "jwks changed");
        // An immediate rotation is signed by a key the superior does not know: refused,
        // nothing changes (only a signed push, or an announcement, can carry it).
        rotate(&leaf).await;
        let (s, e) = trigger(&sup, json!({"sub": sub})).await;
        assert_eq!((s, e["error"].as_str()), (401, Some("invalid_client")));
        assert_statement_has(&sup, &leaf, &after).await;
        assert_ne!(kids(&json!(before)), kids(&json!(after)));
        // Unknown, and blocked, subordinates are not refreshed; a missing sub is a bad request.
        let (s, e) = trigger(&sup, json!({"sub": "https://unknown.example"})).await;
        assert_eq!((s, e["error"].as_str()), (404, Some("not_found")));
        let (s, _) = trigger(&sup, json!({})).await;
        assert_eq!(s, 400);
        let path = format!("/subordinates/{}/status", enc(sub));
        let (s, v) = sup.admin_raw(Method::PUT, &path, Some("blocked")).await;
        assert_eq!(s, 200, "{v}");
        assert_eq!(trigger(&sup, json!({"sub": sub})).await.0, 404);
        sup.stop().await;
        leaf.stop().await;
    }
}

pub fn signed_jwks(signer: &dyn Signer, claims: Value) -> String {
    jose::sign(signer, "jwk-set+jwt", claims.as_object().unwrap(), None).unwrap()
}

pub async fn push(sup: &Pharos, content_type: &str, body: String) -> u16 {
    let r = sup
        .client
        .post(sup.main_url("/jwks-update"))
        .header("content-type", content_type)
        .body(body)
        .send()
        .await
        .unwrap();
    r.status().as_u16()
}

#[tokio::test]
async fn a_signed_push_replaces_the_keys_and_every_rejection_changes_nothing() {
    for b in backends() {
        let (db_s, db_l) = (TestDb::new(b).await, TestDb::new(b).await);
        let (sup, leaf) = federation(&db_s, &db_l, false).await;
        let before = published(&leaf).await;
        let old = rotate(&leaf).await;
        let after = published(&leaf).await;
        let new_signer = leaf
            .app
            .as_ref()
            .unwrap()
            .control
            .snapshot()
            .keys
            .signer
            .clone();
        let sub = leaf.entity_id();
        let now = sup.clock.now();
        let claims =
            json!({"iss": sub, "sub": sub, "iat": now, "exp": now + 60, "keys": after.keys});
        let ct = "application/jwk-set+jwt";
        let rejected = [
            (
                415,
                "application/jwt",
                signed_jwks(old.as_ref(), claims.clone()),
            ),
            (
                415,
                "application/jwk-set+jwt; charset=utf-8",
                signed_jwks(old.as_ref(), claims.clone()),
            ),
            (400, ct, String::new()),
            // Signed by the new key, which the superior does not know yet.
            (401, ct, signed_jwks(new_signer.as_ref(), claims.clone())),
            (
                400,
                ct,
                signed_jwks(
                    old.as_ref(),
                    json!({"iss": sub, "sub": sub, "exp": now - 1, "keys": after.keys}),
                ),
            ),
            (
                400,
                ct,
                signed_jwks(
                    old.as_ref(),
                    json!({"iss": sub, "sub": sub, "keys": [after.keys[0], after.keys[0]]}),
                ),
            ),
            (
                404,
                ct,
                signed_jwks(
                    old.as_ref(),
                    json!({"iss": "https://x.example", "sub": "https://x.example", "iat": now, "keys": after.keys}),
                ),
            ),
        ];
        for (status, ctype, body) in rejected {
            assert_eq!(push(&sup, ctype, body).await, status, "{b:?} {ctype}");
            assert_statement_has(&sup, &leaf, &before).await;
        }
        let accepted = signed_jwks(old.as_ref(), claims);
        assert_eq!(push(&sup, ct, accepted.clone()).await, 204);
        assert_statement_has(&sup, &leaf, &after).await;
        // Replays change nothing: the same push again, and an older one still signed by a
        // stored key that would put the keys from before back.
        let older = json!({"iss": sub, "sub": sub, "iat": now - 10, "keys": before.keys});
        let older = signed_jwks(old.as_ref(), older);
        for replay in [accepted, older] {
            assert_eq!(push(&sup, ct, replay).await, 400, "{b:?}");
            assert_statement_has(&sup, &leaf, &after).await;
        }
        let h = history(&sup, &leaf).await;
        assert_eq!(h[0].0, "jwks_updated", "{h:?}");
        assert_eq!(
            h.iter().filter(|e| e.0 == "jwks_updated").count(),
            1,
            "{h:?}"
        );
        sup.stop().await;
        leaf.stop().await;
    }
}

/// The real HTTP fetcher, except that its first Entity Configuration fetch hands over its
/// answer only when released: a poll held in flight while another one completes.
struct HeldFirstFetch {
    inner: pharos_runtime::outbound::HttpFetcher,
    first: std::sync::atomic::AtomicBool,
    fetched: tokio::sync::Notify,
    release: tokio::sync::Notify,
}

impl HeldFirstFetch {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            // The test federation is on loopback.
            inner: pharos_runtime::outbound::HttpFetcher::new(
                &pharos_shared::config::FederationSettings {
                    block_private_addresses: false,
                    ..Default::default()
                },
            ),
            first: true.into(),
            fetched: tokio::sync::Notify::new(),
            release: tokio::sync::Notify::new(),
        })
    }
}

impl pharos_shared::chain::Fetcher for HeldFirstFetch {
    async fn entity_configuration(&self, entity_id: &str) -> pharos_shared::Result<String> {
        let r = self.inner.entity_configuration(entity_id).await;
        if self.first.swap(false, std::sync::atomic::Ordering::SeqCst) {
            self.fetched.notify_one();
            self.release.notified().await;
        }
        r
    }

    async fn subordinate_statement(
        &self,
        fetch_endpoint: &str,
        sub: &str,
    ) -> pharos_shared::Result<String> {
        self.inner.subordinate_statement(fetch_endpoint, sub).await
    }
}

#[tokio::test]
async fn a_poll_that_fetched_before_a_rotation_cannot_put_the_old_keys_back() {
    for b in backends() {
        let (db_s, db_l) = (TestDb::new(b).await, TestDb::new(b).await);
        let (sup, leaf) = federation(&db_s, &db_l, true).await;
        let held = HeldFirstFetch::new();
        let control = sup.app.as_ref().unwrap().control.clone();
        let slow = pharos_controlplane::refresh::Refreshers::new(control, held.clone());
        let (id, now) = (leaf.entity_id().to_owned(), sup.clock.now());
        let in_flight =
            tokio::spawn(async move { slow.refresh_subordinate_keys(&id, now, None).await });
        held.fetched.notified().await; // it holds the configuration from before the rotation
        let after = announce(&leaf).await;
        sup.app.as_ref().unwrap().refreshers.tick(now + 3_601).await;
        assert_statement_has(&sup, &leaf, &after).await;
        held.release.notify_one();
        let polled = in_flight.await.unwrap().unwrap();
        assert!(!polled.changed, "{b:?}: the older poll stored its keys");
        assert_statement_has(&sup, &leaf, &after).await;
        sup.stop().await;
        leaf.stop().await;
    }
}

#[tokio::test]
async fn an_anchor_poll_that_fetched_before_a_rotation_cannot_put_the_old_keys_back() {
    for b in backends() {
        let (db_t, db_r) = (TestDb::new(b).await, TestDb::new(b).await);
        let (t, r) = (Pharos::start(&db_t).await, Pharos::start(&db_r).await);
        let ta = t.entity_id().to_owned();
        let body = json!({"entity_id": ta, "jwks": published(&t).await,
                          "enable_jwks_update": true, "key_poll_interval": 3600});
        let (s, v) = r.admin(Method::POST, "/trust-anchors", Some(body)).await;
        assert_eq!(s, 201, "{v}");
        let held = HeldFirstFetch::new();
        let app = r.app.as_ref().unwrap();
        let slow = pharos_controlplane::refresh::Refreshers::new(app.control.clone(), held.clone());
        let (id, now) = (ta.clone(), r.clock.now());
        let in_flight = tokio::spawn(async move { slow.poll_anchor(&id, now).await.ok() });
        held.fetched.notified().await; // it holds the configuration from before the rotation
        let after = announce(&t).await;
        app.refreshers.tick(now + 3_601).await;
        let stored = || {
            let jwks = app.control.snapshot().trust_anchors.by_id[&ta].jwks.clone();
            kids(&serde_json::to_value(jwks).unwrap())
        };
        let want = kids(&serde_json::to_value(&after).unwrap());
        assert_eq!(stored(), want, "{b:?}: the rotation was not picked up");
        held.release.notify_one();
        let polled = in_flight.await.unwrap();
        assert!(
            !polled.is_some_and(|p| p.changed),
            "{b:?}: the older poll stored its keys"
        );
        assert_eq!(stored(), want, "{b:?}");
        r.stop().await;
        t.stop().await;
    }
}
