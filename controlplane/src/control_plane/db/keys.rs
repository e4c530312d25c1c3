//! `signing_keys`: our own keys (the `federation` set, with private keys when they are kept in
//! the database) and API-managed public keys (the `api` set), with their lifecycle times.

use pharos_shared::jose::Jwk;
use sqlx::{AnyConnection, Row};

use super::Db;
use crate::error::{Error, Result};

/// Key set of keys Pharos signs with.
pub const FEDERATION: &str = "federation";
/// Key set of API-managed public keys (held elsewhere, only published by us).
pub const API: &str = "api";

/// One stored key.
#[derive(Debug, Clone)]
pub struct KeyRow {
    /// Key id (RFC 7638 thumbprint for generated keys).
    pub kid: String,
    /// `federation` or `api`.
    pub key_set: String,
    /// JWS algorithm.
    pub alg: String,
    /// Public JWK.
    pub public_jwk: Jwk,
    /// PKCS#8 PEM when the private key lives in the database.
    pub private_pem: Option<String>,
    /// Issued at.
    pub iat: i64,
    /// Not before.
    pub nbf: i64,
    /// Expiry, if any.
    pub exp: Option<i64>,
    /// Revocation time, if revoked.
    pub revoked_at: Option<i64>,
    /// Revocation reason.
    pub reason: Option<String>,
}

/// All keys of every set (of this entity).
pub async fn list(db: &Db) -> Result<Vec<KeyRow>> {
    let rows = sqlx::query(db.sql(
        "SELECT kid, key_set, alg, public_jwk, private_pem, iat, nbf, exp, revoked_at, reason \
         FROM signing_keys WHERE entity = ? ORDER BY nbf, kid",
    ))
    .bind(db.entity())
    .fetch_all(&db.pool)
    .await?;
    rows.iter()
        .map(|r| {
            let jwk: String = r.try_get("public_jwk")?;
            Ok(KeyRow {
                kid: r.try_get("kid")?,
                key_set: r.try_get("key_set")?,
                alg: r.try_get("alg")?,
                public_jwk: serde_json::from_str(&jwk)
                    .map_err(|e| Error::Internal(format!("stored JWK is not JSON: {e}")))?,
                private_pem: r.try_get("private_pem")?,
                iat: r.try_get("iat")?,
                nbf: r.try_get("nbf")?,
                exp: r.try_get("exp")?,
                revoked_at: r.try_get("revoked_at")?,
                reason: r.try_get("reason")?,
            })
        })
        .collect()
}

/// Stores a new key.
pub async fn insert(db: &Db, c: &mut AnyConnection, k: &KeyRow) -> Result<()> {
    sqlx::query(db.sql(
        "INSERT INTO signing_keys (entity, kid, key_set, alg, public_jwk, private_pem, iat, nbf, exp, revoked_at, reason) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    ))
    .bind(db.entity())
    .bind(&k.kid)
    .bind(&k.key_set)
    .bind(&k.alg)
    .bind(serde_json::Value::Object(k.public_jwk.clone()).to_string())
    .bind(&k.private_pem)
    .bind(k.iat)
    .bind(k.nbf)
    .bind(k.exp)
    .bind(k.revoked_at)
    .bind(&k.reason)
    .execute(&mut *c)
    .await
    .map_err(|e| Error::from_db(e, "key"))?;
    Ok(())
}

/// Replaces a key's stored private key (sealing it at rest).
pub async fn set_private_pem(
    db: &Db,
    c: &mut AnyConnection,
    kid: &str,
    stored: &str,
) -> Result<()> {
    sqlx::query(db.sql("UPDATE signing_keys SET private_pem = ? WHERE kid = ? AND entity = ?"))
        .bind(stored)
        .bind(kid)
        .bind(db.entity())
        .execute(&mut *c)
        .await?;
    Ok(())
}

/// Sets a key's expiry.
pub async fn set_exp(db: &Db, c: &mut AnyConnection, kid: &str, exp: Option<i64>) -> Result<u64> {
    let r = sqlx::query(db.sql("UPDATE signing_keys SET exp = ? WHERE kid = ? AND entity = ?"))
        .bind(exp)
        .bind(kid)
        .bind(db.entity())
        .execute(&mut *c)
        .await?;
    Ok(r.rows_affected())
}

/// Marks a key revoked at `at` (with `exp` no later than that, so that historical keys always
/// carry one); it is never published or used again but stays listed as historical.
pub async fn revoke(
    db: &Db,
    c: &mut AnyConnection,
    kid: &str,
    at: i64,
    reason: Option<&str>,
) -> Result<u64> {
    let r = sqlx::query(db.sql(
        "UPDATE signing_keys SET revoked_at = ?, reason = ?, \
         exp = CASE WHEN exp IS NULL OR exp > ? THEN ? ELSE exp END \
         WHERE kid = ? AND entity = ? AND revoked_at IS NULL",
    ))
    .bind(at)
    .bind(reason)
    .bind(at)
    .bind(at)
    .bind(kid)
    .bind(db.entity())
    .execute(&mut *c)
    .await?;
    Ok(r.rows_affected())
}

/// Deletes a key for good (it will not appear in historical keys).
pub async fn delete(db: &Db, c: &mut AnyConnection, kid: &str) -> Result<u64> {
    let r = sqlx::query(db.sql("DELETE FROM signing_keys WHERE entity = ? AND kid = ?"))
        .bind(db.entity())
        .bind(kid)
        .execute(&mut *c)
        .await?;
    Ok(r.rows_affected())
}
