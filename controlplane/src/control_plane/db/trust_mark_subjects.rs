//! `trust_mark_subjects`: each entity's standing for one issuance spec, and the revocation of
//! the instances issued to it (`issued_trust_marks.revoked_at`) when it loses that standing.
//! Writes take the caller's transaction.

use serde_json::{Map, Value};
use sqlx::{AnyConnection, Row};

use super::Db;
use super::trust_mark_parties::Key;
use super::trust_marks::object;
use crate::error::{Error, Result};

/// A stored subject.
#[derive(Debug, Clone, PartialEq)]
pub struct SubjectRow {
    /// Database id.
    pub id: i64,
    /// The spec it belongs to.
    pub spec_id: i64,
    /// Entity identifier.
    pub entity_id: String,
    /// `active`, `pending`, `blocked` or `inactive`.
    pub status: String,
    /// Extra claims of its marks (over the spec's).
    pub additional_claims: Map<String, Value>,
    /// Free text.
    pub description: String,
    /// Creation time.
    pub created_at: i64,
    /// Last update time.
    pub updated_at: i64,
}

fn from_row(r: &sqlx::any::AnyRow) -> Result<SubjectRow> {
    Ok(SubjectRow {
        id: r.try_get("id")?,
        spec_id: r.try_get("spec_id")?,
        entity_id: r.try_get("entity_id")?,
        status: r.try_get("status")?,
        additional_claims: object(r.try_get("additional_claims")?),
        description: r.try_get("description")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

/// The subjects of spec `spec_id` (only those with `status`, when given), by entity identifier.
pub async fn list(db: &Db, spec_id: i64, status: Option<&str>) -> Result<Vec<SubjectRow>> {
    let rows = sqlx::query(db.sql(
        "SELECT id, spec_id, entity_id, status, additional_claims, description, created_at, updated_at \
         FROM trust_mark_subjects WHERE spec_id = ? AND (? = 1 OR status = ?) ORDER BY entity_id",
    ))
    .bind(spec_id)
    .bind(i64::from(status.is_none()))
    .bind(status.unwrap_or_default())
    .fetch_all(&db.pool)
    .await?;
    rows.iter().map(from_row).collect()
}

/// One subject of spec `spec_id`, by id or entity identifier.
pub async fn get(db: &Db, spec_id: i64, key: Key<'_>) -> Result<Option<SubjectRow>> {
    let (id, name) = key.binds();
    let row = sqlx::query(db.sql(
        "SELECT id, spec_id, entity_id, status, additional_claims, description, created_at, updated_at \
         FROM trust_mark_subjects WHERE spec_id = ? AND (id = ? OR entity_id = ?)",
    ))
    .bind(spec_id)
    .bind(id)
    .bind(name)
    .fetch_optional(&db.pool)
    .await?;
    row.as_ref().map(from_row).transpose()
}

fn claims_text(m: &Map<String, Value>) -> Result<String> {
    serde_json::to_string(m).map_err(|e| Error::Internal(e.to_string()))
}

/// The writable fields of a subject.
#[derive(Debug, Clone, PartialEq)]
pub struct SubjectWrite<'a> {
    /// Status word.
    pub status: &'a str,
    /// Extra claims.
    pub additional_claims: &'a Map<String, Value>,
    /// Free text.
    pub description: &'a str,
}

/// Inserts a subject of spec `spec_id`; returns its id.
pub async fn insert(
    db: &Db,
    c: &mut AnyConnection,
    spec_id: i64,
    entity_id: &str,
    w: &SubjectWrite<'_>,
    now: i64,
) -> Result<i64> {
    sqlx::query(db.sql(
        "INSERT INTO trust_mark_subjects (spec_id, entity_id, status, additional_claims, description, created_at, updated_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?)",
    ))
    .bind(spec_id)
    .bind(entity_id)
    .bind(w.status)
    .bind(claims_text(w.additional_claims)?)
    .bind(w.description)
    .bind(now)
    .bind(now)
    .execute(&mut *c)
    .await
    .map_err(|e| Error::from_db(e, "subject"))?;
    let row = sqlx::query(
        db.sql("SELECT id FROM trust_mark_subjects WHERE spec_id = ? AND entity_id = ?"),
    )
    .bind(spec_id)
    .bind(entity_id)
    .fetch_one(&mut *c)
    .await?;
    Ok(row.try_get("id")?)
}

/// Replaces the writable fields of subject `id`.
pub async fn update(
    db: &Db,
    c: &mut AnyConnection,
    id: i64,
    w: &SubjectWrite<'_>,
    now: i64,
) -> Result<()> {
    sqlx::query(db.sql(
        "UPDATE trust_mark_subjects SET status = ?, additional_claims = ?, description = ?, updated_at = ? \
         WHERE id = ?",
    ))
    .bind(w.status)
    .bind(claims_text(w.additional_claims)?)
    .bind(w.description)
    .bind(now)
    .bind(id)
    .execute(&mut *c)
    .await?;
    Ok(())
}

/// Deletes subject `id`.
pub async fn delete(db: &Db, c: &mut AnyConnection, id: i64) -> Result<()> {
    sqlx::query(db.sql("DELETE FROM trust_mark_subjects WHERE id = ?"))
        .bind(id)
        .execute(&mut *c)
        .await?;
    Ok(())
}

/// How many subjects of spec `spec_id` wait for a decision (`pending`).
pub async fn count_pending(db: &Db, spec_id: i64) -> Result<u64> {
    let (n,): (i64,) = sqlx::query_as(
        db.sql("SELECT COUNT(*) FROM trust_mark_subjects WHERE spec_id = ? AND status = 'pending'"),
    )
    .bind(spec_id)
    .fetch_one(&db.pool)
    .await?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// Revokes (at `now`) every instance of `trust_mark_type` issued to `subject` that is not
/// revoked yet; returns how many. An earlier revocation keeps its time.
pub async fn revoke_issued(
    db: &Db,
    c: &mut AnyConnection,
    trust_mark_type: &str,
    subject: &str,
    now: i64,
) -> Result<u64> {
    let r = sqlx::query(db.sql(
        "UPDATE issued_trust_marks SET revoked_at = ? \
         WHERE entity = ? AND trust_mark_type = ? AND subject = ? AND revoked_at IS NULL",
    ))
    .bind(now)
    .bind(db.entity())
    .bind(trust_mark_type)
    .bind(subject)
    .execute(&mut *c)
    .await?;
    Ok(r.rows_affected())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "trust_mark_subjects_tests.rs"]
mod tests;
