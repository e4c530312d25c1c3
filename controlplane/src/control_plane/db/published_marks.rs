//! `published_trust_marks`: the trust marks we hold, as the Admin API edits them and the
//! refresher renews them. (The snapshot reads the same table in `db/trust_marks.rs`.)

use serde::Serialize;
use serde_json::Value;
use sqlx::{AnyConnection, Row};

use super::Db;
use crate::error::{Error, Result};

/// One held trust mark's configuration and current JWT, as the Admin API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct PublishedRow {
    /// Database id.
    pub id: i64,
    /// Creation time (Unix seconds).
    pub created_at: i64,
    /// Last change by an administrator (Unix seconds); a refresh does not change it.
    pub updated_at: i64,
    /// The type (unique).
    pub trust_mark_type: String,
    /// Who issues it (us, for self-issued marks).
    pub trust_mark_issuer: Option<String>,
    /// The current JWT; absent until first obtained.
    pub trust_mark: Option<String>,
    /// Whether the refresher renews it.
    pub refresh: bool,
    /// Seconds a newly obtained mark must at least live.
    pub min_lifetime: i64,
    /// Renew when the mark has this many seconds left.
    pub refresh_grace_period: i64,
    /// Shortest spacing of two attempts, seconds.
    pub refresh_rate_limit: i64,
    /// How we issue it to ourselves, for self-issued marks.
    #[schema(value_type = Option<Object>)]
    pub self_issuance_spec: Option<Value>,
}

/// What an administrator stores (the JWT is written separately by [`set_mark`] too).
#[derive(Debug, Clone, PartialEq)]
pub struct PublishedWrite {
    /// The type.
    pub trust_mark_type: String,
    /// The issuer.
    pub trust_mark_issuer: Option<String>,
    /// The JWT, when given or self-issued at once.
    pub trust_mark: Option<String>,
    /// Renewed by the refresher.
    pub refresh: bool,
    /// See [`PublishedRow::min_lifetime`].
    pub min_lifetime: i64,
    /// See [`PublishedRow::refresh_grace_period`].
    pub refresh_grace_period: i64,
    /// See [`PublishedRow::refresh_rate_limit`].
    pub refresh_rate_limit: i64,
    /// The self-issuance spec (JSON).
    pub self_issuance_spec: Option<Value>,
}

fn from_row(r: &sqlx::any::AnyRow) -> Result<PublishedRow> {
    let spec: Option<String> = r.try_get("self_issuance_spec")?;
    Ok(PublishedRow {
        id: r.try_get("id")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
        trust_mark_type: r.try_get("trust_mark_type")?,
        trust_mark_issuer: r.try_get("trust_mark_issuer")?,
        trust_mark: r.try_get("trust_mark")?,
        refresh: r.try_get::<i64, _>("refresh")? != 0,
        min_lifetime: r.try_get("min_lifetime")?,
        refresh_grace_period: r.try_get("refresh_grace_period")?,
        refresh_rate_limit: r.try_get("refresh_rate_limit")?,
        self_issuance_spec: spec.and_then(|s| serde_json::from_str(&s).ok()),
    })
}

/// Every held mark, by type.
pub async fn all(db: &Db) -> Result<Vec<PublishedRow>> {
    let rows = sqlx::query(db.sql(
        "SELECT id, created_at, updated_at, trust_mark_type, trust_mark_issuer, trust_mark, \
         refresh, min_lifetime, refresh_grace_period, refresh_rate_limit, self_issuance_spec \
         FROM published_trust_marks WHERE entity = ? ORDER BY trust_mark_type",
    ))
    .bind(db.entity())
    .fetch_all(&db.pool)
    .await?;
    rows.iter().map(from_row).collect()
}

/// One held mark by numeric id or by type.
pub async fn find(db: &Db, key: &str) -> Result<Option<PublishedRow>> {
    Ok(all(db)
        .await?
        .into_iter()
        .find(|r| r.id.to_string() == key || r.trust_mark_type == key))
}

fn spec_text(w: &PublishedWrite) -> Option<String> {
    w.self_issuance_spec.as_ref().map(Value::to_string)
}

/// Adds a held mark; returns its id. A second row of the same type is a conflict.
pub async fn insert(db: &Db, c: &mut AnyConnection, w: &PublishedWrite, now: i64) -> Result<i64> {
    sqlx::query(db.sql(
        "INSERT INTO published_trust_marks (entity, trust_mark_type, trust_mark_issuer, trust_mark, \
         refresh, min_lifetime, refresh_grace_period, refresh_rate_limit, self_issuance_spec, \
         created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    ))
    .bind(db.entity())
    .bind(&w.trust_mark_type)
    .bind(&w.trust_mark_issuer)
    .bind(&w.trust_mark)
    .bind(i64::from(w.refresh))
    .bind(w.min_lifetime)
    .bind(w.refresh_grace_period)
    .bind(w.refresh_rate_limit)
    .bind(spec_text(w))
    .bind(now)
    .bind(now)
    .execute(&mut *c)
    .await
    .map_err(|e| Error::from_db(e, "trust mark of this type"))?;
    let r = sqlx::query(
        db.sql("SELECT id FROM published_trust_marks WHERE entity = ? AND trust_mark_type = ?"),
    )
    .bind(db.entity())
    .bind(&w.trust_mark_type)
    .fetch_one(&mut *c)
    .await?;
    Ok(r.try_get("id")?)
}

/// Replaces held mark `id`'s configuration and JWT.
pub async fn update(
    db: &Db,
    c: &mut AnyConnection,
    id: i64,
    w: &PublishedWrite,
    now: i64,
) -> Result<()> {
    sqlx::query(db.sql(
        "UPDATE published_trust_marks SET trust_mark_type = ?, trust_mark_issuer = ?, \
         trust_mark = ?, refresh = ?, min_lifetime = ?, refresh_grace_period = ?, \
         refresh_rate_limit = ?, self_issuance_spec = ?, updated_at = ? WHERE id = ? AND entity = ?",
    ))
    .bind(&w.trust_mark_type)
    .bind(&w.trust_mark_issuer)
    .bind(&w.trust_mark)
    .bind(i64::from(w.refresh))
    .bind(w.min_lifetime)
    .bind(w.refresh_grace_period)
    .bind(w.refresh_rate_limit)
    .bind(spec_text(w))
    .bind(now)
    .bind(id)
    .bind(db.entity())
    .execute(&mut *c)
    .await
    .map_err(|e| Error::from_db(e, "trust mark of this type"))?;
    Ok(())
}

/// Stores a renewed JWT of held mark `id` (the configuration and `updated_at` stay).
pub async fn set_mark(db: &Db, c: &mut AnyConnection, id: i64, jwt: &str) -> Result<()> {
    sqlx::query(
        db.sql("UPDATE published_trust_marks SET trust_mark = ? WHERE id = ? AND entity = ?"),
    )
    .bind(jwt)
    .bind(id)
    .bind(db.entity())
    .execute(&mut *c)
    .await?;
    Ok(())
}

/// Forgets held mark `id`'s JWT (its issuer withdrew it); the row stays, so the refresher
/// obtains a new one when the issuer issues it again.
pub async fn clear_mark(db: &Db, c: &mut AnyConnection, id: i64) -> Result<()> {
    sqlx::query(
        db.sql("UPDATE published_trust_marks SET trust_mark = NULL WHERE id = ? AND entity = ?"),
    )
    .bind(id)
    .bind(db.entity())
    .execute(&mut *c)
    .await?;
    Ok(())
}

/// Removes held mark `id`.
pub async fn delete(db: &Db, c: &mut AnyConnection, id: i64) -> Result<()> {
    sqlx::query(db.sql("DELETE FROM published_trust_marks WHERE id = ? AND entity = ?"))
        .bind(id)
        .bind(db.entity())
        .execute(&mut *c)
        .await?;
    Ok(())
}
