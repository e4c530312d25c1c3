//! `issued_trust_marks`: recording an instance the data plane has signed (the status and
//! listing endpoints answer from these rows, loaded into the snapshot), finding the one a
//! subject holds (handed out again instead of a new one), and pruning expired ones. Writes
//! take the caller's transaction (see `control_plane::Write`).

use pharos_shared::trust_mark_issuer::IssuedMark;
use sqlx::AnyConnection;

use super::Db;
use super::trust_marks::issued_from_row;
use crate::error::Result;

/// Expired instances deleted by one write: each is announced to the replicas by its `jti`, and
/// a batch must fit one announcement (else every replica would reload everything).
pub const PRUNE_BATCH: i64 = 100;

/// Records an issued instance with its signed form.
pub async fn insert_issued(db: &Db, c: &mut AnyConnection, m: &IssuedMark) -> Result<()> {
    sqlx::query(db.sql(
        "INSERT INTO issued_trust_marks (entity, jti, trust_mark_type, subject, issued_at, expires_at, \
         revoked_at, trust_mark) VALUES (?, ?, ?, ?, ?, ?, NULL, ?)",
    ))
    .bind(db.entity())
    .bind(&m.jti)
    .bind(&m.trust_mark_type)
    .bind(&m.subject)
    .bind(m.issued_at)
    .bind(m.expires_at)
    .bind(m.signed.as_ref().map(|s| s.token.to_string()))
    .execute(&mut *c)
    .await?;
    Ok(())
}

/// The newest instance of `trust_mark_type` issued to `subject` that was kept with its signed
/// form (revoked or expired ones included: the caller judges).
pub async fn newest_signed(
    db: &Db,
    trust_mark_type: &str,
    subject: &str,
) -> Result<Option<IssuedMark>> {
    let row = sqlx::query(db.sql(
        "SELECT jti, trust_mark_type, subject, issued_at, expires_at, revoked_at, trust_mark \
         FROM issued_trust_marks \
         WHERE entity = ? AND trust_mark_type = ? AND subject = ? AND trust_mark IS NOT NULL \
         ORDER BY issued_at DESC, jti DESC LIMIT 1",
    ))
    .bind(db.entity())
    .bind(trust_mark_type)
    .bind(subject)
    .fetch_optional(&db.pool)
    .await?;
    row.as_ref().map(issued_from_row).transpose()
}

/// Up to [`PRUNE_BATCH`] instances expired at `now` (their `exp` passed), oldest first.
pub async fn expired(db: &Db, now: i64) -> Result<Vec<String>> {
    let rows: Vec<(String,)> = sqlx::query_as(db.sql(
        "SELECT jti FROM issued_trust_marks WHERE entity = ? AND expires_at IS NOT NULL \
         AND expires_at <= ? ORDER BY expires_at LIMIT ?",
    ))
    .bind(db.entity())
    .bind(now)
    .bind(PRUNE_BATCH)
    .fetch_all(&db.pool)
    .await?;
    Ok(rows.into_iter().map(|(j,)| j).collect())
}

/// Deletes instance `jti` if it expired at `now` (a row renewed meanwhile is kept).
pub async fn delete_expired(db: &Db, c: &mut AnyConnection, jti: &str, now: i64) -> Result<u64> {
    let r = sqlx::query(db.sql(
        "DELETE FROM issued_trust_marks WHERE jti = ? AND expires_at IS NOT NULL \
         AND expires_at <= ? AND entity = ?",
    ))
    .bind(jti)
    .bind(now)
    .bind(db.entity())
    .execute(&mut *c)
    .await?;
    Ok(r.rows_affected())
}
