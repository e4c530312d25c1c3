//! Dispatcher tests with a fetcher that holds every fetch until released: single flight per
//! subordinate, refusal when the fetch slots are taken, slots released afterwards.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use pharos_runtime::command::{Command, Refused, TriggerError};
use pharos_shared::config::Settings;
use pharos_shared::subordinate::SubordinateStatus;
use pharos_shared::time::ManualClock;
use tokio::sync::{Semaphore, oneshot};

use super::Dispatcher;
use crate::control_plane::ControlPlane;
use crate::control_plane::cluster::Subscription;
use crate::db::Db;
use crate::db::subordinates::{self as subs, BasicWrite};
use crate::refresh::Refreshers;

pub(super) const A: &str = "https://a.example";
const B: &str = "https://b.example";

/// Every fetch waits for a permit, then fails.
#[derive(Debug)]
pub(super) struct Gate {
    pub(super) fetches: AtomicUsize,
    pub(super) open: Semaphore,
}

impl pharos_shared::chain::Fetcher for Gate {
    async fn entity_configuration(&self, id: &str) -> pharos_shared::Result<String> {
        self.fetches.fetch_add(1, Ordering::SeqCst);
        let _ = self.open.acquire().await;
        Err(pharos_shared::Error::Fetch(format!("{id} unreachable")))
    }

    async fn subordinate_statement(&self, _: &str, _: &str) -> pharos_shared::Result<String> {
        Err(pharos_shared::Error::Fetch("not used".into()))
    }
}

pub(super) async fn setup(slots: u32) -> (Dispatcher<Gate>, Arc<Gate>, tempfile::TempDir) {
    let gate = Arc::new(Gate {
        fetches: AtomicUsize::new(0),
        open: Semaphore::new(0),
    });
    let (d, _clock, dir) = setup_with(slots, gate.clone(), |_| {}).await;
    (d, gate, dir)
}

/// A dispatcher over a fresh SQLite database (subordinates [`A`] and `B`), fetching with
/// `fetcher`, its settings adjusted by `f`.
pub(super) async fn setup_with<F: pharos_shared::chain::Fetcher + 'static>(
    slots: u32,
    fetcher: Arc<F>,
    f: impl FnOnce(&mut Settings),
) -> (Dispatcher<F>, Arc<ManualClock>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_700_000_000);
    let url = format!("sqlite://{}/t.db?mode=rwc", dir.path().display());
    let db = Db::connect(&url, 4).await.unwrap();
    db.migrate().await.unwrap();
    let mut settings = Settings::default();
    settings.federation.refresh_concurrency = slots;
    f(&mut settings);
    let cp = ControlPlane::start(
        db,
        Arc::new(settings),
        clock.clone(),
        &Subscription::alone(),
    )
    .await
    .unwrap();
    for id in [A, B] {
        let w = BasicWrite {
            description: String::new(),
            status: SubordinateStatus::Active,
            enable_jwks_update: false,
            jwks_poll_interval: 0,
        };
        let mut wr = cp.write(None).await;
        subs::insert(&cp.db, wr.tx().await.unwrap(), id, &w, &None, 0)
            .await
            .unwrap();
        wr.touch_subordinate(id);
        wr.commit().await.unwrap();
    }
    (Dispatcher::new(Refreshers::new(cp, fetcher)), clock, dir)
}

fn trigger(d: &Dispatcher<Gate>, sub: &str) -> oneshot::Receiver<Result<bool, TriggerError>> {
    let (reply, rx) = oneshot::channel();
    d.admit(Command::JwksUpdateTrigger {
        sub: sub.into(),
        actor: None,
        reply,
    });
    rx
}

#[tokio::test]
async fn triggers_for_one_subordinate_share_one_fetch_and_the_rest_are_refused() {
    let (d, gate, _dir) = setup(1).await;
    let waiting: Vec<_> = (0..3).map(|_| trigger(&d, A)).collect();
    while gate.fetches.load(Ordering::SeqCst) == 0 {
        tokio::task::yield_now().await;
    }
    assert_eq!(d.triggers_in_flight(), 1);
    // The only slot is taken: another subordinate is refused at once, not queued.
    let other = trigger(&d, B).await.unwrap();
    assert_eq!(other, Err(TriggerError::Refused(Refused::Busy)));
    gate.open.add_permits(10);
    let mut outcomes = Vec::new();
    for rx in waiting {
        outcomes.push(rx.await.unwrap());
    }
    assert!(outcomes.iter().all(|o| *o == outcomes[0]), "{outcomes:?}");
    assert!(
        matches!(outcomes[0], Err(TriggerError::FetchFailed(_))),
        "{outcomes:?}"
    );
    assert_eq!(
        gate.fetches.load(Ordering::SeqCst),
        1,
        "one fetch for three triggers"
    );
    assert_eq!(d.triggers_in_flight(), 0);
    // The slot is back: the next trigger fetches again.
    assert!(matches!(
        trigger(&d, B).await.unwrap(),
        Err(TriggerError::FetchFailed(_))
    ));
    assert_eq!(gate.fetches.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn jti_records_answer_first_use_once() {
    let (d, _gate, _dir) = setup(1).await;
    let record = |jti: &str| {
        let (reply, rx) = oneshot::channel();
        d.admit(Command::RecordJti {
            jti: jti.into(),
            expires_at: 1_800_000_000,
            reply,
        });
        rx
    };
    assert_eq!(record("x").await.unwrap(), Ok(true));
    assert_eq!(record("x").await.unwrap(), Ok(false));
}

#[tokio::test]
async fn history_reads_are_bounded_and_answer_none_for_strangers() {
    let (d, _gate, _dir) = setup(1).await;
    let ask = |sub: &str| {
        let (reply, rx) = oneshot::channel();
        d.admit(Command::SubordinateHistory {
            sub: sub.into(),
            reply,
        });
        rx
    };
    assert_eq!(ask("https://stranger.example").await.unwrap(), Ok(None));
    let held = d
        .histories
        .clone()
        .try_acquire_many_owned(u32::try_from(super::HISTORIES_AT_ONCE).unwrap())
        .unwrap();
    assert_eq!(
        ask("https://stranger.example").await.unwrap(),
        Err(pharos_runtime::command::HistoryError::Refused(
            Refused::Busy
        )),
        "every read slot taken: refused at once"
    );
    drop(held);
    assert_eq!(ask("https://stranger.example").await.unwrap(), Ok(None));
}
