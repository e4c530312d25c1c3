//! `additional_claims`: every additional claim, of our Entity Configuration, of the general
//! subordinate statement settings, and of one subordinate's statement, told apart by
//! [`Scope`]. Ids are row ids: stable for as long as the claim exists.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value;
use sqlx::any::AnyRow;
use sqlx::{AnyConnection, Row};

use super::{Db, flag, settings};
use crate::error::{Error, Result};

/// Whose claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Our Entity Configuration.
    EntityConfiguration,
    /// Every subordinate statement of a subordinate without claims of its own.
    SubordinateGeneral,
    /// One subordinate's statement (its database id).
    Subordinate(i64),
}

impl Scope {
    fn name(self) -> &'static str {
        match self {
            Self::EntityConfiguration => "entity_configuration",
            Self::SubordinateGeneral => "subordinate_general",
            Self::Subordinate(_) => "subordinate",
        }
    }

    fn subordinate(self) -> Option<i64> {
        match self {
            Self::Subordinate(id) => Some(id),
            _ => None,
        }
    }
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

fn from_row(r: &AnyRow) -> Result<ClaimRow> {
    let value: String = r.try_get("value")?;
    Ok(ClaimRow {
        id: r.try_get("id")?,
        claim: r.try_get("claim")?,
        value: serde_json::from_str(&value).unwrap_or(Value::Null),
        crit: r.try_get::<i64, _>("crit")? != 0,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

/// The claims of `scope`, in id order (the order they were added).
pub async fn list(db: &Db, scope: Scope) -> Result<Vec<ClaimRow>> {
    let rows = match scope.subordinate() {
        Some(sub) => {
            sqlx::query(db.sql(concat!(
                "SELECT id, subordinate_id, claim, value, crit, created_at, updated_at ",
                "FROM additional_claims WHERE entity = ? AND scope = ? AND subordinate_id = ? ORDER BY id"
            )))
            .bind(db.entity())
            .bind(scope.name())
            .bind(sub)
            .fetch_all(&db.pool)
            .await?
        }
        None => {
            sqlx::query(db.sql(concat!(
                "SELECT id, subordinate_id, claim, value, crit, created_at, updated_at ",
                "FROM additional_claims WHERE entity = ? AND scope = ? ORDER BY id"
            )))
            .bind(db.entity())
            .bind(scope.name())
            .fetch_all(&db.pool)
            .await?
        }
    };
    rows.iter().map(from_row).collect()
}

/// Every subordinate's claims by subordinate id (one query for the start-up load).
pub async fn by_subordinate(db: &Db) -> Result<HashMap<i64, Vec<ClaimRow>>> {
    let rows = sqlx::query(db.sql(concat!(
        "SELECT id, subordinate_id, claim, value, crit, created_at, updated_at ",
        "FROM additional_claims WHERE entity = ? AND scope = 'subordinate' ORDER BY id"
    )))
    .bind(db.entity())
    .fetch_all(&db.pool)
    .await?;
    let mut out: HashMap<i64, Vec<ClaimRow>> = HashMap::new();
    for r in &rows {
        out.entry(r.try_get("subordinate_id")?)
            .or_default()
            .push(from_row(r)?);
    }
    Ok(out)
}

/// Adds a claim to `scope`; returns its id. A name already used in the scope is a conflict.
pub async fn insert(
    db: &Db,
    c: &mut AnyConnection,
    scope: Scope,
    claim: &str,
    value: &Value,
    crit: bool,
    now: i64,
) -> Result<i64> {
    sqlx::query(db.sql(
        "INSERT INTO additional_claims (entity, scope, subordinate_id, claim, value, crit, created_at, updated_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    ))
    .bind(db.entity())
    .bind(scope.name())
    .bind(scope.subordinate())
    .bind(claim)
    .bind(value.to_string())
    .bind(flag(crit))
    .bind(now)
    .bind(now)
    .execute(&mut *c)
    .await
    .map_err(|e| Error::from_db(e, "additional claim"))?;
    // The unique (entity, scope, subordinate, claim) key finds the new row on every dialect.
    let r = match scope.subordinate() {
        Some(sub) => {
            sqlx::query(db.sql(
                "SELECT id FROM additional_claims WHERE entity = ? AND scope = ? AND subordinate_id = ? AND claim = ?",
            ))
            .bind(db.entity())
            .bind(scope.name())
            .bind(sub)
            .bind(claim)
            .fetch_one(&mut *c)
            .await?
        }
        None => {
            sqlx::query(db.sql(
                "SELECT id FROM additional_claims WHERE entity = ? AND scope = ? AND subordinate_id IS NULL AND claim = ?",
            ))
            .bind(db.entity())
            .bind(scope.name())
            .bind(claim)
            .fetch_one(&mut *c)
            .await?
        }
    };
    Ok(r.try_get("id")?)
}

/// Changes claim `id` of `scope` (a claim of another scope is left alone).
#[allow(clippy::too_many_arguments)]
pub async fn update(
    db: &Db,
    c: &mut AnyConnection,
    scope: Scope,
    id: i64,
    claim: &str,
    value: &Value,
    crit: bool,
    now: i64,
) -> Result<()> {
    sqlx::query(db.sql(
        "UPDATE additional_claims SET claim = ?, value = ?, crit = ?, updated_at = ? \
         WHERE id = ? AND scope = ? AND entity = ?",
    ))
    .bind(claim)
    .bind(value.to_string())
    .bind(flag(crit))
    .bind(now)
    .bind(id)
    .bind(scope.name())
    .bind(db.entity())
    .execute(&mut *c)
    .await
    .map_err(|e| Error::from_db(e, "additional claim"))?;
    Ok(())
}

/// Deletes claim `id` of `scope`, or with `None` every claim of `scope`.
pub async fn delete(db: &Db, c: &mut AnyConnection, scope: Scope, id: Option<i64>) -> Result<()> {
    let q = match (id, scope.subordinate()) {
        (Some(id), _) => sqlx::query(
            db.sql("DELETE FROM additional_claims WHERE entity = ? AND id = ? AND scope = ?"),
        )
        .bind(db.entity())
        .bind(id)
        .bind(scope.name()),
        (None, Some(sub)) => sqlx::query(db.sql(
            "DELETE FROM additional_claims WHERE entity = ? AND scope = ? AND subordinate_id = ?",
        ))
        .bind(db.entity())
        .bind(scope.name())
        .bind(sub),
        (None, None) => {
            sqlx::query(db.sql("DELETE FROM additional_claims WHERE entity = ? AND scope = ?"))
                .bind(db.entity())
                .bind(scope.name())
        }
    };
    q.execute(&mut *c).await?;
    Ok(())
}

/// Where the general claims were kept before migration 5: a JSON array in `settings`.
const LEGACY_GENERAL: (&str, &str) = (settings::SUBORDINATE, "additional_claims");

/// One element of the legacy array (`{id, claim, value, crit}`; the position-based id is
/// dropped: rows get stable ids).
#[derive(serde::Deserialize)]
struct LegacyClaim {
    claim: String,
    value: Value,
    #[serde(default)]
    crit: bool,
}

/// Moves the legacy general claims array into rows of scope `subordinate_general`, in array
/// order, and removes the setting; a no-op once done. Part of [`Db::migrate`] (in the caller's
/// transaction), so it runs before the first snapshot is built. Elements that are not claims
/// and repeated names (only a hand-edited array has them) are skipped with a warning rather than stopping start-up.
pub async fn move_general_claims(db: &Db, c: &mut AnyConnection, now: i64) -> Result<usize> {
    let (scope, name) = LEGACY_GENERAL;
    let row = sqlx::query(
        db.sql("SELECT value FROM settings WHERE entity = ? AND scope = ? AND name = ?"),
    )
    .bind(db.entity())
    .bind(scope)
    .bind(name)
    .fetch_optional(&mut *c)
    .await?;
    let Some(row) = row else { return Ok(0) };
    let text: String = row.try_get("value")?;
    let items: Vec<Value> = match serde_json::from_str(&text) {
        Ok(Value::Array(a)) => a,
        _ => {
            tracing::warn!("general additional claims setting is not an array; dropped");
            Vec::new()
        }
    };
    let mut moved = 0;
    let mut seen = std::collections::HashSet::new();
    for item in items {
        match serde_json::from_value::<LegacyClaim>(item) {
            Ok(l) if !seen.insert(l.claim.clone()) => {
                tracing::warn!(claim = %l.claim, "skipping a repeated general additional claim");
            }
            Ok(l) => {
                insert(
                    db,
                    c,
                    Scope::SubordinateGeneral,
                    &l.claim,
                    &l.value,
                    l.crit,
                    now,
                )
                .await?;
                moved += 1;
            }
            Err(e) => tracing::warn!(error = %e, "skipping a malformed general additional claim"),
        }
    }
    settings::unset(db, c, scope, name).await?;
    Ok(moved)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "claims_tests.rs"]
mod tests;
