//! `trust_mark_owners` and `trust_mark_issuers`: the owners and issuers (one list per hosted entity) that trust mark
//! types link to (the Admin API's `/trust-marks/owners` and `/trust-marks/issuers`). Reads take
//! the pool; writes take the caller's transaction.

use pharos_shared::jose::Jwks;
use sqlx::{AnyConnection, Row};

use super::Db;
use crate::error::{Error, Result};

/// How a path segment names a row: its numeric id or its natural key (an entity identifier or
/// a trust mark type, neither of which is ever a bare number).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key<'a> {
    /// Database id.
    Id(i64),
    /// Natural key.
    Name(&'a str),
}

impl<'a> Key<'a> {
    /// A number is an id, anything else a natural key.
    pub fn parse(s: &'a str) -> Self {
        s.parse::<i64>().map_or(Self::Name(s), Self::Id)
    }

    /// `(id, name)` binds for `WHERE id = ? OR name = ?` (the unused one never matches).
    pub fn binds(self) -> (i64, &'a str) {
        match self {
            Self::Id(id) => (id, ""),
            Self::Name(n) => (-1, n),
        }
    }
}

/// A trust mark owner.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnerRow {
    /// Database id.
    pub id: i64,
    /// Entity identifier.
    pub entity_id: String,
    /// Keys its delegations are signed with.
    pub jwks: Jwks,
    /// Free text.
    pub description: String,
    /// Creation time.
    pub created_at: i64,
    /// Last update time.
    pub updated_at: i64,
}

/// A trust mark issuer.
#[derive(Debug, Clone, PartialEq)]
pub struct IssuerRow {
    /// Database id.
    pub id: i64,
    /// Entity identifier.
    pub issuer: String,
    /// Free text.
    pub description: String,
    /// Creation time.
    pub created_at: i64,
    /// Last update time.
    pub updated_at: i64,
}

fn owner_from(r: &sqlx::any::AnyRow) -> Result<OwnerRow> {
    let jwks: String = r.try_get("jwks")?;
    Ok(OwnerRow {
        id: r.try_get("id")?,
        entity_id: r.try_get("entity_id")?,
        jwks: serde_json::from_str(&jwks).unwrap_or_default(),
        description: r.try_get("description")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

fn issuer_from(r: &sqlx::any::AnyRow) -> Result<IssuerRow> {
    Ok(IssuerRow {
        id: r.try_get("id")?,
        issuer: r.try_get("issuer")?,
        description: r.try_get("description")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

fn text(j: &Jwks) -> Result<String> {
    serde_json::to_string(j).map_err(|e| Error::Internal(e.to_string()))
}

/// Every owner, by entity identifier.
pub async fn owners(db: &Db) -> Result<Vec<OwnerRow>> {
    let rows = sqlx::query(db.sql(
        "SELECT id, entity_id, jwks, description, created_at, updated_at \
         FROM trust_mark_owners WHERE entity = ? ORDER BY entity_id",
    ))
    .bind(db.entity())
    .fetch_all(&db.pool)
    .await?;
    rows.iter().map(owner_from).collect()
}

/// One owner.
pub async fn owner(db: &Db, key: Key<'_>) -> Result<Option<OwnerRow>> {
    let (id, name) = key.binds();
    let row = sqlx::query(db.sql(
        "SELECT id, entity_id, jwks, description, created_at, updated_at \
         FROM trust_mark_owners WHERE entity = ? AND (id = ? OR entity_id = ?)",
    ))
    .bind(db.entity())
    .bind(id)
    .bind(name)
    .fetch_optional(&db.pool)
    .await?;
    row.as_ref().map(owner_from).transpose()
}

/// Every issuer, by entity identifier.
pub async fn issuers(db: &Db) -> Result<Vec<IssuerRow>> {
    let rows = sqlx::query(db.sql(
        "SELECT id, issuer, description, created_at, updated_at \
         FROM trust_mark_issuers WHERE entity = ? ORDER BY issuer",
    ))
    .bind(db.entity())
    .fetch_all(&db.pool)
    .await?;
    rows.iter().map(issuer_from).collect()
}

/// One issuer.
pub async fn issuer(db: &Db, key: Key<'_>) -> Result<Option<IssuerRow>> {
    let (id, name) = key.binds();
    let row = sqlx::query(db.sql(
        "SELECT id, issuer, description, created_at, updated_at \
         FROM trust_mark_issuers WHERE entity = ? AND (id = ? OR issuer = ?)",
    ))
    .bind(db.entity())
    .bind(id)
    .bind(name)
    .fetch_optional(&db.pool)
    .await?;
    row.as_ref().map(issuer_from).transpose()
}

/// The issuers linked to type `type_id`, by entity identifier.
pub async fn issuers_of_type(db: &Db, type_id: i64) -> Result<Vec<IssuerRow>> {
    let rows = sqlx::query(db.sql(
        "SELECT i.id, i.issuer, i.description, i.created_at, i.updated_at \
         FROM trust_mark_issuers i JOIN trust_mark_type_issuers ti ON ti.issuer_id = i.id \
         WHERE i.entity = ? AND ti.type_id = ? ORDER BY i.issuer",
    ))
    .bind(db.entity())
    .bind(type_id)
    .fetch_all(&db.pool)
    .await?;
    rows.iter().map(issuer_from).collect()
}

/// Inserts an owner; returns its id.
pub async fn insert_owner(
    db: &Db,
    c: &mut AnyConnection,
    entity_id: &str,
    jwks: &Jwks,
    description: &str,
    now: i64,
) -> Result<i64> {
    sqlx::query(db.sql(
        "INSERT INTO trust_mark_owners (entity, entity_id, jwks, description, created_at, updated_at) \
         VALUES (?, ?, ?, ?, ?, ?)",
    ))
    .bind(db.entity())
    .bind(entity_id)
    .bind(text(jwks)?)
    .bind(description)
    .bind(now)
    .bind(now)
    .execute(&mut *c)
    .await
    .map_err(|e| Error::from_db(e, "trust mark owner"))?;
    let row =
        sqlx::query(db.sql("SELECT id FROM trust_mark_owners WHERE entity = ? AND entity_id = ?"))
            .bind(db.entity())
            .bind(entity_id)
            .fetch_one(&mut *c)
            .await?;
    Ok(row.try_get("id")?)
}

/// Updates owner `id`.
pub async fn update_owner(
    db: &Db,
    c: &mut AnyConnection,
    id: i64,
    entity_id: &str,
    jwks: &Jwks,
    description: &str,
    now: i64,
) -> Result<()> {
    sqlx::query(db.sql(
        "UPDATE trust_mark_owners SET entity_id = ?, jwks = ?, description = ?, updated_at = ? \
         WHERE id = ? AND entity = ?",
    ))
    .bind(entity_id)
    .bind(text(jwks)?)
    .bind(description)
    .bind(now)
    .bind(id)
    .bind(db.entity())
    .execute(&mut *c)
    .await
    .map_err(|e| Error::from_db(e, "trust mark owner"))?;
    Ok(())
}

/// Deletes owner `id`; its types keep existing without an owner.
pub async fn delete_owner(db: &Db, c: &mut AnyConnection, id: i64) -> Result<()> {
    sqlx::query(
        db.sql("UPDATE trust_mark_types SET owner_id = NULL WHERE owner_id = ? AND entity = ?"),
    )
    .bind(id)
    .bind(db.entity())
    .execute(&mut *c)
    .await?;
    sqlx::query(db.sql("DELETE FROM trust_mark_owners WHERE id = ? AND entity = ?"))
        .bind(id)
        .bind(db.entity())
        .execute(&mut *c)
        .await?;
    Ok(())
}

/// Inserts an issuer; returns its id.
pub async fn insert_issuer(
    db: &Db,
    c: &mut AnyConnection,
    issuer: &str,
    description: &str,
    now: i64,
) -> Result<i64> {
    sqlx::query(db.sql(
        "INSERT INTO trust_mark_issuers (entity, issuer, description, created_at, updated_at) \
         VALUES (?, ?, ?, ?, ?)",
    ))
    .bind(db.entity())
    .bind(issuer)
    .bind(description)
    .bind(now)
    .bind(now)
    .execute(&mut *c)
    .await
    .map_err(|e| Error::from_db(e, "trust mark issuer"))?;
    let row =
        sqlx::query(db.sql("SELECT id FROM trust_mark_issuers WHERE entity = ? AND issuer = ?"))
            .bind(db.entity())
            .bind(issuer)
            .fetch_one(&mut *c)
            .await?;
    Ok(row.try_get("id")?)
}

/// Updates issuer `id`.
pub async fn update_issuer(
    db: &Db,
    c: &mut AnyConnection,
    id: i64,
    issuer: &str,
    description: &str,
    now: i64,
) -> Result<()> {
    sqlx::query(db.sql(
        "UPDATE trust_mark_issuers SET issuer = ?, description = ?, updated_at = ? \
         WHERE id = ? AND entity = ?",
    ))
    .bind(issuer)
    .bind(description)
    .bind(now)
    .bind(id)
    .bind(db.entity())
    .execute(&mut *c)
    .await
    .map_err(|e| Error::from_db(e, "trust mark issuer"))?;
    Ok(())
}

/// Deletes issuer `id` and its links to types.
pub async fn delete_issuer(db: &Db, c: &mut AnyConnection, id: i64) -> Result<()> {
    sqlx::query(db.sql("DELETE FROM trust_mark_type_issuers WHERE issuer_id = ?"))
        .bind(id)
        .execute(&mut *c)
        .await?;
    sqlx::query(db.sql("DELETE FROM trust_mark_issuers WHERE id = ? AND entity = ?"))
        .bind(id)
        .bind(db.entity())
        .execute(&mut *c)
        .await?;
    Ok(())
}
