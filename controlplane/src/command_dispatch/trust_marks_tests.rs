//! The trust mark commands through the dispatcher: an issued instance is recorded and
//! published, a request stores a pending subject with its history row, and each kind is
//! refused at once beyond its bound.

use pharos_dataplane::command::{
    Command, MarkRequestError, MarkRequestOutcome, RecordMarkError, Refused,
};
use pharos_shared::trust_mark_issuer::{IssuedMark, SubjectStatus};
use sqlx::Row;
use tokio::sync::oneshot;

use super::tests::{Gate, setup};
use super::{Dispatcher, MARK_REQUESTS_AT_ONCE};
use crate::control_plane::{ControlPlane, Section};

const TM: &str = "https://marks.example.org/member";

/// A spec of [`TM`] with subjects in the given states.
async fn seed(cp: &ControlPlane, subjects: &[(&str, &str)]) {
    let mut w = cp.write(Some("test")).await;
    let db = cp.db.clone();
    let c = w.tx().await.unwrap();
    sqlx::query(db.sql(
        "INSERT INTO trust_mark_specs (trust_mark_type, additional_claims, description, \
         created_at, updated_at) VALUES (?, '{}', '', 0, 0)",
    ))
    .bind(TM)
    .execute(&mut *c)
    .await
    .unwrap();
    for (entity, status) in subjects {
        sqlx::query(db.sql(
            "INSERT INTO trust_mark_subjects (spec_id, entity_id, status, additional_claims, \
             description, created_at, updated_at) \
             SELECT id, ?, ?, '{}', '', 0, 0 FROM trust_mark_specs WHERE trust_mark_type = ?",
        ))
        .bind(*entity)
        .bind(*status)
        .bind(TM)
        .execute(&mut *c)
        .await
        .unwrap();
    }
    w.touch(Section::TrustMarks);
    w.commit().await.unwrap();
}

fn record(d: &Dispatcher<Gate>, jti: &str) -> oneshot::Receiver<Result<(), RecordMarkError>> {
    let (reply, rx) = oneshot::channel();
    let mark = IssuedMark {
        jti: jti.into(),
        trust_mark_type: TM.into(),
        subject: "https://a.example".into(),
        issued_at: 1,
        expires_at: Some(2),
        revoked_at: None,
    };
    d.admit(Command::RecordIssuedTrustMark { mark, reply });
    rx
}

type Requested = oneshot::Receiver<Result<MarkRequestOutcome, MarkRequestError>>;

fn request(d: &Dispatcher<Gate>, tm: &str, sub: &str) -> Requested {
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
async fn issued_marks_are_recorded_and_published_once() {
    let (d, _gate, _dir) = setup(1).await;
    assert_eq!(record(&d, "j1").await.unwrap(), Ok(()));
    let snap = d.refreshers.control().snapshot();
    assert_eq!(snap.trust_marks.issued["j1"].expires_at, Some(2));
    assert_eq!(
        record(&d, "j1").await.unwrap(),
        Err(RecordMarkError::Internal),
        "a jti is recorded once"
    );
}

#[tokio::test]
async fn requests_store_pending_subjects_with_their_actor() {
    let (d, _gate, _dir) = setup(1).await;
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
    let rows = sqlx::query(
        cp.db
            .sql("SELECT subject, type, status, actor FROM trust_mark_events ORDER BY id"),
    )
    .fetch_all(&cp.db.pool)
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

#[tokio::test]
async fn requests_beyond_their_bound_are_refused_at_once() {
    let (d, _gate, _dir) = setup(1).await;
    let cp = d.refreshers.control().clone();
    seed(&cp, &[]).await;
    // Holding the writer lock keeps every admitted request waiting with its share.
    let lock = cp.write(None).await;
    let waiting: Vec<_> = (0..MARK_REQUESTS_AT_ONCE)
        .map(|n| request(&d, TM, &format!("https://e{n}.example")))
        .collect();
    let refused = request(&d, TM, "https://late.example").await.unwrap();
    assert_eq!(refused, Err(MarkRequestError::Refused(Refused::Busy)));
    drop(lock);
    for rx in waiting {
        assert_eq!(rx.await.unwrap(), Ok(MarkRequestOutcome::Pending));
    }
}
