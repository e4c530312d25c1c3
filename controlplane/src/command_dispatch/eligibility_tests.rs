//! Trust mark eligibility through the dispatcher: the subject's EC fetched and verified, the
//! spec's checker run, verdicts cached per spec version and time, one run per (type, subject)
//! however many ask, and refusal beyond the bound.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use pharos_runtime::command::{CheckError, Command, Refused};
use pharos_shared::checks::Verdict;
use pharos_shared::config::Settings;
use pharos_shared::entity_configuration::ENTITY_STATEMENT_TYP;
use pharos_shared::jose::{Algorithm, Jwks, Signer, SigningKey, sign};
use pharos_shared::time::ManualClock;
use serde_json::{Value, json};
use tokio::sync::{Semaphore, oneshot};

use super::Dispatcher;
use super::eligibility::CHECKS_AT_ONCE;
use crate::control_plane::cluster::Subscription;
use crate::control_plane::{ControlPlane, Section};
use crate::db::Db;
use crate::refresh::Refreshers;

const T0: i64 = 1_700_000_000;
const TM: &str = "https://marks.example.org/member";
const OK: &str = "https://ok.example";
const NO: &str = "https://no.example";

/// Serves self-signed ECs; while `held`, every fetch waits for a permit of `gate`.
#[derive(Debug)]
struct Served {
    ecs: HashMap<String, String>,
    fetches: AtomicUsize,
    held: bool,
    gate: Semaphore,
}

impl pharos_shared::chain::Fetcher for Served {
    async fn entity_configuration(&self, id: &str) -> pharos_shared::Result<String> {
        self.fetches.fetch_add(1, Ordering::SeqCst);
        if self.held {
            let _ = self.gate.acquire().await;
        }
        self.ecs
            .get(id)
            .cloned()
            .ok_or_else(|| pharos_shared::Error::Fetch(format!("{id} unreachable")))
    }

    async fn subordinate_statement(&self, _: &str, _: &str) -> pharos_shared::Result<String> {
        Err(pharos_shared::Error::Fetch("not used".into()))
    }
}

fn ec(id: &str, signer: &SigningKey, published: &SigningKey) -> String {
    let jwks = Jwks {
        keys: vec![published.public_jwk().clone()],
    };
    let c = json!({"iss": id, "sub": id, "iat": T0, "exp": T0 + 86_400, "jwks": jwks,
        "metadata": {"openid_relying_party": {}}});
    sign(signer, ENTITY_STATEMENT_TYP, c.as_object().unwrap(), None).unwrap()
}

struct Setup {
    d: Dispatcher<Served>,
    cp: Arc<ControlPlane>,
    clock: Arc<ManualClock>,
    fetcher: Arc<Served>,
    _dir: tempfile::TempDir,
}

/// A spec of [`TM`] with `eligibility`; OK, NO and "https://forged.example" (signed with
/// a key it does not publish) serve ECs.
async fn setup(eligibility: Value, held: bool) -> Setup {
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
    let (k, other) = (
        SigningKey::generate(Algorithm::ES256, 0).unwrap(),
        SigningKey::generate(Algorithm::ES256, 0).unwrap(),
    );
    let forged = "https://forged.example";
    let ecs = HashMap::from([
        (OK.to_owned(), ec(OK, &k, &k)),
        (NO.to_owned(), ec(NO, &k, &k)),
        (forged.to_owned(), ec(forged, &other, &k)),
    ]);
    let fetcher = Arc::new(Served {
        ecs,
        fetches: AtomicUsize::new(0),
        held,
        gate: Semaphore::new(0),
    });
    store_spec(&cp, &eligibility).await;
    let d = Dispatcher::new(Refreshers::new(cp.clone(), fetcher.clone()));
    Setup {
        d,
        cp,
        clock,
        fetcher,
        _dir: dir,
    }
}

/// Stores (or stores again: a new spec version) [`TM`] with `eligibility`.
async fn store_spec(cp: &ControlPlane, eligibility: &Value) {
    let mut w = cp.write(Some("test")).await;
    let db = cp.db.clone();
    let c = w.tx().await.unwrap();
    sqlx::query(db.sql("DELETE FROM trust_mark_specs WHERE entity = ? AND trust_mark_type = ?"))
        .bind(db.entity())
        .bind(TM)
        .execute(&mut *c)
        .await
        .unwrap();
    sqlx::query(db.sql(
        "INSERT INTO trust_mark_specs (entity, trust_mark_type, additional_claims, description, \
         eligibility_config, created_at, updated_at) VALUES (?, ?, '{}', '', ?, 0, 0)",
    ))
    .bind(db.entity())
    .bind(TM)
    .bind(eligibility.to_string())
    .execute(&mut *c)
    .await
    .unwrap();
    w.touch(Section::TrustMarks);
    w.commit().await.unwrap();
}

fn only_ok(ttl: i64) -> Value {
    json!({"mode": "check_only", "check_cache_ttl": ttl,
        "checker": {"type": "entity_id", "config": {"entity_ids": [OK]}}})
}

type Asked = oneshot::Receiver<Result<Verdict, CheckError>>;

fn ask(d: &Dispatcher<Served>, tm: &str, sub: &str) -> Asked {
    let (reply, rx) = oneshot::channel();
    d.admit(Command::CheckEligibility {
        trust_mark_type: tm.into(),
        sub: sub.into(),
        reply,
    });
    rx
}

async fn answer(d: &Dispatcher<Served>, sub: &str) -> (u16, String) {
    match ask(d, TM, sub).await.unwrap() {
        Ok(Verdict::Pass) => (200, String::new()),
        Ok(Verdict::Deny(d)) => (d.status, d.error),
        Err(e) => panic!("no verdict: {e:?}"),
    }
}

#[tokio::test]
async fn the_checker_runs_on_the_verified_configuration() {
    let s = setup(only_ok(0), false).await;
    assert_eq!(answer(&s.d, OK).await, (200, String::new()));
    assert_eq!(answer(&s.d, NO).await, (400, "invalid_request".into()));
    // Not self-signed, or not served: refused before any checker runs.
    assert_eq!(answer(&s.d, "https://forged.example").await.0, 400);
    assert_eq!(answer(&s.d, "https://absent.example").await.0, 400);
    let e = ask(&s.d, "https://other.example/type", OK).await.unwrap();
    assert_eq!(e, Err(CheckError::UnknownType));
    // A mode with no checker configured entitles no one.
    store_spec(&s.cp, &json!({"mode": "check_only"})).await;
    assert_eq!(answer(&s.d, OK).await, (404, "not_found".into()));
}

#[tokio::test]
async fn verdicts_are_reused_for_the_ttl_of_the_spec_version() {
    let s = setup(only_ok(60), false).await;
    let fetches = || s.fetcher.fetches.load(Ordering::SeqCst);
    assert_eq!(answer(&s.d, OK).await.0, 200);
    assert_eq!(answer(&s.d, OK).await.0, 200);
    assert_eq!(answer(&s.d, NO).await.0, 400);
    assert_eq!(answer(&s.d, NO).await.0, 400);
    assert_eq!(fetches(), 2, "one check per subject within the ttl");
    s.clock.advance(60);
    assert_eq!(answer(&s.d, OK).await.0, 200);
    assert_eq!(fetches(), 3, "checked again once the ttl passed");
    // The administrator changes the checker: the cached verdict is not used.
    let now_no = json!({"mode": "check_only", "check_cache_ttl": 60,
        "checker": {"type": "entity_id", "config": {"entity_ids": [NO]}}});
    store_spec(&s.cp, &now_no).await;
    assert_eq!(answer(&s.d, OK).await.0, 400);
    assert_eq!(answer(&s.d, NO).await.0, 200);
    // A check that could not be carried out (the program is missing: 500) is not kept.
    let broken = json!({"mode": "check_only", "check_cache_ttl": 60,
        "checker": {"type": "cmd", "config": {"path": "/nonexistent/pharos-check"}}});
    store_spec(&s.cp, &broken).await;
    let before = fetches();
    assert_eq!(answer(&s.d, OK).await, (500, "server_error".into()));
    assert_eq!(answer(&s.d, OK).await.0, 500);
    assert_eq!(fetches(), before + 2);
    // Without a ttl every request checks.
    store_spec(&s.cp, &only_ok(0)).await;
    let before = fetches();
    answer(&s.d, OK).await;
    answer(&s.d, OK).await;
    assert_eq!(fetches(), before + 2);
}

#[tokio::test]
async fn concurrent_requests_share_one_check_and_the_bound_holds() {
    let s = setup(only_ok(0), true).await;
    let waiting: Vec<Asked> = (0..20).map(|_| ask(&s.d, TM, OK)).collect();
    // Other subjects take the remaining slots (each its own flight).
    let others: Vec<Asked> = (1..CHECKS_AT_ONCE)
        .map(|i| ask(&s.d, TM, &format!("https://s{i}.example")))
        .collect();
    assert_eq!(s.d.checks_in_flight(), CHECKS_AT_ONCE);
    let refused = ask(&s.d, TM, "https://one-too-many.example").await.unwrap();
    assert_eq!(refused, Err(CheckError::Refused(Refused::Busy)));
    s.fetcher.gate.add_permits(1_000);
    for rx in waiting {
        assert_eq!(rx.await.unwrap(), Ok(Verdict::Pass));
    }
    for rx in others {
        assert!(matches!(rx.await.unwrap(), Ok(Verdict::Deny(_))));
    }
    // One fetch for the 20 requests of OK, one per other subject.
    assert_eq!(s.fetcher.fetches.load(Ordering::SeqCst), CHECKS_AT_ONCE);
    assert_eq!(s.d.checks_in_flight(), 0);
    assert_eq!(answer(&s.d, OK).await.0, 200, "slots are free again");
}
