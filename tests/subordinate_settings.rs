//! Admin API for constraints, additional claims, lifetime and critical operators, per
//! subordinate and general, and the regression test for lighthouse's habit of copying the general
//! values into a subordinate on every write.

use crate::fetch_list::add;
use crate::support::{Pharos, TestDb, backends};
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::Row;

async fn call(p: &Pharos, m: Method, path: &str, body: Option<Value>) -> (u16, Value) {
    p.admin(m, path, body).await
}

#[tokio::test]
async fn constraints_routes_per_subordinate_and_general() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = Pharos::start(&db).await;
        let id = add(&p, "https://leaf.example", json!({})).await["id"].clone();
        for base in [
            format!("/subordinates/{id}/constraints"),
            "/subordinates/constraints".into(),
        ] {
            assert_eq!(
                call(&p, Method::GET, &base, None).await.0,
                404,
                "{b:?} {base}"
            );
            assert_eq!(
                call(&p, Method::PUT, &base, Some(json!({"max_path_length": -1})))
                    .await
                    .0,
                400
            );
            assert_eq!(
                call(
                    &p,
                    Method::PUT,
                    &base,
                    Some(json!({"naming_constraints": {"permitted": "x"}}))
                )
                .await
                .0,
                400
            );
            assert_eq!(
                call(&p, Method::PUT, &base, Some(json!({"max_path_length": 1})))
                    .await
                    .0,
                200
            );
            let mpl = format!("{base}/max-path-length");
            assert_eq!(call(&p, Method::GET, &mpl, None).await, (200, json!(1)));
            assert_eq!(
                p.admin_raw(Method::PUT, &mpl, Some("3")).await,
                (200, json!(3))
            );
            assert_eq!(p.admin_raw(Method::PUT, &mpl, Some("-3")).await.0, 400);
            assert_eq!(call(&p, Method::DELETE, &mpl, None).await.0, 204);
            assert_eq!(call(&p, Method::GET, &mpl, None).await.0, 404);
            let nc = format!("{base}/naming-constraints");
            let names = json!({"permitted": [".example.org"], "excluded": ["bad.example.org"]});
            assert_eq!(call(&p, Method::PUT, &nc, Some(names.clone())).await.0, 201);
            assert_eq!(call(&p, Method::GET, &nc, None).await, (200, names));
            assert_eq!(call(&p, Method::DELETE, &nc, None).await.0, 204);
            let aet = format!("{base}/allowed-entity-types");
            assert_eq!(
                call(&p, Method::PUT, &aet, Some(json!(["openid_provider"])))
                    .await
                    .0,
                201
            );
            let (s, v) = p
                .admin_raw(Method::POST, &aet, Some("openid_relying_party"))
                .await;
            assert_eq!(
                (s, v),
                (201, json!(["openid_provider", "openid_relying_party"]))
            );
            assert_eq!(
                p.admin_raw(Method::POST, &aet, Some("openid_provider"))
                    .await
                    .0,
                409
            );
            assert_eq!(
                call(&p, Method::DELETE, &format!("{aet}/openid_provider"), None)
                    .await
                    .0,
                204
            );
            assert_eq!(
                call(&p, Method::DELETE, &format!("{aet}/openid_provider"), None)
                    .await
                    .0,
                404
            );
            assert_eq!(
                call(&p, Method::GET, &aet, None).await,
                (200, json!(["openid_relying_party"]))
            );
        }
        let sc = format!("/subordinates/{id}/constraints");
        assert_eq!(call(&p, Method::DELETE, &sc, None).await.0, 204);
        assert_eq!(
            call(&p, Method::GET, &sc, None).await.1,
            json!({"allowed_entity_types": ["openid_relying_party"]}),
            "general fallback"
        );
        let (s, v) = call(&p, Method::POST, &sc, None).await;
        assert_eq!(
            (s, v),
            (
                201,
                json!({"allowed_entity_types": ["openid_relying_party"]})
            )
        );
        assert_eq!(
            call(&p, Method::DELETE, "/subordinates/constraints", None)
                .await
                .0,
            204
        );
        assert_eq!(
            call(&p, Method::DELETE, "/subordinates/constraints", None)
                .await
                .0,
            404
        );
        p.stop().await;
    }
}

#[tokio::test]
async fn additional_claims_lifetime_and_crit_routes() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = Pharos::start(&db).await;
        let id = add(&p, "https://leaf.example", json!({})).await["id"].clone();
        for base in [
            format!("/subordinates/{id}/additional-claims"),
            "/subordinates/additional-claims".into(),
        ] {
            assert_eq!(
                call(&p, Method::GET, &base, None).await,
                (200, json!([])),
                "{b:?}"
            );
            let (s, v) = call(
                &p,
                Method::POST,
                &base,
                Some(json!({"claim": "x_a", "value": {"n": 1}, "crit": true})),
            )
            .await;
            assert_eq!(
                (s, v["claim"].as_str(), v["crit"].as_bool()),
                (201, Some("x_a"), Some(true))
            );
            let cid = v["id"].clone();
            assert_eq!(
                call(
                    &p,
                    Method::POST,
                    &base,
                    Some(json!({"claim": "x_a", "value": 2}))
                )
                .await
                .0,
                409
            );
            assert_eq!(
                call(
                    &p,
                    Method::POST,
                    &base,
                    Some(json!({"claim": "iss", "value": 2}))
                )
                .await
                .0,
                400
            );
            assert_eq!(
                call(&p, Method::POST, &base, Some(json!({"value": 2})))
                    .await
                    .0,
                400
            );
            assert_eq!(
                call(&p, Method::GET, &format!("{base}/{cid}"), None)
                    .await
                    .1["value"],
                json!({"n": 1})
            );
            assert_eq!(
                call(&p, Method::GET, &format!("{base}/x_a"), None).await.1["id"],
                cid
            );
            let (s, v) = call(
                &p,
                Method::PUT,
                &format!("{base}/x_a"),
                Some(json!({"value": 5})),
            )
            .await;
            assert_eq!(
                (s, v["value"].clone(), v["crit"].clone()),
                (200, json!(5), json!(false))
            );
            assert_eq!(
                call(&p, Method::GET, &format!("{base}/nope"), None).await.0,
                404
            );
            let (s, v) = call(
                &p,
                Method::PUT,
                &base,
                Some(json!([{"claim": "x_b", "value": 1}, {"claim": "x_c", "value": 2}])),
            )
            .await;
            assert_eq!((s, v.as_array().unwrap().len()), (200, 2));
            assert_eq!(
                call(
                    &p,
                    Method::PUT,
                    &base,
                    Some(json!([{"claim": "x_b", "value": 1}, {"claim": "x_b", "value": 2}]))
                )
                .await
                .0,
                409
            );
            assert_eq!(
                call(&p, Method::DELETE, &format!("{base}/x_b"), None)
                    .await
                    .0,
                204
            );
            assert_eq!(
                call(&p, Method::DELETE, &format!("{base}/x_b"), None)
                    .await
                    .0,
                404
            );
        }
        assert_eq!(
            call(&p, Method::GET, "/subordinates/lifetime", None).await,
            (200, json!(600000))
        );
        assert_eq!(
            p.admin_raw(Method::PUT, "/subordinates/lifetime", Some("abc"))
                .await
                .0,
            400
        );
        assert_eq!(
            p.admin_raw(Method::PUT, "/subordinates/lifetime", Some("0"))
                .await
                .0,
            400
        );
        assert_eq!(
            p.admin_raw(Method::PUT, "/subordinates/lifetime", Some("86400"))
                .await,
            (200, json!(86400))
        );
        let crit = "/subordinates/metadata-policy-crit";
        assert_eq!(call(&p, Method::GET, crit, None).await, (200, json!([])));
        // Only non-standard operators Pharos implements may be critical (`except`): one it
        // does not implement would make every chain through our statements invalid.
        let (s, v) = call(&p, Method::PUT, crit, Some(json!(["x_regex"]))).await;
        assert_eq!(s, 400, "{v}");
        assert!(
            v["error_description"].as_str().unwrap().starts_with(
                "metadata_policy_crit: \"x_regex\" is not a non-standard operator Pharos implements"
            ),
            "{v}"
        );
        assert_eq!(
            call(&p, Method::PUT, crit, Some(json!(["value"]))).await.0,
            400,
            "standard operators are never critical"
        );
        assert_eq!(
            p.admin_raw(Method::POST, crit, Some("x_other")).await.0,
            400
        );
        assert_eq!(
            call(&p, Method::PUT, crit, Some(json!([]))).await,
            (200, json!([]))
        );
        assert_eq!(
            call(&p, Method::DELETE, &format!("{crit}/x_regex"), None)
                .await
                .0,
            404
        );
        assert_eq!(call(&p, Method::GET, crit, None).await.1, json!([]));
        p.stop().await;
    }
}

/// Reference §13 item 7: writing a subordinate must not freeze the general values into it.
#[tokio::test]
async fn writes_never_copy_general_values_into_a_subordinate() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = Pharos::start(&db).await;
        p.admin(
            Method::PUT,
            "/subordinates/metadata-policies",
            Some(json!({"openid_relying_party": {"scope": {"value": "one"}}})),
        )
        .await;
        p.admin(
            Method::PUT,
            "/subordinates/constraints",
            Some(json!({"max_path_length": 1})),
        )
        .await;
        let id = add(&p, "https://leaf.example", json!({})).await["id"].clone();
        p.admin(
            Method::PATCH,
            &format!("/subordinates/{id}"),
            Some(json!({"description": "d"})),
        )
        .await;
        p.admin(
            Method::PUT,
            &format!("/subordinates/{id}"),
            Some(json!({"enable_jwks_update": true})),
        )
        .await;
        p.admin(
            Method::PUT,
            &format!("/subordinates/{id}/metadata/openid_relying_party/client_name"),
            Some(json!("c")),
        )
        .await;
        p.admin_raw(
            Method::PUT,
            &format!("/subordinates/{id}/status"),
            Some("active"),
        )
        .await;
        p.admin(
            Method::POST,
            &format!("/subordinates/{id}/jwks"),
            Some(crate::fetch_list::jwk("k9", None)),
        )
        .await;
        // The row holds no policy or constraints of its own.
        let pool = db.pool().await;
        let row = sqlx::query("SELECT metadata_policy, constraints_json FROM subordinates")
            .fetch_one(pool.pool())
            .await
            .unwrap();
        assert_eq!(
            row.try_get::<Option<String>, _>("metadata_policy").unwrap(),
            None,
            "{b:?}"
        );
        assert_eq!(
            row.try_get::<Option<String>, _>("constraints_json")
                .unwrap(),
            None
        );
        // A later general change reaches the subordinate.
        p.admin(
            Method::PUT,
            "/subordinates/metadata-policies",
            Some(json!({"openid_relying_party": {"scope": {"value": "two"}}})),
        )
        .await;
        p.admin(
            Method::PUT,
            "/subordinates/constraints",
            Some(json!({"max_path_length": 2})),
        )
        .await;
        let (_, st) = p
            .admin(Method::GET, &format!("/subordinates/{id}/statement"), None)
            .await;
        assert_eq!(
            st["metadata_policy"]["openid_relying_party"]["scope"]["value"],
            "two"
        );
        assert_eq!(st["constraints"]["max_path_length"], 2);
        assert_eq!(st["metadata"]["openid_relying_party"]["client_name"], "c");
        p.stop().await;
    }
}
