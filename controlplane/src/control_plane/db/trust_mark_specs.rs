//! `trust_mark_specs`: what we issue for each trust mark type (the Admin API's
//! `/trust-marks/issuance-spec`). The snapshot reads them through [`super::trust_marks`]; the
//! Admin API reads and writes the rows here, writes in the caller's transaction.

use serde_json::{Map, Value};
use sqlx::{AnyConnection, Row};

use super::Db;
use super::trust_mark_parties::Key;
use super::trust_marks::object;
use crate::error::{Error, Result};

/// The writable fields of a spec, already validated.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SpecWrite {
    /// The type issued.
    pub trust_mark_type: String,
    /// Seconds each mark is valid (0 = no `exp`).
    pub lifetime: i64,
    /// `ref` claim.
    pub ref_uri: Option<String>,
    /// `logo_uri` claim.
    pub logo_uri: Option<String>,
    /// The owner's delegation JWT.
    pub delegation_jwt: Option<String>,
    /// Extra claims of every mark.
    pub additional_claims: Map<String, Value>,
    /// Free text.
    pub description: String,
    /// `{mode, checker, check_cache_ttl}`, when configured.
    pub eligibility_config: Option<Value>,
    /// Seconds an issued JWT may be handed out again.
    pub cache_ttl: i64,
}

/// A stored spec.
#[derive(Debug, Clone, PartialEq)]
pub struct SpecRow {
    /// Database id.
    pub id: i64,
    /// The fields.
    pub spec: SpecWrite,
    /// Creation time.
    pub created_at: i64,
    /// Last update time.
    pub updated_at: i64,
}

const COLUMNS: &str = "SELECT id, trust_mark_type, lifetime, ref_uri, logo_uri, delegation_jwt, \
     additional_claims, description, eligibility_config, cache_ttl, created_at, updated_at \
     FROM trust_mark_specs";

fn from_row(r: &sqlx::any::AnyRow) -> Result<SpecRow> {
    let eligibility: Option<String> = r.try_get("eligibility_config")?;
    Ok(SpecRow {
        id: r.try_get("id")?,
        spec: SpecWrite {
            trust_mark_type: r.try_get("trust_mark_type")?,
            lifetime: r.try_get("lifetime")?,
            ref_uri: r.try_get("ref_uri")?,
            logo_uri: r.try_get("logo_uri")?,
            delegation_jwt: r.try_get("delegation_jwt")?,
            additional_claims: object(r.try_get("additional_claims")?),
            description: r.try_get("description")?,
            eligibility_config: eligibility.and_then(|t| serde_json::from_str(&t).ok()),
            cache_ttl: r.try_get("cache_ttl")?,
        },
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

/// Every spec, by type.
pub async fn list(db: &Db) -> Result<Vec<SpecRow>> {
    let sql = db.sql_built(format!(
        "{COLUMNS} WHERE entity = ? ORDER BY trust_mark_type"
    ));
    let rows = sqlx::query(sql)
        .bind(db.entity())
        .fetch_all(&db.pool)
        .await?;
    rows.iter().map(from_row).collect()
}

/// One spec by id or type.
pub async fn get(db: &Db, key: Key<'_>) -> Result<Option<SpecRow>> {
    let (id, name) = key.binds();
    let row = sqlx::query(db.sql(
        "SELECT id, trust_mark_type, lifetime, ref_uri, logo_uri, delegation_jwt, \
         additional_claims, description, eligibility_config, cache_ttl, created_at, updated_at \
         FROM trust_mark_specs WHERE entity = ? AND (id = ? OR trust_mark_type = ?)",
    ))
    .bind(db.entity())
    .bind(id)
    .bind(name)
    .fetch_optional(&db.pool)
    .await?;
    row.as_ref().map(from_row).transpose()
}

fn json_text(v: &impl serde::Serialize) -> Result<String> {
    serde_json::to_string(v).map_err(|e| Error::Internal(e.to_string()))
}

/// Inserts a spec; returns its id.
pub async fn insert(db: &Db, c: &mut AnyConnection, w: &SpecWrite, now: i64) -> Result<i64> {
    sqlx::query(db.sql(
        "INSERT INTO trust_mark_specs (entity, trust_mark_type, lifetime, ref_uri, logo_uri, delegation_jwt, \
         additional_claims, description, eligibility_config, cache_ttl, created_at, updated_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    ))
    .bind(db.entity())
    .bind(&w.trust_mark_type)
    .bind(w.lifetime)
    .bind(w.ref_uri.as_deref())
    .bind(w.logo_uri.as_deref())
    .bind(w.delegation_jwt.as_deref())
    .bind(json_text(&w.additional_claims)?)
    .bind(&w.description)
    .bind(w.eligibility_config.as_ref().map(json_text).transpose()?)
    .bind(w.cache_ttl)
    .bind(now)
    .bind(now)
    .execute(&mut *c)
    .await
    .map_err(|e| Error::from_db(e, "issuance spec"))?;
    let row = sqlx::query(
        db.sql("SELECT id FROM trust_mark_specs WHERE entity = ? AND trust_mark_type = ?"),
    )
    .bind(db.entity())
    .bind(&w.trust_mark_type)
    .fetch_one(&mut *c)
    .await?;
    Ok(row.try_get("id")?)
}

/// Replaces the fields of spec `id`.
pub async fn update(
    db: &Db,
    c: &mut AnyConnection,
    id: i64,
    w: &SpecWrite,
    now: i64,
) -> Result<()> {
    sqlx::query(db.sql(
        "UPDATE trust_mark_specs SET trust_mark_type = ?, lifetime = ?, ref_uri = ?, logo_uri = ?, \
         delegation_jwt = ?, additional_claims = ?, description = ?, eligibility_config = ?, \
         cache_ttl = ?, updated_at = ? WHERE id = ? AND entity = ?",
    ))
    .bind(&w.trust_mark_type)
    .bind(w.lifetime)
    .bind(w.ref_uri.as_deref())
    .bind(w.logo_uri.as_deref())
    .bind(w.delegation_jwt.as_deref())
    .bind(json_text(&w.additional_claims)?)
    .bind(&w.description)
    .bind(w.eligibility_config.as_ref().map(json_text).transpose()?)
    .bind(w.cache_ttl)
    .bind(now)
    .bind(id)
    .bind(db.entity())
    .execute(&mut *c)
    .await
    .map_err(|e| Error::from_db(e, "issuance spec"))?;
    Ok(())
}

/// Deletes spec `id` with its subjects.
pub async fn delete(db: &Db, c: &mut AnyConnection, id: i64) -> Result<()> {
    sqlx::query(db.sql("DELETE FROM trust_mark_subjects WHERE spec_id = ?"))
        .bind(id)
        .execute(&mut *c)
        .await?;
    sqlx::query(db.sql("DELETE FROM trust_mark_specs WHERE id = ? AND entity = ?"))
        .bind(id)
        .bind(db.entity())
        .execute(&mut *c)
        .await?;
    Ok(())
}
