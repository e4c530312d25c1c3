//! Admin API for statement documents: metadata and metadata policies, per subordinate and
//! general.

use crate::fetch_list::add;
use crate::support::{Pharos, TestDb, backends};
use reqwest::Method;
use serde_json::{Value, json};

async fn call(p: &Pharos, m: Method, path: &str, body: Option<Value>) -> (u16, Value) {
    p.admin(m, path, body).await
}

#[tokio::test]
async fn metadata_routes() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = Pharos::start(&db).await;
        let id = add(&p, "https://leaf.example", json!({})).await["id"].clone();
        let m = format!("/subordinates/{id}/metadata");
        assert_eq!(
            call(&p, Method::GET, &m, None).await,
            (200, json!({})),
            "{b:?}"
        );
        assert_eq!(
            call(&p, Method::PUT, &m, Some(json!({"openid_provider": 1})))
                .await
                .0,
            400
        );
        assert_eq!(
            call(
                &p,
                Method::PUT,
                &m,
                Some(json!({"openid_provider": {"a": 1}}))
            )
            .await
            .0,
            200
        );
        let t = format!("{m}/openid_relying_party");
        assert_eq!(call(&p, Method::GET, &t, None).await.0, 404);
        assert_eq!(
            call(&p, Method::PUT, &t, Some(json!({"client_name": "x"})))
                .await
                .0,
            201
        );
        let (s, v) = call(&p, Method::POST, &t, Some(json!({"scope": "openid"}))).await;
        assert_eq!(
            (s, v),
            (200, json!({"client_name": "x", "scope": "openid"}))
        );
        assert_eq!(
            call(
                &p,
                Method::PUT,
                &format!("{t}/scope"),
                Some(json!("openid email"))
            )
            .await
            .0,
            200
        );
        assert_eq!(
            call(
                &p,
                Method::PUT,
                &format!("{t}/contacts"),
                Some(json!(["a@b"]))
            )
            .await
            .0,
            201
        );
        assert_eq!(
            call(&p, Method::GET, &format!("{t}/scope"), None).await,
            (200, json!("openid email"))
        );
        assert_eq!(
            call(&p, Method::DELETE, &format!("{t}/scope"), None)
                .await
                .0,
            204
        );
        assert_eq!(
            call(&p, Method::DELETE, &format!("{t}/scope"), None)
                .await
                .0,
            404
        );
        assert_eq!(
            call(&p, Method::GET, &format!("{t}/scope"), None).await.0,
            404
        );
        assert_eq!(call(&p, Method::DELETE, &t, None).await.0, 204);
        assert_eq!(call(&p, Method::DELETE, &t, None).await.0, 404);
        assert_eq!(
            call(&p, Method::GET, &m, None).await,
            (200, json!({"openid_provider": {"a": 1}}))
        );
        assert_eq!(
            call(&p, Method::GET, "/subordinates/999/metadata", None)
                .await
                .0,
            404
        );
        let (_, h) = call(
            &p,
            Method::GET,
            &format!("/subordinates/{id}/history?type=metadata_updated"),
            None,
        )
        .await;
        assert_eq!(h["pagination"]["total"], 5);
        let (_, h) = call(
            &p,
            Method::GET,
            &format!("/subordinates/{id}/history?type=metadata_deleted"),
            None,
        )
        .await;
        assert_eq!(h["pagination"]["total"], 2);
        p.stop().await;
    }
}

#[tokio::test]
async fn metadata_policy_routes_per_subordinate_and_general() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = Pharos::start(&db).await;
        let id = add(&p, "https://leaf.example", json!({})).await["id"].clone();
        let sp = format!("/subordinates/{id}/metadata-policies");
        let gp = "/subordinates/metadata-policies".to_string();
        assert_eq!(call(&p, Method::GET, &sp, None).await.0, 404, "{b:?}");
        assert_eq!(call(&p, Method::GET, &gp, None).await, (200, json!({})));
        // Invalid policies are refused (bad operator value, conflicting operators, bad shape).
        for bad in [
            json!({"openid_relying_party": {"scope": {"subset_of": "x"}}}),
            json!({"openid_relying_party": {"scope": {"value": "a", "one_of": ["b"]}}}),
            json!({"openid_relying_party": 1}),
            json!([]),
        ] {
            assert_eq!(
                call(&p, Method::PUT, &gp, Some(bad.clone())).await.0,
                400,
                "{bad}"
            );
            assert_eq!(call(&p, Method::PUT, &sp, Some(bad)).await.0, 400);
        }
        let general = json!({"openid_relying_party": {"contacts": {"add": ["g@x"]}}});
        assert_eq!(
            call(&p, Method::PUT, &gp, Some(general.clone())).await.0,
            200
        );
        assert_eq!(
            call(&p, Method::GET, &sp, None).await,
            (200, general.clone()),
            "fallback shown"
        );
        for base in [&sp, &gp] {
            assert_eq!(
                call(
                    &p,
                    Method::PUT,
                    &format!("{base}/openid_provider/scope/value"),
                    Some(json!("openid"))
                )
                .await
                .0,
                201
            );
            assert_eq!(
                call(
                    &p,
                    Method::PUT,
                    &format!("{base}/openid_provider/scope/value"),
                    Some(json!("openid"))
                )
                .await
                .0,
                200
            );
            assert_eq!(
                call(
                    &p,
                    Method::GET,
                    &format!("{base}/openid_provider/scope/value"),
                    None
                )
                .await,
                (200, json!("openid"))
            );
            assert_eq!(
                call(
                    &p,
                    Method::POST,
                    &format!("{base}/openid_provider/scope"),
                    Some(json!({"essential": true}))
                )
                .await
                .0,
                200
            );
            assert_eq!(
                call(
                    &p,
                    Method::GET,
                    &format!("{base}/openid_provider/scope"),
                    None
                )
                .await
                .1,
                json!({"value": "openid", "essential": true})
            );
            assert_eq!(
                call(
                    &p,
                    Method::PUT,
                    &format!("{base}/openid_provider/grant_types"),
                    Some(json!({"subset_of": ["code"]}))
                )
                .await
                .0,
                201
            );
            assert_eq!(
                call(
                    &p,
                    Method::POST,
                    &format!("{base}/openid_provider/x"),
                    Some(json!({"default": 1}))
                )
                .await
                .0,
                201
            );
            assert_eq!(
                call(
                    &p,
                    Method::POST,
                    &format!("{base}/openid_provider"),
                    Some(json!({"y": {"default": 2}}))
                )
                .await
                .0,
                200
            );
            assert_eq!(
                call(
                    &p,
                    Method::PUT,
                    &format!("{base}/oauth_resource"),
                    Some(json!({"z": {"value": 3}}))
                )
                .await
                .0,
                201
            );
            assert_eq!(
                call(
                    &p,
                    Method::DELETE,
                    &format!("{base}/openid_provider/scope/value"),
                    None
                )
                .await
                .0,
                204
            );
            assert_eq!(
                call(
                    &p,
                    Method::DELETE,
                    &format!("{base}/openid_provider/scope/value"),
                    None
                )
                .await
                .0,
                404
            );
            assert_eq!(
                call(
                    &p,
                    Method::DELETE,
                    &format!("{base}/openid_provider/x"),
                    None
                )
                .await
                .0,
                204
            );
            assert_eq!(
                call(&p, Method::DELETE, &format!("{base}/oauth_resource"), None)
                    .await
                    .0,
                204
            );
            assert_eq!(
                call(&p, Method::GET, &format!("{base}/oauth_resource"), None)
                    .await
                    .0,
                404
            );
            assert_eq!(
                call(
                    &p,
                    Method::PUT,
                    &format!("{base}/openid_provider/scope/one_of"),
                    Some(json!("notalist"))
                )
                .await
                .0,
                400
            );
        }
        // The subordinate's override started empty: no general "openid_relying_party" copied in.
        assert!(
            call(&p, Method::GET, &sp, None)
                .await
                .1
                .get("openid_relying_party")
                .is_none()
        );
        // POST creates the override: not while the subordinate has one (409, nothing changes).
        let own = call(&p, Method::GET, &sp, None).await.1;
        assert_eq!(call(&p, Method::POST, &sp, None).await.0, 409);
        assert_eq!(call(&p, Method::GET, &sp, None).await.1, own);
        assert_eq!(call(&p, Method::DELETE, &sp, None).await.0, 204);
        let (s, v) = call(&p, Method::POST, &sp, None).await;
        assert_eq!(s, 201);
        assert_eq!(
            v["openid_relying_party"], general["openid_relying_party"],
            "POST copies the general policy"
        );
        assert_eq!(call(&p, Method::DELETE, &sp, None).await.0, 204);
        assert_eq!(call(&p, Method::DELETE, &sp, None).await.0, 404);
        assert_eq!(call(&p, Method::DELETE, &gp, None).await.0, 204);
        assert_eq!(call(&p, Method::GET, &sp, None).await.0, 404);
        assert_eq!(
            call(
                &p,
                Method::POST,
                "/subordinates/999/metadata-policies",
                None
            )
            .await
            .0,
            404
        );
        let (_, h) = call(
            &p,
            Method::GET,
            &format!("/subordinates/{id}/history?type=policy_deleted"),
            None,
        )
        .await;
        assert_eq!(h["pagination"]["total"], 5);
        p.stop().await;
    }
}
