//! Our signing keys: their lifecycle (generation, rotation with announcement lead time,
//! algorithm change, revocation) and the [`KeySet`] a snapshot carries.
//!
//! Private keys live in the database (`signing.kms: db`), as PEM files named `<kid>.pem` under
//! `signing.filesystem.key_dir` (`kms: filesystem`; a single static `key_file` is also
//! accepted), or on a PKCS#11 token (`kms: pkcs11`). Public keys and their lifecycle times are
//! always recorded in the database, so the published key set and the historical keys survive
//! restarts whatever the private-key backend.

pub mod kms;
pub mod pkcs11;
pub mod planner;
pub mod rotation;
pub mod sealing;

use pharos_shared::config::Settings;
use pharos_shared::jose::{Algorithm, Jwk};
use pharos_shared::snapshot::KeySet;
use serde_json::{Value, json};

use crate::db::keys::{FEDERATION, KeyRow};
use crate::db::{self, Db, settings};
use crate::error::{Error, Result};
use kms::Kms;
use planner::PlanKey;

/// The current signing algorithm: stored in the database once chosen (so that a scheduled
/// algorithm change survives restarts), seeded from `signing.alg` at first start by
/// [`ensure_signing_key`].
pub async fn current_alg(db: &Db, cfg: &Settings) -> Result<Algorithm> {
    let stored = settings::get(db, settings::SIGNING, "alg").await?;
    match stored.as_ref().and_then(Value::as_str) {
        Some(name) => Ok(name.parse()?),
        None => Ok(cfg.signing.alg),
    }
}

/// A scheduled algorithm change: keys of `alg` sign from `at` on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PendingAlg {
    /// The new algorithm.
    pub alg: Algorithm,
    /// Unix seconds of the switch.
    pub at: i64,
}

/// The scheduled algorithm change, if any.
pub async fn pending_alg(db: &Db) -> Result<Option<PendingAlg>> {
    let v = settings::get(db, settings::SIGNING, "pending_alg").await?;
    let Some(v) = v.filter(Value::is_object) else {
        return Ok(None);
    };
    let alg = v["alg"].as_str().and_then(|a| a.parse().ok());
    Ok(alg
        .zip(v["at"].as_i64())
        .map(|(alg, at)| PendingAlg { alg, at }))
}

/// Modulus size for new RSA keys: the Admin API's value, else the configuration's.
pub async fn rsa_key_len(db: &Db, cfg: &Settings) -> Result<u32> {
    let stored = settings::get(db, settings::SIGNING, "rsa_key_len").await?;
    Ok(stored
        .and_then(|v| v.as_u64())
        .and_then(|n| u32::try_from(n).ok())
        .unwrap_or(cfg.signing.rsa_key_len))
}

/// A new row for a key we generated.
pub fn new_row(g: kms::Generated, alg: Algorithm, now: i64, nbf: i64, exp: Option<i64>) -> KeyRow {
    KeyRow {
        kid: g.kid,
        key_set: FEDERATION.into(),
        alg: alg.as_str().into(),
        public_jwk: g.public_jwk,
        private_pem: g.private_pem,
        iat: now,
        nbf,
        exp,
        revoked_at: None,
        reason: None,
    }
}

/// Makes sure a key of ours is active at `now`, generating one when `auto_generate_keys`
/// allows it (or recording the static key file's key).
///
/// This is the one write outside [`crate::control_plane::Write`]: it runs at start, before there is a
/// snapshot to publish (the first snapshot is then built from what it stored).
pub async fn ensure_signing_key(db: &Db, cfg: &Settings, kms: &Kms, now: i64) -> Result<()> {
    let alg = current_alg(db, cfg).await?;
    let seeded = settings::get(db, settings::SIGNING, "alg").await?.is_some();
    let rows = db::keys::list(db).await?;
    let bits = rsa_key_len(db, cfg).await?;
    // Reads first: an in-memory SQLite pool has one connection, which the transaction takes.
    let mut tx = db.begin_startup_seed().await?;
    seal_stored_keys(db, &mut tx, kms, &rows).await?;
    if !seeded {
        settings::set(db, &mut tx, settings::SIGNING, "alg", &json!(alg.as_str())).await?;
    }
    if let Some(key) = kms.read_static(alg)? {
        if rows
            .iter()
            .any(|k| k.kid == pharos_shared::jose::Signer::kid(&key))
        {
            tx.commit().await?;
            return Ok(());
        }
        let g = kms::Generated {
            kid: pharos_shared::jose::Signer::kid(&key).to_string(),
            public_jwk: pharos_shared::jose::Signer::public_jwk(&key).clone(),
            private_pem: None,
        };
        db::keys::insert(db, &mut tx, &new_row(g, alg, now, now, None)).await?;
        tx.commit().await?;
        return Ok(());
    }
    if rows.iter().any(|k| is_active(k, now)) {
        tx.commit().await?;
        return Ok(());
    }
    if !cfg.signing.auto_generate_keys {
        return Err(Error::Internal(format!(
            "no active {alg} signing key and signing.auto_generate_keys is false"
        )));
    }
    let g = kms.generate(alg, bits)?;
    let row = new_row(g, alg, now, now, None);
    db::keys::insert(db, &mut tx, &row).await?;
    tx.commit().await?;
    tracing::info!(kid = %row.kid, alg = %alg, "generated signing key");
    Ok(())
}

/// The first signing key of a hosted entity created at run time, in the transaction that
/// stores the entity (`db` scoped to it, `cfg` its settings): every replica that starts
/// serving it finds the key there, instead of each generating one of its own.
pub async fn seed_new_entity(
    db: &Db,
    tx: &mut sqlx::AnyConnection,
    cfg: &Settings,
    kms: &Kms,
    now: i64,
) -> Result<()> {
    let alg = cfg.signing.alg;
    settings::set(db, tx, settings::SIGNING, "alg", &json!(alg.as_str())).await?;
    let g = kms.generate(alg, cfg.signing.rsa_key_len)?;
    let row = new_row(g, alg, now, now, None);
    db::keys::insert(db, tx, &row).await?;
    tracing::info!(entity = %db.hosted(), kid = %row.kid, alg = %alg, "generated signing key");
    Ok(())
}

/// Every stored private key must open (a sealed one with the configured key: a missing or
/// wrong key stops start-up naming the signing key), and with a key configured, keys stored in
/// plain PEM are sealed in the start-up transaction.
async fn seal_stored_keys(
    db: &Db,
    tx: &mut sqlx::AnyConnection,
    kms: &Kms,
    rows: &[KeyRow],
) -> Result<()> {
    let mut sealed = 0;
    for row in rows {
        let Some(stored) = &row.private_pem else {
            continue;
        };
        let pem = kms.open_stored(&row.kid, stored)?;
        if kms.seals() && &pem == stored {
            let form = kms.stored_form(&row.kid, &pem)?;
            db::keys::set_private_pem(db, tx, &row.kid, &form).await?;
            sealed += 1;
        }
    }
    if sealed > 0 {
        tracing::info!(keys = sealed, "encrypted stored private keys at rest");
    }
    Ok(())
}

/// One of our keys that may sign at `now`.
fn is_active(k: &KeyRow, now: i64) -> bool {
    k.key_set == FEDERATION && is_valid(k, now) && k.nbf <= now
}

/// Published: not revoked and not expired (announced future keys included).
fn is_valid(k: &KeyRow, now: i64) -> bool {
    k.revoked_at.is_none() && k.exp.is_none_or(|e| e > now)
}

/// The planner's view of our keys.
pub fn plan_keys(rows: &[KeyRow], key_set: Option<&str>) -> Vec<PlanKey> {
    rows.iter()
        .filter(|k| key_set.is_none_or(|s| k.key_set == s))
        .map(|k| PlanKey {
            kid: k.kid.clone(),
            nbf: k.nbf,
            exp: k.exp,
            revoked: k.revoked_at.is_some(),
        })
        .collect()
}

/// The published JWK of a stored key: its public JWK plus its lifecycle times.
pub fn published_jwk(k: &KeyRow) -> Jwk {
    let mut jwk = k.public_jwk.clone();
    jwk.insert("kid".into(), json!(k.kid));
    jwk.entry("use").or_insert_with(|| json!("sig"));
    jwk.insert("iat".into(), json!(k.iat));
    jwk.insert("nbf".into(), json!(k.nbf));
    if let Some(exp) = k.exp {
        jwk.insert("exp".into(), json!(exp));
    }
    jwk
}

/// The historical-keys form: always with `exp` (spec §8.7.2), and `revoked` when revoked.
fn historical_jwk(k: &KeyRow) -> Jwk {
    let mut jwk = published_jwk(k);
    if let Some(at) = k.revoked_at {
        // Revocation records an `exp`; a row revoked by hand without one ends at revocation.
        jwk.insert("exp".into(), json!(k.exp.unwrap_or(at)));
        let mut revoked = serde_json::Map::new();
        revoked.insert("revoked_at".into(), json!(at));
        if let Some(reason) = &k.reason {
            revoked.insert("reason".into(), json!(reason));
        }
        jwk.insert("revoked".into(), Value::Object(revoked));
    }
    jwk
}

/// Builds the key set the data plane signs with at time `now`: the signer is our active key
/// that took over last (latest `nbf`; same-second ties go to the longer-lived key).
pub async fn load_keyset(db: &Db, kms: &Kms, now: i64) -> Result<KeySet> {
    let rows = db::keys::list(db).await?;
    let active = rows
        .iter()
        .filter(|k| is_active(k, now))
        .max_by_key(|k| (k.nbf, k.exp.unwrap_or(i64::MAX), k.kid.clone()))
        .ok_or_else(|| Error::Internal("no active signing key".into()))?;
    let signer = kms.signer(active)?;
    let published = rows
        .iter()
        .filter(|k| is_valid(k, now))
        .map(published_jwk)
        .collect();
    let historical = rows
        .iter()
        .filter(|k| !is_valid(k, now))
        .map(historical_jwk)
        .collect();
    Ok(KeySet {
        signer,
        published,
        historical,
    })
}
