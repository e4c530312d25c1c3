//! Enrollment admission with a fetcher that holds every fetch until released: one fetch per
//! entity however many ask, refusal when every enrollment slot is taken, stored statuses
//! answered without a fetch.

use std::sync::atomic::Ordering;

use pharos_runtime::command::{
    Command, EnrollError, EnrollMode, EnrollOutcome, Enrollment, Refused,
};
use pharos_shared::checks::Checker;
use tokio::sync::oneshot;

use super::Dispatcher;
use super::enroll::ENROLLMENTS_AT_ONCE;
use super::tests::{Gate, setup};

type Answer = oneshot::Receiver<Result<EnrollOutcome, EnrollError>>;

fn enroll(d: &Dispatcher<Gate>, mode: EnrollMode, sub: &str) -> Answer {
    let (reply, rx) = oneshot::channel();
    let enrollment = Enrollment {
        mode,
        sub: sub.into(),
        entity_types: Vec::new(),
        checker: Checker::None,
        poll: None,
        actor: "test".into(),
    };
    d.admit(Command::Enroll { enrollment, reply });
    rx
}

fn new_entity(i: usize) -> String {
    format!("https://new{i}.example")
}

#[tokio::test]
async fn enrollments_of_one_entity_share_one_fetch_and_the_bound_refuses_the_rest() {
    let (d, gate, _dir) = setup(1).await;
    let same: Vec<_> = (0..5)
        .map(|_| enroll(&d, EnrollMode::Enroll, &new_entity(0)))
        .collect();
    let others: Vec<_> = (1..ENROLLMENTS_AT_ONCE)
        .map(|i| enroll(&d, EnrollMode::Enroll, &new_entity(i)))
        .collect();
    while gate.fetches.load(Ordering::SeqCst) < ENROLLMENTS_AT_ONCE {
        tokio::task::yield_now().await;
    }
    assert_eq!(d.enrollments_in_flight(), ENROLLMENTS_AT_ONCE);
    // Every slot is taken: one more entity is refused at once, not queued.
    let late = enroll(&d, EnrollMode::Request, &new_entity(99))
        .await
        .unwrap();
    assert_eq!(late, Err(EnrollError::Refused(Refused::Busy)));
    gate.open.add_permits(100);
    let mut outcomes = Vec::new();
    for rx in same {
        outcomes.push(rx.await.unwrap());
    }
    assert!(outcomes.iter().all(|o| *o == outcomes[0]), "{outcomes:?}");
    assert!(
        matches!(&outcomes[0], Err(EnrollError::Configuration(m)) if m.contains("unreachable")),
        "{outcomes:?}"
    );
    for rx in others {
        assert!(matches!(
            rx.await.unwrap(),
            Err(EnrollError::Configuration(_))
        ));
    }
    assert_eq!(gate.fetches.load(Ordering::SeqCst), ENROLLMENTS_AT_ONCE);
    assert_eq!(d.enrollments_in_flight(), 0);
}

#[tokio::test]
async fn stored_standings_are_answered_without_a_fetch() {
    let (d, gate, _dir) = setup(1).await;
    // `setup` stores A active.
    for mode in [EnrollMode::Enroll, EnrollMode::Request] {
        let a = enroll(&d, mode, super::tests::A).await.unwrap();
        assert_eq!(a, Ok(EnrollOutcome::Active));
    }
    assert_eq!(gate.fetches.load(Ordering::SeqCst), 0);
}
