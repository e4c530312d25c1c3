//! Statistics record the authenticated client of a `private_key_jwt` request (issue 17).

use std::sync::Arc;

use crate::client_auth::{Federation, assertion, call, claims, signer};
use crate::support::{Backend, Pharos, TestDb, backends};
use reqwest::Method;
use serde_json::json;

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
        let mut rows = Vec::new();
        pharos_controlplane::db::stats::for_each_batch(&pool, i64::MIN, i64::MAX, |b| {
            rows.extend(b.iter().map(|r| r.to_row()));
            Ok(())
        })
        .await
        .unwrap();
        let [row] = rows.as_slice() else {
            panic!("{b:?}: {rows:?}")
        };
        assert_eq!(row.endpoint, "list");
        assert_eq!(row.method, "POST");
        assert_eq!(row.status_code, 200);
        assert_eq!(
            row.client_entity_id.as_deref(),
            Some(f.client.entity_id()),
            "{b:?}"
        );
        assert!(row.request_size > 0);
        s.stop().await;
    }
    f.stop().await;
}
