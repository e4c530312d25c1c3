//! A Trust Mark Issuer for in-process router tests: the control plane is played by a task
//! that answers the trust mark commands by publishing the snapshot it would.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::body::Body;
use axum::http::{Request, header};
use pharos_shared::checks::{Denial, Verdict};
use pharos_shared::config::FederationSettings;
use pharos_shared::endpoint::EndpointType;
use pharos_shared::snapshot::{Snapshot, SnapshotPublisher};
use pharos_shared::time::ManualClock;
use pharos_shared::trust_mark_issuer::{IssuedMark, Subject, SubjectStatus, TrustMarks};
use serde_json::json;
use tower::ServiceExt as _;

use crate::DataPlane;
use crate::test_support::{Answer, NOW, RP, SnapshotBuilder, get};
use pharos_runtime::command::{Command, Commands, MarkRequestOutcome, RecordMarkError};

/// The type issued in these tests.
pub const TM: &str = "https://marks.example.org/member";
/// Query of a trust mark request for [`RP`] and [`TM`].
pub const TM_RP: &str =
    "/tm?sub=https%3A%2F%2Frp.example.org&trust_mark_type=https%3A%2F%2Fmarks.example.org%2Fmember";

/// A Trust Mark Issuer at `/tm`, `/status`, `/listing`, `/request` (and `/list`) issuing
/// [`TM`] (one hour, a `ref`, extra claims `a` and `b`) to the active subject [`RP`] (whose
/// own `b` wins).
pub fn issuer() -> SnapshotBuilder {
    SnapshotBuilder::new()
        .endpoint(EndpointType::TrustMark, "/tm")
        .endpoint(EndpointType::TrustMarkStatus, "/status")
        .endpoint(EndpointType::TrustMarkListing, "/listing")
        .endpoint(EndpointType::TrustMarkRequest, "/request")
        .endpoint(EndpointType::List, "/list")
        .subordinate(RP)
        .mark_spec(TM, |s| {
            s.lifetime = Some(3600);
            s.ref_uri = Some("https://marks.example.org/about".into());
            s.additional_claims = json!({"a": 1, "b": "spec", "iss": "forged"})
                .as_object()
                .cloned()
                .unwrap();
        })
        .mark_subject(TM, RP, SubjectStatus::Active, json!({"b": "subject"}), 1)
}

/// How the fake control plane answers [`Command::RecordIssuedTrustMark`].
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Records {
    /// Inserts the instance and publishes.
    Work,
    /// Fails (a database error).
    Fail,
}

/// The entity the fake control plane's checker passes (and [`BLOCKED`], to show that a
/// block outweighs a checker).
pub const CHECKED: &str = "https://checked.example.org";
/// A subject the checker tests store blocked.
pub const BLOCKED: &str = "https://blocked.example.org";
/// A subject the checker tests store pending.
pub const PENDING: &str = "https://pending.example.org";

/// The fake control plane's checker: passes [`CHECKED`] and [`BLOCKED`], denies everyone
/// else with `403 forbidden` "not on the list".
pub fn fake_checker(sub: &str) -> Verdict {
    if sub == CHECKED || sub == BLOCKED {
        Verdict::Pass
    } else {
        Verdict::Deny(Denial::forbidden("not on the list"))
    }
}

/// A running issuer over `first`, its clock and its publisher.
pub struct Issuer {
    pub dp: Arc<DataPlane>,
    pub publisher: Arc<SnapshotPublisher>,
    pub clock: Arc<ManualClock>,
    /// Record commands the fake control plane received.
    pub recorded: Arc<AtomicUsize>,
}

impl Issuer {
    pub fn start(first: Snapshot, records: Records, federation: &FederationSettings) -> Self {
        let publisher = Arc::new(SnapshotPublisher::new(first));
        let clock = ManualClock::new(NOW);
        let (commands, mut rx) = Commands::channel();
        let dp = DataPlane::connected(
            publisher.reader(),
            clock.clone(),
            Arc::new(pharos_runtime::outbound::HttpFetcher::new(federation)),
            commands,
            &Default::default(),
            &Default::default(),
            &Default::default(),
        );
        let p = publisher.clone();
        let recorded = Arc::new(AtomicUsize::new(0));
        let counted = recorded.clone();
        tokio::spawn(async move {
            while let Some(cmd) = rx.recv().await {
                match cmd {
                    Command::RecordIssuedTrustMark { reply, .. } if records == Records::Fail => {
                        let _ = reply.send(Err(RecordMarkError::Internal));
                    }
                    Command::RecordIssuedTrustMark { mark, reply, .. } => {
                        counted.fetch_add(1, Ordering::SeqCst);
                        let token = mark.signed.as_ref().map(|s| s.token.clone());
                        change(&p, |tm| tm.put_issued(Arc::new(mark)));
                        let _ = reply.send(Ok(token.unwrap()));
                    }
                    Command::RequestTrustMark {
                        trust_mark_type,
                        sub,
                        reply,
                        ..
                    } => {
                        change(&p, |tm| {
                            let subject = Subject {
                                id: 99,
                                entity_id: sub.clone(),
                                status: SubjectStatus::Pending,
                                additional_claims: Default::default(),
                                version: 99,
                            };
                            tm.subjects
                                .insert((trust_mark_type, sub), Arc::new(subject));
                        });
                        let _ = reply.send(Ok(MarkRequestOutcome::Pending));
                    }
                    Command::CheckEligibility { sub, reply, .. } => {
                        let _ = reply.send(Ok(fake_checker(&sub)));
                    }
                    other => panic!("unexpected command {other:?}"),
                }
            }
        });
        Self {
            dp,
            publisher,
            clock,
            recorded,
        }
    }

    /// With working records and default settings.
    pub fn new(first: Snapshot) -> Self {
        Self::start(first, Records::Work, &FederationSettings::default())
    }

    pub fn snap(&self) -> Arc<Snapshot> {
        self.publisher.load_full()
    }

    pub async fn get(&self, uri: &str) -> Answer {
        get(&self.dp, uri).await
    }

    /// `POST uri` with a form body.
    pub async fn post(&self, uri: &str, form: &[(&str, &str)]) -> Answer {
        let body = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish();
        let req = Request::builder()
            .method("POST")
            .uri(uri)
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(Body::from(body))
            .unwrap();
        let resp = crate::router(self.dp.clone()).oneshot(req).await.unwrap();
        let (parts, body) = resp.into_parts();
        Answer {
            status: parts.status,
            headers: parts.headers,
            body: axum::body::to_bytes(body, usize::MAX).await.unwrap(),
        }
    }

    /// Publishes the snapshot with its trust marks changed by `f`.
    pub fn change(&self, f: impl FnOnce(&mut TrustMarks)) {
        change(&self.publisher, f);
    }
}

fn change(p: &SnapshotPublisher, f: impl FnOnce(&mut TrustMarks)) {
    let mut next = Snapshot::clone(&p.load_full());
    let mut tm = TrustMarks::clone(&next.trust_marks);
    f(&mut tm);
    next.trust_marks = Arc::new(tm);
    next.generation += 1;
    p.publish(Arc::new(next));
}

/// An instance of [`TM`] for `subject`.
pub fn instance(
    jti: &str,
    subject: &str,
    expires_at: Option<i64>,
    revoked_at: Option<i64>,
) -> IssuedMark {
    IssuedMark {
        jti: jti.into(),
        trust_mark_type: TM.into(),
        subject: subject.into(),
        issued_at: NOW - 100,
        expires_at,
        revoked_at,
        signed: None,
    }
}

/// `s` percent-encoded for a query.
pub fn enc(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// Asserts an error answer.
pub fn refused(a: &Answer, status: u16, code: &str) {
    assert_eq!(a.status.as_u16(), status, "{:?}", a.body);
    assert_eq!(a.content_type(), "application/json");
    assert_eq!(a.json()["error"], code, "{:?}", a.body);
}
