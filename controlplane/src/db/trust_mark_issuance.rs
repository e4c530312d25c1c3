//! `issued_trust_marks`: recording an instance the data plane has signed (the status and
//! listing endpoints answer from these rows, loaded into the snapshot). The write takes the
//! caller's transaction (see `control_plane::Write`).

use pharos_shared::trust_mark_issuer::IssuedMark;
use sqlx::AnyConnection;

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
