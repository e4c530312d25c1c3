//! `trust_anchors`: the persistent side of the trust anchor repository.

use pharos_shared::chain::TrustMarkStatusCheck;
use pharos_shared::interop::AnchorEcConstraints;
use pharos_shared::jose::Jwks;
use sqlx::{AnyConnection, Row};

use super::{Db, flag};
use crate::error::{Error, Result};

/// A trust anchor row.
#[derive(Debug, Clone, PartialEq)]
pub struct TrustAnchorRow {
    /// Database id.
    pub id: i64,
    /// Entity identifier.
    pub entity_id: String,
    /// Stored keys.
    pub jwks: Option<Jwks>,
    /// Poll the anchor's keys.
    pub enable_jwks_update: bool,
    /// Poll interval, seconds (0 = derive).
    pub key_poll_interval: i64,
    /// Override of `federation.anchor_ec_constraints` (`None`: the setting).
    pub anchor_ec_constraints: Option<AnchorEcConstraints>,
    /// Listed Trust Mark Issuers without a trust chain to the anchor are trusted on their
    /// self-signed Entity Configuration.
    pub trust_mark_issuer_self_signed: bool,
    /// Whether resolvers ask the status of Trust Marks returned for chains to this anchor.
    pub trust_mark_status: TrustMarkStatusCheck,
    /// Creation time.
    pub created_at: i64,
    /// Last update time.
    pub updated_at: i64,
}

fn from_row(r: &sqlx::any::AnyRow) -> Result<TrustAnchorRow> {
    let jwks: Option<String> = r.try_get("jwks")?;
    let rule: Option<String> = r.try_get("anchor_ec_constraints")?;
    // Only the Admin API writes the column, from the same enum: an unknown value is a damaged
    // row, reported rather than silently read as the setting.
    let anchor_ec_constraints = rule
        .map(|v| v.parse::<AnchorEcConstraints>())
        .transpose()
        .map_err(|e| Error::Internal(format!("trust_anchors.anchor_ec_constraints: {e}")))?;
    Ok(TrustAnchorRow {
        id: r.try_get("id")?,
        entity_id: r.try_get("entity_id")?,
        jwks: jwks.and_then(|j| serde_json::from_str(&j).ok()),
        enable_jwks_update: r.try_get::<i64, _>("enable_jwks_update")? != 0,
        key_poll_interval: r.try_get("key_poll_interval")?,
        anchor_ec_constraints,
        trust_mark_issuer_self_signed: r.try_get::<i64, _>("trust_mark_issuer_self_signed")? != 0,
        trust_mark_status: {
            let word: String = r.try_get("trust_mark_status")?;
            TrustMarkStatusCheck::parse(&word).ok_or_else(|| {
                Error::Internal(format!("trust_anchors.trust_mark_status: {word:?}"))
            })?
        },
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

/// Every trust anchor, ordered by entity identifier.
pub async fn list(db: &Db) -> Result<Vec<TrustAnchorRow>> {
    let rows = sqlx::query(db.sql(
        "SELECT id, entity_id, jwks, enable_jwks_update, key_poll_interval, anchor_ec_constraints, \
         trust_mark_issuer_self_signed, trust_mark_status, created_at, updated_at \
         FROM trust_anchors WHERE entity = ? ORDER BY entity_id",
    ))
    .bind(db.entity())
    .fetch_all(&db.pool)
    .await?;
    rows.iter().map(from_row).collect()
}

/// One trust anchor by entity identifier.
pub async fn get(db: &Db, entity_id: &str) -> Result<Option<TrustAnchorRow>> {
    let row = sqlx::query(db.sql(
        "SELECT id, entity_id, jwks, enable_jwks_update, key_poll_interval, anchor_ec_constraints, \
         trust_mark_issuer_self_signed, trust_mark_status, created_at, updated_at \
         FROM trust_anchors WHERE entity = ? AND entity_id = ?",
    ))
    .bind(db.entity())
    .bind(entity_id)
    .fetch_optional(&db.pool)
    .await?;
    row.as_ref().map(from_row).transpose()
}

/// The writable fields of a trust anchor.
#[derive(Debug, Clone)]
pub struct TrustAnchorWrite {
    /// Entity identifier.
    pub entity_id: String,
    /// Keys.
    pub jwks: Option<Jwks>,
    /// Poll the keys.
    pub enable_jwks_update: bool,
    /// Poll interval.
    pub key_poll_interval: i64,
    /// Override of `federation.anchor_ec_constraints` (`None`: the setting).
    pub anchor_ec_constraints: Option<AnchorEcConstraints>,
    /// Listed Trust Mark Issuers without a trust chain to the anchor are trusted on their
    /// self-signed Entity Configuration.
    pub trust_mark_issuer_self_signed: bool,
    /// Whether resolvers ask the status of Trust Marks returned for chains to this anchor.
    pub trust_mark_status: TrustMarkStatusCheck,
}

fn jwks_text(j: &Option<Jwks>) -> Result<Option<String>> {
    j.as_ref()
        .map(|j| serde_json::to_string(j).map_err(|e| Error::Internal(e.to_string())))
        .transpose()
}

/// Inserts a trust anchor.
pub async fn insert(db: &Db, c: &mut AnyConnection, w: &TrustAnchorWrite, now: i64) -> Result<()> {
    sqlx::query(db.sql(
        "INSERT INTO trust_anchors (entity, entity_id, jwks, enable_jwks_update, key_poll_interval, \
         anchor_ec_constraints, trust_mark_issuer_self_signed, trust_mark_status, created_at, \
         updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    ))
    .bind(db.entity())
    .bind(&w.entity_id)
    .bind(jwks_text(&w.jwks)?)
    .bind(flag(w.enable_jwks_update))
    .bind(w.key_poll_interval)
    .bind(w.anchor_ec_constraints.map(AnchorEcConstraints::as_str))
    .bind(flag(w.trust_mark_issuer_self_signed))
    .bind(w.trust_mark_status.as_str())
    .bind(now)
    .bind(now)
    .execute(&mut *c)
    .await
    .map_err(|e| Error::from_db(e, "trust anchor"))?;
    Ok(())
}

/// Updates trust anchor `id`.
pub async fn update(
    db: &Db,
    c: &mut AnyConnection,
    id: i64,
    w: &TrustAnchorWrite,
    now: i64,
) -> Result<()> {
    sqlx::query(db.sql(
        "UPDATE trust_anchors SET entity_id = ?, jwks = ?, enable_jwks_update = ?, key_poll_interval = ?, \
         anchor_ec_constraints = ?, trust_mark_issuer_self_signed = ?, trust_mark_status = ?, \
         updated_at = ? \
         WHERE id = ? AND entity = ?",
    ))
    .bind(&w.entity_id)
    .bind(jwks_text(&w.jwks)?)
    .bind(flag(w.enable_jwks_update))
    .bind(w.key_poll_interval)
    .bind(w.anchor_ec_constraints.map(AnchorEcConstraints::as_str))
    .bind(flag(w.trust_mark_issuer_self_signed))
    .bind(w.trust_mark_status.as_str())
    .bind(now)
    .bind(id)
    .bind(db.entity())
    .execute(&mut *c)
    .await
    .map_err(|e| Error::from_db(e, "trust anchor"))?;
    Ok(())
}

/// Deletes trust anchor `id` and its endpoint links.
pub async fn delete(db: &Db, c: &mut AnyConnection, id: i64) -> Result<()> {
    sqlx::query(
        db.sql("DELETE FROM federation_endpoint_auth_trust_anchors WHERE trust_anchor_id = ?"),
    )
    .bind(id)
    .execute(&mut *c)
    .await?;
    sqlx::query(db.sql("DELETE FROM trust_anchors WHERE id = ? AND entity = ?"))
        .bind(id)
        .bind(db.entity())
        .execute(&mut *c)
        .await?;
    Ok(())
}

/// Every trust anchor's row id by entity identifier, read on `c` (so a transaction sees the
/// anchors it has just inserted).
pub async fn ids(db: &Db, c: &mut AnyConnection) -> Result<std::collections::HashMap<String, i64>> {
    let rows = sqlx::query(db.sql("SELECT id, entity_id FROM trust_anchors WHERE entity = ?"))
        .bind(db.entity())
        .fetch_all(&mut *c)
        .await?;
    rows.iter()
        .map(|r| Ok((r.try_get("entity_id")?, r.try_get("id")?)))
        .collect()
}
