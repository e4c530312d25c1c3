//! `trust_mark_*`, `issued_trust_marks`, `published_trust_marks`: reading the Trust Mark
//! Issuer's state into its snapshot form ([`TrustMarks`]). Writes live with the Admin API
//! resources and commands that make them, and take the caller's transaction.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use pharos_shared::trust_mark_issuer::{
    EligibilityMode, IssuanceSpec, IssuedMark, Owner, PublishedMark, SignedMark, Subject,
    SubjectStatus, TrustMarkType, TrustMarks,
};
use serde_json::{Map, Value};
use sqlx::Row;

use super::Db;
use crate::error::Result;

/// A JSON object stored as text; anything else (a hand-edited row) reads as empty.
pub(crate) fn object(text: Option<String>) -> Map<String, Value> {
    match text.and_then(|t| serde_json::from_str(&t).ok()) {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

/// The whole section; fresh numbers of `versions` stamp specs and subjects (cache keys).
pub async fn load(db: &Db, versions: &AtomicU64) -> Result<TrustMarks> {
    let version = || versions.fetch_add(1, Ordering::SeqCst) + 1;
    let mut tm = TrustMarks {
        types: types(db).await?,
        specs: specs(db, &version).await?,
        subjects: subjects(db, &version).await?,
        published: published(db).await?,
        // Settings, not rows: the caller sets them.
        ..TrustMarks::default()
    };
    for m in issued(db).await? {
        tm.put_issued(Arc::new(m));
    }
    Ok(tm)
}

/// The eligibility mode of a stored `eligibility_config`.
pub(crate) fn eligibility_mode(eligibility: &Map<String, Value>) -> EligibilityMode {
    eligibility
        .get("mode")
        .and_then(Value::as_str)
        .map_or(Some(EligibilityMode::DbOnly), EligibilityMode::parse)
        .unwrap_or_else(|| {
            // Stored configs were validated on write; a hand-edited one issues nothing
            // that the database does not entitle.
            tracing::warn!("unknown eligibility mode; treated as db_only");
            EligibilityMode::DbOnly
        })
}

async fn types(db: &Db) -> Result<BTreeMap<String, TrustMarkType>> {
    let rows = sqlx::query(db.sql(
        "SELECT t.trust_mark_type, o.entity_id AS owner, o.jwks AS owner_jwks \
         FROM trust_mark_types t LEFT JOIN trust_mark_owners o ON o.id = t.owner_id \
         WHERE t.entity = ?",
    ))
    .bind(db.entity())
    .fetch_all(&db.pool)
    .await?;
    let mut out = BTreeMap::new();
    for r in &rows {
        let owner: Option<String> = r.try_get("owner")?;
        let jwks: Option<String> = r.try_get("owner_jwks")?;
        let owner = owner.map(|entity_id| Owner {
            entity_id,
            jwks: jwks
                .and_then(|j| serde_json::from_str(&j).ok())
                .unwrap_or_default(),
        });
        let t = TrustMarkType {
            owner,
            issuers: Vec::new(),
        };
        out.insert(r.try_get::<String, _>("trust_mark_type")?, t);
    }
    let links = sqlx::query(db.sql(
        "SELECT t.trust_mark_type, i.issuer FROM trust_mark_type_issuers ti \
         JOIN trust_mark_types t ON t.id = ti.type_id \
         JOIN trust_mark_issuers i ON i.id = ti.issuer_id WHERE t.entity = ? ORDER BY i.issuer",
    ))
    .bind(db.entity())
    .fetch_all(&db.pool)
    .await?;
    for r in &links {
        let t: String = r.try_get("trust_mark_type")?;
        if let Some(entry) = out.get_mut(&t) {
            entry.issuers.push(r.try_get("issuer")?);
        }
    }
    Ok(out)
}

async fn specs(
    db: &Db,
    version: &(dyn Fn() -> u64 + Sync),
) -> Result<imbl::HashMap<String, Arc<IssuanceSpec>>> {
    let rows = sqlx::query(db.sql(
        "SELECT id, trust_mark_type, lifetime, ref_uri, logo_uri, delegation_jwt, \
         additional_claims, eligibility_config, cache_ttl FROM trust_mark_specs WHERE entity = ?",
    ))
    .bind(db.entity())
    .fetch_all(&db.pool)
    .await?;
    let mut out = imbl::HashMap::new();
    for r in &rows {
        let eligibility = object(r.try_get("eligibility_config")?);
        let mode = eligibility_mode(&eligibility);
        let lifetime: i64 = r.try_get("lifetime")?;
        let spec = IssuanceSpec {
            id: r.try_get("id")?,
            trust_mark_type: r.try_get("trust_mark_type")?,
            lifetime: (lifetime > 0).then_some(lifetime),
            ref_uri: r.try_get("ref_uri")?,
            logo_uri: r.try_get("logo_uri")?,
            delegation_jwt: r.try_get("delegation_jwt")?,
            additional_claims: object(r.try_get("additional_claims")?),
            eligibility: mode,
            checker: eligibility.get("checker").cloned().filter(|c| !c.is_null()),
            check_cache_ttl: eligibility
                .get("check_cache_ttl")
                .and_then(Value::as_i64)
                .unwrap_or(0),
            cache_ttl: r.try_get("cache_ttl")?,
            version: version(),
        };
        out.insert(spec.trust_mark_type.clone(), Arc::new(spec));
    }
    Ok(out)
}

async fn subjects(
    db: &Db,
    version: &(dyn Fn() -> u64 + Sync),
) -> Result<imbl::HashMap<(String, String), Arc<Subject>>> {
    let rows = sqlx::query(db.sql(
        "SELECT s.id, s.entity_id, s.status, s.additional_claims, p.trust_mark_type \
         FROM trust_mark_subjects s JOIN trust_mark_specs p ON p.id = s.spec_id \
         WHERE p.entity = ?",
    ))
    .bind(db.entity())
    .fetch_all(&db.pool)
    .await?;
    let mut out = imbl::HashMap::new();
    for r in &rows {
        let subject = subject_from_row(r, version())?;
        let key = (
            r.try_get::<String, _>("trust_mark_type")?,
            subject.entity_id.clone(),
        );
        out.insert(key, Arc::new(subject));
    }
    Ok(out)
}

/// One subject of `trust_mark_type`'s spec, stamped with `version` (`None`: no such row).
pub async fn subject_one(
    db: &Db,
    trust_mark_type: &str,
    entity_id: &str,
    version: u64,
) -> Result<Option<Subject>> {
    let row = sqlx::query(db.sql(
        "SELECT s.id, s.entity_id, s.status, s.additional_claims \
         FROM trust_mark_subjects s JOIN trust_mark_specs p ON p.id = s.spec_id \
         WHERE p.entity = ? AND p.trust_mark_type = ? AND s.entity_id = ?",
    ))
    .bind(db.entity())
    .bind(trust_mark_type)
    .bind(entity_id)
    .fetch_optional(&db.pool)
    .await?;
    row.as_ref()
        .map(|r| subject_from_row(r, version))
        .transpose()
}

fn subject_from_row(r: &sqlx::any::AnyRow, version: u64) -> Result<Subject> {
    let status: String = r.try_get("status")?;
    Ok(Subject {
        id: r.try_get("id")?,
        entity_id: r.try_get("entity_id")?,
        // Only a hand-edited database gets an unknown word; not entitling is the safe reading.
        status: SubjectStatus::parse(&status).unwrap_or(SubjectStatus::Inactive),
        additional_claims: object(r.try_get("additional_claims")?),
        version,
    })
}

/// Every issued instance (expired ones go with the prune job).
async fn issued(db: &Db) -> Result<Vec<IssuedMark>> {
    let rows = sqlx::query(db.sql(
        "SELECT jti, trust_mark_type, subject, issued_at, expires_at, revoked_at, trust_mark \
         FROM issued_trust_marks WHERE entity = ?",
    ))
    .bind(db.entity())
    .fetch_all(&db.pool)
    .await?;
    rows.iter().map(issued_from_row).collect()
}

/// One issued instance by `jti`.
pub async fn issued_one(db: &Db, jti: &str) -> Result<Option<IssuedMark>> {
    let row = sqlx::query(db.sql(
        "SELECT jti, trust_mark_type, subject, issued_at, expires_at, revoked_at, trust_mark \
         FROM issued_trust_marks WHERE entity = ? AND jti = ?",
    ))
    .bind(db.entity())
    .bind(jti)
    .fetch_optional(&db.pool)
    .await?;
    row.as_ref().map(issued_from_row).transpose()
}

/// An `issued_trust_marks` row (with its `trust_mark` column) in snapshot form.
pub(crate) fn issued_from_row(r: &sqlx::any::AnyRow) -> Result<IssuedMark> {
    let token: Option<String> = r.try_get("trust_mark")?;
    Ok(IssuedMark {
        signed: token.as_deref().and_then(SignedMark::parse).map(Arc::new),
        jti: r.try_get("jti")?,
        trust_mark_type: r.try_get("trust_mark_type")?,
        subject: r.try_get("subject")?,
        issued_at: r.try_get("issued_at")?,
        expires_at: r.try_get("expires_at")?,
        revoked_at: r.try_get("revoked_at")?,
    })
}

async fn published(db: &Db) -> Result<Vec<PublishedMark>> {
    let rows = sqlx::query(db.sql(
        "SELECT trust_mark_type, trust_mark FROM published_trust_marks \
         WHERE entity = ? AND trust_mark IS NOT NULL ORDER BY trust_mark_type",
    ))
    .bind(db.entity())
    .fetch_all(&db.pool)
    .await?;
    let mut out = Vec::with_capacity(rows.len());
    for r in &rows {
        let trust_mark: String = r.try_get("trust_mark")?;
        let exp = pharos_shared::jose::decode_unverified(&trust_mark)
            .ok()
            .and_then(|d| d.claims.get("exp").and_then(Value::as_i64));
        out.push(PublishedMark {
            trust_mark_type: r.try_get("trust_mark_type")?,
            trust_mark,
            exp,
        });
    }
    Ok(out)
}
