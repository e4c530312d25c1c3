//! Authority hints and Entity Configuration additional claims.

use serde::Serialize;
use serde_json::Value;
use sqlx::{AnyConnection, Row};

use super::{Db, flag};
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

/// An additional claim row, as the Admin API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ClaimRow {
    /// Database id.
    pub id: i64,
    /// Creation time.
    pub created_at: i64,
    /// Last update time.
    pub updated_at: i64,
    /// Claim name.
    pub claim: String,
    /// Claim value.
    pub value: Value,
    /// Listed in `crit`.
    pub crit: bool,
}

/// All authority hints, in id order.
pub async fn hints(db: &Db) -> Result<Vec<AuthorityHint>> {
    let rows = sqlx::query(db.sql(
        "SELECT id, entity_id, description, created_at, updated_at FROM authority_hints ORDER BY id",
    ))
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
        "INSERT INTO authority_hints (entity_id, description, created_at, updated_at) VALUES (?, ?, ?, ?)",
    ))
    .bind(entity_id)
    .bind(description)
    .bind(now)
    .bind(now)
    .execute(&mut *c)
    .await
    .map_err(|e| Error::from_db(e, "authority hint"))?;
    let r = sqlx::query(db.sql("SELECT id FROM authority_hints WHERE entity_id = ?"))
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
        "UPDATE authority_hints SET entity_id = ?, description = ?, updated_at = ? WHERE id = ?",
    ))
    .bind(entity_id)
    .bind(description)
    .bind(now)
    .bind(id)
    .execute(&mut *c)
    .await
    .map_err(|e| Error::from_db(e, "authority hint"))?;
    Ok(())
}

/// Deletes authority hint `id`.
pub async fn delete_hint(db: &Db, c: &mut AnyConnection, id: i64) -> Result<()> {
    sqlx::query(db.sql("DELETE FROM authority_hints WHERE id = ?"))
        .bind(id)
        .execute(&mut *c)
        .await?;
    Ok(())
}

/// All additional claims, in id order.
pub async fn claims(db: &Db) -> Result<Vec<ClaimRow>> {
    let rows = sqlx::query(db.sql(
        "SELECT id, claim, value, crit, created_at, updated_at FROM ec_additional_claims ORDER BY id",
    ))
    .fetch_all(&db.pool)
    .await?;
    rows.iter()
        .map(|r| {
            let value: String = r.try_get("value")?;
            Ok(ClaimRow {
                id: r.try_get("id")?,
                claim: r.try_get("claim")?,
                value: serde_json::from_str(&value).unwrap_or(Value::Null),
                crit: r.try_get::<i64, _>("crit")? != 0,
                created_at: r.try_get("created_at")?,
                updated_at: r.try_get("updated_at")?,
            })
        })
        .collect()
}

/// Adds an additional claim; returns its id.
pub async fn add_claim(
    db: &Db,
    c: &mut AnyConnection,
    claim: &str,
    value: &Value,
    crit: bool,
    now: i64,
) -> Result<i64> {
    sqlx::query(db.sql(
        "INSERT INTO ec_additional_claims (claim, value, crit, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
    ))
    .bind(claim)
    .bind(value.to_string())
    .bind(flag(crit))
    .bind(now)
    .bind(now)
    .execute(&mut *c)
    .await
    .map_err(|e| Error::from_db(e, "additional claim"))?;
    let r = sqlx::query(db.sql("SELECT id FROM ec_additional_claims WHERE claim = ?"))
        .bind(claim)
        .fetch_one(&mut *c)
        .await?;
    Ok(r.try_get("id")?)
}

/// Updates additional claim `id`.
pub async fn update_claim(
    db: &Db,
    c: &mut AnyConnection,
    id: i64,
    claim: &str,
    value: &Value,
    crit: bool,
    now: i64,
) -> Result<()> {
    sqlx::query(db.sql(
        "UPDATE ec_additional_claims SET claim = ?, value = ?, crit = ?, updated_at = ? WHERE id = ?",
    ))
    .bind(claim)
    .bind(value.to_string())
    .bind(flag(crit))
    .bind(now)
    .bind(id)
    .execute(&mut *c)
    .await
    .map_err(|e| Error::from_db(e, "additional claim"))?;
    Ok(())
}

/// Deletes additional claim `id` (or all when `id` is `None`).
pub async fn delete_claims(db: &Db, c: &mut AnyConnection, id: Option<i64>) -> Result<()> {
    match id {
        Some(id) => {
            sqlx::query(db.sql("DELETE FROM ec_additional_claims WHERE id = ?"))
                .bind(id)
                .execute(&mut *c)
                .await?
        }
        None => {
            sqlx::query(db.sql("DELETE FROM ec_additional_claims"))
                .execute(&mut *c)
                .await?
        }
    };
    Ok(())
}
