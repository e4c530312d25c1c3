//! Trust marks across a federation of Pharos instances on loopback: an issuer Pharos issues a
//! mark to a leaf Pharos, the leaf obtains it from the issuer's trust_mark endpoint, publishes
//! it and renews it before it expires; the anchor, which names the issuer in
//! `trust_mark_issuers`, carries it in its resolve response; and an independent client
//! (`@openid-federation/core`) sees it in the chain it resolves.

use std::sync::Arc;

use pharos_controlplane::refresh::Refreshers;
use pharos_runtime::outbound::HttpFetcher;

use pharos_shared::jose::{self, Jwks};
use pharos_shared::time::{Clock, ManualClock, SystemClock};
use reqwest::Method;
use serde_json::{Value, json};

use crate::interop::{node_available, node_resolve};
use crate::resolve::{enable_resolve, resolve};
use crate::support::{Backend, Pharos, TestDb, enc};

const TM: &str = "https://marks.example.org/member";

async fn ok(p: &Pharos, method: Method, path: &str, body: Value) -> Value {
    let (s, v) = p.admin(method, path, Some(body)).await;
    assert!((200..300).contains(&s), "{path}: {s} {v}");
    v
}

/// `ta` as a superior of `leaf` that issues [`TM`] itself (fetch, trust mark and status
/// endpoints) and entitles `leaf`; the path of the type's subjects.
async fn issue_to(ta: &Pharos, leaf: &Pharos) -> String {
    let (ta_id, l_id) = (ta.entity_id(), leaf.entity_id());
    for t in ["fetch", "trust_mark", "trust_mark_status"] {
        let e = json!({"type": t, "path": format!("/{}", t.replace('_', "-")), "config": {}});
        ok(ta, Method::POST, "/federation-endpoints", e).await;
    }
    let leaf_keys = leaf.entity_configuration().await.claims["jwks"].clone();
    let sub = json!({"entity_id": l_id, "jwks": leaf_keys});
    ok(ta, Method::POST, "/subordinates", sub).await;
    let tm_type = json!({"trust_mark_type": TM, "trust_mark_issuers": [{"issuer": ta_id}]});
    ok(ta, Method::POST, "/trust-marks/types", tm_type).await;
    let spec = json!({"trust_mark_type": TM, "lifetime": "24h"});
    ok(ta, Method::POST, "/trust-marks/issuance-spec", spec).await;
    let subjects = format!("/trust-marks/issuance-spec/{}/subjects", enc(TM));
    ok(ta, Method::POST, &subjects, json!({"entity_id": l_id})).await;
    subjects
}

/// The verified payload of a held trust mark entry, checked against the issuer's keys.
fn verify_mark(entry: &Value, issuer_keys: &Jwks) -> Value {
    assert_eq!(entry["trust_mark_type"], TM, "{entry}");
    assert_eq!(entry["id"], TM, "the legacy id alias: {entry}");
    let jwt = entry["trust_mark"].as_str().unwrap();
    let d = jose::verify(jwt, issuer_keys).unwrap();
    assert_eq!(d.header["typ"], "trust-mark+jwt");
    Value::Object(d.claims)
}

/// The leaf under `ta_id`, holding `issuer`'s mark (renewed within 600 s of its end, checked
/// every `rate_limit` s): ticks its refreshers until the mark is published; the refreshers and
/// its Entity Configuration's `trust_marks`.
async fn hold_mark(
    leaf: &Pharos,
    clock: &ManualClock,
    ta_id: &str,
    issuer: &str,
    rate_limit: i64,
) -> (Arc<Refreshers<HttpFetcher>>, Value) {
    let hint = json!({"entity_id": ta_id});
    ok(
        leaf,
        Method::POST,
        "/entity-configuration/authority-hints",
        hint,
    )
    .await;
    let held = json!({"trust_mark_type": TM, "trust_mark_issuer": issuer,
        "refresh_grace_period": 600, "refresh_rate_limit": rate_limit});
    ok(
        leaf,
        Method::POST,
        "/entity-configuration/trust-marks",
        held,
    )
    .await;
    let refreshers = leaf.app.as_ref().unwrap().refreshers.clone();
    let mut marks = Value::Null;
    for _ in 0..100 {
        refreshers.tick(clock.now()).await;
        let claims = leaf.entity_configuration().await.claims;
        marks = claims.get("trust_marks").cloned().unwrap_or(Value::Null);
        if marks.is_array() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    (refreshers, marks)
}

#[tokio::test]
async fn a_mark_issued_by_pharos_is_held_resolved_and_seen_by_an_independent_client() {
    let b = Backend::Sqlite;
    let (db_ta, db_i, db_l) = (
        TestDb::new(b).await,
        TestDb::new(b).await,
        TestDb::new(b).await,
    );
    let ta = Pharos::start(&db_ta).await;
    let issuer = Pharos::start(&db_i).await;
    let clock = ManualClock::new(SystemClock.now());
    let leaf = Pharos::start_with(&db_l, |_| {}, clock.clone() as Arc<dyn Clock>).await;
    let (ta_id, i_id, l_id) = (
        ta.entity_id().to_owned(),
        issuer.entity_id().to_owned(),
        leaf.entity_id().to_owned(),
    );

    // The anchor: a superior of the leaf that admits the issuer for the type, and a resolver.
    let fetch = json!({"type": "fetch", "path": "/fetch", "config": {}});
    ok(&ta, Method::POST, "/federation-endpoints", fetch).await;
    enable_resolve(&ta, json!({"allowed_trust_anchors": [ta_id]})).await;
    let leaf_keys = leaf.entity_configuration().await.claims["jwks"].clone();
    let sub = json!({"entity_id": l_id, "jwks": leaf_keys});
    ok(&ta, Method::POST, "/subordinates", sub).await;
    let tm_type = json!({"trust_mark_type": TM, "trust_mark_issuers": [{"issuer": i_id}]});
    ok(&ta, Method::POST, "/trust-marks/types", tm_type).await;
    let ta_ec = ta.entity_configuration().await.claims;
    assert_eq!(ta_ec["trust_mark_issuers"], json!({TM: [i_id]}));

    // The issuer: a trust_mark endpoint and the leaf entitled.
    let tm = json!({"type": "trust_mark", "path": "/trust-mark", "config": {}});
    ok(&issuer, Method::POST, "/federation-endpoints", tm).await;
    let spec = json!({"trust_mark_type": TM, "lifetime": "1h"});
    ok(&issuer, Method::POST, "/trust-marks/issuance-spec", spec).await;
    let path = format!("/trust-marks/issuance-spec/{}/subjects", enc(TM));
    ok(&issuer, Method::POST, &path, json!({"entity_id": l_id})).await;
    let issuer_keys: Jwks =
        serde_json::from_value(issuer.entity_configuration().await.claims["jwks"].clone()).unwrap();
    // A trust mark issuer is trusted through its own chain to the anchor (§7.3): the issuer
    // is the anchor's subordinate too.
    let sub = json!({"entity_id": i_id, "jwks": issuer_keys});
    ok(&ta, Method::POST, "/subordinates", sub).await;
    let hint = json!({"entity_id": ta_id});
    ok(
        &issuer,
        Method::POST,
        "/entity-configuration/authority-hints",
        hint,
    )
    .await;

    // The leaf: under the anchor, holding the issuer's mark.
    let (refreshers, marks) = hold_mark(&leaf, &clock, &ta_id, &i_id, 1).await;
    let first = marks[0].clone();
    let claims = verify_mark(&first, &issuer_keys);
    assert_eq!(
        (claims["iss"].as_str(), claims["sub"].as_str()),
        (Some(i_id.as_str()), Some(l_id.as_str()))
    );
    assert_eq!(claims["id"], TM);
    let mark_exp = claims["exp"].as_i64().unwrap();
    assert!(
        leaf.entity_configuration().await.claims["exp"]
            .as_i64()
            .unwrap()
            <= mark_exp
    );

    // The anchor's resolve response carries the mark it admits.
    let (s, body) = resolve(&ta, &l_id, &[&ta_id], &[]).await;
    assert_eq!(s, 200, "{body}");
    let resolved = jose::decode_unverified(&body).unwrap().claims;
    let carried = &resolved["trust_marks"];
    assert_eq!(carried.as_array().map(Vec::len), Some(1), "{resolved:?}");
    assert_eq!(carried[0]["trust_mark"], first["trust_mark"]);
    assert!(resolved["exp"].as_i64().unwrap() <= mark_exp);

    // An independent client resolves the chain and reads the mark from the leaf.
    if node_available() {
        let v = node_resolve(&l_id, &ta_id).await;
        assert_eq!(v["chains"], 1, "{v}");
        assert_eq!(v["trust_marks"][0]["id"], TM, "{v}");
        // The client decodes and checks the mark's JWT against its own schema.
        let parsed = &v["trust_marks"][0]["trust_mark"];
        assert_eq!(parsed["header"]["typ"], "trust-mark+jwt", "{v}");
        assert_eq!(parsed["claims"]["iss"], i_id.as_str(), "{v}");
        assert_eq!(parsed["claims"]["sub"], l_id.as_str(), "{v}");
    }

    // Before expiry (inside the leaf's 600 s grace period) the leaf renews the mark.
    clock.advance(3_600 - 500);
    refreshers.tick(clock.now()).await;
    let renewed = leaf.entity_configuration().await.claims["trust_marks"][0].clone();
    let again = verify_mark(&renewed, &issuer_keys);
    // The issuer's own clock has not moved: it hands out the mark the leaf holds again (same
    // `jti`) until that mark nears its end there.
    assert_eq!(again["jti"], claims["jti"]);

    for p in [ta, issuer, leaf] {
        p.stop().await;
    }
}

/// Issue 32: an anchor that issued a leaf's mark and then blocked the leaf no longer carries
/// the mark in its resolve answer, although the leaf still publishes it (its holder drops it
/// only at its next status check, here an hour away).
#[tokio::test]
async fn an_anchors_resolve_answer_leaves_out_a_mark_it_revoked() {
    let b = Backend::Sqlite;
    let (db_ta, db_l) = (TestDb::new(b).await, TestDb::new(b).await);
    let ta = Pharos::start(&db_ta).await;
    let clock = ManualClock::new(SystemClock.now());
    let leaf = Pharos::start_with(&db_l, |_| {}, clock.clone() as Arc<dyn Clock>).await;
    let (ta_id, l_id) = (ta.entity_id().to_owned(), leaf.entity_id().to_owned());

    // The anchor issues the type itself, and resolves.
    let subjects = issue_to(&ta, &leaf).await;
    enable_resolve(&ta, json!({"allowed_trust_anchors": [ta_id]})).await;

    // The leaf holds the anchor's mark, checking its status only hourly.
    let (_, marks) = hold_mark(&leaf, &clock, &ta_id, &ta_id, 3600).await;
    assert_eq!(marks.as_array().map(Vec::len), Some(1), "{marks}");

    let carried = |body: &str| {
        let c = jose::decode_unverified(body).unwrap().claims;
        c.get("trust_marks").cloned().unwrap_or(Value::Null)
    };
    let (s, body) = resolve(&ta, &l_id, &[&ta_id], &[]).await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(carried(&body).as_array().map(Vec::len), Some(1), "{body}");

    // Blocked at the anchor: its status endpoint says revoked, and its resolve answer leaves
    // the mark out while the leaf still publishes it.
    let status = format!("{subjects}/{}/status", enc(&l_id));
    let (s, v) = ta.admin(Method::PUT, &status, Some(json!("blocked"))).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        leaf.entity_configuration().await.claims["trust_marks"],
        marks
    );
    let (s, body) = resolve(&ta, &l_id, &[&ta_id], &[]).await;
    assert_eq!(s, 200, "{body}");
    let c = carried(&body);
    assert!(
        c.is_null() || c.as_array().is_some_and(Vec::is_empty),
        "a revoked mark is still vouched for: {c}"
    );
    for p in [ta, leaf] {
        p.stop().await;
    }
}

/// Issue 36: a resolver whose trust anchor record says `trust_mark_status: fail_closed` asks
/// the issuer's status endpoint (a real POST to the issuing Pharos) and leaves out a mark the
/// issuer revoked once its kept answer is older than one status lifetime, while a resolver
/// that does not ask keeps returning it; on every database.
#[tokio::test]
async fn a_resolver_asking_trust_mark_status_drops_a_revoked_mark_within_one_lifetime() {
    for b in crate::support::backends() {
        let (db_ta, db_l, db_r) = (
            TestDb::new(b).await,
            TestDb::new(b).await,
            TestDb::new(b).await,
        );
        let ta = Pharos::start(&db_ta).await;
        let clock = ManualClock::new(SystemClock.now());
        let leaf = Pharos::start_with(&db_l, |_| {}, clock.clone() as Arc<dyn Clock>).await;
        let r_clock = ManualClock::new(SystemClock.now());
        let r = Pharos::start_with(&db_r, |_| {}, r_clock.clone() as Arc<dyn Clock>).await;
        let (ta_id, l_id) = (ta.entity_id().to_owned(), leaf.entity_id().to_owned());

        // The anchor issues the type itself and answers status requests.
        let subjects = issue_to(&ta, &leaf).await;
        let (_, marks) = hold_mark(&leaf, &clock, &ta_id, &ta_id, 3600).await;
        assert_eq!(marks.as_array().map(Vec::len), Some(1), "{marks}");

        // The resolver: the anchor in its repository, asking status; a bad value is refused.
        let ta_keys = ta.entity_configuration().await.claims["jwks"].clone();
        let bad = json!({"entity_id": ta_id, "jwks": ta_keys, "trust_mark_status": "sometimes"});
        let (s, v) = r.admin(Method::POST, "/trust-anchors", Some(bad)).await;
        assert_eq!(s, 400, "{v}");
        let rec = json!({"entity_id": ta_id, "jwks": ta_keys, "trust_mark_status": "fail_closed"});
        let stored = ok(&r, Method::POST, "/trust-anchors", rec).await;
        assert_eq!(stored["trust_mark_status"], "fail_closed");
        enable_resolve(&r, json!({"allowed_trust_anchors": [ta_id]})).await;
        let carried = |body: &str| {
            let c = jose::decode_unverified(body).unwrap().claims;
            c.get("trust_marks")
                .and_then(Value::as_array)
                .map_or(0, Vec::len)
        };
        let (s, body) = resolve(&r, &l_id, &[&ta_id], &[]).await;
        assert_eq!((s, carried(&body)), (200, 1), "{b:?} {body}");

        // Revoked at the issuer: kept for the rest of the status lifetime, then left out.
        let status = format!("{subjects}/{}/status", enc(&l_id));
        let (s, v) = ta.admin(Method::PUT, &status, Some(json!("blocked"))).await;
        assert_eq!(s, 200, "{v}");
        r_clock.advance(pharos_dataplane::TRUST_MARK_STATUS_TTL - 10);
        assert_eq!(carried(&resolve(&r, &l_id, &[&ta_id], &[]).await.1), 1);
        r_clock.advance(10);
        let (s, body) = resolve(&r, &l_id, &[&ta_id], &[]).await;
        assert_eq!(
            (s, carried(&body)),
            (200, 0),
            "{b:?}: a revoked mark is still returned"
        );

        // Not asking: the mark's signature and exp decide, and it is returned.
        let off = json!({"jwks": ta_keys, "trust_mark_status": "off"});
        ok(
            &r,
            Method::PUT,
            &format!("/trust-anchors/{}", enc(&ta_id)),
            off,
        )
        .await;
        assert_eq!(carried(&resolve(&r, &l_id, &[&ta_id], &[]).await.1), 1);
        for p in [ta, leaf, r] {
            p.stop().await;
        }
    }
}
