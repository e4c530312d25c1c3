//! Entity statements: the Entity Configuration, the subordinate statement, the subordinate
//! list and historical keys, with their errors.

use pharos_shared::time::Clock;
use reqwest::Method;
use serde_json::json;

use super::harness::*;
use crate::support::{Backend, TestDb, enable, enc, jwk};

#[tokio::test]
async fn entity_configuration() {
    let db = TestDb::new(Backend::Sqlite).await;
    let clock = stopped_clock();
    let p = start_fixed(&db, TA, &clock).await;
    let mut w = Wire::new(clock.now());
    w.learn(&p, "ta").await;
    let fresh = w.get(&p, "/.well-known/openid-federation").await;
    w.snapshot("entity_configuration", &fresh);

    ok(
        &p,
        Method::PUT,
        "/entity-configuration/metadata/federation_entity",
        json!({"organization_name": "Pharos Test", "homepage_uri": "https://example.org",
               "contacts": ["ops@example.org"]}),
    )
    .await;
    ok(
        &p,
        Method::PUT,
        "/entity-configuration/metadata/openid_relying_party",
        json!({"client_name": "Shop", "redirect_uris": ["https://shop.example/cb"]}),
    )
    .await;
    ok(
        &p,
        Method::POST,
        "/entity-configuration/authority-hints",
        json!({"entity_id": "https://superior.example.org"}),
    )
    .await;
    ok(
        &p,
        Method::POST,
        "/entity-configuration/additional-claims",
        json!({"claim": "x_note", "value": {"a": 1}, "crit": true}),
    )
    .await;
    let (s, _) = p
        .admin_raw(Method::PUT, "/entity-configuration/lifetime", Some("3600"))
        .await;
    assert_eq!(s, 200);
    for (kind, path) in [
        ("fetch", "/fetch"),
        ("list", "/list"),
        ("resolve", "/resolve"),
        ("trust_mark", "/trust-mark"),
        ("trust_mark_status", "/trust-mark-status"),
        ("trust_mark_listing", "/trust-mark-listing"),
        ("historical_keys", "/historical-keys"),
    ] {
        enable(&p, kind, path, json!({})).await;
    }
    let edited = w.get(&p, "/.well-known/openid-federation").await;
    let etag = edited["headers"]["etag"].as_str().unwrap().to_owned();
    let r = p
        .client
        .get(p.main_url("/.well-known/openid-federation"))
        .header("if-none-match", &etag)
        .send()
        .await
        .unwrap();
    let revalidated = w.seen(r).await;
    let answers = w.each(vec![
        ("GET /.well-known/openid-federation".into(), edited),
        (
            "GET /.well-known/openid-federation with If-None-Match".into(),
            revalidated,
        ),
        (
            "POST /.well-known/openid-federation".into(),
            w.post(&p, "/.well-known/openid-federation", &[]).await,
        ),
        (
            "GET /no-such-endpoint".into(),
            w.get(&p, "/no-such-endpoint").await,
        ),
    ]);
    w.snapshot("entity_configuration_edited", &answers);
    p.stop().await;
}

/// The subordinate statement of a subordinate with keys, metadata, a metadata policy and
/// constraints, and the fetch endpoint's errors.
#[tokio::test]
async fn subordinate_statement() {
    let db = TestDb::new(Backend::Sqlite).await;
    let clock = stopped_clock();
    let p = start_fixed(&db, TA, &clock).await;
    let mut w = Wire::new(clock.now());
    w.learn(&p, "ta").await;
    enable(&p, "fetch", "/fetch", json!({})).await;
    let keys = json!({"keys": [jwk("leaf-1", None), jwk("leaf-2", Some(clock.now() + 600))]});
    let body = json!({"entity_id": LEAF, "jwks": keys,
        "registered_entity_types": ["openid_relying_party"]});
    ok(&p, Method::POST, "/subordinates", body).await;
    let sub = format!("/subordinates/{}", enc(LEAF));
    ok(
        &p,
        Method::PUT,
        &format!("{sub}/metadata/openid_relying_party"),
        json!({"client_name": "Shop", "contacts": ["ops@shop.example"]}),
    )
    .await;
    ok(
        &p,
        Method::PUT,
        &format!("{sub}/metadata-policies"),
        json!({"openid_relying_party": {"scope": {"subset_of": ["openid", "email"]},
               "contacts": {"add": ["fed@ta.example.org"]}}}),
    )
    .await;
    ok(
        &p,
        Method::PUT,
        &format!("{sub}/constraints"),
        json!({"max_path_length": 1}),
    )
    .await;
    ok(
        &p,
        Method::POST,
        "/subordinates",
        json!({"entity_id": "https://plain.example.org",
               "jwks": {"keys": [jwk("plain-1", None)]}}),
    )
    .await;
    ok(
        &p,
        Method::POST,
        "/subordinates",
        json!({"entity_id": "https://pending.example.org", "status": "pending",
               "jwks": {"keys": [jwk("pending-1", None)]}}),
    )
    .await;
    let answers = w.each(vec![
        (
            format!("GET /fetch?sub={LEAF}"),
            w.get(&p, &format!("/fetch?sub={}", enc(LEAF))).await,
        ),
        (
            "GET /fetch?sub=https://plain.example.org".into(),
            w.get(&p, "/fetch?sub=https%3A%2F%2Fplain.example.org")
                .await,
        ),
    ]);
    w.snapshot("subordinate_statement", &answers);

    let errors = w.each(vec![
        ("GET /fetch".into(), w.get(&p, "/fetch").await),
        (
            format!("GET /fetch?sub={TA} (itself)"),
            w.get(&p, &format!("/fetch?sub={}", enc(TA))).await,
        ),
        (
            "GET /fetch?sub=https://unknown.example.org".into(),
            w.get(&p, "/fetch?sub=https%3A%2F%2Funknown.example.org")
                .await,
        ),
        (
            "GET /fetch?sub=https://pending.example.org".into(),
            w.get(&p, "/fetch?sub=https%3A%2F%2Fpending.example.org")
                .await,
        ),
        (
            format!("POST /fetch sub={LEAF}"),
            w.post(&p, "/fetch", &[("sub", LEAF)]).await,
        ),
    ]);
    w.snapshot("subordinate_statement_errors", &errors);
    p.stop().await;
}

/// The list endpoint: unfiltered, filtered, and its errors.
#[tokio::test]
async fn subordinate_listing() {
    let db = TestDb::new(Backend::Sqlite).await;
    let clock = stopped_clock();
    let p = start_fixed(&db, TA, &clock).await;
    let w = Wire::new(clock.now());
    enable(&p, "list", "/list", json!({})).await;
    let empty = w.get(&p, "/list").await;
    for (id, extra) in [
        (
            "https://op.example.org",
            json!({"registered_entity_types": ["openid_provider"]}),
        ),
        (
            "https://rp.example.org",
            json!({"registered_entity_types": ["openid_relying_party"]}),
        ),
        (
            "https://ia.example.org",
            json!({"registered_entity_types": ["federation_entity"]}),
        ),
        (
            "https://pending.example.org",
            json!({"status": "pending", "registered_entity_types": ["openid_provider"]}),
        ),
    ] {
        let mut body = json!({"entity_id": id, "jwks": {"keys": [jwk("k1", None)]}});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        ok(&p, Method::POST, "/subordinates", body).await;
    }
    ok(
        &p,
        Method::PUT,
        "/subordinates/https%3A%2F%2Fia.example.org/metadata/federation_entity",
        json!({"federation_list_endpoint": "https://ia.example.org/list"}),
    )
    .await;
    let mut answers = vec![("GET /list (no subordinates)".to_owned(), empty)];
    for q in [
        "/list",
        "/list?entity_type=openid_provider",
        "/list?entity_type=openid_provider&entity_type=openid_relying_party",
        "/list?intermediate=true",
        "/list?trust_marked=true",
        "/list?trust_marked=maybe",
        "/list?intermediate=1",
    ] {
        answers.push((format!("GET {q}"), w.get(&p, q).await));
    }
    answers.push(("POST /list".into(), w.post(&p, "/list", &[]).await));
    w.snapshot("subordinate_listing", &w.each(answers));
    p.stop().await;
}

/// Historical keys after a rotation that revoked the first key and one that retired the
/// second at the end of its overlap.
#[tokio::test]
async fn historical_keys() {
    let db = TestDb::new(Backend::Sqlite).await;
    let clock = stopped_clock();
    let p = start_fixed(&db, TA, &clock).await;
    let mut w = Wire::new(clock.now());
    w.learn(&p, "ta").await;
    enable(&p, "historical_keys", "/historical-keys", json!({})).await;
    let none = w.get(&p, "/historical-keys").await;

    clock.advance(10);
    let (s, v) = p
        .admin(
            Method::POST,
            "/kms/rotate?revoke=true&reason=compromised",
            None,
        )
        .await;
    assert_eq!(s, 202, "{v}");
    w.learn(&p, "ta").await;
    clock.advance(100);
    let (s, v) = p.admin(Method::POST, "/kms/rotate", None).await;
    assert_eq!(s, 202, "{v}");
    w.learn(&p, "ta").await;
    let at = clock.now() + 3_600;
    clock.set(at);
    p.app
        .as_ref()
        .unwrap()
        .control
        .rotate_keys(at)
        .await
        .unwrap();
    let answers = w.each(vec![
        ("GET /historical-keys (none yet)".into(), none),
        (
            "GET /historical-keys (one revoked, one retired)".into(),
            w.get(&p, "/historical-keys").await,
        ),
        (
            "POST /historical-keys".into(),
            w.post(&p, "/historical-keys", &[]).await,
        ),
    ]);
    w.snapshot("historical_keys", &answers);
    p.stop().await;
}
