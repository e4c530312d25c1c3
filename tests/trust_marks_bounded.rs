//! The trust mark endpoints on a public port store what a request is owed, not one row per
//! request (issue 31): repeated requests for a held mark get that mark (same `jti`, same
//! bytes) and store one `issued_trust_marks` row, which the prune job deletes once expired;
//! anonymous trust mark requests store only entities, and only as many as the bound.

use futures_util::future::join_all;
use pharos_shared::jose::{self, Jwks};
use pharos_shared::time::ManualClock;
use serde_json::{Value, json};

use crate::fetch_list::enable;
use crate::support::trust_mark_issuer::TestIssuer;
use crate::support::{Pharos, TestDb, backends};
use crate::trust_marks_endpoints::{LEAF, NOW, TM, control, loopback, query, seed};

async fn count(p: &Pharos, table: &str) -> i64 {
    let cp = control(p);
    let sql = sqlx::AssertSqlSafe(format!("SELECT COUNT(*) FROM {table}"));
    let (n,): (i64,) = sqlx::query_as(sql).fetch_one(cp.db.pool()).await.unwrap();
    n
}

#[tokio::test]
async fn repeated_requests_for_a_held_mark_store_one_row_until_it_expires_and_is_pruned() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let clock = ManualClock::new(NOW);
        let p = Pharos::start_with(&db, |_| {}, clock.clone()).await;
        enable(&p, "trust_mark", "/trust-mark", json!({})).await;
        seed(&p, TM, 3600, LEAF).await;
        let url = format!("/trust-mark?{}", query(LEAF));

        // A burst, then one after another: one mark for all of them.
        let burst = join_all((0..20).map(|_| p.get(&url))).await;
        let mut bodies = Vec::new();
        for r in burst {
            assert_eq!(r.status(), 200, "{b:?}");
            bodies.push(r.text().await.unwrap());
        }
        for _ in 0..20 {
            let r = p.get(&url).await;
            assert_eq!(r.status(), 200, "{b:?}");
            bodies.push(r.text().await.unwrap());
        }
        assert!(
            bodies.iter().all(|m| *m == bodies[0]),
            "{b:?}: the same mark"
        );
        assert_eq!(count(&p, "issued_trust_marks").await, 1, "{b:?}: one row");
        let keys: Jwks =
            serde_json::from_value(p.entity_configuration().await.claims["jwks"].clone()).unwrap();
        let jti = jose::verify(&bodies[0], &keys).unwrap().claims["jti"].clone();

        // Expired and pruned: the row and the snapshot's instance are gone.
        clock.set(NOW + 3600);
        let pruned = pharos_controlplane::command_dispatch::trust_marks::prune_expired(control(&p))
            .await
            .unwrap();
        assert_eq!(pruned, 1, "{b:?}");
        assert_eq!(count(&p, "issued_trust_marks").await, 0, "{b:?}: pruned");
        let snap = control(&p).snapshot();
        assert!(!snap.trust_marks.issued.contains_key(jti.as_str().unwrap()));

        // The next request is a new mark.
        let r = p.get(&url).await;
        assert_eq!(r.status(), 200);
        let next = r.text().await.unwrap();
        assert_ne!(jose::verify(&next, &keys).unwrap().claims["jti"], jti);
        assert_eq!(count(&p, "issued_trust_marks").await, 1, "{b:?}");
        p.stop().await;
    }
}

#[tokio::test]
async fn anonymous_trust_mark_requests_store_entities_only_and_within_the_bound() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let clock = ManualClock::new(NOW);
        let settings = |s: &mut pharos_shared::config::Settings| {
            loopback(s);
            s.federation.trust_mark_pending_max = 2;
        };
        let p = Pharos::start_with(&db, settings, clock.clone()).await;
        enable(&p, "trust_mark_request", "/trust-mark-request", json!({})).await;
        seed(&p, TM, 3600, LEAF).await;
        let ask = |sub: String| {
            let p = &p;
            async move {
                let r = p.get(&format!("/trust-mark-request?{}", query(&sub))).await;
                let status = r.status().as_u16();
                let body: Value = r.json().await.unwrap_or(Value::Null);
                (status, body)
            }
        };
        // Not an entity identifier, or no entity behind it: 400, nothing stored.
        for sub in ["http://plain.example.org", "http://127.0.0.1:1"] {
            let (s, e) = ask(sub.to_owned()).await;
            assert_eq!(
                (s, &e["error"]),
                (400, &json!("invalid_request")),
                "{b:?} {e}"
            );
        }
        assert_eq!(
            count(&p, "trust_mark_subjects").await,
            1,
            "{b:?}: the seeded one"
        );

        let entities = join_all((0..3).map(|_| TestIssuer::start(clock.clone(), 60))).await;
        for e in &entities[..2] {
            assert_eq!(ask(e.entity_id.clone()).await.0, 202, "{b:?}");
        }
        let (s, e) = ask(entities[2].entity_id.clone()).await;
        assert_eq!(
            (s, &e["error"]),
            (503, &json!("temporarily_unavailable")),
            "{b:?}"
        );
        let d = e["error_description"].as_str().unwrap();
        assert!(
            d.contains("at most 2") && d.contains("trust_mark_pending_max"),
            "{d}"
        );
        assert_eq!(
            count(&p, "trust_mark_subjects").await,
            3,
            "{b:?}: the third not stored"
        );
        // Asking again for a pending one changes nothing.
        assert_eq!(ask(entities[0].entity_id.clone()).await.0, 202);
        assert_eq!(
            count(&p, "trust_mark_events WHERE type = 'requested'").await,
            2,
            "{b:?}: two requested events"
        );
        p.stop().await;
    }
}
