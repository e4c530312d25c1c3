//! The one query the subordinate key refresher needs at boot: which subordinates poll their
//! keys, without loading the other columns and child rows of 100,000 subordinates.

use pharos_shared::subordinate::SubordinateStatus;
use sqlx::Row;

use super::Db;
use crate::error::Result;

/// A subordinate with `enable_jwks_update`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Polled {
    /// Entity identifier.
    pub entity_id: String,
    /// Where it stands.
    pub status: SubordinateStatus,
    /// Poll interval, seconds (0 = derive).
    pub jwks_poll_interval: i64,
}

/// Every subordinate of this entity with `enable_jwks_update`.
pub async fn polled(db: &Db) -> Result<Vec<Polled>> {
    let rows = sqlx::query(db.sql(
        "SELECT entity_id, status, jwks_poll_interval FROM subordinates \
         WHERE entity = ? AND enable_jwks_update <> 0",
    ))
    .bind(db.entity())
    .fetch_all(&db.pool)
    .await?;
    rows.iter()
        .map(|r| {
            let entity_id: String = r.try_get("entity_id")?;
            Ok(Polled {
                status: super::subordinates::stored_status(
                    &entity_id,
                    &r.try_get::<String, _>("status")?,
                ),
                entity_id,
                jwks_poll_interval: r.try_get("jwks_poll_interval")?,
            })
        })
        .collect()
}
