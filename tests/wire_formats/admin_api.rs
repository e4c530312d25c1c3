//! The Admin API: its OpenAPI document byte for byte, its error bodies and its answers to
//! reads.

use pharos_shared::time::Clock;
use reqwest::Method;
use serde_json::json;
use sha2::Digest as _;

use super::harness::*;
use crate::support::{Backend, Pharos, TestDb, enable, enc, jwk};

#[tokio::test]
async fn openapi_document() {
    let db = TestDb::new(Backend::Sqlite).await;
    let p = Pharos::start(&db).await;
    for (path, name) in [
        ("/api/v1/admin/openapi.json", "openapi_json"),
        ("/api/v1/admin/openapi.yaml", "openapi_yaml"),
    ] {
        let r = p.get(path).await;
        assert_eq!(r.status(), 200);
        let content_type = r.headers()["content-type"].to_str().unwrap().to_owned();
        let bytes = r.bytes().await.unwrap();
        let text = String::from_utf8(bytes.to_vec()).unwrap();
        let digest = sha2::Sha256::digest(&bytes);
        let doc = format!(
            "content-type: {content_type}\nbytes: {}\nsha256: {}\n\n{text}",
            bytes.len(),
            digest
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        );
        // The JSON document in full (pretty-printed as served, so a change reads as a diff); the
        // YAML one, made from the same document, by size and digest.
        let doc = if name == "openapi_json" {
            doc
        } else {
            doc.replace(&format!("\n\n{text}"), "")
        };
        settings().bind(|| insta::assert_snapshot!(name, doc));
    }
    p.stop().await;
}

/// The Admin API's error bodies (the same `{"error","error_description"}` shape) for a few
/// representative failures: not found, malformed and invalid bodies, conflicts, optimistic
/// concurrency (`412`, `428`), an unrouted path and method, and authentication.
#[tokio::test]
async fn admin_api_errors() {
    let db = TestDb::new(Backend::Sqlite).await;
    let clock = stopped_clock();
    let p = Pharos::start_with(
        &db,
        |s| {
            s.entity_id = TA.to_owned();
            s.api.admin.require_if_match = true;
        },
        clock.clone(),
    )
    .await;
    let w = Wire::new(clock.now());
    let json_type = [("content-type", "application/json")];
    let leaf = json!({"entity_id": LEAF, "jwks": {"keys": [jwk("k1", None)]}}).to_string();
    let created = admin_call(
        &w,
        &p,
        Method::POST,
        "/subordinates",
        Some(&leaf),
        &json_type,
        None,
    )
    .await;
    assert_eq!(created["status"], 201, "{created}");
    let metadata = format!("/subordinates/{}/metadata", enc(LEAF));
    let mut bad_key = jwk("k1", None);
    bad_key["x"] = json!("AAAA");
    let bad_key = json!({"entity_id": "https://other.example.org", "jwks": {"keys": [bad_key]}});
    let doc = json!({"openid_relying_party": {"client_name": "Shop"}}).to_string();
    let stale = [
        ("content-type", "application/json"),
        ("if-match", "\"stale\""),
    ];
    let mut answers = Vec::new();
    for (request, method, path, body, headers) in [
        (
            "GET /subordinates/https://nobody.example.org",
            Method::GET,
            "/subordinates/https%3A%2F%2Fnobody.example.org".to_owned(),
            None,
            &json_type[..],
        ),
        (
            "POST /subordinates (malformed JSON)",
            Method::POST,
            "/subordinates".into(),
            Some("{".to_owned()),
            &json_type[..],
        ),
        (
            "POST /subordinates (a key off the curve)",
            Method::POST,
            "/subordinates".into(),
            Some(bad_key.to_string()),
            &json_type[..],
        ),
        (
            "POST /subordinates (an existing one)",
            Method::POST,
            "/subordinates".into(),
            Some(leaf.clone()),
            &json_type[..],
        ),
        (
            "POST /subordinates (text/plain)",
            Method::POST,
            "/subordinates".into(),
            Some(leaf.clone()),
            &[("content-type", "text/plain")][..],
        ),
        (
            "PUT /subordinates/https://leaf.example.org/metadata (stale If-Match)",
            Method::PUT,
            metadata.clone(),
            Some(doc.clone()),
            &stale[..],
        ),
        (
            "PUT /subordinates/https://leaf.example.org/metadata (no If-Match)",
            Method::PUT,
            metadata.clone(),
            Some(doc.clone()),
            &json_type[..],
        ),
        (
            "GET /no-such-route",
            Method::GET,
            "/no-such-route".into(),
            None,
            &[][..],
        ),
        (
            "DELETE /openapi.json",
            Method::DELETE,
            "/openapi.json".into(),
            None,
            &[][..],
        ),
    ] {
        let seen = admin_call(&w, &p, method, &path, body.as_deref(), headers, None).await;
        answers.push((request.to_owned(), seen));
    }

    // The first user locks the API: unauthenticated and wrong credentials are refused.
    let user = json!({"username": "alice", "password": "correct horse"}).to_string();
    let made = admin_call(
        &w,
        &p,
        Method::POST,
        "/users",
        Some(&user),
        &json_type,
        None,
    )
    .await;
    assert_eq!(made["status"], 201, "{made}");
    answers.push((
        "GET /subordinates (no credentials)".into(),
        admin_call(&w, &p, Method::GET, "/subordinates", None, &[], None).await,
    ));
    answers.push((
        "GET /subordinates (wrong password)".into(),
        admin_call(
            &w,
            &p,
            Method::GET,
            "/subordinates",
            None,
            &[],
            Some(("alice", "wrong")),
        )
        .await,
    ));
    w.snapshot("admin_api_errors", &w.each(answers));
    p.stop().await;
}

/// The Admin API's answers to reads of each kind of resource (what the console and `pharos
/// admin` parse), on an instance with one of each, and the body of a creation.
#[tokio::test]
async fn admin_api_reads() {
    let db = TestDb::new(Backend::Sqlite).await;
    let clock = stopped_clock();
    let p = start_fixed(&db, TA, &clock).await;
    let mut w = Wire::new(clock.now());
    w.learn(&p, "ta").await;
    let json_type = [("content-type", "application/json")];
    let leaf = json!({"entity_id": LEAF, "jwks": {"keys": [jwk("k1", None)]},
        "registered_entity_types": ["openid_relying_party"]})
    .to_string();
    let created = admin_call(
        &w,
        &p,
        Method::POST,
        "/subordinates",
        Some(&leaf),
        &json_type,
        None,
    )
    .await;
    let sub = format!("/subordinates/{}", enc(LEAF));
    ok(
        &p,
        Method::PUT,
        &format!("{sub}/metadata/openid_relying_party"),
        json!({"client_name": "Shop"}),
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
    enable(&p, "fetch", "/fetch", json!({"statement_lifetime": 3600})).await;
    ok(
        &p,
        Method::POST,
        "/trust-anchors",
        json!({"entity_id": "https://anchor.example.org", "jwks": {"keys": [jwk("a1", None)]}}),
    )
    .await;
    ok(
        &p,
        Method::POST,
        "/trust-marks/types",
        json!({"trust_mark_type": TM, "trust_mark_issuers": [{"issuer": TA}]}),
    )
    .await;
    ok(
        &p,
        Method::POST,
        "/trust-marks/issuance-spec",
        json!({"trust_mark_type": TM, "lifetime": 3600, "additional_claims": {"level": 2}}),
    )
    .await;
    let subjects = format!("/trust-marks/issuance-spec/{}/subjects", enc(TM));
    ok(
        &p,
        Method::POST,
        &subjects,
        json!({"entity_id": LEAF, "status": "active"}),
    )
    .await;
    let mut answers = vec![("POST /subordinates".to_owned(), created)];
    for path in [
        "/subordinates".to_owned(),
        sub.clone(),
        format!("{sub}/statement"),
        format!("{sub}/jwks"),
        format!("{sub}/history"),
        "/entity-configuration".into(),
        "/entity-configuration/keys".into(),
        "/entity-configuration/lifetime".into(),
        "/entity-configuration/authority-hints".into(),
        "/entity-configuration/additional-claims".into(),
        "/federation-endpoints".into(),
        "/trust-anchors".into(),
        "/trust-marks/types".into(),
        "/trust-marks/issuance-spec".into(),
        subjects.clone(),
        "/kms".into(),
    ] {
        let shown = percent_encoding::percent_decode_str(&path).decode_utf8_lossy();
        answers.push((
            format!("GET {shown}"),
            admin_call(&w, &p, Method::GET, &path, None, &[], None).await,
        ));
    }
    let user = json!({"username": "alice", "password": "correct horse",
        "display_name": "Alice"})
    .to_string();
    answers.push((
        "POST /users".into(),
        admin_call(
            &w,
            &p,
            Method::POST,
            "/users",
            Some(&user),
            &json_type,
            None,
        )
        .await,
    ));
    answers.push((
        "GET /users".into(),
        admin_call(
            &w,
            &p,
            Method::GET,
            "/users",
            None,
            &[],
            Some(("alice", "correct horse")),
        )
        .await,
    ));
    w.snapshot("admin_api_reads", &w.each(answers));
    p.stop().await;
}
