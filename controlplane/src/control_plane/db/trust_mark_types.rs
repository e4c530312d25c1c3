//! `trust_mark_types` and `trust_mark_type_issuers`: the trust mark types this entity knows,
//! each with an optional owner and the issuers recognised for it (the Admin API's
//! `/trust-marks/types`). The snapshot reads them through [`super::trust_marks`].

use sqlx::{AnyConnection, Row};

use super::Db;
use super::trust_mark_parties::Key;
use crate::error::{Error, Result};

/// A trust mark type.
#[derive(Debug, Clone, PartialEq)]
pub struct TypeRow {
    /// Database id.
    pub id: i64,
    /// The type identifier.
    pub trust_mark_type: String,
    /// Its owner, if any.
    pub owner_id: Option<i64>,
    /// Free text.
    pub description: String,
    /// Creation time.
    pub created_at: i64,
    /// Last update time.
    pub updated_at: i64,
}

fn from_row(r: &sqlx::any::AnyRow) -> Result<TypeRow> {
    Ok(TypeRow {
        id: r.try_get("id")?,
        trust_mark_type: r.try_get("trust_mark_type")?,
        owner_id: r.try_get("owner_id")?,
        description: r.try_get("description")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

/// Every type, by identifier.
pub async fn list(db: &Db) -> Result<Vec<TypeRow>> {
    let rows = sqlx::query(db.sql(
        "SELECT id, trust_mark_type, owner_id, description, created_at, updated_at \
         FROM trust_mark_types WHERE entity = ? ORDER BY trust_mark_type",
    ))
    .bind(db.entity())
    .fetch_all(&db.pool)
    .await?;
    rows.iter().map(from_row).collect()
}

/// One type.
pub async fn get(db: &Db, key: Key<'_>) -> Result<Option<TypeRow>> {
    let (id, name) = key.binds();
    let row = sqlx::query(db.sql(
        "SELECT id, trust_mark_type, owner_id, description, created_at, updated_at \
         FROM trust_mark_types WHERE entity = ? AND (id = ? OR trust_mark_type = ?)",
    ))
    .bind(db.entity())
    .bind(id)
    .bind(name)
    .fetch_optional(&db.pool)
    .await?;
    row.as_ref().map(from_row).transpose()
}

/// The types owned by owner `owner_id`.
pub async fn of_owner(db: &Db, owner_id: i64) -> Result<Vec<TypeRow>> {
    let rows = sqlx::query(db.sql(
        "SELECT id, trust_mark_type, owner_id, description, created_at, updated_at \
         FROM trust_mark_types WHERE entity = ? AND owner_id = ? ORDER BY trust_mark_type",
    ))
    .bind(db.entity())
    .bind(owner_id)
    .fetch_all(&db.pool)
    .await?;
    rows.iter().map(from_row).collect()
}

/// The types issuer `issuer_id` is recognised for.
pub async fn of_issuer(db: &Db, issuer_id: i64) -> Result<Vec<TypeRow>> {
    let rows = sqlx::query(db.sql(
        "SELECT t.id, t.trust_mark_type, t.owner_id, t.description, t.created_at, t.updated_at \
         FROM trust_mark_types t JOIN trust_mark_type_issuers ti ON ti.type_id = t.id \
         WHERE t.entity = ? AND ti.issuer_id = ? ORDER BY t.trust_mark_type",
    ))
    .bind(db.entity())
    .bind(issuer_id)
    .fetch_all(&db.pool)
    .await?;
    rows.iter().map(from_row).collect()
}

/// Inserts a type; returns its id.
pub async fn insert(
    db: &Db,
    c: &mut AnyConnection,
    trust_mark_type: &str,
    owner_id: Option<i64>,
    description: &str,
    now: i64,
) -> Result<i64> {
    sqlx::query(db.sql(
        "INSERT INTO trust_mark_types (entity, trust_mark_type, owner_id, description, created_at, updated_at) \
         VALUES (?, ?, ?, ?, ?, ?)",
    ))
    .bind(db.entity())
    .bind(trust_mark_type)
    .bind(owner_id)
    .bind(description)
    .bind(now)
    .bind(now)
    .execute(&mut *c)
    .await
    .map_err(|e| Error::from_db(e, "trust mark type"))?;
    let row = sqlx::query(
        db.sql("SELECT id FROM trust_mark_types WHERE entity = ? AND trust_mark_type = ?"),
    )
    .bind(db.entity())
    .bind(trust_mark_type)
    .fetch_one(&mut *c)
    .await?;
    Ok(row.try_get("id")?)
}

/// Updates type `id`.
pub async fn update(
    db: &Db,
    c: &mut AnyConnection,
    id: i64,
    trust_mark_type: &str,
    description: &str,
    now: i64,
) -> Result<()> {
    sqlx::query(db.sql(
        "UPDATE trust_mark_types SET trust_mark_type = ?, description = ?, updated_at = ? \
         WHERE id = ? AND entity = ?",
    ))
    .bind(trust_mark_type)
    .bind(description)
    .bind(now)
    .bind(id)
    .bind(db.entity())
    .execute(&mut *c)
    .await
    .map_err(|e| Error::from_db(e, "trust mark type"))?;
    Ok(())
}

/// Sets (or clears) the owner of type `id`.
pub async fn set_owner(
    db: &Db,
    c: &mut AnyConnection,
    id: i64,
    owner_id: Option<i64>,
    now: i64,
) -> Result<()> {
    sqlx::query(db.sql(
        "UPDATE trust_mark_types SET owner_id = ?, updated_at = ? WHERE id = ? AND entity = ?",
    ))
    .bind(owner_id)
    .bind(now)
    .bind(id)
    .bind(db.entity())
    .execute(&mut *c)
    .await?;
    Ok(())
}

/// Deletes type `id` and its issuer links.
pub async fn delete(db: &Db, c: &mut AnyConnection, id: i64) -> Result<()> {
    sqlx::query(db.sql("DELETE FROM trust_mark_type_issuers WHERE type_id = ?"))
        .bind(id)
        .execute(&mut *c)
        .await?;
    sqlx::query(db.sql("DELETE FROM trust_mark_types WHERE id = ? AND entity = ?"))
        .bind(id)
        .bind(db.entity())
        .execute(&mut *c)
        .await?;
    Ok(())
}

/// Links issuer `issuer_id` to type `type_id` (no-op when linked).
pub async fn link_issuer(
    db: &Db,
    c: &mut AnyConnection,
    type_id: i64,
    issuer_id: i64,
) -> Result<()> {
    unlink_issuer(db, c, type_id, issuer_id).await?;
    sqlx::query(db.sql("INSERT INTO trust_mark_type_issuers (type_id, issuer_id) VALUES (?, ?)"))
        .bind(type_id)
        .bind(issuer_id)
        .execute(&mut *c)
        .await?;
    Ok(())
}

/// Removes the link of issuer `issuer_id` to type `type_id`; whether there was one.
pub async fn unlink_issuer(
    db: &Db,
    c: &mut AnyConnection,
    type_id: i64,
    issuer_id: i64,
) -> Result<bool> {
    let r = sqlx::query(
        db.sql("DELETE FROM trust_mark_type_issuers WHERE type_id = ? AND issuer_id = ?"),
    )
    .bind(type_id)
    .bind(issuer_id)
    .execute(&mut *c)
    .await?;
    Ok(r.rows_affected() > 0)
}

/// Removes every issuer link of type `type_id`.
pub async fn clear_issuers(db: &Db, c: &mut AnyConnection, type_id: i64) -> Result<()> {
    sqlx::query(db.sql("DELETE FROM trust_mark_type_issuers WHERE type_id = ?"))
        .bind(type_id)
        .execute(&mut *c)
        .await?;
    Ok(())
}

/// Removes every type link of issuer `issuer_id`.
pub async fn clear_types_of_issuer(db: &Db, c: &mut AnyConnection, issuer_id: i64) -> Result<()> {
    sqlx::query(db.sql("DELETE FROM trust_mark_type_issuers WHERE issuer_id = ?"))
        .bind(issuer_id)
        .execute(&mut *c)
        .await?;
    Ok(())
}

/// Clears owner `owner_id` from every type it owns.
pub async fn clear_owner(db: &Db, c: &mut AnyConnection, owner_id: i64, now: i64) -> Result<()> {
    sqlx::query(db.sql(
        "UPDATE trust_mark_types SET owner_id = NULL, updated_at = ? \
         WHERE owner_id = ? AND entity = ?",
    ))
    .bind(now)
    .bind(owner_id)
    .bind(db.entity())
    .execute(&mut *c)
    .await?;
    Ok(())
}
