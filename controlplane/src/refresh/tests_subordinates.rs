//! Subordinate refresher tests: start on create, restart on change, stop on disable and
//! delete, the one-minute floor, signature and missing-exp failures, `jwks_refreshed` events.

use std::sync::Arc;

use pharos_shared::jose::{Jwks, Signer};
use pharos_shared::subordinate::SubordinateStatus;

use super::schedule::Synced;
use super::tests::{Memory, SUB, T0, key, kid, kids, setup};
use super::*;
use crate::db::subordinate_events;
use crate::db::subordinates::{self as subs, BasicWrite, SubKey};

async fn write_sub(r: &Refreshers<Memory>, enabled: bool, interval: i64, jwks: Option<Jwks>) {
    let cp = r.control();
    let w = BasicWrite {
        description: String::new(),
        status: SubordinateStatus::Active,
        enable_jwks_update: enabled,
        jwks_poll_interval: interval,
    };
    let mut wr = cp.write(None).await;
    let tx = wr.tx().await.unwrap();
    match subs::get(&cp.db, SubKey::EntityId(SUB)).await.unwrap() {
        Some(row) => subs::update_basic(&cp.db, tx, row.id, &w, T0)
            .await
            .unwrap(),
        None => {
            subs::insert(&cp.db, tx, SUB, &w, &jwks, T0).await.unwrap();
        }
    }
    wr.touch_subordinate(SUB);
    wr.commit().await.unwrap();
}

#[tokio::test]
async fn subordinate_polls_start_restart_on_change_and_stop_on_delete() {
    let (r, _dir) = setup().await;
    let (k1, k2, stranger) = (key(), key(), key());
    r.fetcher.serve(SUB, &k1, &[&k1, &k2], Some(T0 + 30));
    write_sub(
        &r,
        true,
        0,
        Some(Jwks {
            keys: vec![k1.public_jwk().clone()],
        }),
    )
    .await;
    r.tick(T0).await;
    let cp = r.control();
    let row = subs::get(&cp.db, SubKey::EntityId(SUB))
        .await
        .unwrap()
        .unwrap();
    let mut both = [kid(&k1), kid(&k2)].concat();
    both.sort();
    assert_eq!(kids(&row.jwks), both);
    assert_eq!(
        cp.snapshot()
            .subordinates
            .get(SUB)
            .unwrap()
            .jwks
            .jwks()
            .keys
            .len(),
        2
    );
    let q = subordinate_events::HistoryQuery {
        limit: 10,
        ..Default::default()
    };
    let (events, _) = subordinate_events::history(&cp.db, row.id, &q)
        .await
        .unwrap();
    assert_eq!(events[0].kind, "jwks_refreshed");
    assert_eq!(
        events[0].message.as_deref(),
        Some(format!("added: {}; removed: ", k2.kid()).as_str())
    );
    // exp 30 s away: the one-minute floor applies.
    let next = |r: Arc<Refreshers<Memory>>| async move {
        r.subordinates.lock().await.get(SUB).map(|e| e.next_at)
    };
    assert_eq!(next(r.clone()).await, Some(T0 + 60));

    // A bad signature changes nothing and backs off.
    r.fetcher
        .serve(SUB, &stranger, &[&stranger], Some(T0 + 9_000));
    r.tick(T0 + 60).await;
    let row = subs::get(&cp.db, SubKey::EntityId(SUB))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(kids(&row.jwks), both);
    assert_eq!(next(r.clone()).await, Some(T0 + 61));
    let failing = |r: &Refreshers<Memory>| {
        r.failures
            .subordinates_failing
            .load(std::sync::atomic::Ordering::Relaxed)
    };
    assert_eq!(failing(&r), 1, "counted for /metrics");

    // PATCH of the interval restarts the poll at once with the new setting.
    r.fetcher.serve(SUB, &k2, &[&k2], Some(T0 + 9_000));
    write_sub(&r, true, 500, None).await;
    assert_eq!(
        r.subordinates.lock().await.sync(
            SUB,
            subordinates::wanted(true, SubordinateStatus::Active, 500),
            T0
        ),
        Synced::Restarted
    );
    let before = r.fetcher.fetches();
    r.tick(T0 + 60).await;
    assert_eq!(r.fetcher.fetches(), before + 1);
    assert_eq!(next(r.clone()).await, Some(T0 + 560));
    assert_eq!(failing(&r), 0);

    // A missing exp is a failure for subordinates.
    r.fetcher.serve(SUB, &k2, &[&k2], None);
    r.tick(T0 + 560).await;
    assert_eq!(next(r.clone()).await, Some(T0 + 561));

    // Disabling stops the poll; so does deleting.
    write_sub(&r, false, 500, None).await;
    r.tick(T0 + 561).await;
    assert_eq!(next(r.clone()).await, None);
    write_sub(&r, true, 500, None).await;
    r.tick(T0 + 562).await;
    assert!(next(r.clone()).await.is_some());
    let mut wr = cp.write(None).await;
    let tx = wr.tx().await.unwrap();
    let id = subs::get(&cp.db, SubKey::EntityId(SUB))
        .await
        .unwrap()
        .unwrap()
        .id;
    subs::delete(&cp.db, tx, id, T0).await.unwrap();
    wr.touch_subordinate(SUB);
    wr.commit().await.unwrap();
    r.tick(T0 + 563).await;
    assert_eq!(next(r.clone()).await, None);
}
