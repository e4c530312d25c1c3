//! Building the snapshot's subordinate section from the database: all of it at startup, one
//! subordinate after each write, the general settings after a general change.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use pharos_shared::snapshot::AdditionalClaim;
use pharos_shared::subordinate::{
    GeneralSettings, StoredJwks, Subordinate, SubordinateStatus, Subordinates,
};
use serde_json::Value;

use crate::db::entity_config::ClaimRow;
use crate::db::subordinates::SubordinateRow;
use crate::db::{self, Db, settings};
use crate::error::Result;

/// Every subordinate and the general settings, each stamped with a fresh version.
pub async fn load_all(db: &Db, versions: &AtomicU64) -> Result<Subordinates> {
    let rows = db::subordinates::list(db).await?;
    let general = Arc::new(load_general(db).await?);
    let general_version = versions.fetch_add(1, Ordering::SeqCst) + 1;
    let records = rows.into_iter().map(|r| {
        let v = versions.fetch_add(1, Ordering::SeqCst) + 1;
        Arc::new(to_snapshot(r, v))
    });
    Ok(Subordinates::new(records, general, general_version))
}

/// The snapshot form of a subordinate row.
pub fn to_snapshot(r: SubordinateRow, version: u64) -> Subordinate {
    let status = SubordinateStatus::parse(&r.status).unwrap_or_else(|| {
        // Only a hand-edited database gets here; not serving is the safe reading.
        tracing::warn!(entity_id = %r.entity_id, status = %r.status, "unknown subordinate status; treated as inactive");
        SubordinateStatus::Inactive
    });
    Subordinate {
        id: r.id,
        entity_id: r.entity_id.into(),
        status,
        registered_entity_types: r.registered_entity_types,
        jwks: StoredJwks::new(&r.jwks.unwrap_or_default()),
        metadata: r.metadata.map(Box::new),
        metadata_policy: r.metadata_policy.map(Box::new),
        constraints: r.constraints.map(Box::new),
        additional_claims: r.additional_claims.into_iter().map(claim).collect(),
        version,
        statement: Default::default(),
    }
}

fn claim(c: ClaimRow) -> AdditionalClaim {
    AdditionalClaim {
        claim: c.claim,
        value: c.value,
        crit: c.crit,
    }
}

/// One general additional claim as stored in the settings array (`{id, claim, value, crit}`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct GeneralClaim {
    /// Position-based id, 1..n.
    pub id: i64,
    /// Claim name.
    pub claim: String,
    /// Claim value.
    #[schema(value_type = Object)]
    pub value: Value,
    /// Listed in `crit`.
    #[serde(default)]
    pub crit: bool,
}

/// The general additional claims as stored.
pub async fn general_claims(db: &Db) -> Result<Vec<GeneralClaim>> {
    Ok(
        match settings::get(db, settings::SUBORDINATE, "additional_claims").await? {
            Some(v) => serde_json::from_value(v).unwrap_or_default(),
            None => Vec::new(),
        },
    )
}

/// The general settings as stored (unset values stay `None`: they are not defaults to copy).
pub async fn load_general(db: &Db) -> Result<GeneralSettings> {
    let get = |name: &'static str| settings::get(db, settings::SUBORDINATE, name);
    let lifetime = get("lifetime").await?.and_then(|v| v.as_i64());
    let crit = match get("metadata_policy_crit").await? {
        Some(Value::Array(a)) => a
            .into_iter()
            .filter_map(|v| v.as_str().map(String::from))
            .collect(),
        _ => Vec::new(),
    };
    Ok(GeneralSettings {
        lifetime,
        metadata: get("metadata").await?.filter(|v| !v.is_null()),
        metadata_policy: get("metadata_policy").await?.filter(|v| !v.is_null()),
        metadata_policy_crit: crit,
        constraints: get("constraints").await?.filter(|v| !v.is_null()),
        additional_claims: general_claims(db)
            .await?
            .into_iter()
            .map(|c| AdditionalClaim {
                claim: c.claim,
                value: c.value,
                crit: c.crit,
            })
            .collect(),
    })
}
