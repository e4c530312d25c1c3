//! The writes of the Trust Mark Issuer's federation side: recording an issued instance
//! (`issued_trust_marks`) and storing a trust mark request as a pending subject
//! (`trust_mark_subjects`), plus the history row each leaves (`trust_mark_events`). Every write
//! takes the caller's transaction (see `control_plane::Write`).

use pharos_shared::trust_mark_issuer::{IssuedMark, SubjectStatus};
use sqlx::{AnyConnection, Row};

use super::Db;
use crate::error::Result;

/// Records an issued instance.
pub async fn insert_issued(db: &Db, c: &mut AnyConnection, m: &IssuedMark) -> Result<()> {
    sqlx::query(db.sql(
        "INSERT INTO issued_trust_marks (jti, trust_mark_type, subject, issued_at, expires_at, \
         revoked_at) VALUES (?, ?, ?, ?, ?, NULL)",
    ))
    .bind(&m.jti)
    .bind(&m.trust_mark_type)
    .bind(&m.subject)
    .bind(m.issued_at)
    .bind(m.expires_at)
    .execute(&mut *c)
    .await?;
    Ok(())
}

/// The id of the issuance spec of `trust_mark_type`, if there is one.
pub async fn spec_id(db: &Db, trust_mark_type: &str) -> Result<Option<i64>> {
    let row = sqlx::query(db.sql("SELECT id FROM trust_mark_specs WHERE trust_mark_type = ?"))
        .bind(trust_mark_type)
        .fetch_optional(&db.pool)
        .await?;
    Ok(row.map(|r| r.try_get("id")).transpose()?)
}

/// The stored subject `entity_id` of spec `spec_id`: its id and status (an unknown word reads
/// as `inactive`, as the snapshot reads it).
pub async fn subject(
    db: &Db,
    spec_id: i64,
    entity_id: &str,
) -> Result<Option<(i64, SubjectStatus)>> {
    let row = sqlx::query(
        db.sql("SELECT id, status FROM trust_mark_subjects WHERE spec_id = ? AND entity_id = ?"),
    )
    .bind(spec_id)
    .bind(entity_id)
    .fetch_optional(&db.pool)
    .await?;
    let Some(r) = row else { return Ok(None) };
    let status: String = r.try_get("status")?;
    Ok(Some((
        r.try_get("id")?,
        SubjectStatus::parse(&status).unwrap_or(SubjectStatus::Inactive),
    )))
}

/// Stores a new subject of spec `spec_id` as `pending`, without extra claims.
pub async fn insert_pending_subject(
    db: &Db,
    c: &mut AnyConnection,
    spec_id: i64,
    entity_id: &str,
    now: i64,
) -> Result<()> {
    sqlx::query(db.sql(
        "INSERT INTO trust_mark_subjects (spec_id, entity_id, status, additional_claims, \
         description, created_at, updated_at) VALUES (?, ?, 'pending', '{}', '', ?, ?)",
    ))
    .bind(spec_id)
    .bind(entity_id)
    .bind(now)
    .bind(now)
    .execute(&mut *c)
    .await?;
    Ok(())
}

/// Sets subject `id`'s status.
pub async fn set_subject_status(
    db: &Db,
    c: &mut AnyConnection,
    id: i64,
    status: SubjectStatus,
    now: i64,
) -> Result<()> {
    sqlx::query(db.sql("UPDATE trust_mark_subjects SET status = ?, updated_at = ? WHERE id = ?"))
        .bind(status.as_str())
        .bind(now)
        .bind(id)
        .execute(&mut *c)
        .await?;
    Ok(())
}

/// A new history row of a trust mark type (and subject).
#[derive(Debug, Clone)]
pub struct NewMarkEvent<'a> {
    /// The type.
    pub trust_mark_type: &'a str,
    /// The subject, when the event is about one.
    pub subject: Option<&'a str>,
    /// Event type, e.g. `requested`.
    pub kind: &'a str,
    /// The subject's status after the event.
    pub status: Option<&'a str>,
    /// Detail.
    pub message: Option<String>,
    /// Who made the change.
    pub actor: Option<&'a str>,
}

/// Records a history row inside the caller's transaction.
pub async fn record_event(
    db: &Db,
    c: &mut AnyConnection,
    now: i64,
    e: &NewMarkEvent<'_>,
) -> Result<()> {
    sqlx::query(db.sql(
        "INSERT INTO trust_mark_events (trust_mark_type, subject, occurred_at, type, status, \
         message, actor) VALUES (?, ?, ?, ?, ?, ?, ?)",
    ))
    .bind(e.trust_mark_type)
    .bind(e.subject)
    .bind(now)
    .bind(e.kind)
    .bind(e.status)
    .bind(e.message.as_deref())
    .bind(e.actor)
    .execute(&mut *c)
    .await?;
    Ok(())
}
