//! `subordinate_additional_claims`: extra claims of one subordinate's statement.

use serde_json::Value;
use sqlx::AnyConnection;

use super::{Db, flag};
use crate::error::{Error, Result};

/// Inserts a claim; a duplicate claim name is a conflict.
pub async fn insert(
    db: &Db,
    c: &mut AnyConnection,
    sub_id: i64,
    claim: &str,
    value: &Value,
    crit: bool,
    now: i64,
) -> Result<()> {
    sqlx::query(db.sql(
        "INSERT INTO subordinate_additional_claims (subordinate_id, claim, value, crit, created_at, updated_at) \
         VALUES (?, ?, ?, ?, ?, ?)",
    ))
    .bind(sub_id)
    .bind(claim)
    .bind(value.to_string())
    .bind(flag(crit))
    .bind(now)
    .bind(now)
    .execute(&mut *c)
    .await
    .map_err(|e| Error::from_db(e, "claim"))?;
    Ok(())
}

/// Updates claim row `id` of subordinate `sub_id`.
#[allow(clippy::too_many_arguments)]
pub async fn update(
    db: &Db,
    c: &mut AnyConnection,
    sub_id: i64,
    id: i64,
    claim: &str,
    value: &Value,
    crit: bool,
    now: i64,
) -> Result<()> {
    sqlx::query(db.sql(
        "UPDATE subordinate_additional_claims SET claim = ?, value = ?, crit = ?, updated_at = ? \
         WHERE id = ? AND subordinate_id = ?",
    ))
    .bind(claim)
    .bind(value.to_string())
    .bind(flag(crit))
    .bind(now)
    .bind(id)
    .bind(sub_id)
    .execute(&mut *c)
    .await
    .map_err(|e| Error::from_db(e, "claim"))?;
    Ok(())
}

/// Deletes claim row `id` (or every claim, with `None`) of subordinate `sub_id`.
pub async fn delete(db: &Db, c: &mut AnyConnection, sub_id: i64, id: Option<i64>) -> Result<()> {
    match id {
        Some(id) => {
            sqlx::query(db.sql(
                "DELETE FROM subordinate_additional_claims WHERE id = ? AND subordinate_id = ?",
            ))
            .bind(id)
            .bind(sub_id)
            .execute(&mut *c)
            .await?
        }
        None => {
            sqlx::query(
                db.sql("DELETE FROM subordinate_additional_claims WHERE subordinate_id = ?"),
            )
            .bind(sub_id)
            .execute(&mut *c)
            .await?
        }
    };
    Ok(())
}
