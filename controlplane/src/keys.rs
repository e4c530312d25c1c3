//! Our signing keys: making sure one exists at start, and turning the stored keys into the
//! [`KeySet`] a snapshot carries.
//!
//! Private keys live in the database (`signing.kms: db`) or as PEM files named `<kid>.pem` under
//! `signing.filesystem.key_dir` (`kms: filesystem`); a single static `key_file` is also accepted.
//! Public keys and their lifecycle times are always recorded in the database, so the published
//! key set and the historical keys survive restarts whatever the private-key backend.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use pharos_shared::config::{Kms, Settings};
use pharos_shared::jose::{Algorithm, Jwk, Signer, SigningKey};
use pharos_shared::snapshot::KeySet;
use serde_json::{Value, json};

use crate::db::keys::{FEDERATION, KeyRow};
use crate::db::{self, Db, settings};
use crate::error::{Error, Result};

/// The current signing algorithm: stored in the database once chosen (so that a scheduled
/// algorithm change survives restarts), seeded from `signing.alg` at first start.
pub async fn current_alg(db: &Db, cfg: &Settings) -> Result<Algorithm> {
    let stored = settings::get(db, settings::SIGNING, "alg").await?;
    let name = stored
        .as_ref()
        .and_then(Value::as_str)
        .unwrap_or(&cfg.signing.alg)
        .to_string();
    let alg: Algorithm = name.parse()?;
    if stored.is_none() {
        let mut tx = db.pool.begin().await?;
        settings::set(db, &mut tx, settings::SIGNING, "alg", &json!(alg.as_str())).await?;
        tx.commit().await?;
    }
    Ok(alg)
}

/// Makes sure an active signing key exists for the current algorithm, generating one when
/// `auto_generate_keys` allows it.
pub async fn ensure_signing_key(db: &Db, cfg: &Settings, now: i64) -> Result<()> {
    let alg = current_alg(db, cfg).await?;
    if cfg.signing.kms == Kms::Filesystem && !cfg.signing.filesystem.key_file.is_empty() {
        return import_static_key(db, cfg, alg, now).await;
    }
    let rows = db::keys::list(db).await?;
    if rows.iter().any(|k| is_active(k, alg, now)) {
        return Ok(());
    }
    if !cfg.signing.auto_generate_keys {
        return Err(Error::Internal(format!(
            "no active {alg} signing key and signing.auto_generate_keys is false"
        )));
    }
    let key = SigningKey::generate(alg, cfg.signing.rsa_key_len)?;
    let private_pem = match cfg.signing.kms {
        Kms::Db => Some(key.private_pem().to_string()),
        Kms::Filesystem => {
            write_pem(&key_dir(cfg), key.kid(), key.private_pem())?;
            None
        }
        Kms::Pkcs11 => {
            return Err(Error::Internal(
                "signing.kms pkcs11 is not available in this build".into(),
            ));
        }
    };
    let row = KeyRow {
        kid: key.kid().to_string(),
        key_set: FEDERATION.into(),
        alg: alg.as_str().into(),
        public_jwk: key.public_jwk().clone(),
        private_pem,
        iat: now,
        nbf: now,
        exp: None,
        revoked_at: None,
        reason: None,
    };
    let mut tx = db.pool.begin().await?;
    db::keys::insert(db, &mut tx, &row).await?;
    tx.commit().await?;
    tracing::info!(kid = %row.kid, alg = %alg, "generated signing key");
    Ok(())
}

async fn import_static_key(db: &Db, cfg: &Settings, alg: Algorithm, now: i64) -> Result<()> {
    let key = read_pem_key(Path::new(&cfg.signing.filesystem.key_file), alg)?;
    let rows = db::keys::list(db).await?;
    if rows.iter().any(|k| k.kid == key.kid()) {
        return Ok(());
    }
    let row = KeyRow {
        kid: key.kid().to_string(),
        key_set: FEDERATION.into(),
        alg: alg.as_str().into(),
        public_jwk: key.public_jwk().clone(),
        private_pem: None,
        iat: now,
        nbf: now,
        exp: None,
        revoked_at: None,
        reason: None,
    };
    let mut tx = db.pool.begin().await?;
    db::keys::insert(db, &mut tx, &row).await?;
    tx.commit().await?;
    Ok(())
}

fn is_active(k: &KeyRow, alg: Algorithm, now: i64) -> bool {
    k.key_set == FEDERATION
        && k.alg == alg.as_str()
        && k.revoked_at.is_none()
        && k.nbf <= now
        && k.exp.is_none_or(|e| e > now)
}

fn is_valid(k: &KeyRow, now: i64) -> bool {
    k.revoked_at.is_none() && k.exp.is_none_or(|e| e >= now)
}

fn key_dir(cfg: &Settings) -> PathBuf {
    PathBuf::from(&cfg.signing.filesystem.key_dir)
}

fn write_pem(dir: &Path, kid: &str, pem: &str) -> Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::Internal(format!("cannot create key_dir {}: {e}", dir.display())))?;
    let path = dir.join(format!("{kid}.pem"));
    std::fs::write(&path, pem)
        .map_err(|e| Error::Internal(format!("cannot write {}: {e}", path.display())))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600));
    }
    Ok(())
}

fn read_pem_key(path: &Path, alg: Algorithm) -> Result<SigningKey> {
    let pem = std::fs::read_to_string(path)
        .map_err(|e| Error::Internal(format!("cannot read {}: {e}", path.display())))?;
    Ok(SigningKey::from_pem(alg, &pem)?)
}

/// The published JWK of a stored key: its public JWK plus its lifecycle times.
fn published_jwk(k: &KeyRow) -> Jwk {
    let mut jwk = k.public_jwk.clone();
    jwk.insert("kid".into(), json!(k.kid));
    jwk.insert("iat".into(), json!(k.iat));
    jwk.insert("nbf".into(), json!(k.nbf));
    if let Some(exp) = k.exp {
        jwk.insert("exp".into(), json!(exp));
    }
    jwk
}

/// Builds the key set the data plane signs with at time `now`.
pub async fn load_keyset(db: &Db, cfg: &Settings, now: i64) -> Result<KeySet> {
    let alg = current_alg(db, cfg).await?;
    let rows = db::keys::list(db).await?;
    let active = rows
        .iter()
        .filter(|k| is_active(k, alg, now))
        .max_by_key(|k| (k.nbf, k.kid.clone()))
        .ok_or_else(|| Error::Internal(format!("no active {alg} signing key")))?;
    let signer: Arc<dyn Signer> = Arc::new(match (&active.private_pem, cfg.signing.kms) {
        (Some(pem), _) => SigningKey::from_pem(alg, pem)?,
        (None, Kms::Filesystem) if !cfg.signing.filesystem.key_file.is_empty() => {
            read_pem_key(Path::new(&cfg.signing.filesystem.key_file), alg)?
        }
        (None, Kms::Filesystem) => {
            read_pem_key(&key_dir(cfg).join(format!("{}.pem", active.kid)), alg)?
        }
        (None, _) => {
            return Err(Error::Internal(format!(
                "private key of {} is not available",
                active.kid
            )));
        }
    });
    let published = rows
        .iter()
        .filter(|k| is_valid(k, now))
        .map(published_jwk)
        .collect();
    Ok(KeySet { signer, published })
}
