//! The federation map (issue 40, acceptance 3): `GET /federation-map` draws the tree from this
//! entity's subordinates and the stored entity collection (each collected entity with the
//! superior that listed it), and the console's map page stays navigable with 10,000 collected
//! entities in a real browser (`tests/console/map.mjs`; its render time is reported, never
//! asserted — `deploy/bench/console_map.sh` turns it into BENCHMARKS.md's figure).

use reqwest::Method;
use serde_json::{Value, json};

use crate::console::{browser_available, run_script};
use crate::support::{Backend, Pharos, TestDb, backends, enc};

/// Stores a collection of `anchor` as the periodic collector would: `intermediates`
/// entities under the anchor, each with `leaves` members; every tenth leaf holds a trust mark.
async fn store_collection(db: &TestDb, anchor: &str, intermediates: usize, leaves: usize) {
    let pool = db.pool().await;
    sqlx::query(pool.sql_built(
        "INSERT INTO entity_collections (entity, trust_anchor, last_updated) VALUES (1, ?, 1700000000)".into(),
    ))
    .bind(anchor)
    .execute(pool.pool())
    .await
    .unwrap();
    let mut rows: Vec<(String, String)> = Vec::new();
    for i in 0..intermediates {
        let ia = format!("https://ia{i:02}.map.example");
        let info =
            json!({"entity_id": ia, "entity_types": ["federation_entity"], "superior": anchor});
        rows.push((ia.clone(), info.to_string()));
        for l in 0..leaves {
            let id = format!("https://leaf{l:04}.ia{i:02}.map.example");
            let marks = if l % 10 == 0 {
                json!([{"trust_mark_type": "https://tm.map.example/member", "trust_mark": "x.y.z"}])
            } else {
                json!([])
            };
            let kind = if l % 2 == 0 {
                "openid_relying_party"
            } else {
                "openid_provider"
            };
            let info = json!({"entity_id": id, "entity_types": [kind], "trust_marks": marks, "superior": ia});
            rows.push((id, info.to_string()));
        }
    }
    for batch in rows.chunks(200) {
        let mut sql = String::from(
            "INSERT INTO collected_entities (entity, trust_anchor, entity_id, info) VALUES ",
        );
        sql.push_str(&vec!["(1, ?, ?, ?)"; batch.len()].join(", "));
        let mut q = sqlx::query(pool.sql_built(sql));
        for (id, info) in batch {
            q = q.bind(anchor).bind(id.as_str()).bind(info.as_str());
        }
        q.execute(pool.pool()).await.unwrap();
    }
}

fn node<'m>(map: &'m Value, id: &str) -> &'m Value {
    map["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["entity_id"] == id)
        .unwrap_or_else(|| panic!("{id} not on the map"))
}

#[tokio::test]
async fn the_map_joins_our_subordinates_and_the_collected_tree() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = Pharos::start(&db).await;
        let anchor = p.entity_id().to_owned();
        // Our own subordinates: one the walk also found (an intermediate), one blocked with a
        // key about to expire.
        let soon = chrono_now() + 3600;
        for (id, status, exp) in [
            ("https://ia00.map.example", "active", None),
            ("https://rp.map.example", "blocked", Some(soon)),
        ] {
            let key = crate::support::jwk(&format!("k-{status}"), exp);
            let body = json!({"entity_id": id, "status": status, "jwks": {"keys": [key]},
                "registered_entity_types": ["openid_relying_party"]});
            let (s, v) = p.admin(Method::POST, "/subordinates", Some(body)).await;
            assert_eq!(s, 201, "{b:?}: {v}");
        }
        store_collection(&db, &anchor, 2, 3).await;
        let p = p.restart().await;

        let (s, map) = p.admin(Method::GET, "/federation-map", None).await;
        assert_eq!(s, 200, "{b:?}: {map}");
        assert_eq!(map["root"], anchor);
        assert_eq!(map["collected_at"], 1_700_000_000);
        // Root, 2 intermediates, 6 leaves, and our blocked subordinate.
        assert_eq!(
            (map["total"].clone(), map["truncated"].clone()),
            (json!(10), json!(false)),
            "{map}"
        );
        let root = node(&map, &anchor);
        assert_eq!(
            (root["status"].clone(), root["subordinates"].clone()),
            (json!("root"), json!(3))
        );
        let ia = node(&map, "https://ia00.map.example");
        assert_eq!(ia["status"], "active", "our status wins: {ia}");
        assert_eq!(
            ia["entity_types"],
            json!(["federation_entity", "openid_relying_party"])
        );
        assert_eq!(ia["subordinates"], 3);
        let leaf = node(&map, "https://leaf0000.ia01.map.example");
        assert_eq!(leaf["superior"], "https://ia01.map.example");
        assert_eq!(leaf["status"], "collected");
        assert_eq!(
            leaf["trust_marks"],
            json!(["https://tm.map.example/member"])
        );
        let rp = node(&map, "https://rp.map.example");
        assert_eq!(
            (rp["status"].clone(), rp["keys_expiring"].clone()),
            (json!("blocked"), json!(true))
        );

        // A limit keeps every superior; bad parameters are refused naming the field.
        let (s, cut) = p.admin(Method::GET, "/federation-map?limit=4", None).await;
        assert_eq!(s, 200, "{cut}");
        assert_eq!(
            (cut["total"].clone(), cut["truncated"].clone()),
            (json!(10), json!(true))
        );
        let ids: Vec<_> = cut["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["entity_id"].clone())
            .collect();
        for id in [
            anchor.as_str(),
            "https://ia00.map.example",
            "https://ia01.map.example",
        ] {
            assert!(ids.contains(&json!(id)), "{id} kept: {ids:?}");
        }
        for (q, field) in [
            ("limit=0", "limit"),
            ("anchor=x", "anchor"),
            ("nope=1", "nope"),
        ] {
            let (s, e) = p
                .admin(Method::GET, &format!("/federation-map?{q}"), None)
                .await;
            assert_eq!(s, 400, "{q}: {e}");
            assert!(
                e["error_description"].as_str().unwrap().contains(field),
                "{q}: {e}"
            );
        }
        let q = format!("/federation-map?anchor={}", enc("https://other.example"));
        let (s, e) = p.admin(Method::GET, &q, None).await;
        assert_eq!(s, 404, "{e}");
        p.stop().await;
    }
}

fn chrono_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Entities in the browser test's federation: 20 intermediates × 499 leaves + the anchor's
/// own subordinates below = 10,000 collected.
const INTERMEDIATES: usize = 20;
const LEAVES: usize = 499;

#[tokio::test]
async fn the_map_stays_navigable_with_ten_thousand_collected_entities_in_a_real_browser() {
    if !browser_available() {
        return;
    }
    let db = TestDb::new(Backend::Sqlite).await;
    let p = Pharos::start(&db).await;
    let anchor = p.entity_id().to_owned();
    let blocked = "https://blocked.map.example";
    let body = json!({"entity_id": blocked, "status": "blocked",
        "jwks": {"keys": [crate::support::jwk("map-key", None)]}});
    let (s, v) = p.admin(Method::POST, "/subordinates", Some(body)).await;
    assert_eq!(s, 201, "{v}");
    let (s, v) = p
        .admin(
            Method::POST,
            "/users",
            Some(json!({"username": "alice", "password": "correct horse"})),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    store_collection(&db, &anchor, INTERMEDIATES, LEAVES).await;
    let mut p = p.restart().await;
    p.login("alice", "correct horse");
    let (s, map) = p.admin(Method::GET, "/federation-map?limit=1", None).await;
    assert_eq!(s, 200, "{map}");
    let total = map["total"].as_u64().unwrap();
    assert_eq!(
        total as usize,
        1 + 1 + INTERMEDIATES * (1 + LEAVES),
        "{}",
        map["total"]
    );

    let shots = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/console-screenshots/map");
    let envs = [
        ("PHAROS_URL", p.url("")),
        ("PHAROS_USER", "alice".to_owned()),
        ("PHAROS_PASSWORD", "correct horse".to_owned()),
        ("EXPECT_TOTAL", total.to_string()),
        ("INTERMEDIATE", "https://ia07.map.example".to_owned()),
        ("LEAF", "https://leaf0321.ia13.map.example".to_owned()),
        ("BLOCKED", blocked.to_owned()),
        ("SCREENSHOTS", shots.display().to_string()),
    ];
    let report = run_script("map.mjs", envs.to_vec()).await;
    // The figure for deploy/bench/console_map.sh (reported, not asserted).
    println!("MAP_RENDER {}", report["timings"]);
    for name in ["map-overview", "map-expanded", "map-search"] {
        assert!(shots.join(format!("{name}.png")).exists(), "{name}");
    }
    p.stop().await;
}
