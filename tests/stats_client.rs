//! Statistics record the authenticated client of a `private_key_jwt` request (issue 17).

use std::sync::Arc;

use crate::client_auth::{Federation, assertion, call, claims, signer};
use crate::support::{Backend, Pharos, TestDb, backends};
use reqwest::Method;
use serde_json::json;
use sqlx::Row as _;

#[tokio::test]
async fn the_authenticated_client_entity_is_recorded() {
    let (dt, dc) = (
        TestDb::new(Backend::Sqlite).await,
        TestDb::new(Backend::Sqlite).await,
    );
    let f = Federation::start(&dt, &dc).await;
    for b in backends() {
        let db = TestDb::new(b).await;
        let s = Pharos::start_with(
            &db,
            |s| s.stats.enabled = true,
            Arc::new(pharos_shared::time::SystemClock),
        )
        .await;
        let jwks = f.ta.entity_configuration().await.claims["jwks"].clone();
        let body = json!({"entity_id": f.ta.entity_id(), "jwks": jwks});
        assert_eq!(
            s.admin(Method::POST, "/trust-anchors", Some(body)).await.0,
            201
        );
        let body = json!({"type": "list", "path": "/list", "auth_enabled": true,
            "auth_trust_anchors": [f.ta.entity_id()], "config": {}});
        assert_eq!(
            s.admin(Method::POST, "/federation-endpoints", Some(body))
                .await
                .0,
            201
        );
        let a = assertion(
            &*signer(&f.client),
            &claims(f.client.entity_id(), s.entity_id(), |_| {}),
        );
        let (st, body) = call(&s, "/list", &a, &[]).await;
        assert_eq!(st, 200, "{body}");
        assert_eq!(s.app.as_ref().unwrap().stats.flush().await, 1);
        let pool = db.pool().await;
        let row = sqlx::query(pool.sql(
            "SELECT endpoint, method, status_code, client_entity_id, request_size FROM stats_requests",
        ))
        .fetch_one(&pool.pool)
        .await
        .unwrap();
        assert_eq!(row.get::<String, _>(0), "list");
        assert_eq!(row.get::<String, _>(1), "POST");
        assert_eq!(row.get::<i64, _>(2), 200);
        assert_eq!(
            row.get::<Option<String>, _>(3).as_deref(),
            Some(f.client.entity_id()),
            "{b:?}"
        );
        assert!(row.get::<i64, _>(4) > 0);
        s.stop().await;
    }
    f.stop().await;
}
