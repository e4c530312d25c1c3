//! The write path's guarantees: a failed publish catches up, a dropped write publishes
//! nothing, and no code outside the write path can open a transaction or write the database.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use pharos_shared::config::Settings;
use pharos_shared::time::ManualClock;

use super::cluster::Subscription;
use super::{ControlPlane, Section};
use crate::db::Db;
use crate::db::trust_anchors::{self, TrustAnchorWrite};

async fn control_plane() -> (Arc<ControlPlane>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/t.db?mode=rwc", dir.path().display());
    let db = Db::connect(&url, 4).await.unwrap();
    db.migrate().await.unwrap();
    let clock = ManualClock::new(1_700_000_000);
    let cp = ControlPlane::start(
        db,
        Arc::new(Settings::default()),
        clock,
        &Subscription::alone(),
    )
    .await
    .unwrap();
    (cp, dir)
}

/// Inserts anchor `entity_id` in `w`'s transaction and marks its section for publishing
/// (committed or dropped by the caller).
async fn insert_anchor(cp: &ControlPlane, w: &mut super::Write<'_>, entity_id: &str) {
    let row = TrustAnchorWrite {
        entity_id: entity_id.into(),
        jwks: None,
        enable_jwks_update: false,
        key_poll_interval: 0,
        anchor_ec_constraints: None,
        trust_mark_issuer_self_signed: false,
        trust_mark_status: Default::default(),
    };
    trust_anchors::insert(&cp.db, w.tx().await.unwrap(), &row, cp.now())
        .await
        .unwrap();
    w.touch(Section::TrustAnchors);
}

async fn add_anchor(cp: &ControlPlane, entity_id: &str) {
    let mut w = cp.write(Some("tester")).await;
    insert_anchor(cp, &mut w, entity_id).await;
    w.commit().await.unwrap();
}

fn published(cp: &ControlPlane, entity_id: &str) -> bool {
    cp.snapshot().trust_anchors.by_id.contains_key(entity_id)
}

#[tokio::test]
async fn a_commit_is_published_before_commit_returns() {
    let (cp, _dir) = control_plane().await;
    let before = cp.snapshot().generation;
    add_anchor(&cp, "https://ta.example").await;
    assert!(published(&cp, "https://ta.example"));
    assert!(cp.snapshot().generation > before);
    assert!(cp.is_published());
}

#[tokio::test]
async fn a_failed_publish_is_retried_until_the_snapshot_catches_up() {
    let (cp, _dir) = control_plane().await;
    cp.failing_reloads.store(2, Ordering::SeqCst);
    add_anchor(&cp, "https://ta.example").await;
    // Committed (the database has it) but not yet published.
    assert!(
        trust_anchors::get(&cp.db, "https://ta.example")
            .await
            .unwrap()
            .is_some()
    );
    assert!(!published(&cp, "https://ta.example"));
    assert!(!cp.is_published());
    // The second attempt fails too; the section stays dirty.
    cp.reconcile().await;
    assert!(!published(&cp, "https://ta.example"));
    // The third succeeds.
    cp.reconcile().await;
    assert!(published(&cp, "https://ta.example"));
    assert!(cp.is_published());
}

#[tokio::test]
async fn the_next_write_publishes_what_an_earlier_one_left_dirty() {
    let (cp, _dir) = control_plane().await;
    cp.failing_reloads.store(1, Ordering::SeqCst);
    add_anchor(&cp, "https://a.example").await;
    assert!(!published(&cp, "https://a.example"));
    add_anchor(&cp, "https://b.example").await;
    assert!(published(&cp, "https://a.example"));
    assert!(published(&cp, "https://b.example"));
}

#[tokio::test]
async fn the_reconciler_task_catches_up_on_its_own() {
    let (cp, _dir) = control_plane().await;
    let stop = tokio_util::sync::CancellationToken::new();
    let task = cp.spawn_reconciler(stop.clone());
    cp.failing_reloads.store(1, Ordering::SeqCst);
    add_anchor(&cp, "https://ta.example").await;
    assert!(!published(&cp, "https://ta.example"));
    // First retry after one second; no other write happens meanwhile.
    for _ in 0..100 {
        if published(&cp, "https://ta.example") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(published(&cp, "https://ta.example"));
    stop.cancel();
    task.await.unwrap();
}

/// Group commit (issue 33): concurrent writes on SQLite share fsyncs, each is published when
/// its `commit()` returns, and one dropped among them leaves nothing and fails none of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writes_share_fsyncs_and_each_is_published_when_acknowledged() {
    let (cp, _dir) = control_plane().await;
    let group = cp.group.clone().expect("group commit on an SQLite file");
    let before = group.syncs();
    let n: u64 = 32;
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let cp = cp.clone();
            tokio::spawn(async move {
                let id = format!("https://ta{i}.example");
                if i == n / 2 {
                    // Written, then dropped without commit in the middle of the others.
                    let mut w = cp.write(None).await;
                    insert_anchor(&cp, &mut w, "https://dropped.example").await;
                    drop(w);
                }
                add_anchor(&cp, &id).await;
                // Acknowledged: published already.
                assert!(published(&cp, &id), "{id}");
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    for i in 0..n {
        let id = format!("https://ta{i}.example");
        assert!(
            trust_anchors::get(&cp.db, &id).await.unwrap().is_some(),
            "{id}"
        );
    }
    assert!(
        trust_anchors::get(&cp.db, "https://dropped.example")
            .await
            .unwrap()
            .is_none()
    );
    assert!(!published(&cp, "https://dropped.example"));
    let syncs = group.syncs() - before;
    // Writers queued on the writer lock commit while the WAL is synced: far fewer fsyncs
    // than writes.
    assert!(syncs > 0 && syncs < n / 2, "{syncs} fsyncs for {n} writes");
    // The database is in WAL mode.
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(&cp.db.pool)
        .await
        .unwrap();
    assert_eq!(mode, "wal");
}

#[tokio::test]
async fn a_dropped_write_rolls_back_and_publishes_nothing() {
    let (cp, _dir) = control_plane().await;
    let generation = cp.snapshot().generation;
    {
        let mut w = cp.write(None).await;
        insert_anchor(&cp, &mut w, "https://ta.example").await;
        // Dropped: e.g. a later validation step returned an error.
    }
    assert!(
        trust_anchors::get(&cp.db, "https://ta.example")
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(cp.snapshot().generation, generation);
}

/// Every `.rs` file under `dir`, with its path relative to the crate's `src/`.
fn sources(dir: &std::path::Path, out: &mut Vec<(String, String)>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            let rel = p
                .strip_prefix(concat!(env!("CARGO_MANIFEST_DIR"), "/src/"))
                .unwrap()
                .display()
                .to_string();
            out.push((rel, std::fs::read_to_string(&p).unwrap()));
        }
    }
}

/// Who can open a transaction is decided by visibility: `Db::begin`, `Db::begin_write` and the
/// pool are visible only inside `control_plane` (see `db::Db`), and outside it the write
/// transaction comes from `Write`. Inside, the repositories are the named readers; this checks
/// that a repository writes only through the caller's transaction, but for the named
/// exceptions: single atomic statements, or the statistics' own transactions, none of them
/// federation state published in the snapshot.
#[test]
fn repositories_write_only_inside_a_transaction() {
    let mut files = Vec::new();
    sources(
        std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src/control_plane/db")),
        &mut files,
    );
    // Used client assertion ids (replay records) and a login's compare-and-set re-hash.
    // Statistics: append-only request records and recomputable daily aggregates that nothing
    // in the snapshot depends on, batched on the pool's own connections so that they never
    // hold the writer lock.
    let allowed = [
        ("control_plane/db/jti.rs", "record"),
        ("control_plane/db/jti.rs", "cleanup"),
        ("control_plane/db/users.rs", "rehash"),
        // The Admin API's lock row, created once before the writes that lock it.
        ("control_plane/db/settings.rs", "ensure_row"),
        ("control_plane/db/stats/mod.rs", "insert_batches"),
        ("control_plane/db/stats/mod.rs", "replace_day"),
        ("control_plane/db/stats/mod.rs", "purge_requests"),
        ("control_plane/db/stats/mod.rs", "purge_daily"),
    ];
    for (path, text) in &files {
        // A repository's own unit tests set up their rows as they please.
        let code = text.split("\nmod tests {").next().unwrap_or_default();
        for f in code.split("pub async fn ").skip(1) {
            let name: String = f
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let writes = ["INSERT ", "UPDATE ", "DELETE "]
                .iter()
                .any(|k| f.contains(k));
            if writes && f.contains("&db.pool") {
                assert!(
                    allowed.contains(&(path.as_str(), name.as_str())),
                    "{path}: {name} writes outside the caller's transaction"
                );
            }
        }
    }
}

/// No commit checkpoints the WAL (the write crossing SQLite's 1,000 pages used to wait for the
/// copy under the writer lock, seconds on a busy disk): every connection has automatic
/// checkpoints off, and the checkpointer copies the WAL into the database file beside the
/// writes once it has grown past its bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wal_is_checkpointed_beside_the_writes_never_inside_a_commit() {
    let (cp, dir) = control_plane().await;
    let wal = cp.db.wal.clone().expect("an SQLite file has a WAL");
    for pool in [&cp.db.pool, &wal.writer] {
        let auto: i64 = sqlx::query_scalar("PRAGMA wal_autocheckpoint")
            .fetch_one(pool)
            .await
            .unwrap();
        assert_eq!(auto, 0, "a connection checkpoints inside its commits");
    }
    let file = dir.path().join("t.db");
    let before = std::fs::metadata(&file).unwrap().len();
    // About 6 MiB through the write path, past the checkpoint bound of 4 MiB.
    let big = "x".repeat(128 * 1024);
    for i in 0..48 {
        let mut w = cp.write(None).await;
        sqlx::query("INSERT INTO jtis_used (jti, expires_at, created_at) VALUES (?, 1, 1)")
            .bind(format!("{i}-{big}"))
            .execute(w.tx().await.unwrap())
            .await
            .unwrap();
        w.commit().await.unwrap();
    }
    // The checkpointer copies the pages into the database file (only a checkpoint writes it).
    let mut after = before;
    for _ in 0..200 {
        after = std::fs::metadata(&file).unwrap().len();
        if after >= before + 4 * 1024 * 1024 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(
        after >= before + 4 * 1024 * 1024,
        "the database file grew from {before} to {after} bytes: no checkpoint"
    );
}

/// The tables whose rows belong to one hosted entity (migration 17): each has an `entity`
/// column, and one entity must never read or change another's rows.
const PER_ENTITY_TABLES: &[&str] = &[
    "federation_endpoints",
    "trust_anchors",
    "legacy_endpoint_paths",
    "settings",
    "authority_hints",
    "subordinates",
    "trust_mark_owners",
    "trust_mark_issuers",
    "trust_mark_types",
    "trust_mark_specs",
    "published_trust_marks",
    "stats_daily",
    "entity_collections",
    "signing_keys",
    "issued_trust_marks",
    "trust_mark_events",
    "stats_requests",
    "collected_entities",
    "additional_claims",
];

/// Whether `sql` names the column `entity` (as a word: not `entity_id`, not `entities`).
fn names_entity_column(sql: &str) -> bool {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    sql.match_indices("entity").any(|(at, _)| {
        let before = sql[..at].chars().next_back();
        let after = sql[at + "entity".len()..].chars().next();
        !before.is_some_and(word) && !after.is_some_and(word)
    })
}

/// Every repository function that runs SQL on a per-entity table names the `entity` column in
/// its SQL (issue 38): a statement that forgot it would read or change every hosted entity's
/// rows. A function is the unit: its SQL text is every string literal in it.
#[test]
fn every_statement_on_an_entitys_table_names_the_entity() {
    let mut files = Vec::new();
    sources(
        std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src/control_plane/db")),
        &mut files,
    );
    let mut missing = Vec::new();
    for (path, text) in &files {
        let mut code = text
            .split("\nmod tests {")
            .next()
            .unwrap_or_default()
            .to_string();
        // A statement assembled by a `macro_rules!` of the file: its text stands at each use.
        for m in text.split("macro_rules! ").skip(1) {
            let name: String = m
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let body = m.split("\n}\n").next().unwrap_or_default();
            code = code.replace(&format!("{name}!()"), body);
        }
        for f in code.split("\nfn ").flat_map(|f| f.split(" fn ")).skip(1) {
            let name: String = f
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            // String literals: the odd pieces between double quotes.
            let sql: String = f
                .split('"')
                .skip(1)
                .step_by(2)
                .collect::<Vec<_>>()
                .join(" ")
                .replace("\\\n", " ");
            let touches = PER_ENTITY_TABLES.iter().any(|t| {
                ["FROM ", "INTO ", "UPDATE ", "JOIN "].iter().any(|k| {
                    sql.match_indices(&format!("{k}{t}")).any(|(at, m)| {
                        let after = sql[at + m.len()..].chars().next();
                        !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
                    })
                })
            });
            if touches && !names_entity_column(&sql) {
                missing.push(format!("{path}: {name}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "SQL on a per-entity table without the entity: {missing:#?}"
    );
}

#[test]
fn the_entity_column_is_told_apart_from_its_neighbours() {
    assert!(names_entity_column("WHERE entity = ? AND id = ?"));
    assert!(names_entity_column("(entity, entity_id)"));
    assert!(names_entity_column("s.entity = ?"));
    assert!(!names_entity_column("WHERE entity_id = ?"));
    assert!(!names_entity_column("FROM entities"));
}

/// Inserts subordinate `i` with key id `kid` straight into the database (as a bulk load would).
async fn insert_subordinate(cp: &ControlPlane, i: i64, kid: &str) {
    let jwks = format!(
        r#"{{"keys":[{{"kty":"EC","crv":"P-256","kid":"{kid}","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}}]}}"#
    );
    sqlx::query(cp.db.sql(
        "INSERT INTO subordinates (id, entity, entity_id, description, status, jwks, created_at, updated_at) VALUES (?, ?, ?, '', 'active', ?, 1, 1)",
    ))
    .bind(i)
    .bind(cp.db.entity())
    .bind(format!("https://sub{i}.example"))
    .bind(jwks)
    .execute(&cp.db.pool)
    .await
    .unwrap();
}

#[tokio::test]
async fn a_full_reload_shares_the_records_that_did_not_change() {
    let (cp, _dir) = control_plane().await;
    for i in 1..=3 {
        insert_subordinate(&cp, i, &format!("k{i}")).await;
    }
    cp.reload_all().await.unwrap();
    let before = cp.snapshot();
    assert_eq!(before.subordinates.len(), 3);
    // A replica missed three changes (subordinate 2's keys, 3 deleted, 4 added): the next full
    // reload applies them and keeps subordinate 1 as it is, shared with the snapshot it replaces.
    sqlx::query(cp.db.sql("DELETE FROM subordinates WHERE id = 3"))
        .execute(&cp.db.pool)
        .await
        .unwrap();
    insert_subordinate(&cp, 4, "k4").await;
    sqlx::query(cp.db.sql("UPDATE subordinates SET jwks = ? WHERE id = 2"))
        .bind(r#"{"keys":[{"kty":"EC","crv":"P-256","kid":"changed","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}"#)
        .execute(&cp.db.pool)
        .await
        .unwrap();
    cp.reload_all().await.unwrap();
    let after = cp.snapshot();
    assert!(after.generation > before.generation);
    let rec = |s: &pharos_shared::snapshot::Snapshot, i: i64| {
        s.subordinates
            .get(&format!("https://sub{i}.example"))
            .unwrap()
            .clone()
    };
    let ids: Vec<_> = after.subordinates.all().map(|s| s.id).collect();
    assert_eq!(ids, [1, 2, 4], "the deleted row is gone, the new one there");
    assert!(
        Arc::ptr_eq(&rec(&before, 1), &rec(&after, 1)),
        "subordinate 1 is shared"
    );
    assert_eq!(rec(&before, 1).version, rec(&after, 1).version);
    let (old, new) = (rec(&before, 2), rec(&after, 2));
    assert!(!Arc::ptr_eq(&old, &new), "the changed one is read anew");
    assert!(new.version > old.version, "with a new version");
    assert_eq!(new.jwks.jwks().keys[0]["kid"], "changed");
}

/// A key task run with nothing due on a single instance stores nothing and takes no write
/// transaction (so no fsync): a thousand hosted entities starting at once each took SQLite's
/// one writer for it. (That it still republishes what changes with the time, the rotation
/// tests that move a manual clock past a key's transition show.)
#[tokio::test]
async fn a_key_run_with_nothing_due_takes_no_write() {
    let (cp, _dir) = control_plane().await;
    let group = cp.group.clone().expect("group commit on an SQLite file");
    let now = cp.now();
    // The first run may announce the next key; the second, at the same instant, has nothing to do.
    cp.rotate_keys(now).await.unwrap();
    let keys = crate::db::keys::list(&cp.db).await.unwrap();
    let syncs = group.syncs();
    cp.rotate_keys(now).await.unwrap();
    assert_eq!(group.syncs(), syncs, "no write, no fsync");
    assert!(cp.is_published());
    let after = crate::db::keys::list(&cp.db).await.unwrap();
    assert_eq!(
        keys.iter().map(|k| (&k.kid, k.exp)).collect::<Vec<_>>(),
        after.iter().map(|k| (&k.kid, k.exp)).collect::<Vec<_>>()
    );
}
