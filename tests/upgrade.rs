//! Upgrades lose nothing (issue 33): a database as the previous landed release left it — every
//! table of its schema holding rows — migrates to the current schema with every row intact, on
//! SQLite, PostgreSQL and MariaDB, and the upgraded service serves the old subordinates with
//! the old signing keys.
//!
//! The fixture is `tests/fixtures/upgrade/<dialect>.sql`: rows written by release
//! [`FIXTURE_VERSION`]'s service (Admin API calls, a trust mark issued, a request counted),
//! plus hand-written rows for the tables the API leaves empty, applied on top of exactly the
//! migrations up to [`FIXTURE_VERSION`].
//!
//! Refreshing it when a release with new migrations lands (the next migration's author does
//! it, in the same change as the migration):
//! 1. raise [`FIXTURE_VERSION`] to the last migration of the landed release;
//! 2. add to each of the three files `INSERT`s for every table the new migrations created (and
//!    values for new columns where NULL or the default would not exercise the migration);
//!    rows already there stay: they stand for data written by older releases, which an upgrade
//!    carries along as well;
//! 3. run `cargo test --test integration upgrade::` with both DSNs set: the test fails naming
//!    any table of the schema without a fixture row. A migration that changes rows on purpose
//!    (a data move, a dropped column) says so by adjusting [`compare`]'s expectations here.

use std::collections::BTreeMap;

use pharos_controlplane::db::{Db, Dialect};
use pharos_shared::jose::{self, Jwks};
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::{AssertSqlSafe, Row as _};

use crate::support::{Pharos, TestDb, backends, enc};

/// The last migration of the release the fixture stands for.
pub const FIXTURE_VERSION: i64 = 16;

/// The fixture's admin user and password (created through the Admin API of that release).
pub const FIXTURE_USER: (&str, &str) = ("fixture-admin", "fixture passphrase one");
/// The fixture's active subordinate and its key id.
pub const FIXTURE_LEAF: &str = "https://leaf.fixture.example";
const FIXTURE_LEAF_KID: &str = "leaf-key-1";
/// The fixture's blocked subordinate (not served by fetch).
const FIXTURE_BLOCKED: &str = "https://blocked.fixture.example";

fn fixture(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Sqlite => include_str!("fixtures/upgrade/sqlite.sql"),
        Dialect::Mysql => include_str!("fixtures/upgrade/mysql.sql"),
        Dialect::Postgres => include_str!("fixtures/upgrade/postgres.sql"),
    }
}

/// The database of `db` as release [`FIXTURE_VERSION`] left it: its migrations, then the
/// fixture's rows.
pub async fn old_database(db: &TestDb) -> Db {
    std::fs::create_dir_all(db.dir.path().join("data")).unwrap();
    let pool = db.pool().await;
    pool.migrate_schema(Some(FIXTURE_VERSION)).await.unwrap();
    sqlx::raw_sql(AssertSqlSafe(fixture(pool.dialect)))
        .execute(pool.pool())
        .await
        .unwrap_or_else(|e| panic!("{:?} fixture does not apply: {e}", pool.dialect));
    pool
}

/// The tables of the schema (without sqlx's migration bookkeeping), sorted.
pub async fn tables(db: &Db) -> Vec<String> {
    let sql = match db.dialect {
        Dialect::Sqlite => {
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        }
        Dialect::Postgres => {
            "SELECT CAST(table_name AS TEXT) AS name FROM information_schema.tables \
             WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
        }
        Dialect::Mysql => {
            "SELECT CAST(table_name AS CHAR) AS name FROM information_schema.tables \
             WHERE table_schema = DATABASE() AND table_type = 'BASE TABLE'"
        }
    };
    let mut names: Vec<String> = sqlx::query(sql)
        .fetch_all(db.pool())
        .await
        .unwrap()
        .iter()
        .map(|r| r.get::<String, _>("name"))
        .filter(|n| n != "_sqlx_migrations")
        .collect();
    names.sort();
    names
}

/// The columns of `table`, in order.
async fn columns(db: &Db, table: &str) -> Vec<String> {
    let sql = match db.dialect {
        Dialect::Sqlite => "SELECT name FROM pragma_table_info(?) ORDER BY cid",
        Dialect::Postgres => {
            "SELECT CAST(column_name AS TEXT) AS name FROM information_schema.columns \
             WHERE table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position"
        }
        Dialect::Mysql => {
            "SELECT CAST(column_name AS CHAR) AS name FROM information_schema.columns \
             WHERE table_schema = DATABASE() AND table_name = ? ORDER BY ordinal_position"
        }
    };
    sqlx::query(db.sql(sql))
        .bind(table)
        .fetch_all(db.pool())
        .await
        .unwrap()
        .iter()
        .map(|r| r.get::<String, _>("name"))
        .collect()
}

/// One table's rows, each as its columns' values in text (NULL as `None`), sorted: a multiset
/// that compares regardless of the order the database returns rows in.
type Rows = Vec<Vec<Option<String>>>;

/// Every table's columns and rows.
pub async fn snapshot(db: &Db) -> BTreeMap<String, (Vec<String>, Rows)> {
    let mut all = BTreeMap::new();
    for t in tables(db).await {
        let cols = columns(db, &t).await;
        let rows = rows(db, &t, &cols).await;
        all.insert(t, (cols, rows));
    }
    all
}

async fn rows(db: &Db, table: &str, cols: &[String]) -> Rows {
    // Identifiers come from the catalog, never from input.
    let sql = format!("SELECT {} FROM {table}", cols.join(", "));
    let mut rows: Rows = sqlx::query(AssertSqlSafe(sql))
        .fetch_all(db.pool())
        .await
        .unwrap()
        .iter()
        .map(|r| {
            (0..cols.len())
                .map(|i| match r.try_get::<Option<i64>, _>(i) {
                    Ok(v) => v.map(|n| n.to_string()),
                    Err(_) => r.get::<Option<String>, _>(i),
                })
                .collect()
        })
        .collect();
    rows.sort();
    rows
}

/// Every row of `old` is in `new`, with the same values in every column that still exists.
fn compare(
    old: &BTreeMap<String, (Vec<String>, Rows)>,
    new: &BTreeMap<String, (Vec<String>, Rows)>,
) -> Vec<String> {
    let mut problems = Vec::new();
    for (table, (old_cols, old_rows)) in old {
        let Some((new_cols, new_rows)) = new.get(table) else {
            problems.push(format!("table {table} is gone"));
            continue;
        };
        let kept: Vec<usize> = old_cols
            .iter()
            .enumerate()
            .filter(|(_, c)| new_cols.contains(c))
            .map(|(i, _)| i)
            .collect();
        let dropped: Vec<&String> = old_cols.iter().filter(|c| !new_cols.contains(c)).collect();
        if !dropped.is_empty() {
            problems.push(format!("{table}: columns {dropped:?} are gone"));
        }
        let project = |rows: &Rows, cols: &[String]| -> Rows {
            let mut out: Rows = rows
                .iter()
                .map(|r| {
                    kept.iter()
                        .map(|&i| {
                            let at = cols.iter().position(|c| *c == old_cols[i]).unwrap();
                            r[at].clone()
                        })
                        .collect()
                })
                .collect();
            out.sort();
            out
        };
        let before = project(old_rows, old_cols);
        let after = project(new_rows, new_cols);
        if before.len() != after.len() {
            problems.push(format!(
                "{table}: {} rows before the upgrade, {} after",
                before.len(),
                after.len()
            ));
        }
        for row in &before {
            if !after.contains(row) {
                problems.push(format!("{table}: row {row:?} changed or lost"));
            }
        }
    }
    problems
}

#[tokio::test]
async fn a_database_of_the_previous_release_upgrades_with_every_row_intact() {
    for backend in backends() {
        let db = TestDb::new(backend).await;
        let pool = old_database(&db).await;

        // The fixture covers the whole schema it stands for: a table without a row would let
        // a migration that loses that table's rows pass.
        let before = snapshot(&pool).await;
        assert!(before.len() >= 29, "{backend:?}: {:?}", before.keys());
        let empty: Vec<&String> = before
            .iter()
            .filter(|(_, (_, rows))| rows.is_empty())
            .map(|(t, _)| t)
            .collect();
        assert!(
            empty.is_empty(),
            "{backend:?}: tables of the release-{FIXTURE_VERSION} schema without a fixture row: \
             {empty:?} (add rows to tests/fixtures/upgrade/)"
        );
        let fed_kids: Vec<String> =
            sqlx::query("SELECT kid FROM signing_keys WHERE key_set = 'federation'")
                .fetch_all(pool.pool())
                .await
                .unwrap()
                .iter()
                .map(|r| r.get::<String, _>("kid"))
                .collect();
        assert_eq!(fed_kids.len(), 1, "{backend:?}");

        // The current migrations (and data moves), as the new release runs them at start.
        pool.migrate().await.unwrap();
        let after = snapshot(&pool).await;
        let problems = compare(&before, &after);
        assert!(problems.is_empty(), "{backend:?}: {problems:#?}");
        // Everything the old release stored is the default entity's (issue 38): entity 1.
        for (table, (cols, rows)) in &after {
            let Some(at) = cols.iter().position(|c| c == "entity") else {
                continue;
            };
            for row in rows {
                assert_eq!(
                    row[at].as_deref(),
                    Some("1"),
                    "{backend:?}: {table}: {row:?}"
                );
            }
        }
        assert!(after.contains_key("entities"), "{backend:?}");
        pool.pool().close().await;

        // The new release starts on it and serves what the old one stored, signed with the
        // old key.
        let mut p = Pharos::start(&db).await;
        let ec = p.entity_configuration().await;
        assert_eq!(ec.header["kid"], fed_kids[0].as_str(), "{backend:?}");
        let keys: Jwks = serde_json::from_value(ec.claims["jwks"].clone()).unwrap();
        let r = p.get(&format!("/fetch?sub={}", enc(FIXTURE_LEAF))).await;
        assert_eq!(r.status(), 200, "{backend:?}");
        let statement = jose::verify(&r.text().await.unwrap(), &keys).unwrap();
        assert_eq!(statement.header["kid"], fed_kids[0].as_str());
        assert_eq!(
            statement.claims["jwks"]["keys"][0]["kid"], FIXTURE_LEAF_KID,
            "{backend:?}: {:?}",
            statement.claims
        );
        let r = p.get(&format!("/fetch?sub={}", enc(FIXTURE_BLOCKED))).await;
        assert_eq!(r.status(), 404, "{backend:?}");
        // The old admin user still logs in, and sees both subordinates.
        let (s, _) = p.admin(Method::GET, "/subordinates", None).await;
        assert_eq!(s, 401, "{backend:?}: the fixture has an admin user");
        p.login(FIXTURE_USER.0, FIXTURE_USER.1);
        let (s, list) = p.admin(Method::GET, "/subordinates", None).await;
        assert_eq!(s, 200, "{backend:?}: {list}");
        let ids = entity_ids(&list);
        assert!(
            ids.contains(&FIXTURE_LEAF.to_string()) && ids.contains(&FIXTURE_BLOCKED.to_string()),
            "{backend:?}: {list}"
        );
        // New rows go in after the old ones (on PostgreSQL the fixture's sequences are past
        // its ids, as rows inserted through them leave them).
        let body = json!({"entity_id": "https://new.fixture.example",
            "jwks": {"keys": [crate::support::jwk("new", None)]}});
        let (s, v) = p.admin(Method::POST, "/subordinates", Some(body)).await;
        assert_eq!(s, 201, "{backend:?}: {v}");
        p.stop().await;
    }
}

/// The entity identifiers of a subordinate list answer (a bare array, or `{"items": …}`).
pub fn entity_ids(list: &Value) -> Vec<String> {
    let items = list
        .as_array()
        .or_else(|| list["items"].as_array())
        .or_else(|| list["subordinates"].as_array())
        .cloned()
        .unwrap_or_default();
    items
        .iter()
        .filter_map(|s| s["entity_id"].as_str().map(str::to_owned))
        .collect()
}
