//! The enroll endpoint's check against an operator's web service (`http` checker) on
//! loopback: a check that takes long does not hold up other writes (it runs outside the writer
//! lock), and a service's refusal is the enrollment's answer, with nothing stored.

use std::sync::Arc;

use axum::http::StatusCode;
use reqwest::Method;
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::{Notify, Semaphore};

use crate::enroll::{ask, rows, statement};
use crate::fetch_list::enable;
use crate::support::{Pharos, TestDb, backends};

/// An operator service that answers `/slow` only once released, and refuses `/deny`.
struct Service {
    base: String,
    /// Calls of `/slow` that have arrived.
    arrived: Arc<Notify>,
    /// Permits to answer `/slow`.
    release: Arc<Semaphore>,
}

impl Service {
    async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (arrived, release) = (Arc::new(Notify::new()), Arc::new(Semaphore::new(0)));
        let (a, r) = (arrived.clone(), release.clone());
        let app = axum::Router::new()
            .route(
                "/slow",
                axum::routing::post(move || {
                    let (a, r) = (a.clone(), r.clone());
                    async move {
                        a.notify_one();
                        let _permit = r.acquire().await.unwrap();
                        StatusCode::OK
                    }
                }),
            )
            .route(
                "/deny",
                axum::routing::post(|| async { (StatusCode::UNAUTHORIZED, "not on our list") }),
            );
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self {
            base,
            arrived,
            release,
        }
    }
}

fn http_check(url: String) -> serde_json::Value {
    json!({"checker": {"type": "http", "config": {"url": url, "timeout": "60s"}}})
}

#[tokio::test]
async fn a_slow_check_holds_up_no_other_write() {
    for b in backends() {
        let (db_s, db_l) = (TestDb::new(b).await, TestDb::new(b).await);
        let sup = Arc::new(Pharos::start(&db_s).await);
        let leaf = Pharos::start(&db_l).await;
        crate::enroll::names_superior(&leaf, &sup).await;
        let service = Service::start().await;
        enable(&sup, "fetch", "/fetch", json!({})).await;
        enable(
            &sup,
            "enroll",
            "/enroll",
            http_check(format!("{}/slow", service.base)),
        )
        .await;

        let enrolling = tokio::spawn({
            let (sup, id) = (sup.clone(), leaf.entity_id().to_owned());
            async move { ask(&sup, "/enroll", &id, &[]).await }
        });
        // The check is running (the service has the call) and has not answered: writes go on.
        service.arrived.notified().await;
        let body = json!({"entity_id": "https://other.example", "status": "pending"});
        // Bounded only so that a write waiting for the check fails instead of hanging.
        let write = sup.admin(Method::POST, "/subordinates", Some(body));
        let (s, v) = tokio::time::timeout(std::time::Duration::from_secs(30), write)
            .await
            .expect("a write waits for a running check");
        assert_eq!(s, 201, "{b:?} {v}");
        assert!(!enrolling.is_finished());
        service.release.add_permits(1);
        let a = enrolling.await.unwrap();
        statement(&sup, &a, leaf.entity_id()).await;
        let mut expected = vec![
            ("https://other.example".to_owned(), "pending".to_owned()),
            (leaf.entity_id().to_owned(), "active".to_owned()),
        ];
        expected.sort();
        assert_eq!(rows(&db_s).await, expected);
    }
}

#[tokio::test]
async fn a_services_refusal_is_the_answer_and_nothing_is_stored() {
    for b in backends() {
        let (db_s, db_l) = (TestDb::new(b).await, TestDb::new(b).await);
        let sup = Pharos::start(&db_s).await;
        let leaf = Pharos::start(&db_l).await;
        crate::enroll::names_superior(&leaf, &sup).await;
        let service = Service::start().await;
        enable(
            &sup,
            "enroll",
            "/enroll",
            http_check(format!("{}/deny", service.base)),
        )
        .await;
        let a = ask(&sup, "/enroll", leaf.entity_id(), &[]).await;
        assert_eq!(a.status, 401, "{b:?} {}", a.body);
        assert_eq!(a.json()["error_description"], "not on our list");
        assert!(rows(&db_s).await.is_empty());
    }
}

#[tokio::test]
async fn enrolled_entities_are_polled_when_the_endpoint_says_so() {
    let b = backends()[backends().len() - 1];
    let (db_s, db_l) = (TestDb::new(b).await, TestDb::new(b).await);
    let sup = Pharos::start(&db_s).await;
    let leaf = Pharos::start(&db_l).await;
    crate::enroll::names_superior(&leaf, &sup).await;
    let config = json!({"enable_jwks_update": true, "jwks_poll_interval": 600});
    enable(&sup, "enroll", "/enroll", config).await;
    let a = ask(&sup, "/enroll", leaf.entity_id(), &[]).await;
    assert_eq!(a.status, 201, "{}", a.body);
    let path = format!("/subordinates/{}", crate::support::enc(leaf.entity_id()));
    let (_, rec) = sup.admin(Method::GET, &path, None).await;
    assert_eq!(
        (&rec["enable_jwks_update"], &rec["jwks_poll_interval"]),
        (&json!(true), &json!(600))
    );
    // The running refresher learns about it in the background, as after an Admin API create.
    let refreshers = &sup.app.as_ref().unwrap().refreshers;
    for _ in 0..250 {
        if refreshers.next_wake().await.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(
        refreshers.next_wake().await.is_some(),
        "the enrolled entity is never scheduled"
    );
}
