//! Refresher tests on a manual clock with an in-memory fetcher: first-poll seed, interval
//! choice, backoff and reset, signature failures (trust anchors here, subordinates in
//! `tests_subordinates.rs`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use pharos_shared::chain::Fetcher;
use pharos_shared::config::Settings;
use pharos_shared::entity_configuration::ENTITY_STATEMENT_TYP;
use pharos_shared::jose::{Algorithm, Jwks, Signer, SigningKey, sign};
use pharos_shared::time::ManualClock;
use serde_json::json;

use super::*;
use crate::control_plane::Section;
use crate::control_plane::cluster::Subscription;
use crate::db::Db;
use crate::db::trust_anchors::{self, TrustAnchorWrite};

pub(super) const T0: i64 = 1_700_000_000;
const TA: &str = "https://ta.example";
pub(super) const SUB: &str = "https://leaf.example";

/// Serves Entity Configurations from memory; a missing entry is a fetch failure.
#[derive(Debug, Default)]
pub(super) struct Memory {
    ecs: Mutex<HashMap<String, String>>,
    fetches: Mutex<usize>,
}

impl Memory {
    pub(super) fn serve(
        &self,
        id: &str,
        signer: &SigningKey,
        keys: &[&SigningKey],
        exp: Option<i64>,
    ) {
        let jwks = Jwks {
            keys: keys.iter().map(|k| k.public_jwk().clone()).collect(),
        };
        let mut c = json!({"iss": id, "sub": id, "iat": T0, "jwks": jwks});
        if let Some(e) = exp {
            c["exp"] = e.into();
        }
        let jws = sign(signer, ENTITY_STATEMENT_TYP, c.as_object().unwrap(), None).unwrap();
        self.ecs.lock().unwrap().insert(id.into(), jws);
    }

    fn fail(&self, id: &str) {
        self.ecs.lock().unwrap().remove(id);
    }

    pub(super) fn fetches(&self) -> usize {
        *self.fetches.lock().unwrap()
    }
}

impl Fetcher for Memory {
    async fn entity_configuration(&self, id: &str) -> pharos_shared::Result<String> {
        *self.fetches.lock().unwrap() += 1;
        let got = self.ecs.lock().unwrap().get(id).cloned();
        got.ok_or_else(|| pharos_shared::Error::Fetch(format!("{id} unreachable")))
    }

    async fn subordinate_statement(&self, _: &str, _: &str) -> pharos_shared::Result<String> {
        Err(pharos_shared::Error::Fetch("not used".into()))
    }
}

pub(super) fn key() -> SigningKey {
    SigningKey::generate(Algorithm::ES256, 2048).unwrap()
}

pub(super) fn kids(j: &Option<Jwks>) -> Vec<String> {
    let mut k: Vec<String> = pharos_shared::refresh::kids(&j.clone().unwrap_or_default())
        .into_iter()
        .collect();
    k.sort();
    k
}

pub(super) fn kid(k: &SigningKey) -> Vec<String> {
    vec![k.kid().to_owned()]
}

pub(super) async fn setup() -> (Arc<Refreshers<Memory>>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/t.db?mode=rwc", dir.path().display());
    let db = Db::connect(&url, 4).await.unwrap();
    db.migrate().await.unwrap();
    let clock = ManualClock::new(T0);
    let cp = ControlPlane::start(
        db,
        Arc::new(Settings::default()),
        clock.clone(),
        &Subscription::alone(),
    )
    .await
    .unwrap();
    (Refreshers::new(cp, Arc::new(Memory::default())), dir)
}

async fn add_anchor(r: &Refreshers<Memory>, jwks: Option<Jwks>, interval: i64) {
    let cp = r.control();
    let w = TrustAnchorWrite {
        entity_id: TA.into(),
        jwks,
        enable_jwks_update: true,
        key_poll_interval: interval,
        anchor_ec_constraints: None,
        trust_mark_issuer_self_signed: false,
        trust_mark_status: Default::default(),
    };
    let mut wr = cp.write(None).await;
    let tx = wr.tx().await.unwrap();
    match trust_anchors::get(&cp.db, TA).await.unwrap() {
        Some(row) => trust_anchors::update(&cp.db, tx, row.id, &w, T0).await,
        None => trust_anchors::insert(&cp.db, tx, &w, T0).await,
    }
    .unwrap();
    wr.touch(Section::TrustAnchors);
    wr.commit().await.unwrap();
}

async fn anchor_kids(r: &Refreshers<Memory>) -> Vec<String> {
    kids(
        &trust_anchors::get(&r.control().db, TA)
            .await
            .unwrap()
            .unwrap()
            .jwks,
    )
}

async fn next_anchor_poll(r: &Refreshers<Memory>) -> i64 {
    r.anchors.lock().await.get(TA).unwrap().next_at
}

#[tokio::test]
async fn anchor_first_poll_seeds_and_the_interval_follows_exp() {
    let (r, _dir) = setup().await;
    let k1 = key();
    r.fetcher.serve(TA, &k1, &[&k1], Some(T0 + 10_000));
    add_anchor(&r, None, 0).await;
    r.tick(T0).await;
    assert_eq!(anchor_kids(&r).await, kid(&k1));
    let snap = r.control().snapshot();
    assert_eq!(kids(&snap.trust_anchors.by_id[TA].jwks), kid(&k1));
    assert_eq!(next_anchor_poll(&r).await, T0 + 10_000 - 60);

    // Without exp: one hour. With key_poll_interval: that interval (the change restarts).
    r.fetcher.serve(TA, &k1, &[&k1], None);
    r.tick(T0 + 10_000).await;
    assert_eq!(next_anchor_poll(&r).await, T0 + 10_000 + 3_600);
    add_anchor(&r, anchor_jwks(&r).await, 120).await;
    r.tick(T0 + 10_001).await;
    assert_eq!(next_anchor_poll(&r).await, T0 + 10_001 + 120);
}

async fn anchor_jwks(r: &Refreshers<Memory>) -> Option<Jwks> {
    trust_anchors::get(&r.control().db, TA)
        .await
        .unwrap()
        .unwrap()
        .jwks
}

#[tokio::test]
async fn anchor_failures_back_off_to_five_minutes_and_reset_after_success() {
    let (r, _dir) = setup().await;
    let k1 = key();
    add_anchor(&r, None, 50).await;
    let mut now = T0;
    let mut delays = Vec::new();
    for _ in 0..11 {
        r.tick(now).await;
        let next = next_anchor_poll(&r).await;
        delays.push(next - now);
        now = next;
    }
    assert_eq!(delays, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300]);
    // What `/metrics` reads: the anchor and its failed polls since its last success.
    assert_eq!(r.failures.anchors(), [(TA.to_owned(), 11)]);
    r.fetcher.serve(TA, &k1, &[&k1], Some(now + 9_999));
    r.tick(now).await;
    assert_eq!(next_anchor_poll(&r).await, now + 50);
    assert_eq!(r.failures.anchors(), [(TA.to_owned(), 0)]);
    r.fetcher.fail(TA);
    r.tick(now + 50).await;
    assert_eq!(
        next_anchor_poll(&r).await,
        now + 51,
        "backoff starts at 1 s again"
    );
}

#[tokio::test]
async fn anchor_signature_failure_leaves_keys_unchanged_and_rotation_is_stored() {
    let (r, _dir) = setup().await;
    let (k1, k2, stranger) = (key(), key(), key());
    r.fetcher
        .serve(TA, &stranger, &[&stranger], Some(T0 + 1_000));
    add_anchor(
        &r,
        Some(Jwks {
            keys: vec![k1.public_jwk().clone()],
        }),
        0,
    )
    .await;
    r.tick(T0).await;
    assert_eq!(anchor_kids(&r).await, kid(&k1));
    assert_eq!(next_anchor_poll(&r).await, T0 + 1);
    // Signed by the stored key, announcing the next one: stored at once.
    r.fetcher.serve(TA, &k1, &[&k1, &k2], Some(T0 + 1_000));
    r.tick(T0 + 1).await;
    let mut both = [kid(&k1), kid(&k2)].concat();
    both.sort();
    assert_eq!(anchor_kids(&r).await, both);
    // Deleting the anchor stops its polling.
    let cp = r.control();
    let mut wr = cp.write(None).await;
    let tx = wr.tx().await.unwrap();
    let id = trust_anchors::get(&cp.db, TA).await.unwrap().unwrap().id;
    trust_anchors::delete(&cp.db, tx, id).await.unwrap();
    wr.touch(Section::TrustAnchors);
    wr.commit().await.unwrap();
    r.tick(T0 + 2).await;
    assert!(r.anchors.lock().await.is_empty());
}
