//! `federation_endpoints`, their auth trust anchors, and the legacy paths still served.

use serde_json::Value;
use sqlx::{AnyConnection, Row};

use super::{Db, flag};
use crate::error::{Error, Result};

/// A federation endpoint row with its auth trust anchors' entity identifiers.
#[derive(Debug, Clone, PartialEq)]
pub struct EndpointRow {
    /// Database id.
    pub id: i64,
    /// Endpoint type identifier.
    pub kind: String,
    /// Served path (`None` = disabled).
    pub path: Option<String>,
    /// Published URL override.
    pub url: Option<String>,
    /// Client authentication required.
    pub auth_enabled: bool,
    /// Type-specific configuration.
    pub config: Value,
    /// Creation time.
    pub created_at: i64,
    /// Last update time.
    pub updated_at: i64,
    /// Trust anchors whose members may authenticate.
    pub auth_trust_anchors: Vec<String>,
}

/// The writable fields of an endpoint.
#[derive(Debug, Clone)]
pub struct EndpointWrite {
    /// Endpoint type identifier.
    pub kind: String,
    /// Served path.
    pub path: Option<String>,
    /// URL override.
    pub url: Option<String>,
    /// Client authentication.
    pub auth_enabled: bool,
    /// Configuration as stored.
    pub config: Value,
}

fn from_row(r: &sqlx::any::AnyRow) -> Result<EndpointRow> {
    let config: String = r.try_get("config")?;
    Ok(EndpointRow {
        id: r.try_get("id")?,
        kind: r.try_get("type")?,
        path: r.try_get("path")?,
        url: r.try_get("url")?,
        auth_enabled: r.try_get::<i64, _>("auth_enabled")? != 0,
        config: serde_json::from_str(&config).unwrap_or(Value::Object(Default::default())),
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
        auth_trust_anchors: Vec::new(),
    })
}

/// Every endpoint, ordered by type, with its auth trust anchors.
pub async fn list(db: &Db) -> Result<Vec<EndpointRow>> {
    let rows = sqlx::query(db.sql(
        "SELECT id, type, path, url, auth_enabled, config, created_at, updated_at \
         FROM federation_endpoints WHERE entity = ? ORDER BY type",
    ))
    .bind(db.entity())
    .fetch_all(&db.pool)
    .await?;
    let mut out = rows.iter().map(from_row).collect::<Result<Vec<_>>>()?;
    let links = sqlx::query(db.sql(
        "SELECT j.endpoint_id, t.entity_id FROM federation_endpoint_auth_trust_anchors j \
         JOIN trust_anchors t ON t.id = j.trust_anchor_id WHERE t.entity = ? ORDER BY t.entity_id",
    ))
    .bind(db.entity())
    .fetch_all(&db.pool)
    .await?;
    for l in links {
        let id: i64 = l.try_get("endpoint_id")?;
        let ta: String = l.try_get("entity_id")?;
        if let Some(e) = out.iter_mut().find(|e| e.id == id) {
            e.auth_trust_anchors.push(ta);
        }
    }
    Ok(out)
}

/// One endpoint by type.
pub async fn get(db: &Db, kind: &str) -> Result<Option<EndpointRow>> {
    Ok(list(db).await?.into_iter().find(|e| e.kind == kind))
}

/// Inserts an endpoint; the caller has checked that the type is free.
pub async fn insert(db: &Db, c: &mut AnyConnection, w: &EndpointWrite, now: i64) -> Result<i64> {
    sqlx::query(db.sql(
        "INSERT INTO federation_endpoints (entity, type, path, url, auth_enabled, config, created_at, updated_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    ))
    .bind(db.entity())
    .bind(&w.kind)
    .bind(&w.path)
    .bind(&w.url)
    .bind(flag(w.auth_enabled))
    .bind(w.config.to_string())
    .bind(now)
    .bind(now)
    .execute(&mut *c)
    .await
    .map_err(|e| Error::from_db(e, "an endpoint with this type or path"))?;
    let row =
        sqlx::query(db.sql("SELECT id FROM federation_endpoints WHERE entity = ? AND type = ?"))
            .bind(db.entity())
            .bind(&w.kind)
            .fetch_one(&mut *c)
            .await?;
    Ok(row.try_get("id")?)
}

/// Replaces the writable fields of endpoint `id`.
pub async fn update(
    db: &Db,
    c: &mut AnyConnection,
    id: i64,
    w: &EndpointWrite,
    now: i64,
) -> Result<()> {
    sqlx::query(db.sql(
        "UPDATE federation_endpoints SET path = ?, url = ?, auth_enabled = ?, config = ?, updated_at = ? \
         WHERE id = ? AND entity = ?",
    ))
    .bind(&w.path)
    .bind(&w.url)
    .bind(flag(w.auth_enabled))
    .bind(w.config.to_string())
    .bind(now)
    .bind(id)
    .bind(db.entity())
    .execute(&mut *c)
    .await
    .map_err(|e| Error::from_db(e, "an endpoint with this path"))?;
    Ok(())
}

/// Deletes endpoint `id` and its trust anchor links.
pub async fn delete(db: &Db, c: &mut AnyConnection, id: i64) -> Result<()> {
    sqlx::query(db.sql("DELETE FROM federation_endpoint_auth_trust_anchors WHERE endpoint_id = ?"))
        .bind(id)
        .execute(&mut *c)
        .await?;
    sqlx::query(db.sql("DELETE FROM federation_endpoints WHERE id = ? AND entity = ?"))
        .bind(id)
        .bind(db.entity())
        .execute(&mut *c)
        .await?;
    Ok(())
}

/// Replaces the auth trust anchors of endpoint `id` with `ta_ids` (trust anchor row ids).
pub async fn set_auth_trust_anchors(
    db: &Db,
    c: &mut AnyConnection,
    id: i64,
    ta_ids: &[i64],
) -> Result<()> {
    sqlx::query(db.sql("DELETE FROM federation_endpoint_auth_trust_anchors WHERE endpoint_id = ?"))
        .bind(id)
        .execute(&mut *c)
        .await?;
    for ta in ta_ids {
        sqlx::query(db.sql(
            "INSERT INTO federation_endpoint_auth_trust_anchors (endpoint_id, trust_anchor_id) VALUES (?, ?)",
        ))
        .bind(id)
        .bind(*ta)
        .execute(&mut *c)
        .await?;
    }
    Ok(())
}

/// Legacy paths that have not expired at `now`: (path, type, expires_at).
pub async fn legacy_paths(db: &Db, now: i64) -> Result<Vec<(String, String, i64)>> {
    let rows = sqlx::query(
        db.sql("SELECT path, type, expires_at FROM legacy_endpoint_paths WHERE entity = ? AND expires_at > ?"),
    )
    .bind(db.entity())
    .bind(now)
    .fetch_all(&db.pool)
    .await?;
    rows.iter()
        .map(|r| {
            Ok((
                r.try_get("path")?,
                r.try_get("type")?,
                r.try_get("expires_at")?,
            ))
        })
        .collect()
}

/// Keeps `path` served for `kind` until `expires_at`; prunes expired entries on the way.
pub async fn add_legacy_path(
    db: &Db,
    c: &mut AnyConnection,
    path: &str,
    kind: &str,
    expires_at: i64,
    now: i64,
) -> Result<()> {
    sqlx::query(db.sql(
        "DELETE FROM legacy_endpoint_paths WHERE entity = ? AND (path = ? OR expires_at <= ?)",
    ))
    .bind(db.entity())
    .bind(path)
    .bind(now)
    .execute(&mut *c)
    .await?;
    sqlx::query(db.sql(
        "INSERT INTO legacy_endpoint_paths (entity, path, type, expires_at) VALUES (?, ?, ?, ?)",
    ))
    .bind(db.entity())
    .bind(path)
    .bind(kind)
    .bind(expires_at)
    .execute(&mut *c)
    .await?;
    Ok(())
}

/// A path that becomes current again is no longer legacy.
pub async fn remove_legacy_path(db: &Db, c: &mut AnyConnection, path: &str) -> Result<()> {
    sqlx::query(db.sql("DELETE FROM legacy_endpoint_paths WHERE entity = ? AND path = ?"))
        .bind(db.entity())
        .bind(path)
        .execute(&mut *c)
        .await?;
    Ok(())
}
