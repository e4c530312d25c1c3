//! The trust mark commands through the dispatcher: an issued instance is recorded and
//! published once and handed out again while it may be, never to a subject blocked
//! meanwhile; a request stores a pending subject (an entity, within the cap) with its history
//! row and reloads only it; expired instances are pruned; each kind is refused at once beyond
//! its bound.

use std::collections::HashMap;
use std::sync::Arc;

use pharos_runtime::command::{
    Command, MarkRequestError, MarkRequestOutcome, RecordMarkError, Refused,
};
use pharos_shared::chain::Fetcher;
use pharos_shared::entity_configuration::ENTITY_STATEMENT_TYP;
use pharos_shared::jose::{Algorithm, Jwks, Signer, SigningKey, sign};
use pharos_shared::trust_mark::TRUST_MARK_TYP;
use pharos_shared::trust_mark_issuer::{IssuedMark, SignedMark, Standing, SubjectStatus};
use serde_json::{Value, json};
use sqlx::Row;
use tokio::sync::oneshot;

use super::tests::{setup, setup_with};
use super::trust_marks::prune_expired;
use super::{Dispatcher, MARK_REQUESTS_AT_ONCE};
use crate::control_plane::{ControlPlane, Section};

const TM: &str = "https://marks.example.org/member";
const NOW: i64 = 1_700_000_000;
const A: &str = "https://a.example";

/// A spec of [`TM`] (with `eligibility`) and subjects in the given states.
async fn seed_spec(cp: &ControlPlane, eligibility: Option<Value>, subjects: &[(&str, &str)]) {
    let mut w = cp.write(Some("test")).await;
    let db = cp.db.clone();
    let c = w.tx().await.unwrap();
    sqlx::query(db.sql(
        "INSERT INTO trust_mark_specs (entity, trust_mark_type, additional_claims, description, \
         eligibility_config, created_at, updated_at) VALUES (?, ?, '{}', '', ?, 0, 0)",
    ))
    .bind(db.entity())
    .bind(TM)
    .bind(eligibility.map(|e| e.to_string()))
    .execute(&mut *c)
    .await
    .unwrap();
    for (entity, status) in subjects {
        sqlx::query(db.sql(
            "INSERT INTO trust_mark_subjects (spec_id, entity_id, status, additional_claims, \
             description, created_at, updated_at) \
             SELECT id, ?, ?, '{}', '', 0, 0 FROM trust_mark_specs \
             WHERE entity = ? AND trust_mark_type = ?",
        ))
        .bind(*entity)
        .bind(*status)
        .bind(db.entity())
        .bind(TM)
        .execute(&mut *c)
        .await
        .unwrap();
    }
    w.touch(Section::TrustMarks);
    w.commit().await.unwrap();
}

async fn seed(cp: &ControlPlane, subjects: &[(&str, &str)]) {
    seed_spec(cp, None, subjects).await
}

/// An instance of [`TM`] for `sub` signed with `key`, saying `level`.
fn mark(key: &SigningKey, jti: &str, sub: &str, iat: i64, exp: i64, level: i64) -> IssuedMark {
    let claims = json!({"iss": "https://issuer.example", "sub": sub, "trust_mark_type": TM,
        "iat": iat, "exp": exp, "jti": jti, "level": level});
    let token = sign(key, TRUST_MARK_TYP, claims.as_object().unwrap(), None).unwrap();
    IssuedMark {
        jti: jti.into(),
        trust_mark_type: TM.into(),
        subject: sub.into(),
        issued_at: iat,
        expires_at: Some(exp),
        revoked_at: None,
        signed: Some(Arc::new(SignedMark::parse(&token).unwrap())),
    }
}

type Recorded = oneshot::Receiver<Result<Arc<str>, RecordMarkError>>;

fn record_as<F: Fetcher + 'static>(d: &Dispatcher<F>, m: IssuedMark, checked: bool) -> Recorded {
    let (reply, rx) = oneshot::channel();
    d.admit(Command::RecordIssuedTrustMark {
        mark: m,
        checked,
        reply,
    });
    rx
}

fn record<F: Fetcher + 'static>(d: &Dispatcher<F>, m: IssuedMark) -> Recorded {
    record_as(d, m, false)
}

fn token(m: &IssuedMark) -> Arc<str> {
    m.signed.as_ref().unwrap().token.clone()
}

async fn rows(cp: &ControlPlane) -> Vec<String> {
    sqlx::query(
        cp.db
            .sql("SELECT jti FROM issued_trust_marks WHERE entity = ? ORDER BY issued_at, jti"),
    )
    .bind(cp.db.entity())
    .fetch_all(cp.db.pool())
    .await
    .unwrap()
    .iter()
    .map(|r| r.try_get("jti").unwrap())
    .collect()
}

#[tokio::test]
async fn a_held_mark_is_answered_again_until_it_nears_its_end_or_says_something_else() {
    let (d, clock, _dir) = setup_with(1, Entities::of(&[]), |_| {}).await;
    let cp = d.refreshers.control().clone();
    seed(&cp, &[(A, "active")]).await;
    let key = SigningKey::generate(Algorithm::ES256, 0).unwrap();
    let first = mark(&key, "j1", A, NOW, NOW + 100, 1);
    assert_eq!(record(&d, first.clone()).await.unwrap(), Ok(token(&first)));
    let snap = cp.snapshot();
    assert_eq!(snap.trust_marks.issued["j1"].expires_at, Some(NOW + 100));
    assert_eq!(&*snap.trust_marks.latest[&(TM.into(), A.into())], "j1");

    // Requests that signed the same content later get the held mark; nothing is stored.
    let generation = cp.snapshot().generation;
    for (n, at) in [(2, NOW + 1), (3, NOW + 49)] {
        clock.set(at);
        let again = mark(&key, &format!("j{n}"), A, at, at + 100, 1);
        assert_eq!(record(&d, again).await.unwrap(), Ok(token(&first)), "{n}");
    }
    assert_eq!(rows(&cp).await, ["j1"]);
    assert_eq!(cp.snapshot().generation, generation, "nothing published");

    // Half its lifetime gone (the default 50 %): renewed.
    clock.set(NOW + 50);
    let renewed = mark(&key, "j4", A, NOW + 50, NOW + 150, 1);
    assert_eq!(
        record(&d, renewed.clone()).await.unwrap(),
        Ok(token(&renewed))
    );
    // Other content (the spec or subject claims changed): a new mark at once.
    let changed = mark(&key, "j5", A, NOW + 51, NOW + 151, 2);
    assert_eq!(
        record(&d, changed.clone()).await.unwrap(),
        Ok(token(&changed))
    );
    // Another signing key: a new mark.
    let other_key = SigningKey::generate(Algorithm::ES256, 0).unwrap();
    let rekeyed = mark(&other_key, "j6", A, NOW + 52, NOW + 152, 2);
    assert_eq!(
        record(&d, rekeyed.clone()).await.unwrap(),
        Ok(token(&rekeyed))
    );
    assert_eq!(rows(&cp).await, ["j1", "j4", "j5", "j6"]);
}

#[tokio::test]
async fn a_burst_of_records_stores_one_mark_and_answers_it_to_all() {
    let (d, _gate, _dir) = setup(1).await;
    let cp = d.refreshers.control().clone();
    seed(&cp, &[(A, "active")]).await;
    let key = SigningKey::generate(Algorithm::ES256, 0).unwrap();
    // All of them are past the snapshot check before the first is stored.
    let lock = cp.write(None).await;
    let waiting: Vec<_> = (0..5)
        .map(|n| record(&d, mark(&key, &format!("b{n}"), A, NOW, NOW + 100, 1)))
        .collect();
    tokio::task::yield_now().await;
    drop(lock);
    let mut answers = Vec::new();
    for rx in waiting {
        answers.push(rx.await.unwrap().unwrap());
    }
    assert!(answers.iter().all(|a| *a == answers[0]), "{answers:?}");
    assert_eq!(rows(&cp).await.len(), 1, "one row for five requests");
}

#[tokio::test]
async fn a_subject_blocked_after_the_decision_gets_no_mark() {
    let (d, _gate, _dir) = setup(1).await;
    let cp = d.refreshers.control().clone();
    seed(&cp, &[(A, "active")]).await;
    // An administrator blocks the subject; the snapshot the request was decided on still
    // says active (the change is committed, its publication not yet seen).
    let mut w = cp.write(Some("admin")).await;
    let db = cp.db.clone();
    sqlx::query(db.sql(
        "UPDATE trust_mark_subjects SET status = 'blocked' WHERE entity_id = ? \
         AND spec_id IN (SELECT id FROM trust_mark_specs WHERE entity = ?)",
    ))
    .bind(A)
    .bind(db.entity())
    .execute(w.tx().await.unwrap())
    .await
    .unwrap();
    w.commit().await.unwrap();
    let snap = cp.snapshot();
    let stale = &snap.trust_marks.subjects[&(TM.to_owned(), A.to_owned())];
    assert_eq!(stale.status, SubjectStatus::Active, "the stale snapshot");

    let key = SigningKey::generate(Algorithm::ES256, 0).unwrap();
    let m = mark(&key, "j1", A, NOW, NOW + 100, 1);
    assert_eq!(
        record(&d, m.clone()).await.unwrap(),
        Err(RecordMarkError::NotAdmitted(Standing::Blocked))
    );
    // Even with a checker's pass.
    assert_eq!(
        record_as(&d, m, true).await.unwrap(),
        Err(RecordMarkError::NotAdmitted(Standing::Blocked))
    );
    assert!(rows(&cp).await.is_empty(), "nothing stored");
    assert!(cp.snapshot().trust_marks.issued.is_empty());
}

#[tokio::test]
async fn the_stored_standing_and_the_checker_decide_inside_the_write() {
    let (d, _gate, _dir) = setup(1).await;
    let cp = d.refreshers.control().clone();
    let mode = json!({"mode": "db_and_check", "checker": {"type": "none"}});
    seed_spec(
        &cp,
        Some(mode),
        &[(A, "active"), ("https://gone.example", "inactive")],
    )
    .await;
    let key = SigningKey::generate(Algorithm::ES256, 0).unwrap();
    let unchecked = mark(&key, "j1", A, NOW, NOW + 100, 1);
    assert_eq!(
        record_as(&d, unchecked, false).await.unwrap(),
        Err(RecordMarkError::NotAdmitted(Standing::Entitled)),
        "db_and_check needs the checker's pass"
    );
    let gone = mark(&key, "j2", "https://gone.example", NOW, NOW + 100, 1);
    assert_eq!(
        record_as(&d, gone, true).await.unwrap(),
        Err(RecordMarkError::NotAdmitted(Standing::NotEntitled))
    );
    let checked = mark(&key, "j3", A, NOW, NOW + 100, 1);
    assert_eq!(
        record_as(&d, checked.clone(), true).await.unwrap(),
        Ok(token(&checked))
    );
    assert_eq!(rows(&cp).await, ["j3"]);
}

#[tokio::test]
async fn expired_marks_are_pruned_from_the_database_and_the_snapshot() {
    let (d, clock, _dir) = setup_with(1, Entities::of(&[]), |_| {}).await;
    let cp = d.refreshers.control().clone();
    seed(&cp, &[(A, "active"), ("https://b.example", "active")]).await;
    let key = SigningKey::generate(Algorithm::ES256, 0).unwrap();
    let short = mark(&key, "short", A, NOW, NOW + 100, 1);
    let long = mark(&key, "long", "https://b.example", NOW, NOW + 1000, 1);
    record(&d, short).await.unwrap().unwrap();
    record(&d, long).await.unwrap().unwrap();

    clock.set(NOW + 99);
    assert_eq!(prune_expired(&cp).await.unwrap(), 0, "not expired yet");
    clock.set(NOW + 100);
    assert_eq!(prune_expired(&cp).await.unwrap(), 1);
    assert_eq!(rows(&cp).await, ["long"]);
    let snap = cp.snapshot();
    assert!(!snap.trust_marks.issued.contains_key("short"));
    assert!(!snap.trust_marks.latest.contains_key(&(TM.into(), A.into())));
    assert!(snap.trust_marks.issued.contains_key("long"));
    assert_eq!(
        prune_expired(&cp).await.unwrap(),
        0,
        "nothing left to prune"
    );
}

/// Serves self-signed Entity Configurations of the entities it was given.
#[derive(Debug, Default)]
struct Entities(HashMap<String, String>);

impl Entities {
    fn of(ids: &[&str]) -> Arc<Self> {
        let key = SigningKey::generate(Algorithm::ES256, 0).unwrap();
        let jwks = serde_json::to_value(Jwks {
            keys: vec![key.public_jwk().clone()],
        })
        .unwrap();
        let served = ids.iter().map(|id| {
            let claims = json!({"iss": id, "sub": id, "iat": NOW - 10, "exp": NOW + 3600,
                "jwks": jwks, "metadata": {"federation_entity": {}}});
            let ec = sign(
                &key,
                ENTITY_STATEMENT_TYP,
                claims.as_object().unwrap(),
                None,
            );
            ((*id).to_owned(), ec.unwrap())
        });
        Arc::new(Self(served.collect()))
    }
}

impl Fetcher for Entities {
    async fn entity_configuration(&self, id: &str) -> pharos_shared::Result<String> {
        self.0
            .get(id)
            .cloned()
            .ok_or_else(|| pharos_shared::Error::Fetch(format!("{id} unreachable")))
    }

    async fn subordinate_statement(&self, _: &str, _: &str) -> pharos_shared::Result<String> {
        Err(pharos_shared::Error::Fetch("not used".into()))
    }
}

type Requested = oneshot::Receiver<Result<MarkRequestOutcome, MarkRequestError>>;

fn request<F: Fetcher + 'static>(d: &Dispatcher<F>, tm: &str, sub: &str) -> Requested {
    let (reply, rx) = oneshot::channel();
    d.admit(Command::RequestTrustMark {
        trust_mark_type: tm.into(),
        sub: sub.into(),
        actor: Some("https://client.example".into()),
        reply,
    });
    rx
}

#[tokio::test]
async fn requests_store_pending_subjects_with_their_actor() {
    let served = Entities::of(&["https://new.example", "https://inactive.example"]);
    let (d, _clock, _dir) = setup_with(1, served, |_| {}).await;
    let cp = d.refreshers.control().clone();
    seed(
        &cp,
        &[
            ("https://active.example", "active"),
            ("https://blocked.example", "blocked"),
            ("https://inactive.example", "inactive"),
        ],
    )
    .await;
    let outcome = |tm: &'static str, sub: &'static str| {
        let rx = request(&d, tm, sub);
        async move { rx.await.unwrap() }
    };
    use MarkRequestOutcome::*;
    assert_eq!(
        outcome(TM, "https://active.example").await,
        Ok(AlreadyEntitled)
    );
    assert_eq!(
        outcome(TM, "https://blocked.example").await,
        Err(MarkRequestError::Blocked)
    );
    assert_eq!(
        outcome("https://unknown.example", "https://x.example").await,
        Err(MarkRequestError::UnknownType)
    );
    for sub in ["https://new.example", "https://inactive.example"] {
        assert_eq!(outcome(TM, sub).await, Ok(Pending), "{sub}");
        let snap = cp.snapshot();
        let s = &snap.trust_marks.subjects[&(TM.to_owned(), sub.to_owned())];
        assert_eq!(s.status, SubjectStatus::Pending, "{sub}");
    }
    assert_eq!(
        outcome(TM, "https://new.example").await,
        Ok(Pending),
        "again"
    );
    let rows = sqlx::query(cp.db.sql(
        "SELECT subject, type, status, actor FROM trust_mark_events WHERE entity = ? ORDER BY id",
    ))
    .bind(cp.db.entity())
    .fetch_all(cp.db.pool())
    .await
    .unwrap();
    let rows: Vec<(String, String, String, String)> = rows
        .iter()
        .map(|r| {
            (
                r.try_get("subject").unwrap(),
                r.try_get("type").unwrap(),
                r.try_get("status").unwrap(),
                r.try_get("actor").unwrap(),
            )
        })
        .collect();
    let row = |s: &str| {
        (
            s.to_owned(),
            "requested".to_owned(),
            "pending".to_owned(),
            "https://client.example".to_owned(),
        )
    };
    assert_eq!(
        rows,
        [row("https://new.example"), row("https://inactive.example")],
        "one row per stored request"
    );
}

async fn subject_count(cp: &ControlPlane) -> i64 {
    let (n,): (i64,) = sqlx::query_as(cp.db.sql(
        "SELECT COUNT(*) FROM trust_mark_subjects \
         WHERE spec_id IN (SELECT id FROM trust_mark_specs WHERE entity = ?)",
    ))
    .bind(cp.db.entity())
    .fetch_one(cp.db.pool())
    .await
    .unwrap();
    n
}

#[tokio::test]
async fn a_request_for_what_is_not_an_entity_stores_nothing() {
    let (d, _clock, _dir) = setup_with(1, Entities::of(&[]), |_| {}).await;
    let cp = d.refreshers.control().clone();
    seed(&cp, &[]).await;
    let generation = cp.snapshot().generation;
    let got = request(&d, TM, "https://nobody.example").await.unwrap();
    let Err(MarkRequestError::Configuration(why)) = got else {
        panic!("{got:?}");
    };
    assert!(why.contains("https://nobody.example"), "{why}");
    assert_eq!(subject_count(&cp).await, 0);
    assert_eq!(cp.snapshot().generation, generation, "nothing published");
}

#[tokio::test]
async fn pending_requests_are_capped_per_type() {
    let ids = [
        "https://e1.example",
        "https://e2.example",
        "https://e3.example",
    ];
    let served = Entities::of(&ids);
    let (d, _clock, _dir) =
        setup_with(1, served, |s| s.federation.trust_mark_pending_max = 2).await;
    let cp = d.refreshers.control().clone();
    seed(&cp, &[]).await;
    for id in &ids[..2] {
        assert_eq!(
            request(&d, TM, id).await.unwrap(),
            Ok(MarkRequestOutcome::Pending)
        );
    }
    assert_eq!(
        request(&d, TM, ids[2]).await.unwrap(),
        Err(MarkRequestError::Full { max: 2 })
    );
    assert_eq!(subject_count(&cp).await, 2, "the third is not stored");
    // Once one is decided, there is room again.
    let mut w = cp.write(Some("admin")).await;
    let db = cp.db.clone();
    sqlx::query(db.sql(
        "UPDATE trust_mark_subjects SET status = 'active' WHERE entity_id = ? \
         AND spec_id IN (SELECT id FROM trust_mark_specs WHERE entity = ?)",
    ))
    .bind(ids[0])
    .bind(db.entity())
    .execute(w.tx().await.unwrap())
    .await
    .unwrap();
    w.touch(Section::TrustMarks);
    w.commit().await.unwrap();
    assert_eq!(
        request(&d, TM, ids[2]).await.unwrap(),
        Ok(MarkRequestOutcome::Pending)
    );
}

#[tokio::test]
async fn a_stored_request_reloads_its_subject_only() {
    let served = Entities::of(&["https://new.example"]);
    let (d, _clock, _dir) = setup_with(1, served, |_| {}).await;
    let cp = d.refreshers.control().clone();
    seed(&cp, &[(A, "active")]).await;
    let before = cp.snapshot();
    let key = |s: &str| (TM.to_owned(), s.to_owned());
    assert_eq!(
        request(&d, TM, "https://new.example").await.unwrap(),
        Ok(MarkRequestOutcome::Pending)
    );
    let after = cp.snapshot();
    assert!(after.generation > before.generation, "published");
    assert_eq!(
        after.trust_marks.specs[TM].version, before.trust_marks.specs[TM].version,
        "the spec keeps its version (and the caches keyed by it)"
    );
    assert_eq!(
        after.trust_marks.subjects[&key(A)].version,
        before.trust_marks.subjects[&key(A)].version,
        "other subjects keep theirs"
    );
    let new = &after.trust_marks.subjects[&key("https://new.example")];
    assert_eq!(new.status, SubjectStatus::Pending);
}

#[tokio::test]
async fn requests_beyond_their_bound_are_refused_at_once() {
    let (d, gate, _dir) = setup(1).await;
    let cp = d.refreshers.control().clone();
    seed(&cp, &[]).await;
    // The closed gate keeps every admitted request fetching with its share.
    let waiting: Vec<_> = (0..MARK_REQUESTS_AT_ONCE)
        .map(|n| request(&d, TM, &format!("https://e{n}.example")))
        .collect();
    let refused = request(&d, TM, "https://late.example").await.unwrap();
    assert_eq!(refused, Err(MarkRequestError::Refused(Refused::Busy)));
    gate.open.add_permits(MARK_REQUESTS_AT_ONCE);
    for rx in waiting {
        let got = rx.await.unwrap();
        assert!(
            matches!(got, Err(MarkRequestError::Configuration(_))),
            "{got:?}"
        );
    }
    assert_eq!(subject_count(&cp).await, 0);
}
