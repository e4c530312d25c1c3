//! The enroll and enroll_request endpoints through the public router, in process, with a fake
//! control plane that records the commands it gets: what the snapshot decides is answered
//! without a command, what it does not is asked in one command with what the request said,
//! and every answer of the control plane becomes the endpoint's status and body.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};

use axum::http::StatusCode;
use pharos_shared::checks::{Checker, Denial};
use pharos_shared::config::FederationSettings;
use pharos_shared::endpoint::EndpointType;
use pharos_shared::entity_configuration::ENTITY_STATEMENT_TYP;
use pharos_shared::snapshot::{Snapshot, SnapshotPublisher};
use pharos_shared::subordinate::{Subordinate, SubordinateStatus};
use pharos_shared::time::ManualClock;

use crate::DataPlane;
use crate::test_support::{Answer, NOW, RP, SnapshotBuilder, federation, get};
use pharos_runtime::command::{
    Command, Commands, EnrollError, EnrollMode, EnrollOutcome, Enrollment, Refused,
};

const NEW: &str = "https://new.example.org";

/// A data plane whose control plane answers every enrollment with `answer` (an `Active`
/// answer also publishes the entity as an active subordinate, as the real one does).
struct Fake {
    dp: Arc<DataPlane>,
    asked: Arc<Mutex<Vec<Enrollment>>>,
}

fn builder() -> SnapshotBuilder {
    federation()
        .endpoint(EndpointType::Enroll, "/enroll")
        .endpoint(EndpointType::EnrollRequest, "/enroll-request")
}

/// `snap` with `RP` in `status`.
fn with_status(snap: Snapshot, status: SubordinateStatus) -> Snapshot {
    let mut rp = (**snap.subordinates.get(RP).unwrap()).clone();
    rp.status = status;
    with(snap, rp)
}

fn with(mut snap: Snapshot, sub: Subordinate) -> Snapshot {
    let id = sub.entity_id.clone();
    snap.subordinates = Arc::new(snap.subordinates.with(&id, Some(Arc::new(sub))));
    snap
}

impl Fake {
    fn start(first: Snapshot, answer: Result<EnrollOutcome, EnrollError>) -> Self {
        let publisher = Arc::new(SnapshotPublisher::new(first));
        let (commands, mut rx) = Commands::channel();
        let dp = DataPlane::connected(
            publisher.reader(),
            ManualClock::new(NOW),
            Arc::new(pharos_runtime::outbound::HttpFetcher::new(
                &FederationSettings::default(),
            )),
            commands,
            &Default::default(),
            &Default::default(),
            &Default::default(),
        );
        let asked = Arc::new(Mutex::new(Vec::new()));
        let seen = asked.clone();
        tokio::spawn(async move {
            while let Some(cmd) = rx.recv().await {
                let Command::Enroll { enrollment, reply } = cmd else {
                    panic!("unexpected command {cmd:?}")
                };
                if answer == Ok(EnrollOutcome::Active) {
                    let snap = (*publisher.load_full()).clone();
                    let mut rec = (**snap.subordinates.get(RP).unwrap()).clone();
                    rec.entity_id = enrollment.sub.as_str().into();
                    publisher.publish(Arc::new(with(snap, rec)));
                }
                seen.lock().unwrap().push(enrollment);
                let _ = reply.send(answer.clone());
            }
        });
        Self { dp, asked }
    }

    fn asked(&self) -> Vec<Enrollment> {
        self.asked.lock().unwrap().clone()
    }

    async fn get(&self, uri: &str) -> Answer {
        get(&self.dp, uri).await
    }
}

fn enroll_uri(path: &str, sub: &str, types: &[&str]) -> String {
    let mut q = form_urlencoded::Serializer::new(String::new());
    q.append_pair("sub", sub);
    for t in types {
        q.append_pair("entity_type", t);
    }
    format!("{path}?{}", q.finish())
}

fn refused(a: &Answer, status: u16, code: &str) {
    assert_eq!(a.status.as_u16(), status, "{:?}", a.body);
    assert_eq!(a.json()["error"], code, "{:?}", a.body);
}

#[tokio::test]
async fn decided_standings_are_answered_from_the_snapshot() {
    let active = Fake::start(builder().build(), Err(EnrollError::Internal));
    let a = active.get(&enroll_uri("/enroll", RP, &[])).await;
    assert_eq!(a.status, StatusCode::CREATED);
    assert_eq!(a.content_type(), "application/entity-statement+jwt");
    let snap = active.dp.snapshot();
    let st = a.verified(&snap, ENTITY_STATEMENT_TYP);
    assert_eq!(st.claims["sub"], RP);
    let fetched = active.get(crate::test_support::FETCH_RP).await;
    assert_eq!(
        fetched.body, a.body,
        "the statement the fetch endpoint serves"
    );
    let a = active.get(&enroll_uri("/enroll-request", RP, &[])).await;
    assert_eq!(a.status, StatusCode::NO_CONTENT);

    let pending = Fake::start(
        with_status(builder().build(), SubordinateStatus::Pending),
        Err(EnrollError::Internal),
    );
    let a = pending.get(&enroll_uri("/enroll", RP, &[])).await;
    refused(&a, 202, "invalid_request");
    assert_eq!(
        a.json()["error_description"],
        "the enrollment needs to be approved by an administrator"
    );
    let a = pending.get(&enroll_uri("/enroll-request", RP, &[])).await;
    assert_eq!((a.status, a.body.len()), (StatusCode::ACCEPTED, 0));

    let blocked = Fake::start(
        with_status(builder().build(), SubordinateStatus::Blocked),
        Err(EnrollError::Internal),
    );
    for path in ["/enroll", "/enroll-request"] {
        refused(
            &blocked.get(&enroll_uri(path, RP, &[])).await,
            403,
            "invalid_request",
        );
    }
    for f in [active, pending, blocked] {
        assert!(f.asked().is_empty());
    }
}

#[tokio::test]
async fn new_entities_are_asked_of_the_control_plane() {
    let f = Fake::start(builder().build(), Ok(EnrollOutcome::Active));
    let types = ["openid_provider", "federation_entity"];
    let a = f.get(&enroll_uri("/enroll", NEW, &types)).await;
    assert_eq!(a.status, StatusCode::CREATED, "{:?}", a.body);
    let st = a.verified(&f.dp.snapshot(), ENTITY_STATEMENT_TYP);
    assert_eq!(st.claims["sub"], NEW);
    let asked = f.asked();
    assert_eq!(asked.len(), 1);
    let e = &asked[0];
    assert_eq!((e.mode, e.sub.as_str()), (EnrollMode::Enroll, NEW));
    assert_eq!(e.entity_types, types);
    assert_eq!((&e.checker, e.poll), (&Checker::None, None));
    assert_eq!(e.actor, "enroll endpoint");

    let f = Fake::start(builder().build(), Ok(EnrollOutcome::Pending));
    let a = f.get(&enroll_uri("/enroll-request", NEW, &[])).await;
    assert_eq!((a.status, a.body.len()), (StatusCode::ACCEPTED, 0));
    let e = &f.asked()[0];
    assert_eq!(
        (e.mode, e.actor.as_str()),
        (EnrollMode::Request, "enroll_request endpoint")
    );
    assert!(e.entity_types.is_empty());
}

/// Issue 31: an inactive subordinate was set so by an administrator; enrollment answers 403
/// at once and never asks the control plane to change it.
#[tokio::test]
async fn inactive_entities_are_refused_without_asking() {
    let inactive = with_status(builder().build(), SubordinateStatus::Inactive);
    let f = Fake::start(inactive, Ok(EnrollOutcome::Active));
    for path in ["/enroll", "/enroll-request"] {
        let a = f.get(&enroll_uri(path, RP, &[])).await;
        refused(&a, 403, "invalid_request");
        assert!(
            a.json()["error_description"]
                .as_str()
                .is_some_and(|d| d.contains("inactive")),
            "{:?}",
            a.body
        );
    }
    assert!(f.asked().is_empty());
}

#[tokio::test]
async fn control_plane_refusals_become_their_answers() {
    let denied = EnrollError::Denied(Denial::new(403, "forbidden", "no trust chain"));
    let own_code = EnrollError::Denied(Denial::new(429, "slow_down", "later"));
    for (answer, status, code) in [
        (denied, 403, "forbidden"),
        (own_code, 429, "slow_down"),
        (
            EnrollError::Configuration("bad".into()),
            400,
            "invalid_request",
        ),
        (EnrollError::Blocked, 403, "invalid_request"),
        (
            EnrollError::Refused(Refused::Busy),
            503,
            "temporarily_unavailable",
        ),
        (EnrollError::Internal, 500, "server_error"),
    ] {
        let f = Fake::start(builder().build(), Err(answer));
        for path in ["/enroll", "/enroll-request"] {
            refused(&f.get(&enroll_uri(path, NEW, &[])).await, status, code);
        }
    }
}

#[tokio::test]
async fn malformed_requests_never_reach_the_control_plane() {
    let f = Fake::start(builder().build(), Ok(EnrollOutcome::Active));
    for uri in [
        "/enroll".to_owned(),
        enroll_uri("/enroll", "not a url", &[]),
        enroll_uri("/enroll-request", "https://x.example/?q=1", &[]),
        enroll_uri("/enroll", crate::test_support::ENTITY_ID, &[]),
        enroll_uri("/enroll", NEW, &[""]),
        format!(
            "{}&sub=https%3A%2F%2Fother",
            enroll_uri("/enroll", NEW, &[])
        ),
    ] {
        refused(&f.get(&uri).await, 400, "invalid_request");
    }
    assert!(f.asked().is_empty());
}
