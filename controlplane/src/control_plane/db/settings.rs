//! `settings`: small JSON documents addressed by (scope, name), e.g. the Entity Configuration
//! lifetime and metadata, or the current signing algorithm.

use serde_json::Value;
use sqlx::{AnyConnection, Row};

use super::{Db, Dialect};
use crate::error::Result;

/// Scope of Entity Configuration settings.
pub const EC: &str = "entity_configuration";
/// Scope of the general (all-subordinates) statement settings.
pub const SUBORDINATE: &str = "subordinate_statement";
/// Scope of signing settings.
pub const SIGNING: &str = "signing";

/// Creates the setting `scope`/`name` with the value `null` unless it exists, on a connection
/// of its own (one idempotent statement on the pool). The Admin API's cross-replica write lock
/// is such a row, which every write locks in its own transaction: creating it inside that
/// transaction would take a gap lock on MariaDB that a second creator's insert waits on.
/// SQLite needs no such row (its writer is alone); nothing is done there.
pub async fn ensure_row(db: &Db, scope: &str, name: &str) -> Result<()> {
    let insert = match db.dialect {
        Dialect::Sqlite => return Ok(()),
        Dialect::Postgres => {
            "INSERT INTO settings (entity, scope, name, value) VALUES (?, ?, ?, 'null') \
             ON CONFLICT DO NOTHING"
        }
        Dialect::Mysql => {
            "INSERT IGNORE INTO settings (entity, scope, name, value) VALUES (?, ?, ?, 'null')"
        }
    };
    sqlx::query(db.sql(insert))
        .bind(db.entity())
        .bind(scope)
        .bind(name)
        .execute(&db.pool)
        .await?;
    Ok(())
}

/// Reads one setting; `None` when unset.
pub async fn get(db: &Db, scope: &str, name: &str) -> Result<Option<Value>> {
    let row = sqlx::query(
        db.sql("SELECT value FROM settings WHERE entity = ? AND scope = ? AND name = ?"),
    )
    .bind(db.entity())
    .bind(scope)
    .bind(name)
    .fetch_optional(&db.pool)
    .await?;
    Ok(match row {
        Some(r) => {
            let text: String = r.try_get("value")?;
            serde_json::from_str(&text).ok()
        }
        None => None,
    })
}

/// Reads one setting in the caller's transaction; `None` when unset.
pub async fn get_in(
    db: &Db,
    c: &mut AnyConnection,
    scope: &str,
    name: &str,
) -> Result<Option<Value>> {
    let row = sqlx::query(
        db.sql("SELECT value FROM settings WHERE entity = ? AND scope = ? AND name = ?"),
    )
    .bind(db.entity())
    .bind(scope)
    .bind(name)
    .fetch_optional(&mut *c)
    .await?;
    Ok(match row {
        Some(r) => {
            let text: String = r.try_get("value")?;
            serde_json::from_str(&text).ok()
        }
        None => None,
    })
}

/// Removes one setting (no-op when unset).
pub async fn unset(db: &Db, c: &mut AnyConnection, scope: &str, name: &str) -> Result<()> {
    sqlx::query(db.sql("DELETE FROM settings WHERE entity = ? AND scope = ? AND name = ?"))
        .bind(db.entity())
        .bind(scope)
        .bind(name)
        .execute(&mut *c)
        .await?;
    Ok(())
}

/// Writes one setting (delete + insert: portable across the three dialects, atomic inside the
/// caller's transaction).
pub async fn set(
    db: &Db,
    c: &mut AnyConnection,
    scope: &str,
    name: &str,
    value: &Value,
) -> Result<()> {
    sqlx::query(db.sql("DELETE FROM settings WHERE entity = ? AND scope = ? AND name = ?"))
        .bind(db.entity())
        .bind(scope)
        .bind(name)
        .execute(&mut *c)
        .await?;
    sqlx::query(db.sql("INSERT INTO settings (entity, scope, name, value) VALUES (?, ?, ?, ?)"))
        .bind(db.entity())
        .bind(scope)
        .bind(name)
        .bind(value.to_string())
        .execute(&mut *c)
        .await?;
    Ok(())
}
