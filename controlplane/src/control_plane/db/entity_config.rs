//! Authority hints of our Entity Configuration (its additional claims are in [`super::claims`]).

use serde::Serialize;
use sqlx::{AnyConnection, Row};

use super::Db;
use crate::error::{Error, Result};

/// An authority hint row, as the Admin API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct AuthorityHint {
    /// Database id.
    pub id: i64,
    /// Creation time (Unix seconds).
    pub created_at: i64,
    /// Last update time (Unix seconds).
    pub updated_at: i64,
    /// The superior's entity identifier.
    pub entity_id: String,
    /// Operator's note.
    pub description: String,
}

/// All authority hints of this entity, in id order.
pub async fn hints(db: &Db) -> Result<Vec<AuthorityHint>> {
    let rows = sqlx::query(db.sql(
        "SELECT id, entity_id, description, created_at, updated_at FROM authority_hints \
         WHERE entity = ? ORDER BY id",
    ))
    .bind(db.entity())
    .fetch_all(&db.pool)
    .await?;
    rows.iter()
        .map(|r| {
            Ok(AuthorityHint {
                id: r.try_get("id")?,
                entity_id: r.try_get("entity_id")?,
                description: r.try_get("description")?,
                created_at: r.try_get("created_at")?,
                updated_at: r.try_get("updated_at")?,
            })
        })
        .collect()
}

/// Adds an authority hint; returns its id.
pub async fn add_hint(
    db: &Db,
    c: &mut AnyConnection,
    entity_id: &str,
    description: &str,
    now: i64,
) -> Result<i64> {
    sqlx::query(db.sql(
        "INSERT INTO authority_hints (entity, entity_id, description, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
    ))
    .bind(db.entity())
    .bind(entity_id)
    .bind(description)
    .bind(now)
    .bind(now)
    .execute(&mut *c)
    .await
    .map_err(|e| Error::from_db(e, "authority hint"))?;
    let r =
        sqlx::query(db.sql("SELECT id FROM authority_hints WHERE entity = ? AND entity_id = ?"))
            .bind(db.entity())
            .bind(entity_id)
            .fetch_one(&mut *c)
            .await?;
    Ok(r.try_get("id")?)
}

/// Updates authority hint `id`.
pub async fn update_hint(
    db: &Db,
    c: &mut AnyConnection,
    id: i64,
    entity_id: &str,
    description: &str,
    now: i64,
) -> Result<()> {
    sqlx::query(db.sql(
        "UPDATE authority_hints SET entity_id = ?, description = ?, updated_at = ? \
         WHERE id = ? AND entity = ?",
    ))
    .bind(entity_id)
    .bind(description)
    .bind(now)
    .bind(id)
    .bind(db.entity())
    .execute(&mut *c)
    .await
    .map_err(|e| Error::from_db(e, "authority hint"))?;
    Ok(())
}

/// Deletes authority hint `id`.
pub async fn delete_hint(db: &Db, c: &mut AnyConnection, id: i64) -> Result<()> {
    sqlx::query(db.sql("DELETE FROM authority_hints WHERE entity = ? AND id = ?"))
        .bind(db.entity())
        .bind(id)
        .execute(&mut *c)
        .await?;
    Ok(())
}
