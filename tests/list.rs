//! The list endpoint: filters, unsupported parameters, and a large registry.

use std::sync::Arc;

use crate::fetch_list::{NOW, add, enable, status_of};
use crate::support::{Pharos, TestDb, backends, enc};
use pharos_shared::time::ManualClock;
use reqwest::Method;
use serde_json::json;

#[tokio::test]
async fn list_filters_and_unsupported_parameters() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = Pharos::start(&db).await;
        enable(&p, "list", "/list", json!({})).await;
        let (s, v) = status_of(&p, "/list").await;
        assert_eq!((s, v), (200, json!([])), "{b:?}");
        add(
            &p,
            "https://op.example",
            json!({"registered_entity_types": ["openid_provider"]}),
        )
        .await;
        add(
            &p,
            "https://rp.example",
            json!({"registered_entity_types": ["openid_relying_party"]}),
        )
        .await;
        let ia = add(
            &p,
            "https://ia.example",
            json!({"registered_entity_types": ["federation_entity"]}),
        )
        .await;
        p.admin(
            Method::PUT,
            &format!("/subordinates/{}/metadata/federation_entity", ia["id"]),
            Some(json!({"federation_list_endpoint": "https://ia.example/list"})),
        )
        .await;
        add(
            &p,
            "https://pending.example",
            json!({"status": "pending", "registered_entity_types": ["openid_provider"]}),
        )
        .await;

        let (_, v) = status_of(&p, "/list").await;
        assert_eq!(
            v,
            json!([
                "https://ia.example",
                "https://op.example",
                "https://rp.example"
            ])
        );
        let (_, v) = status_of(&p, "/list?entity_type=openid_provider").await;
        assert_eq!(v, json!(["https://op.example"]));
        let (_, v) = status_of(
            &p,
            "/list?entity_type=openid_provider&entity_type=openid_relying_party",
        )
        .await;
        assert_eq!(v, json!(["https://op.example", "https://rp.example"]));
        let (_, v) = status_of(&p, "/list?intermediate=true").await;
        assert_eq!(v, json!(["https://ia.example"]));
        // Filtered answers are kept per snapshot: a change shows on the next request, in
        // every spelling of the same filter.
        add(
            &p,
            "https://op2.example",
            json!({"registered_entity_types": ["openid_provider"]}),
        )
        .await;
        let (_, v) = status_of(&p, "/list?entity_type=openid_provider").await;
        assert_eq!(v, json!(["https://op.example", "https://op2.example"]));
        let (_, v) = status_of(
            &p,
            "/list?entity_type=openid_provider&entity_type=openid_provider&entity_type=nope",
        )
        .await;
        assert_eq!(v, json!(["https://op.example", "https://op2.example"]));
        let (s, v) = status_of(&p, "/list?entity_type=nope").await;
        assert_eq!((s, v), (200, json!([])));
        // Blocking a subordinate takes it out of the filtered list at once.
        let (s, _) = p
            .admin_raw(
                Method::PUT,
                "/subordinates/https%3A%2F%2Fop2.example/status",
                Some("blocked"),
            )
            .await;
        assert_eq!(s, 200);
        let (_, v) = status_of(&p, "/list?entity_type=openid_provider").await;
        assert_eq!(v, json!(["https://op.example"]));
        // No mark issued here: the trust mark filters match no one.
        for q in ["trust_marked=true", "trust_mark_type=https%3A%2F%2Ftm"] {
            assert_eq!(
                status_of(&p, &format!("/list?{q}")).await,
                (200, json!([])),
                "{q}"
            );
        }
        let (s, e) = status_of(&p, "/list?trust_marked=maybe").await;
        assert_eq!((s, e["error"].as_str()), (400, Some("invalid_request")));
        let r = p.get("/list").await;
        assert_eq!(r.headers()["content-type"], "application/json");
        p.stop().await;
    }
}

#[tokio::test]
async fn list_answers_correctly_with_many_subordinates() {
    let db = TestDb::new(crate::support::Backend::Sqlite).await;
    let clock: Arc<ManualClock> = ManualClock::new(NOW);
    let p = Pharos::start_with(&db, |_| {}, clock).await;
    enable(&p, "list", "/list", json!({})).await;
    let n = 300;
    for i in 0..n {
        add(&p, &format!("https://e{i:05}.example"), json!({})).await;
    }
    let (_, v) = status_of(&p, "/list").await;
    let ids: Vec<String> = serde_json::from_value(v).unwrap();
    assert_eq!(ids.len(), n);
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "sorted");
    // A delete shows in the next answer (the cached list is per snapshot generation).
    p.admin(
        Method::DELETE,
        &format!("/subordinates/{}", enc("https://e00007.example")),
        None,
    )
    .await;
    let (_, v) = status_of(&p, "/list").await;
    assert_eq!(v.as_array().unwrap().len(), n - 1);
    p.stop().await;
}
