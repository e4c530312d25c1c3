//! `entities`: the federation entities this deployment hosts. Entity 1 is the one configured in
//! `entity_id` (its identifier follows the configuration, [`claim_default`]); the others are
//! created at run time. Deleting one keeps its number and its rows (its history); only its
//! identifier is freed for a new entity.
//!
//! The table is deployment-wide: these functions ignore the handle's entity.

use pharos_shared::hosted::EntityNo;
use sqlx::{AnyConnection, Row};

use super::Db;
use crate::error::{Error, Result};

/// A hosted entity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntityRow {
    /// Its number: the `entity` of its rows in every per-entity table.
    pub id: EntityNo,
    /// Its Entity Identifier.
    pub entity_id: String,
    /// A name for people (the console, the CLI).
    pub display_name: String,
    /// Creation time.
    pub created_at: i64,
    /// Last update time.
    pub updated_at: i64,
}

fn from_row(r: &sqlx::any::AnyRow) -> Result<EntityRow> {
    let id: i64 = r.try_get("id")?;
    Ok(EntityRow {
        id: EntityNo::new(id).ok_or_else(|| Error::Internal(format!("entities.id {id}")))?,
        entity_id: r.try_get("entity_id")?,
        display_name: r.try_get("display_name")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

/// Every hosted entity (not the deleted ones), by number.
pub async fn list(db: &Db) -> Result<Vec<EntityRow>> {
    let sql = "SELECT id, entity_id, display_name, created_at, updated_at \
               FROM entities WHERE live_entity_id IS NOT NULL ORDER BY id";
    let rows = sqlx::query(db.sql(sql)).fetch_all(&db.pool).await?;
    rows.iter().map(from_row).collect()
}

/// A hosted entity by number (`None` if there is none or it was deleted).
pub async fn get(db: &Db, id: EntityNo) -> Result<Option<EntityRow>> {
    let sql = "SELECT id, entity_id, display_name, created_at, updated_at \
               FROM entities WHERE id = ? AND live_entity_id IS NOT NULL";
    let row = sqlx::query(db.sql(sql))
        .bind(id.get())
        .fetch_optional(&db.pool)
        .await?;
    row.as_ref().map(from_row).transpose()
}

/// A hosted entity by its Entity Identifier, exactly as stored.
pub async fn find(db: &Db, entity_id: &str) -> Result<Option<EntityRow>> {
    let sql = "SELECT id, entity_id, display_name, created_at, updated_at \
               FROM entities WHERE live_entity_id = ?";
    let row = sqlx::query(db.sql(sql))
        .bind(entity_id)
        .fetch_optional(&db.pool)
        .await?;
    row.as_ref().map(from_row).transpose()
}

/// Creates a hosted entity and returns its number. An identifier already hosted is
/// [`Error::AlreadyExists`].
pub async fn insert(
    db: &Db,
    c: &mut AnyConnection,
    entity_id: &str,
    display_name: &str,
    now: i64,
) -> Result<EntityNo> {
    sqlx::query(db.sql(
        "INSERT INTO entities (entity_id, live_entity_id, display_name, created_at, updated_at) \
         VALUES (?, ?, ?, ?, ?)",
    ))
    .bind(entity_id)
    .bind(entity_id)
    .bind(display_name)
    .bind(now)
    .bind(now)
    .execute(&mut *c)
    .await
    .map_err(|e| Error::from_db(e, "entity"))?;
    let id: i64 = sqlx::query_scalar(db.sql("SELECT id FROM entities WHERE live_entity_id = ?"))
        .bind(entity_id)
        .fetch_one(&mut *c)
        .await?;
    EntityNo::new(id).ok_or_else(|| Error::Internal(format!("entities.id {id}")))
}

/// Renames hosted entity `id` for people.
pub async fn set_display_name(
    db: &Db,
    c: &mut AnyConnection,
    id: EntityNo,
    display_name: &str,
    now: i64,
) -> Result<()> {
    sqlx::query(db.sql(
        "UPDATE entities SET display_name = ?, updated_at = ? \
         WHERE id = ? AND live_entity_id IS NOT NULL",
    ))
    .bind(display_name)
    .bind(now)
    .bind(id.get())
    .execute(&mut *c)
    .await?;
    Ok(())
}

/// Stops hosting entity `id`: its identifier is freed, its number and rows stay (history).
/// The default entity is the configuration's and is never deleted here.
pub async fn delete(db: &Db, c: &mut AnyConnection, id: EntityNo, now: i64) -> Result<bool> {
    if id.is_default() {
        return Ok(false);
    }
    let r = sqlx::query(db.sql(
        "UPDATE entities SET live_entity_id = NULL, deleted_at = ?, updated_at = ? \
         WHERE id = ? AND live_entity_id IS NOT NULL",
    ))
    .bind(now)
    .bind(now)
    .bind(id.get())
    .execute(&mut *c)
    .await?;
    Ok(r.rows_affected() > 0)
}

/// Makes entity 1 the configured `entity_id` (at every start: the configuration names the
/// default entity). Refused when another hosted entity already has that identifier.
pub async fn claim_default(
    db: &Db,
    c: &mut AnyConnection,
    entity_id: &str,
    now: i64,
) -> Result<()> {
    let holder: Option<i64> =
        sqlx::query_scalar(db.sql("SELECT id FROM entities WHERE live_entity_id = ?"))
            .bind(entity_id)
            .fetch_optional(&mut *c)
            .await?;
    match holder {
        Some(1) => return Ok(()),
        Some(other) => {
            return Err(Error::EntityIdHosted {
                entity_id: entity_id.to_owned(),
                entity: other,
            });
        }
        None => {}
    }
    sqlx::query(db.sql(
        "UPDATE entities SET entity_id = ?, live_entity_id = ?, updated_at = ?, \
         created_at = CASE WHEN created_at = 0 THEN ? ELSE created_at END WHERE id = 1",
    ))
    .bind(entity_id)
    .bind(entity_id)
    .bind(now)
    .bind(now)
    .execute(&mut *c)
    .await?;
    Ok(())
}
