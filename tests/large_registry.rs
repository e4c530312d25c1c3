//! A registry larger than one page of every bulk path (issue 24): 25,001 subordinates written
//! straight into the database, as a bulk load or a migration would, then served after a
//! restart. The Admin API lists them page by page and the snapshot is built from streamed rows,
//! read in batches of 20,000 ahead of the build (issue 39); both must give back every row, in
//! order, with its child rows, on every database. A hosted entity's subordinates sit between
//! them in id order (as rows of entities created at different times do): each entity's
//! snapshot has its own rows and entity types, and only those.

use crate::support::{Pharos, TestDb, backends, enable, enc};
use reqwest::Method;
use serde_json::{Value, json};

/// More than one batch of the snapshot's read (20,000) and several pages of the Admin API's.
const N: usize = 25_001;

/// The hosted entity's subordinates: hosted subordinate `k` has id `16 k + 1`, between the
/// default entity's (`2 i`), across all of their batches.
const H: usize = N / 8;

fn hosted(k: usize) -> String {
    format!("https://h{k:06}.example.org")
}

fn entity(i: usize) -> String {
    format!("https://sub{i:06}.example.org")
}

fn status(i: usize) -> &'static str {
    if i.is_multiple_of(7) {
        "blocked"
    } else {
        "active"
    }
}

fn types(i: usize) -> &'static [&'static str] {
    match i % 3 {
        0 => &["openid_provider"],
        1 => &["openid_relying_party"],
        _ => &["federation_entity", "openid_provider"],
    }
}

/// Inserts subordinates 1..=N (ids = 2 i) with their types, 500 rows per statement, and the
/// hosted entity `hosted_no`'s (see [`H`]).
async fn bulk_load(db: &TestDb, hosted_no: i64) {
    let pool = db.pool().await;
    let now = 1_700_000_000_i64;
    for start in (1..=N).step_by(500) {
        let end = (start + 499).min(N);
        let mut subs = String::from(
            "INSERT INTO subordinates (id, entity, entity_id, description, status, jwks, created_at, updated_at) VALUES ",
        );
        let mut kinds = String::from(
            "INSERT INTO subordinate_entity_types (subordinate_id, entity_type) VALUES ",
        );
        let mut first_kind = true;
        for i in start..=end {
            if i > start {
                subs.push(',');
            }
            subs.push_str("(?, 1, ?, '', ?, ?, ?, ?)");
            for _ in types(i) {
                if !std::mem::replace(&mut first_kind, false) {
                    kinds.push(',');
                }
                kinds.push_str("(?, ?)");
            }
        }
        let mut q = sqlx::query(pool.sql_built(subs));
        for i in start..=end {
            let jwks = format!(
                r#"{{"keys":[{{"kty":"EC","crv":"P-256","kid":"k{i}","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}}]}}"#
            );
            q = q
                .bind(2 * i as i64)
                .bind(entity(i))
                .bind(status(i))
                .bind(jwks)
                .bind(now)
                .bind(now);
        }
        q.execute(pool.pool()).await.unwrap();
        let mut q = sqlx::query(pool.sql_built(kinds));
        for i in start..=end {
            for t in types(i) {
                q = q.bind(2 * i as i64).bind(*t);
            }
        }
        q.execute(pool.pool()).await.unwrap();
    }
    for start in (1..=H).step_by(500) {
        let end = (start + 499).min(H);
        let rows = vec!["(?, ?, ?, '', 'active', ?, ?)"; end - start + 1].join(",");
        let mut q = sqlx::query(pool.sql_built(format!(
            "INSERT INTO subordinates (id, entity, entity_id, description, status, created_at, updated_at) VALUES {rows}"
        )));
        for k in start..=end {
            q = q
                .bind(16 * k as i64 + 1)
                .bind(hosted_no)
                .bind(hosted(k))
                .bind(now)
                .bind(now);
        }
        q.execute(pool.pool()).await.unwrap();
        let kinds = vec!["(?, 'openid_relying_party')"; end - start + 1].join(",");
        let mut q = sqlx::query(pool.sql_built(format!(
            "INSERT INTO subordinate_entity_types (subordinate_id, entity_type) VALUES {kinds}"
        )));
        for k in start..=end {
            q = q.bind(16 * k as i64 + 1);
        }
        q.execute(pool.pool()).await.unwrap();
    }
    if matches!(db.backend, crate::support::Backend::Postgres) {
        sqlx::query("SELECT setval(pg_get_serial_sequence('subordinates', 'id'), 100000)")
            .execute(pool.pool())
            .await
            .unwrap();
    }
}

async fn admin_list(p: &Pharos, query: &str) -> Vec<Value> {
    let (s, v) = p
        .admin(Method::GET, &format!("/subordinates{query}"), None)
        .await;
    assert_eq!(s, 200, "{v}");
    v.as_array().unwrap().clone()
}

async fn list(p: &Pharos, query: &str) -> Vec<String> {
    let r = p.get(&format!("/list{query}")).await;
    assert_eq!(r.status(), 200);
    r.json().await.unwrap()
}

#[tokio::test]
async fn a_registry_of_many_pages_is_listed_and_served_whole() {
    for b in backends() {
        let db = TestDb::new(b).await;
        let p = Pharos::start(&db).await;
        enable(&p, "fetch", "/fetch", serde_json::json!({})).await;
        enable(&p, "list", "/list", serde_json::json!({})).await;
        let edu = format!("{}/edu", p.entity_id());
        let (s, v) = p
            .admin(Method::POST, "/entities", Some(json!({"entity_id": edu})))
            .await;
        assert_eq!(s, 201, "{b:?}: {v}");
        let n = v["id"].as_i64().unwrap();
        let body = json!({"type": "list", "path": "/list", "config": {}});
        let path = format!("/entities/{n}/federation-endpoints");
        let (s, v) = p.admin(Method::POST, &path, Some(body)).await;
        assert_eq!(s, 201, "{b:?}: {v}");
        bulk_load(&db, n).await;
        // The rows appeared behind the running service's back: a restart builds the snapshot
        // from them.
        let p = p.restart().await;

        // Admin API: every row, in entity-identifier order, across three pages.
        let all = admin_list(&p, "").await;
        assert_eq!(all.len(), N, "{b:?}");
        for (k, rec) in all.iter().enumerate() {
            let i = k + 1;
            assert_eq!(rec["entity_id"], entity(i), "{b:?}");
            assert_eq!(rec["status"], status(i));
            let mut want: Vec<&str> = types(i).to_vec();
            want.sort_unstable();
            assert_eq!(rec["registered_entity_types"], serde_json::json!(want));
        }
        // Filters are applied on every page, not just the first.
        let blocked = admin_list(&p, "?status=blocked").await;
        assert_eq!(blocked.len(), N / 7);
        assert!(blocked.iter().all(|r| r["status"] == "blocked"));
        let ops = admin_list(&p, "?entity_type=openid_provider&status=active").await;
        let want = (1..=N)
            .filter(|i| status(*i) == "active" && types(*i).contains(&"openid_provider"))
            .count();
        assert_eq!(ops.len(), want);
        assert_eq!(admin_list(&p, "?entity_type=nobody").await.len(), 0);

        // Federation endpoints, from the snapshot built at start.
        let active: Vec<String> = (1..=N)
            .filter(|i| status(*i) == "active")
            .map(entity)
            .collect();
        assert_eq!(list(&p, "").await, active);
        let rps: Vec<String> = (1..=N)
            .filter(|i| status(*i) == "active" && types(*i).contains(&"openid_relying_party"))
            .map(entity)
            .collect();
        assert_eq!(list(&p, "?entity_type=openid_relying_party").await, rps);
        // A served statement carries the stored key set (kept as text in the snapshot); 4242 is
        // blocked (a multiple of 7), 4243 active.
        let stmt = crate::fetch_list::fetch(&p, &entity(4243)).await;
        assert_eq!(stmt["jwks"]["keys"][0]["kid"], "k4243", "{b:?}");
        let r = p.get(&format!("/fetch?sub={}", enc(&entity(4242)))).await;
        assert_eq!(r.status(), 404, "a blocked subordinate is not served");

        // The hosted entity's snapshot: its rows, with their entity type, and no other.
        let theirs: Vec<String> = (1..=H).map(hosted).collect();
        let r = p.get("/edu/list").await;
        assert_eq!(r.status(), 200, "{b:?}");
        assert_eq!(r.json::<Vec<String>>().await.unwrap(), theirs, "{b:?}");
        let r = p.get("/edu/list?entity_type=openid_relying_party").await;
        assert_eq!(r.json::<Vec<String>>().await.unwrap(), theirs, "{b:?}");
        let r = p.get("/edu/list?entity_type=openid_provider").await;
        assert_eq!(r.json::<Vec<String>>().await.unwrap(), Vec::<String>::new());
        p.stop().await;
    }
}
