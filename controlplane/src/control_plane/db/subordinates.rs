//! `subordinates` and its child tables (registered entity types; additional claims through
//! [`super::claims`]): the
//! persistent side of the subordinate registry.
//!
//! `metadata`, `metadata_policy` and `constraints_json` are NULL when the subordinate has no
//! override; the general values are applied at statement time, never copied into a row.

use std::collections::HashMap;

use futures_util::TryStreamExt;
use pharos_shared::jose::Jwks;
use pharos_shared::subordinate::{SubordinateStatus, Tombstone};
use serde_json::Value;
use sqlx::any::AnyRow;
use sqlx::{AnyConnection, Row};

use super::claims::{self, ClaimRow, Scope};
use super::{Db, flag};
use crate::error::{Error, Result};

/// A subordinate with its child rows.
#[derive(Debug, Clone, PartialEq)]
pub struct SubordinateRow {
    /// Database id.
    pub id: i64,
    /// Entity identifier.
    pub entity_id: String,
    /// Free text.
    pub description: String,
    /// Where it stands (a word no status has is read as inactive, see [`stored_status`]).
    pub status: SubordinateStatus,
    /// Poll its keys.
    pub enable_jwks_update: bool,
    /// Poll interval, seconds (0 = derive).
    pub jwks_poll_interval: i64,
    /// Stored keys (all of them, expired ones included).
    pub jwks: Option<Jwks>,
    /// Metadata override.
    pub metadata: Option<Value>,
    /// Metadata policy override.
    pub metadata_policy: Option<Value>,
    /// Constraints override.
    pub constraints: Option<Value>,
    /// Creation time.
    pub created_at: i64,
    /// Last update.
    pub updated_at: i64,
    /// Registered entity types, sorted.
    pub registered_entity_types: Vec<String>,
    /// Additional claims, by id.
    pub additional_claims: Vec<ClaimRow>,
}

/// Which JSON document column of a subordinate to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocColumn {
    /// `metadata`.
    Metadata,
    /// `metadata_policy`.
    MetadataPolicy,
    /// `constraints_json`.
    Constraints,
}

fn json_col(r: &AnyRow, name: &str) -> Result<Option<Value>> {
    let text: Option<String> = r.try_get(name)?;
    Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
}

/// A stored status word as a status; only a hand-edited database has another word, and not
/// serving is the safe reading of it.
pub fn stored_status(entity_id: &str, word: &str) -> SubordinateStatus {
    SubordinateStatus::parse(word).unwrap_or_else(|| {
        tracing::warn!(%entity_id, status = %word, "unknown subordinate status; treated as inactive");
        SubordinateStatus::Inactive
    })
}

fn from_row(r: &AnyRow) -> Result<SubordinateRow> {
    let entity_id: String = r.try_get("entity_id")?;
    Ok(SubordinateRow {
        id: r.try_get("id")?,
        status: stored_status(&entity_id, &r.try_get::<String, _>("status")?),
        entity_id,
        description: r.try_get("description")?,
        enable_jwks_update: r.try_get::<i64, _>("enable_jwks_update")? != 0,
        jwks_poll_interval: r.try_get("jwks_poll_interval")?,
        jwks: r
            .try_get::<Option<String>, _>("jwks")?
            .and_then(|t| serde_json::from_str(&t).ok()),
        metadata: json_col(r, "metadata")?,
        metadata_policy: json_col(r, "metadata_policy")?,
        constraints: json_col(r, "constraints_json")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
        registered_entity_types: Vec::new(),
        additional_claims: Vec::new(),
    })
}

/// What the snapshot needs of one subordinate row: its key set stays text (the snapshot
/// keeps it so; parsing a million key sets at start-up only to serialise them again cost
/// seconds and, held all at once, a gigabyte).
/// SQLite's batches list a row's values in the order of these fields, without the last.
#[derive(Debug, serde::Deserialize)]
pub struct SnapshotRow {
    /// Database id.
    pub id: i64,
    /// Entity identifier, in the form the snapshot keeps (made once, where the row is read).
    pub entity_id: std::sync::Arc<str>,
    /// Status word.
    pub status: String,
    /// Stored key set, as stored.
    pub jwks: Option<String>,
    /// Metadata override, as stored.
    pub metadata: Option<String>,
    /// Metadata policy override, as stored.
    pub metadata_policy: Option<String>,
    /// Constraints override, as stored.
    pub constraints: Option<String>,
    /// Creation time.
    pub created_at: i64,
    /// Last update.
    pub updated_at: i64,
    /// Registered entity types (filled in from a second statement).
    #[serde(default)]
    pub registered_entity_types: Vec<String>,
}

/// Rows per batch (about 6 MB of JSON text at one key per subordinate).
const BATCH: i64 = 20_000;

/// Batches read ahead of the one being built into the snapshot.
const READ_AHEAD: usize = 2;

/// Every subordinate with its registered entity types, in no particular order, handed to
/// `each` as it streams in: a million rows are never held at once, neither as driver rows nor as
/// [`SubordinateRow`]s.
///
/// A task of its own reads the next batches while `each` builds this one into the snapshot,
/// so the database's share of a start-up (SQLite's worker thread, PostgreSQL's server) runs
/// beside the snapshot's instead of before it: at a million subordinates each is about half.
/// SQLite's JSON is parsed on the blocking pool, neither on the reading task (SQLite would
/// wait for it) nor on the snapshot's (the longer of the two, whose time is the start-up's).
pub async fn for_each(db: &Db, mut each: impl FnMut(SnapshotRow)) -> Result<()> {
    let (tx, mut rx) = tokio::sync::mpsc::channel(READ_AHEAD);
    let reader =
        tokio_util::task::AbortOnDropHandle::new(tokio::spawn(read_batches(db.clone(), tx)));
    while let Some(batch) = rx.recv().await {
        let rows = match batch? {
            Batch::Rows(rows) => rows,
            Batch::Parsing(parsing) => parsing.await.map_err(|e| read_error(&e))??,
        };
        rows.into_iter().for_each(&mut each);
    }
    reader.await.map_err(|e| read_error(&e))
}

/// A batch of [`SnapshotRow`]s on its way to the snapshot: rows, or (SQLite) JSON being
/// parsed on the blocking pool while the next batch is read.
enum Batch {
    Rows(Vec<SnapshotRow>),
    Parsing(tokio::task::JoinHandle<Result<Vec<SnapshotRow>>>),
}

/// The rows of a JSON array of rows (each an array of [`SnapshotRow`]'s fields but the last),
/// with the entity types of a JSON array of `[subordinate id, entity type]` pairs.
fn parse(rows: &str, types: &str) -> Result<Vec<SnapshotRow>> {
    let mut rows: Vec<SnapshotRow> = serde_json::from_str(rows).map_err(|e| read_error(&e))?;
    let types: Vec<(i64, String)> = serde_json::from_str(types).map_err(|e| read_error(&e))?;
    let mut at = 0;
    for (id, t) in types {
        file_type(&mut rows, &mut at, id, t);
    }
    Ok(rows)
}

fn read_error(e: &dyn std::fmt::Display) -> Error {
    Error::Internal(format!("reading subordinates: {e}"))
}

/// Sends each batch to `tx` in id order, until there are no more rows, the database fails
/// (the error is sent) or the receiver is gone.
async fn read_batches(db: Db, tx: tokio::sync::mpsc::Sender<Result<Batch>>) {
    let mut after = i64::MIN;
    loop {
        let next = match batch(&db, after).await {
            Ok(None) => return,
            Ok(Some((last, rows))) => {
                after = last;
                Ok(rows)
            }
            Err(e) => Err(e),
        };
        let failed = next.is_err();
        if tx.send(next).await.is_err() || failed {
            return;
        }
    }
}

/// Up to [`BATCH`] subordinates with ids above `after`, in id order, and the last id among
/// them (`None`: there are none). Each is one range of the `(entity, id)` index.
///
/// SQLite builds the batch into JSON ([`sqlite_batch`]): sqlx's driver hands each row from its
/// worker thread to the async side, a thread wake-up per row that was most of a
/// million-subordinate start-up. PostgreSQL sends rows to its native driver ([`pg_batch`]).
/// MariaDB truncates JSON aggregates at `group_concat_max_len` (1 MB by default): rows
/// through `Any`.
async fn batch(db: &Db, after: i64) -> Result<Option<(i64, Batch)>> {
    match db.dialect {
        super::Dialect::Mysql => row_batch(db, after).await,
        super::Dialect::Postgres => match &db.native_pg {
            Some(pg) => pg_batch(db, pg, after).await,
            None => row_batch(db, after).await,
        },
        super::Dialect::Sqlite => sqlite_batch(db, after).await,
    }
}

/// SQLite: the rows as one JSON array, then their entity types as another, in one read
/// transaction (one snapshot for both); the rows are parsed on the blocking pool, beside the
/// next batch's read and the snapshot's build. The types come from a second statement, as
/// on the other databases, rather than from a subquery per row: a million index lookups
/// were about half of SQLite's share of a start-up.
async fn sqlite_batch(db: &Db, after: i64) -> Result<Option<(i64, Batch)>> {
    let mut tx = db.pool.begin_with("BEGIN").await?;
    let row = sqlx::query(concat!(
        "SELECT json_group_array(json_array(id, entity_id, status, jwks, metadata, ",
        "metadata_policy, constraints_json, created_at, updated_at)) AS batch, ",
        "count(*) AS n, min(id) AS first, max(id) AS last FROM ",
        "(SELECT * FROM subordinates WHERE entity = ? AND id > ? ORDER BY id LIMIT ?)"
    ))
    .bind(db.entity())
    .bind(after)
    .bind(BATCH)
    .fetch_one(&mut *tx)
    .await?;
    let (Some(first), Some(last)) = (
        row.try_get::<Option<i64>, _>("first")?,
        row.try_get::<Option<i64>, _>("last")?,
    ) else {
        return Ok(None);
    };
    let rows: String = row.try_get("batch")?;
    let types = if dense(first, last, row.try_get("n")?) {
        sqlx::query(concat!(
            "SELECT json_group_array(json_array(subordinate_id, entity_type)) ",
            "FROM subordinate_entity_types WHERE subordinate_id >= ? AND subordinate_id <= ?"
        ))
        .bind(first)
        .bind(last)
    } else {
        sqlx::query(concat!(
            "SELECT json_group_array(json_array(subordinate_id, entity_type)) ",
            "FROM subordinate_entity_types WHERE subordinate_id IN ",
            "(SELECT id FROM subordinates WHERE entity = ? AND id >= ? AND id <= ?)"
        ))
        .bind(db.entity())
        .bind(first)
        .bind(last)
    };
    let types: String = types.fetch_one(&mut *tx).await?.try_get(0)?;
    tx.commit().await?;
    let parsing = tokio::task::spawn_blocking(move || parse(&rows, &types));
    Ok(Some((last, Batch::Parsing(parsing))))
}

/// PostgreSQL: the rows through the native driver ([`Db::native_pg`]), then their entity types
/// in a second statement of the same repeatable-read transaction (one snapshot for both).
/// Rows as they are cost the server a quarter of what building them into JSON did (20 against
/// 87 ms a batch of 20,000, the slower half of a start-up there), and the native driver hands
/// each column out without the copies of `Any`'s rows; each becomes a [`SnapshotRow`] as it
/// arrives. When the batch's ids are mostly this entity's (as a registry that grows by itself
/// has them), its types are one range of their key; otherwise each row's are looked up by id,
/// so a batch of an entity whose ids are spread over the table reads its own types only.
async fn pg_batch(db: &Db, pg: &sqlx::PgPool, after: i64) -> Result<Option<(i64, Batch)>> {
    let mut tx = pg
        .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        .await?;
    let mut rows = Vec::new();
    {
        let mut stream = sqlx::query(concat!(
            "SELECT id, entity_id, status, jwks, metadata, metadata_policy, constraints_json, ",
            "created_at, updated_at FROM subordinates WHERE entity = $1 AND id > $2 ORDER BY id LIMIT $3"
        ))
        .bind(db.entity())
        .bind(after)
        .bind(BATCH)
        .fetch(&mut *tx);
        while let Some(r) = stream.try_next().await? {
            let owned = |i: usize| -> Result<Option<String>> {
                Ok(r.try_get::<Option<&str>, _>(i)?.map(str::to_owned))
            };
            rows.push(SnapshotRow {
                id: r.try_get(0)?,
                entity_id: r.try_get::<&str, _>(1)?.into(),
                status: r.try_get::<&str, _>(2)?.to_owned(),
                jwks: owned(3)?,
                metadata: owned(4)?,
                metadata_policy: owned(5)?,
                constraints: owned(6)?,
                created_at: r.try_get(7)?,
                updated_at: r.try_get(8)?,
                registered_entity_types: Vec::new(),
            });
        }
    }
    let (Some(first), Some(last)) = (rows.first().map(|r| r.id), rows.last().map(|r| r.id)) else {
        return Ok(None);
    };
    let n = i64::try_from(rows.len()).unwrap_or(i64::MAX);
    let types = if dense(first, last, n) {
        sqlx::query(concat!(
            "SELECT subordinate_id, entity_type FROM subordinate_entity_types ",
            "WHERE subordinate_id >= $1 AND subordinate_id <= $2"
        ))
        .bind(first)
        .bind(last)
    } else {
        sqlx::query(
            "SELECT subordinate_id, entity_type FROM subordinate_entity_types WHERE subordinate_id = ANY($1)",
        )
        .bind(rows.iter().map(|r| r.id).collect::<Vec<i64>>())
    };
    {
        let (mut stream, mut at) = (types.fetch(&mut *tx), 0);
        while let Some(t) = stream.try_next().await? {
            file_type(&mut rows, &mut at, t.try_get(0)?, t.try_get(1)?);
        }
    }
    tx.commit().await?;
    Ok(Some((last, Batch::Rows(rows))))
}

/// Files entity type `t` of subordinate `id` under its row in `rows` (in id order). A type of a
/// row the batch does not hold (another entity's, in a dense range) is dropped.
///
/// Types mostly arrive in id order (a range of their key), so each is looked for first among
/// the few rows from `at`, where the last one was filed, and `at` moves to it: a binary search
/// of 20,000 rows for each of a million types was a cache miss a step.
fn file_type(rows: &mut [SnapshotRow], at: &mut usize, id: i64, t: String) {
    const NEAR: usize = 8;
    let near = rows.iter().skip(*at).take(NEAR).position(|r| r.id == id);
    let found = match near {
        Some(i) => Some(*at + i),
        None => rows.binary_search_by_key(&id, |r| r.id).ok(),
    };
    if let Some(i) = found {
        *at = i;
        rows[i].registered_entity_types.push(t);
    }
}

/// Whether a batch of `n` rows with ids `first..=last` holds at least half of the ids in that
/// range (so reading the range's types reads at most as many of other entities' as its own).
fn dense(first: i64, last: i64, n: i64) -> bool {
    last.saturating_sub(first) < n.saturating_mul(2)
}

/// MariaDB: the rows, and the batch's entity types in a second statement of the same
/// (repeatable-read) transaction, one snapshot for both.
async fn row_batch(db: &Db, after: i64) -> Result<Option<(i64, Batch)>> {
    let mut tx = db.pool.begin().await?;
    let rows = sqlx::query(db.sql(concat!(
        "SELECT id, entity_id, status, jwks, metadata, metadata_policy, constraints_json, ",
        "created_at, updated_at FROM subordinates WHERE entity = ? AND id > ? ORDER BY id LIMIT ?"
    )))
    .bind(db.entity())
    .bind(after)
    .bind(BATCH)
    .fetch_all(&mut *tx)
    .await?;
    let mut rows: Vec<SnapshotRow> = rows
        .iter()
        .map(|r| {
            Ok(SnapshotRow {
                id: r.try_get("id")?,
                entity_id: r.try_get::<String, _>("entity_id")?.into(),
                status: r.try_get("status")?,
                jwks: r.try_get("jwks")?,
                metadata: r.try_get("metadata")?,
                metadata_policy: r.try_get("metadata_policy")?,
                constraints: r.try_get("constraints_json")?,
                registered_entity_types: Vec::new(),
                created_at: r.try_get("created_at")?,
                updated_at: r.try_get("updated_at")?,
            })
        })
        .collect::<Result<_>>()?;
    let Some(last) = rows.last().map(|r| r.id) else {
        return Ok(None);
    };
    let mut at = 0;
    for t in &sqlx::query(db.sql(concat!(
        "SELECT t.subordinate_id, t.entity_type FROM subordinate_entity_types t ",
        "WHERE t.subordinate_id > ? AND t.subordinate_id <= ? AND t.subordinate_id IN ",
        "(SELECT id FROM subordinates WHERE entity = ? AND id > ? AND id <= ?)"
    )))
    .bind(after)
    .bind(last)
    .bind(db.entity())
    .bind(after)
    .bind(last)
    .fetch_all(&mut *tx)
    .await?
    {
        file_type(&mut rows, &mut at, t.try_get(0)?, t.try_get(1)?);
    }
    tx.commit().await?;
    Ok(Some((last, Batch::Rows(rows))))
}

/// Files a `(subordinate_id, entity_type)` row under its subordinate.
fn add_entity_type(types: &mut HashMap<i64, Vec<String>>, r: &sqlx::any::AnyRow) -> Result<()> {
    types
        .entry(r.try_get("subordinate_id")?)
        .or_default()
        .push(r.try_get("entity_type")?);
    Ok(())
}

/// Which subordinates a [`page`] holds.
#[derive(Debug, Clone, Copy, Default)]
pub struct PageFilter<'a> {
    /// Only this status word.
    pub status: Option<&'a str>,
    /// Only subordinates registered with this entity type.
    pub entity_type: Option<&'a str>,
}

/// Up to `limit` subordinates after entity identifier `after`, in entity-identifier order,
/// with their registered entity types and without their documents (`jwks`, `metadata`,
/// `metadata_policy`, `constraints` are `None`, `additional_claims` empty): the Admin API's
/// list reads a million subordinates page by page instead of all at once.
pub async fn page(
    db: &Db,
    filter: PageFilter<'_>,
    after: Option<&str>,
    limit: i64,
) -> Result<Vec<SubordinateRow>> {
    let mut sql = String::from(concat!(
        "SELECT s.id, s.entity_id, s.description, s.status, s.enable_jwks_update, ",
        "s.jwks_poll_interval, s.created_at, s.updated_at, NULL AS jwks, NULL AS metadata, ",
        "NULL AS metadata_policy, NULL AS constraints_json FROM subordinates s ",
        "WHERE s.entity = ? AND s.entity_id > ?"
    ));
    if filter.status.is_some() {
        sql.push_str(" AND s.status = ?");
    }
    if filter.entity_type.is_some() {
        sql.push_str(concat!(
            " AND EXISTS (SELECT 1 FROM subordinate_entity_types t ",
            "WHERE t.subordinate_id = s.id AND t.entity_type = ?)"
        ));
    }
    sql.push_str(" ORDER BY s.entity_id LIMIT ?");
    let mut q = sqlx::query(db.sql_built(sql))
        .bind(db.entity())
        .bind(after.unwrap_or(""));
    if let Some(st) = filter.status {
        q = q.bind(st);
    }
    if let Some(t) = filter.entity_type {
        q = q.bind(t);
    }
    let rows = q.bind(limit).fetch_all(&db.pool).await?;
    let mut subs: Vec<SubordinateRow> = rows.iter().map(from_row).collect::<Result<_>>()?;
    let (Some(first), Some(last)) = (subs.first(), subs.last()) else {
        return Ok(subs);
    };
    // The page's types in one query: by the identifier range the page covers.
    let rows = sqlx::query(db.sql(concat!(
        "SELECT t.subordinate_id, t.entity_type FROM subordinate_entity_types t ",
        "JOIN subordinates s ON s.id = t.subordinate_id ",
        "WHERE s.entity = ? AND s.entity_id >= ? AND s.entity_id <= ? ORDER BY t.entity_type"
    )))
    .bind(db.entity())
    .bind(first.entity_id.as_str())
    .bind(last.entity_id.as_str())
    .fetch_all(&db.pool)
    .await?;
    let mut types: HashMap<i64, Vec<String>> = HashMap::new();
    for r in &rows {
        add_entity_type(&mut types, r)?;
    }
    for s in &mut subs {
        s.registered_entity_types = types.remove(&s.id).unwrap_or_default();
    }
    Ok(subs)
}

/// One subordinate by database id or entity identifier.
pub async fn get(db: &Db, key: SubKey<'_>) -> Result<Option<SubordinateRow>> {
    let row = match key {
        SubKey::Id(id) => {
            sqlx::query(db.sql(concat!(
                "SELECT id, entity_id, description, status, enable_jwks_update, jwks_poll_interval, jwks, ",
                "metadata, metadata_policy, constraints_json, created_at, updated_at FROM subordinates WHERE entity = ? AND id = ?"
            )))
            .bind(db.entity())
            .bind(id)
            .fetch_optional(&db.pool)
            .await?
        }
        SubKey::EntityId(e) => {
            sqlx::query(db.sql(concat!(
                "SELECT id, entity_id, description, status, enable_jwks_update, jwks_poll_interval, jwks, ",
                "metadata, metadata_policy, constraints_json, created_at, updated_at FROM subordinates WHERE entity = ? AND entity_id = ?"
            )))
            .bind(db.entity())
            .bind(e)
            .fetch_optional(&db.pool)
            .await?
        }
    };
    let Some(row) = row else { return Ok(None) };
    let mut s = from_row(&row)?;
    s.registered_entity_types = sqlx::query(db.sql(
        "SELECT entity_type FROM subordinate_entity_types WHERE subordinate_id = ? ORDER BY entity_type",
    ))
    .bind(s.id)
    .fetch_all(&db.pool)
    .await?
    .iter()
    .map(|r| r.try_get("entity_type"))
    .collect::<std::result::Result<_, _>>()?;
    s.additional_claims = claims::list(db, Scope::Subordinate(s.id)).await?;
    Ok(Some(s))
}

/// How a subordinate is addressed.
#[derive(Debug, Clone, Copy)]
pub enum SubKey<'a> {
    /// Database id.
    Id(i64),
    /// Entity identifier.
    EntityId(&'a str),
}

/// The basic, directly writable fields of a subordinate.
#[derive(Debug, Clone)]
pub struct BasicWrite {
    /// Free text.
    pub description: String,
    /// Where it stands.
    pub status: SubordinateStatus,
    /// Poll its keys.
    pub enable_jwks_update: bool,
    /// Poll interval.
    pub jwks_poll_interval: i64,
}

fn to_text<T: serde::Serialize>(v: &Option<T>) -> Result<Option<String>> {
    v.as_ref()
        .map(|v| serde_json::to_string(v).map_err(|e| Error::Internal(e.to_string())))
        .transpose()
}

/// Inserts a subordinate and returns its id.
pub async fn insert(
    db: &Db,
    c: &mut AnyConnection,
    entity_id: &str,
    w: &BasicWrite,
    jwks: &Option<Jwks>,
    now: i64,
) -> Result<i64> {
    sqlx::query(db.sql(
        "INSERT INTO subordinates (entity, entity_id, description, status, enable_jwks_update, jwks_poll_interval, jwks, created_at, updated_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
    ))
    .bind(db.entity())
    .bind(entity_id)
    .bind(&w.description)
    .bind(w.status.as_str())
    .bind(flag(w.enable_jwks_update))
    .bind(w.jwks_poll_interval)
    .bind(to_text(jwks)?)
    .bind(now)
    .bind(now)
    .execute(&mut *c)
    .await
    .map_err(|e| Error::from_db(e, "subordinate"))?;
    // Registered again: no longer gone.
    sqlx::query(db.sql("DELETE FROM subordinate_tombstones WHERE entity = ? AND entity_id = ?"))
        .bind(db.entity())
        .bind(entity_id)
        .execute(&mut *c)
        .await?;
    let row = sqlx::query(db.sql("SELECT id FROM subordinates WHERE entity = ? AND entity_id = ?"))
        .bind(db.entity())
        .bind(entity_id)
        .fetch_one(&mut *c)
        .await?;
    Ok(row.try_get("id")?)
}

/// Updates the basic fields of subordinate `id`.
pub async fn update_basic(
    db: &Db,
    c: &mut AnyConnection,
    id: i64,
    w: &BasicWrite,
    now: i64,
) -> Result<()> {
    sqlx::query(db.sql(
        "UPDATE subordinates SET description = ?, status = ?, enable_jwks_update = ?, jwks_poll_interval = ?, updated_at = ? \
         WHERE id = ? AND entity = ?",
    ))
    .bind(&w.description)
    .bind(w.status.as_str())
    .bind(flag(w.enable_jwks_update))
    .bind(w.jwks_poll_interval)
    .bind(now)
    .bind(id)
    .bind(db.entity())
    .execute(&mut *c)
    .await?;
    Ok(())
}

/// Replaces the stored JWKS of subordinate `id`.
pub async fn set_jwks(
    db: &Db,
    c: &mut AnyConnection,
    id: i64,
    jwks: &Jwks,
    now: i64,
) -> Result<()> {
    sqlx::query(
        db.sql("UPDATE subordinates SET jwks = ?, updated_at = ? WHERE id = ? AND entity = ?"),
    )
    .bind(to_text(&Some(jwks))?)
    .bind(now)
    .bind(id)
    .bind(db.entity())
    .execute(&mut *c)
    .await?;
    Ok(())
}

/// The `iat` of the last signed JWK Set subordinate `id` pushed and we accepted.
pub async fn last_push_iat(db: &Db, id: i64) -> Result<Option<i64>> {
    Ok(sqlx::query_scalar(
        db.sql("SELECT jwks_push_iat FROM subordinates WHERE entity = ? AND id = ?"),
    )
    .bind(db.entity())
    .bind(id)
    .fetch_optional(&db.pool)
    .await?
    .flatten())
}

/// Stores pushed keys and the push's `iat` (so an older push cannot be replayed later).
pub async fn set_pushed_jwks(
    db: &Db,
    c: &mut AnyConnection,
    id: i64,
    jwks: &Jwks,
    iat: i64,
    now: i64,
) -> Result<()> {
    sqlx::query(
        db.sql("UPDATE subordinates SET jwks = ?, jwks_push_iat = ?, updated_at = ? WHERE id = ? AND entity = ?"),
    )
    .bind(to_text(&Some(jwks))?)
    .bind(iat)
    .bind(now)
    .bind(id)
    .bind(db.entity())
    .execute(&mut *c)
    .await?;
    Ok(())
}

/// One JSON document override of subordinate `id`, read in the caller's transaction (a
/// read-modify-write of the document reads what it changes there, after the write lock).
pub async fn doc_in(
    db: &Db,
    c: &mut AnyConnection,
    id: i64,
    col: DocColumn,
) -> Result<Option<Value>> {
    let sql = match col {
        DocColumn::Metadata => {
            "SELECT metadata AS doc FROM subordinates WHERE id = ? AND entity = ?"
        }
        DocColumn::MetadataPolicy => {
            "SELECT metadata_policy AS doc FROM subordinates WHERE id = ? AND entity = ?"
        }
        DocColumn::Constraints => {
            "SELECT constraints_json AS doc FROM subordinates WHERE id = ? AND entity = ?"
        }
    };
    let row = sqlx::query(db.sql(sql))
        .bind(id)
        .bind(db.entity())
        .fetch_optional(&mut *c)
        .await?;
    match row {
        Some(r) => json_col(&r, "doc"),
        None => Ok(None),
    }
}

/// Sets (or clears, with `None`) one JSON document override of subordinate `id`.
pub async fn set_doc(
    db: &Db,
    c: &mut AnyConnection,
    id: i64,
    col: DocColumn,
    value: &Option<Value>,
    now: i64,
) -> Result<()> {
    let sql = match col {
        DocColumn::Metadata => {
            "UPDATE subordinates SET metadata = ?, updated_at = ? WHERE id = ? AND entity = ?"
        }
        DocColumn::MetadataPolicy => {
            "UPDATE subordinates SET metadata_policy = ?, updated_at = ? WHERE id = ? AND entity = ?"
        }
        DocColumn::Constraints => {
            "UPDATE subordinates SET constraints_json = ?, updated_at = ? WHERE id = ? AND entity = ?"
        }
    };
    sqlx::query(db.sql(sql))
        .bind(to_text(value)?)
        .bind(now)
        .bind(id)
        .bind(db.entity())
        .execute(&mut *c)
        .await?;
    Ok(())
}

/// The tombstone of `entity_id`, if it was deleted and not registered again.
pub async fn tombstone(db: &Db, entity_id: &str) -> Result<Option<Tombstone>> {
    let row = sqlx::query(db.sql(
        "SELECT registered_at, revoked_at FROM subordinate_tombstones WHERE entity = ? AND entity_id = ?",
    ))
    .bind(db.entity())
    .bind(entity_id)
    .fetch_optional(&db.pool)
    .await?;
    row.map(|r| {
        Ok(Tombstone {
            registered: r.try_get("registered_at")?,
            revoked: r.try_get("revoked_at")?,
        })
    })
    .transpose()
}

/// Every tombstone of this entity, handed to `each` as it streams in.
pub async fn for_each_tombstone(db: &Db, mut each: impl FnMut(String, Tombstone)) -> Result<()> {
    let mut rows = sqlx::query(db.sql(
        "SELECT entity_id, registered_at, revoked_at FROM subordinate_tombstones WHERE entity = ?",
    ))
    .bind(db.entity())
    .fetch(&db.pool);
    while let Some(r) = rows.try_next().await? {
        let t = Tombstone {
            registered: r.try_get("registered_at")?,
            revoked: r.try_get("revoked_at")?,
        };
        each(r.try_get("entity_id")?, t);
    }
    Ok(())
}

/// Sets `updated_at` of subordinate `entity_id` to `now` (no row: nothing).
pub async fn stamp_updated(
    db: &Db,
    c: &mut AnyConnection,
    entity_id: &str,
    now: i64,
) -> Result<()> {
    sqlx::query(db.sql(
        "UPDATE subordinates SET updated_at = ? WHERE entity = ? AND entity_id = ? AND updated_at <> ?",
    ))
    .bind(now)
    .bind(db.entity())
    .bind(entity_id)
    .bind(now)
    .execute(&mut *c)
    .await?;
    Ok(())
}

/// Replaces the registered entity types of subordinate `id`.
pub async fn set_types(db: &Db, c: &mut AnyConnection, id: i64, types: &[String]) -> Result<()> {
    sqlx::query(db.sql("DELETE FROM subordinate_entity_types WHERE subordinate_id = ?"))
        .bind(id)
        .execute(&mut *c)
        .await?;
    let mut seen = std::collections::BTreeSet::new();
    for t in types.iter().filter(|t| seen.insert(t.as_str())) {
        sqlx::query(db.sql(
            "INSERT INTO subordinate_entity_types (subordinate_id, entity_type) VALUES (?, ?)",
        ))
        .bind(id)
        .bind(t)
        .execute(&mut *c)
        .await?;
    }
    Ok(())
}

/// Deletes subordinate `id` with its types, claims and events (hard delete), leaving a
/// tombstone at `now` unless it was pending (never served, so never listed).
pub async fn delete(db: &Db, c: &mut AnyConnection, id: i64, now: i64) -> Result<()> {
    sqlx::query(db.sql(
        "INSERT INTO subordinate_tombstones (entity, entity_id, registered_at, revoked_at) \
         SELECT entity, entity_id, created_at, ? FROM subordinates \
         WHERE id = ? AND entity = ? AND status <> 'pending'",
    ))
    .bind(now)
    .bind(id)
    .bind(db.entity())
    .execute(&mut *c)
    .await?;
    // The child tables without an `entity` column are addressed by the parent id alone (the
    // caller found it through an entity-scoped read); the per-entity tables also by entity.
    for (sql, scoped) in [
        (
            "DELETE FROM subordinate_events WHERE subordinate_id = ?",
            false,
        ),
        (
            "DELETE FROM additional_claims WHERE subordinate_id = ? AND entity = ?",
            true,
        ),
        (
            "DELETE FROM subordinate_entity_types WHERE subordinate_id = ?",
            false,
        ),
        ("DELETE FROM subordinates WHERE id = ? AND entity = ?", true),
    ] {
        let mut q = sqlx::query(db.sql(sql)).bind(id);
        if scoped {
            q = q.bind(db.entity());
        }
        q.execute(&mut *c).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{dense, file_type, parse};

    #[test]
    fn a_batch_gets_its_types_from_beside_its_rows() {
        let row = |id: i64| {
            format!(
                r#"[{id},"https://s{id}.example","active","{{\"keys\":[]}}",null,null,null,1,2]"#
            )
        };
        let rows = format!("[{},{},{}]", row(3), row(5), row(7));
        // SQLite: the types as [id, type] pairs, including ids of another entity's rows in
        // the range (dropped) and rows with none.
        let parsed = parse(
            &rows,
            r#"[[3,"openid_provider"],[3,"openid_relying_party"],[4,"federation_entity"],[7,"openid_provider"]]"#,
        )
        .unwrap();
        assert_eq!(parsed[0].jwks.as_deref(), Some(r#"{"keys":[]}"#));
        assert_eq!((parsed[0].created_at, parsed[0].updated_at), (1, 2));
        let types = |rows: &[super::SnapshotRow]| -> Vec<(i64, Vec<String>)> {
            rows.iter()
                .map(|r| (r.id, r.registered_entity_types.clone()))
                .collect()
        };
        let expected = [
            (
                3,
                vec!["openid_provider".to_string(), "openid_relying_party".into()],
            ),
            (5, vec![]),
            (7, vec!["openid_provider".to_string()]),
        ];
        assert_eq!(types(&parsed), expected);
        // PostgreSQL and MariaDB: rows without types, and the types filed one by one.
        // In id order, and out of it (a row's types before an earlier row's).
        for order in [[0, 1, 2, 3, 4], [3, 4, 2, 0, 1]] {
            let mut rows = parse(&rows, "[]").unwrap();
            assert!(rows.iter().all(|r| r.registered_entity_types.is_empty()));
            let pairs = [
                (3, "openid_provider"),
                (3, "openid_relying_party"),
                (4, "federation_entity"),
                (7, "openid_provider"),
                (8, "federation_entity"),
            ];
            let mut at = 0;
            for (id, t) in order.map(|i| pairs[i]) {
                file_type(&mut rows, &mut at, id, t.into());
            }
            assert_eq!(types(&rows), expected);
        }
        assert!(
            parse("[[1]]", "[]").is_err(),
            "a short row is an error, not a guess"
        );
        assert!(
            parse(&format!("[{}]", row(3)), "[[3]]").is_err(),
            "so is a short type"
        );
    }

    #[test]
    fn a_range_is_dense_when_at_least_half_of_its_ids_are_the_batchs() {
        assert!(dense(1, 20_000, 20_000));
        assert!(dense(2, 40_000, 20_000), "every other id");
        assert!(!dense(1, 100_000, 20_000));
        assert!(dense(7, 7, 1));
        assert!(!dense(i64::MIN, i64::MAX, 3), "no overflow");
    }
}
