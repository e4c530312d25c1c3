//! `jtis_used`: client assertion identifiers already accepted (the `db` replay store), kept
//! until the assertion expires so that a replay is refused across restarts and processes.

use super::Db;
use crate::error::Result;

/// Records `jti` until `expires_at`. Returns `false` when it was recorded before (a replay).
/// The primary key makes check-and-record one atomic statement, also across processes.
pub async fn record(db: &Db, jti: &str, expires_at: i64, now: i64) -> Result<bool> {
    let r =
        sqlx::query(db.sql("INSERT INTO jtis_used (jti, expires_at, created_at) VALUES (?, ?, ?)"))
            .bind(jti)
            .bind(expires_at)
            .bind(now)
            .execute(&db.pool)
            .await;
    match r {
        Ok(_) => Ok(true),
        Err(sqlx::Error::Database(d)) if d.is_unique_violation() => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Deletes records that expired before `now`, in the caller's transaction `c`; returns how
/// many.
pub async fn cleanup(db: &Db, c: &mut sqlx::AnyConnection, now: i64) -> Result<u64> {
    let r = sqlx::query(db.sql("DELETE FROM jtis_used WHERE expires_at < ?"))
        .bind(now)
        .execute(c)
        .await?;
    Ok(r.rows_affected())
}
