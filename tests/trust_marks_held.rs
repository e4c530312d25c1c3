//! The trust marks a Pharos holds (`/entity-configuration/trust-marks`): self-issued, given
//! and fetched from an external issuer; published in the signed Entity Configuration and
//! renewed by the refresher (driven here with a manual clock and `tick`).

use std::sync::Arc;
use std::time::Duration;

use crate::support::trust_mark_issuer::TestIssuer;
use crate::support::{Pharos, TestDb, backends, enc};
use pharos_shared::jose::{self, Decoded, Jwks};
use pharos_shared::time::{Clock, ManualClock, SystemClock};
use reqwest::Method;
use serde_json::{Value, json};

pub const TYPE: &str = "https://tm.example/certified";
pub const PATH: &str = "/entity-configuration/trust-marks";

pub async fn start(db: &TestDb, clock: &Arc<ManualClock>) -> Pharos {
    let f = |s: &mut pharos_shared::config::Settings| s.federation.block_private_addresses = false;
    Pharos::start_with(db, f, clock.clone()).await
}

pub async fn tick(p: &Pharos, clock: &ManualClock) {
    p.app.as_ref().unwrap().refreshers.tick(clock.now()).await;
}

/// The `trust_marks` entries of the signed Entity Configuration, and the configuration.
pub async fn held(p: &Pharos) -> (Vec<Value>, Decoded) {
    let ec = p.entity_configuration().await;
    let marks = ec.claims.get("trust_marks").cloned().unwrap_or(json!([]));
    (marks.as_array().unwrap().clone(), ec)
}

/// The one held mark of [`TYPE`], verified with `keys`; panics unless there is exactly one.
fn the_mark(marks: &[Value], keys: &Jwks) -> (String, Decoded) {
    assert_eq!(marks.len(), 1, "{marks:?}");
    assert_eq!(marks[0]["trust_mark_type"], TYPE);
    let jwt = marks[0]["trust_mark"].as_str().unwrap().to_owned();
    let d = jose::verify(&jwt, keys).unwrap();
    jose::check_typ(&d, "trust-mark+jwt").unwrap();
    (jwt, d)
}

fn keys_of(ec: &Decoded) -> Jwks {
    serde_json::from_value(ec.claims["jwks"].clone()).unwrap()
}

#[tokio::test]
async fn a_self_issued_mark_is_published_and_renewed_at_the_grace_point() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let t0 = SystemClock.now();
        let clock = ManualClock::new(t0);
        let p = start(&db, &clock).await;
        let us = p.entity_id().to_owned();
        let body = json!({"trust_mark_type": TYPE,
            "self_issuance_spec": {"lifetime": 7200, "ref": "https://tm.example/about"}});
        let (s, row) = p.admin(Method::POST, PATH, Some(body)).await;
        assert_eq!(s, 201, "{row}");
        assert_eq!(
            (row["refresh"].clone(), row["trust_mark_issuer"].clone()),
            (json!(true), json!(us))
        );

        let (marks, ec) = held(&p).await;
        let (first, m) = the_mark(&marks, &keys_of(&ec));
        assert_eq!(m.claims["iss"], us);
        assert_eq!(m.claims["sub"], us);
        assert_eq!(m.claims["trust_mark_type"], TYPE);
        assert_eq!(m.claims["ref"], "https://tm.example/about");
        assert_eq!(m.claims["exp"], t0 + 7200);
        assert!(ec.claims["exp"].as_i64().unwrap() <= t0 + 7200);

        // Before the grace point nothing changes.
        clock.advance(3_000);
        tick(&p, &clock).await;
        assert_eq!(the_mark(&held(&p).await.0, &keys_of(&ec)).0, first);

        // Past it (exp - refresh_grace_period = t0 + 3600) the mark is issued anew.
        clock.advance(700);
        tick(&p, &clock).await;
        let (marks, ec) = held(&p).await;
        let (second, m) = the_mark(&marks, &keys_of(&ec));
        assert_ne!(second, first);
        assert_eq!(m.claims["iat"], t0 + 3_700);
        assert_eq!(m.claims["exp"], t0 + 3_700 + 7_200);
        let (s, row) = p
            .admin(Method::GET, &format!("{PATH}/{}", enc(TYPE)), None)
            .await;
        assert_eq!(
            (s, row["trust_mark"].as_str()),
            (200, Some(second.as_str()))
        );

        let (s, _) = p
            .admin(Method::DELETE, &format!("{PATH}/{}", row["id"]), None)
            .await;
        assert_eq!(s, 204);
        assert!(held(&p).await.0.is_empty());
        p.stop().await;
    }
}

#[tokio::test]
async fn a_given_mark_is_checked_before_it_is_stored() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let clock = ManualClock::new(SystemClock.now());
        let p = start(&db, &clock).await;
        let issuer = TestIssuer::start(clock.clone(), 3_600).await;
        let us = p.entity_id().to_owned();
        let post = |jwt: Value| json!({"trust_mark_type": TYPE, "trust_mark": jwt});
        let refused = [
            (
                "sub",
                issuer.sign("trust-mark+jwt", TYPE, "https://other.example", json!({})),
            ),
            ("typ", issuer.sign("JWT", TYPE, &us, json!({}))),
            (
                "type",
                issuer.sign("trust-mark+jwt", "https://tm.example/other", &us, json!({})),
            ),
            (
                "expired",
                issuer.sign("trust-mark+jwt", TYPE, &us, json!({"exp": clock.now() - 1})),
            ),
            ("not a signed JWT", "not-a-jwt".to_owned()),
        ];
        for (problem, jwt) in refused {
            let (s, v) = p.admin(Method::POST, PATH, Some(post(json!(jwt)))).await;
            assert_eq!(s, 400, "{problem}: {v}");
            let said = v["error_description"].as_str().unwrap();
            assert!(said.contains(problem), "{problem}: {said}");
        }
        let (s, v) = p
            .admin(Method::POST, PATH, Some(json!({"trust_mark_type": TYPE})))
            .await;
        assert_eq!(s, 400, "{v}");
        assert_eq!(p.admin(Method::GET, PATH, None).await.1, json!([]));
        assert!(held(&p).await.0.is_empty());

        // A good one is published as given, under its issuer, not renewed unless asked.
        let good = issuer.sign("trust-mark+jwt", TYPE, &us, json!({}));
        let (s, row) = p.admin(Method::POST, PATH, Some(post(json!(good)))).await;
        assert_eq!(s, 201, "{row}");
        assert_eq!(row["trust_mark_issuer"], issuer.entity_id.as_str());
        assert_eq!(row["refresh"], false);
        let (marks, _) = held(&p).await;
        assert_eq!(the_mark(&marks, &issuer.jwks()).0, good);
        let (s, v) = p.admin(Method::POST, PATH, Some(post(json!(good)))).await;
        assert_eq!(s, 409, "{v}");
        // A bad replacement leaves the stored one alone.
        let bad = issuer.sign("JWT", TYPE, &us, json!({}));
        let (s, _) = p
            .admin(
                Method::PUT,
                &format!("{PATH}/{}", row["id"]),
                Some(post(json!(bad))),
            )
            .await;
        assert_eq!(s, 400);
        assert_eq!(the_mark(&held(&p).await.0, &issuer.jwks()).0, good);
        p.stop().await;
    }
}

/// Ticks until the Entity Configuration carries a mark (the background refresher, woken by
/// the admin change, may be fetching at the same time).
async fn until_published(p: &Pharos, clock: &ManualClock) -> Vec<Value> {
    for _ in 0..100 {
        tick(p, clock).await;
        let marks = held(p).await.0;
        if !marks.is_empty() {
            return marks;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the external mark is never published");
}

pub async fn failures(p: &Pharos) -> (u32, i64) {
    let s = p.app.as_ref().unwrap().refreshers.held_marks.lock().await;
    let e = s.get(TYPE).unwrap();
    (e.backoff.failures(), e.next_at)
}

#[tokio::test]
async fn an_external_mark_is_fetched_renewed_and_dropped_once_expired() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let t0 = SystemClock.now();
        let clock = ManualClock::new(t0);
        let issuer = TestIssuer::start(clock.clone(), 600).await;
        let p = start(&db, &clock).await;
        let us = p.entity_id().to_owned();
        let body = json!({"trust_mark_type": TYPE, "trust_mark_issuer": issuer.entity_id,
            "refresh_grace_period": 300, "refresh_rate_limit": 60});
        let (s, row) = p.admin(Method::POST, PATH, Some(body)).await;
        assert_eq!(s, 201, "{row}");
        assert_eq!(row["refresh"], json!(true), "{row}");
        // The admin change wakes the refresher, which may fetch the mark before this answer
        // reads the row back: none yet, or the issuer's mark already.
        assert!(
            row["trust_mark"].is_null() || row["trust_mark"].is_string(),
            "{row}"
        );

        let marks = until_published(&p, &clock).await;
        let (first, m) = the_mark(&marks, &issuer.jwks());
        assert_eq!(
            (m.claims["iss"].as_str(), m.claims["sub"].as_str()),
            (Some(issuer.entity_id.as_str()), Some(us.as_str()))
        );
        let ec = held(&p).await.1;
        assert!(ec.claims["exp"].as_i64().unwrap() <= t0 + 600);

        // 400 s left > 300 s grace: kept. 250 s left: renewed.
        clock.advance(200);
        tick(&p, &clock).await;
        assert_eq!(the_mark(&held(&p).await.0, &issuer.jwks()).0, first);
        clock.advance(150);
        tick(&p, &clock).await;
        let (second, m) = the_mark(&held(&p).await.0, &issuer.jwks());
        assert_ne!(second, first);
        assert_eq!(m.claims["exp"], t0 + 350 + 600);

        // The issuer fails: the valid mark stays, the next attempt waits 2 × the rate limit.
        issuer.set_failing(true);
        clock.advance(400);
        tick(&p, &clock).await;
        assert_eq!(failures(&p).await, (1, clock.now() + 120));
        assert_eq!(the_mark(&held(&p).await.0, &issuer.jwks()).0, second);
        let served = issuer.issued();
        clock.advance(60);
        tick(&p, &clock).await;
        assert_eq!(
            failures(&p).await.0,
            1,
            "no attempt before the backoff ends"
        );

        // Past its exp (t0 + 950) and still failing: the Entity Configuration omits it.
        clock.advance(140);
        tick(&p, &clock).await;
        assert_eq!(failures(&p).await.0, 2);
        assert!(
            held(&p).await.0.is_empty(),
            "an expired mark is not published"
        );

        // The issuer recovers: the next attempt after the backoff publishes a fresh mark.
        issuer.set_failing(false);
        clock.advance(240);
        tick(&p, &clock).await;
        assert!(issuer.issued() > served);
        let (third, m) = the_mark(&held(&p).await.0, &issuer.jwks());
        assert_ne!(third, second);
        assert_eq!(m.claims["iat"], clock.now());
        assert_eq!(failures(&p).await.0, 0);
        p.stop().await;
    }
}

/// Issue 32: a held mark its issuer revokes (the subject blocked) leaves our Entity
/// Configuration at the next status check, on the refresher's schedule of the injected
/// clock, long before it expires, and stays out after a restart.
#[tokio::test]
async fn a_revoked_external_mark_is_no_longer_published() {
    let db = TestDb::new(crate::support::Backend::Sqlite).await;
    let t0 = SystemClock.now();
    let clock = ManualClock::new(t0);
    let issuer = TestIssuer::start(clock.clone(), 86_400).await;
    let mut p = start(&db, &clock).await;
    let body = json!({"trust_mark_type": TYPE, "trust_mark_issuer": issuer.entity_id,
        "refresh_grace_period": 300, "refresh_rate_limit": 60});
    let (s, row) = p.admin(Method::POST, PATH, Some(body)).await;
    assert_eq!(s, 201, "{row}");
    let marks = until_published(&p, &clock).await;
    the_mark(&marks, &issuer.jwks());

    // Still active: kept at the status check.
    clock.advance(60);
    tick(&p, &clock).await;
    assert_eq!(held(&p).await.0.len(), 1);

    // The issuer blocks us: at the next status check (a minute on) the mark is gone.
    issuer.set_revoked(true);
    clock.advance(60);
    tick(&p, &clock).await;
    assert!(
        held(&p).await.0.is_empty(),
        "a revoked mark is not published"
    );
    let (s, rows) = p.admin(Method::GET, PATH, None).await;
    assert_eq!(s, 200);
    assert_eq!(rows[0]["trust_mark"], Value::Null, "{rows}");

    // After a restart, and while the issuer refuses to issue it again: still not published.
    p = p.restart().await;
    clock.advance(120);
    tick(&p, &clock).await;
    assert!(held(&p).await.0.is_empty());

    // Unblocked: the refresher obtains a new mark once its backoff has passed.
    issuer.set_revoked(false);
    clock.advance(3600);
    let marks = until_published(&p, &clock).await;
    the_mark(&marks, &issuer.jwks());
    p.stop().await;
}

/// Issue 32: a held mark whose issuer publishes a listing instead of a status endpoint, and
/// stops listing us, leaves our Entity Configuration at the next check.
#[tokio::test]
async fn an_external_mark_its_issuer_stops_listing_is_no_longer_published() {
    let db = TestDb::new(crate::support::Backend::Sqlite).await;
    let clock = ManualClock::new(SystemClock.now());
    let issuer = TestIssuer::start_listing(clock.clone(), 86_400).await;
    let p = start(&db, &clock).await;
    let body = json!({"trust_mark_type": TYPE, "trust_mark_issuer": issuer.entity_id,
        "refresh_grace_period": 300, "refresh_rate_limit": 60});
    let (s, row) = p.admin(Method::POST, PATH, Some(body)).await;
    assert_eq!(s, 201, "{row}");
    let marks = until_published(&p, &clock).await;
    the_mark(&marks, &issuer.jwks());

    // Listed: kept at the check.
    clock.advance(60);
    tick(&p, &clock).await;
    assert_eq!(held(&p).await.0.len(), 1);

    issuer.set_unlisted(true);
    clock.advance(60);
    tick(&p, &clock).await;
    assert!(
        held(&p).await.0.is_empty(),
        "a mark its issuer no longer lists is not published"
    );
    p.stop().await;
}
