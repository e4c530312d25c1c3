//! Marks fetched for a held trust mark that fail their checks (`sub`, type, expiry,
//! `min_lifetime`, issuer) are refused: nothing is stored, the refresher backs off, and the
//! Entity Configuration publishes nothing until a good mark arrives.

use std::time::Duration;

use crate::support::TestDb;
use crate::support::trust_mark_issuer::TestIssuer;
use crate::trust_marks_held::{PATH, TYPE, failures, held, start, tick};
use pharos_shared::time::{Clock, ManualClock, SystemClock};
use reqwest::Method;
use serde_json::{Value, json};

#[tokio::test]
async fn a_fetched_mark_that_fails_its_checks_is_never_stored() {
    let db = TestDb::new(crate::support::Backend::Sqlite).await;
    let clock = ManualClock::new(SystemClock.now());
    let issuer = TestIssuer::start(clock.clone(), 600).await;
    let p = start(&db, &clock).await;
    let bad: [fn(i64) -> Value; 5] = [
        |_| json!({"sub": "https://other.example"}),
        |_| json!({"trust_mark_type": "https://tm.example/other"}),
        |now| json!({"exp": now - 1}),
        |now| json!({"exp": now + 20}), // less than min_lifetime
        |_| json!({"iss": "https://impostor.example"}),
    ];
    // Tampered before the row exists, so that no attempt (the test's or the background
    // refresher's, woken by the change) can obtain a good mark first.
    issuer.tamper(bad[0](clock.now()));
    let body = json!({"trust_mark_type": TYPE, "trust_mark_issuer": issuer.entity_id,
        "min_lifetime": 30, "refresh_rate_limit": 10});
    let (s, row) = p.admin(Method::POST, PATH, Some(body)).await;
    assert_eq!(s, 201, "{row}");
    let row_path = format!("{PATH}/{}", row["id"]);
    let refreshers = &p.app.as_ref().unwrap().refreshers;
    for _ in 0..100 {
        tick(&p, &clock).await;
        let attempted = refreshers
            .held_marks
            .lock()
            .await
            .get(TYPE)
            .is_some_and(|e| e.backoff.failures() > 0);
        if attempted {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // (The background refresher may have attempted too: failures are counted from here.)
    let mut refused = failures(&p).await.0;
    for (n, make) in bad.iter().enumerate() {
        if n > 0 {
            clock.set(failures(&p).await.1);
            issuer.tamper(make(clock.now()));
            let before = issuer.issued();
            tick(&p, &clock).await;
            assert!(issuer.issued() > before, "case {n}: no attempt");
            assert_eq!(
                failures(&p).await.0,
                refused + 1,
                "case {n} was not refused"
            );
            refused += 1;
        }
        let (_, row) = p.admin(Method::GET, &row_path, None).await;
        assert_eq!(row["trust_mark"], Value::Null, "case {n} was stored");
        assert!(held(&p).await.0.is_empty());
    }
    issuer.tamper(json!({}));
    clock.set(failures(&p).await.1);
    tick(&p, &clock).await;
    assert_eq!(held(&p).await.0.len(), 1);
    p.stop().await;
}
