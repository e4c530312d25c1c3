//! Additional claims in one table (migration 5): an upgraded database serves the claims it
//! had, general claims keep their ids across changes and restarts, one rule decides which
//! names are allowed everywhere, and each scope is its own namespace.

use crate::fetch_list::{add, jwk};
use crate::support::{Pharos, TestDb, backends};
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::Row;

/// Runs `sql` with `binds` (strings or integers) on the test database.
async fn exec(db: &pharos_controlplane::db::Db, sql: &'static str, binds: &[Value]) {
    let mut q = sqlx::query(db.sql(sql));
    for b in binds {
        q = match b {
            Value::Number(n) => q.bind(n.as_i64().unwrap()),
            other => q.bind(other.as_str().unwrap().to_string()),
        };
    }
    q.execute(db.pool()).await.unwrap();
}

/// A database as release 4 left it: the Entity Configuration claims and a subordinate's claims
/// in their own tables, the general claims as a JSON array with position-based ids.
async fn old_database(db: &TestDb) -> i64 {
    std::fs::create_dir_all(db.dir.path().join("data")).unwrap();
    let pool = db.pool().await;
    pool.migrate_schema(Some(4)).await.unwrap();
    exec(
        &pool,
        "INSERT INTO ec_additional_claims (claim, value, crit, created_at, updated_at) VALUES (?, ?, ?, 1, 1)",
        &[json!("x_ec"), json!("{\"a\":1}"), json!(1)],
    )
    .await;
    let jwks = json!({"keys": [jwk("k1", None)]}).to_string();
    exec(
        &pool,
        "INSERT INTO subordinates (entity_id, description, status, enable_jwks_update, jwks_poll_interval, jwks, created_at, updated_at) \
         VALUES (?, '', 'active', 0, 0, ?, 1, 1)",
        &[json!("https://leaf.example"), json!(jwks)],
    )
    .await;
    let sub: i64 = sqlx::query(pool.sql("SELECT id FROM subordinates"))
        .fetch_one(pool.pool())
        .await
        .unwrap()
        .try_get("id")
        .unwrap();
    // Ids 7 and 8: subordinate claim ids survive the upgrade.
    for (id, name) in [(7, "x_own"), (8, "x_own2")] {
        exec(
            &pool,
            "INSERT INTO subordinate_additional_claims (id, subordinate_id, claim, value, crit, created_at, updated_at) \
             VALUES (?, ?, ?, '\"v\"', 0, 1, 1)",
            &[json!(id), json!(sub), json!(name)],
        )
        .await;
    }
    let general = json!([
        {"id": 1, "claim": "x_g1", "value": 1, "crit": false},
        {"id": 2, "claim": "x_g2", "value": {"b": 2}, "crit": true},
    ]);
    exec(
        &pool,
        "INSERT INTO settings (scope, name, value) VALUES ('subordinate_statement', 'additional_claims', ?)",
        &[json!(general.to_string())],
    )
    .await;
    pool.pool().close().await;
    sub
}

fn names(list: &Value) -> Vec<&str> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|c| c["claim"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn an_upgraded_database_serves_the_same_claims() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let sub = old_database(&db).await;
        let p = Pharos::start(&db).await;

        let ec = p.entity_configuration().await;
        assert_eq!(ec.claims["x_ec"], json!({"a": 1}), "{b:?}");
        assert_eq!(ec.claims["crit"], json!(["x_ec"]));
        let (s, v) = p
            .admin(
                Method::GET,
                "/entity-configuration/additional-claims/x_ec",
                None,
            )
            .await;
        assert_eq!((s, v["crit"].as_bool()), (200, Some(true)));

        let (_, own) = p
            .admin(
                Method::GET,
                &format!("/subordinates/{sub}/additional-claims"),
                None,
            )
            .await;
        assert_eq!(names(&own), ["x_own", "x_own2"]);
        assert_eq!(own[0]["id"], 7, "subordinate claim ids are kept");
        assert_eq!(own[1]["subordinate_id"], sub);
        // A new claim after the upgrade does not collide with a kept id.
        let (s, _) = p
            .admin(
                Method::POST,
                "/entity-configuration/additional-claims",
                Some(json!({"claim": "x_new", "value": 3})),
            )
            .await;
        assert_eq!(s, 201);

        let (_, general) = p
            .admin(Method::GET, "/subordinates/additional-claims", None)
            .await;
        assert_eq!(names(&general), ["x_g1", "x_g2"], "array order kept");
        assert_eq!(general[1]["value"], json!({"b": 2}));
        assert_eq!(general[1]["crit"], true);

        // The general claims apply to a subordinate without its own.
        add(&p, "https://other.example", json!({})).await;
        let (s, st) = p
            .admin(
                Method::GET,
                &format!(
                    "/subordinates/{}/statement",
                    crate::support::enc("https://other.example")
                ),
                None,
            )
            .await;
        assert_eq!(s, 200);
        assert_eq!((&st["x_g1"], &st["crit"]), (&json!(1), &json!(["x_g2"])));
        let (_, st) = p
            .admin(Method::GET, &format!("/subordinates/{sub}/statement"), None)
            .await;
        assert_eq!(st["x_own"], "v");
        assert!(
            st.get("x_g1").is_none(),
            "own claims replace the general ones"
        );

        // The array is gone from settings, so the move never runs twice.
        let pool = db.pool().await;
        let left = sqlx::query(pool.sql(
            "SELECT COUNT(*) AS n FROM settings WHERE scope = 'subordinate_statement' AND name = 'additional_claims'",
        ))
        .fetch_one(pool.pool())
        .await
        .unwrap()
        .try_get::<i64, _>("n")
        .unwrap();
        assert_eq!(left, 0);
        let p = p.restart().await;
        let (_, again) = p
            .admin(Method::GET, "/subordinates/additional-claims", None)
            .await;
        assert_eq!(again, general, "{b:?}: same rows after a restart");
        p.stop().await;
    }
}

#[tokio::test]
async fn general_claims_keep_their_ids_across_changes_and_restarts() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = Pharos::start(&db).await;
        let base = "/subordinates/additional-claims";
        let mut ids = Vec::new();
        for n in ["x_1", "x_2", "x_3"] {
            let (s, v) = p
                .admin(Method::POST, base, Some(json!({"claim": n, "value": n})))
                .await;
            assert_eq!(s, 201, "{b:?} {v}");
            ids.push(v["id"].as_i64().unwrap());
        }
        // Deleting the first claim leaves the others' ids alone (they were renumbered before).
        let (s, _) = p
            .admin(Method::DELETE, &format!("{base}/{}", ids[0]), None)
            .await;
        assert_eq!(s, 204);
        let (s, v) = p
            .admin(Method::GET, &format!("{base}/{}", ids[2]), None)
            .await;
        assert_eq!((s, v["claim"].as_str()), (200, Some("x_3")));
        let (s, v) = p
            .admin(
                Method::PUT,
                &format!("{base}/{}", ids[1]),
                Some(json!({"value": "two"})),
            )
            .await;
        assert_eq!(
            (s, &v["id"], &v["claim"]),
            (200, &json!(ids[1]), &json!("x_2"))
        );
        let (_, before) = p.admin(Method::GET, base, None).await;

        let p = p.restart().await;
        let (_, after) = p.admin(Method::GET, base, None).await;
        assert_eq!(after, before, "{b:?}");
        let (s, v) = p
            .admin(Method::GET, &format!("{base}/{}", ids[2]), None)
            .await;
        assert_eq!((s, v["claim"].as_str()), (200, Some("x_3")));
        // The claim name still addresses a claim.
        let (s, v) = p.admin(Method::GET, &format!("{base}/x_2"), None).await;
        assert_eq!((s, v["value"].as_str()), (200, Some("two")));
        p.stop().await;
    }
}

#[tokio::test]
async fn one_rule_for_every_scope_and_one_namespace_per_scope() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = Pharos::start(&db).await;
        let sub = add(&p, "https://leaf.example", json!({})).await["id"].clone();
        let scopes = [
            "/entity-configuration/additional-claims".to_string(),
            "/subordinates/additional-claims".into(),
            format!("/subordinates/{sub}/additional-claims"),
        ];
        for base in &scopes {
            for bad in [
                json!({"claim": "iss", "value": 1}),
                json!({"claim": "trust_marks", "value": []}),
                json!({"claim": "source_endpoint", "value": "x"}),
                json!({"claim": "trust_anchor_hints", "value": [], "crit": true}),
                json!({"claim": "x".repeat(256), "value": 1}),
                json!({"value": 1}),
            ] {
                let (s, v) = p.admin(Method::POST, base, Some(bad.clone())).await;
                assert_eq!(
                    (s, &v["error"]),
                    (400, &json!("invalid_request")),
                    "{b:?} {base} {bad}"
                );
            }
            // The same names in every scope: each scope is its own namespace.
            for ok in [
                json!({"claim": "trust_anchor_hints", "value": ["https://ta.example"]}),
                json!({"claim": "x_shared", "value": 1, "crit": true}),
            ] {
                let (s, v) = p.admin(Method::POST, base, Some(ok)).await;
                assert_eq!(s, 201, "{b:?} {base} {v}");
            }
            let (s, _) = p
                .admin(
                    Method::PUT,
                    base,
                    Some(json!([{"claim": "x_d", "value": 1}, {"claim": "x_d", "value": 2}])),
                )
                .await;
            assert_eq!(s, 409, "{base}");
        }
        // A claim id of one scope does not address a claim of another.
        let (_, ec) = p.admin(Method::GET, &scopes[0], None).await;
        let ec_id = ec[0]["id"].clone();
        for base in &scopes[1..] {
            let (s, _) = p.admin(Method::GET, &format!("{base}/{ec_id}"), None).await;
            assert_eq!(s, 404, "{base}");
        }
        // A deleted subordinate takes its claims along; re-added, it has none.
        let (s, _) = p
            .admin(Method::DELETE, &format!("/subordinates/{sub}"), None)
            .await;
        assert_eq!(s, 204);
        let sub = add(&p, "https://leaf.example", json!({})).await["id"].clone();
        let (_, own) = p
            .admin(
                Method::GET,
                &format!("/subordinates/{sub}/additional-claims"),
                None,
            )
            .await;
        assert_eq!(own, json!([]), "{b:?}");
        assert_eq!(
            p.admin(Method::GET, &scopes[1], None)
                .await
                .1
                .as_array()
                .unwrap()
                .len(),
            2
        );
        p.stop().await;
    }
}

/// The Entity Configuration metadata routes share the subordinate document engine but keep
/// their own answers: 200 where the subordinate routes answer 201, and an emptied entity type
/// stays.
#[tokio::test]
async fn entity_configuration_metadata_keeps_its_status_codes() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = Pharos::start(&db).await;
        let sub = add(&p, "https://leaf.example", json!({})).await["id"].clone();
        for (base, created) in [
            ("/entity-configuration/metadata".to_string(), 200),
            (format!("/subordinates/{sub}/metadata"), 201),
        ] {
            let (s, v) = p
                .admin(
                    Method::PUT,
                    &format!("{base}/openid_relying_party"),
                    Some(json!({"client_name": "a"})),
                )
                .await;
            assert_eq!(
                (s, v),
                (created, json!({"client_name": "a"})),
                "{b:?} {base}"
            );
            let (s, _) = p
                .admin(
                    Method::PUT,
                    &format!("{base}/openid_relying_party"),
                    Some(json!({"client_name": "b"})),
                )
                .await;
            assert_eq!(s, 200);
            let (s, v) = p
                .admin(
                    Method::POST,
                    &format!("{base}/oauth_client"),
                    Some(json!({"x": 1})),
                )
                .await;
            assert_eq!((s, v), (created, json!({"x": 1})), "{base}");
            let (s, v) = p
                .admin(
                    Method::POST,
                    &format!("{base}/oauth_client"),
                    Some(json!({"y": 2})),
                )
                .await;
            assert_eq!((s, v), (200, json!({"x": 1, "y": 2})));
            let (s, v) = p
                .admin(
                    Method::PUT,
                    &format!("{base}/oauth_client/scope"),
                    Some(json!("openid")),
                )
                .await;
            assert_eq!((s, v), (created, json!("openid")), "{base}");
            for c in ["x", "y", "scope"] {
                let (s, _) = p
                    .admin(Method::DELETE, &format!("{base}/oauth_client/{c}"), None)
                    .await;
                assert_eq!(s, 204);
            }
            let (s, v) = p
                .admin(Method::GET, &format!("{base}/oauth_client"), None)
                .await;
            if created == 200 {
                assert_eq!((s, v), (200, json!({})), "the emptied type stays");
            } else {
                assert_eq!(s, 404, "the emptied type goes");
            }
            let (s, v) = p
                .admin(Method::PUT, &format!("{base}/oauth_client"), Some(json!(5)))
                .await;
            assert_eq!((s, &v["error"]), (400, &json!("invalid_request")));
            let (s, _) = p
                .admin(Method::DELETE, &format!("{base}/nothing/here"), None)
                .await;
            assert_eq!(s, 404);
        }
        let ec = p.entity_configuration().await;
        assert_eq!(
            ec.claims["metadata"]["openid_relying_party"]["client_name"],
            "b"
        );
        p.stop().await;
    }
}
