//! `/subordinates`: the subordinate registry, its history, and the general statement settings.
//!
//! Every write to a subordinate runs in one database transaction together with its history
//! event, then republishes only that subordinate (O(log n)). Per-subordinate documents
//! (metadata, metadata policy, constraints, additional claims) are overrides: writes touch only
//! the override, never copy the general value into it (lighthouse 0.22 does, freezing the
//! general values of that moment into the subordinate); the general value applies at statement
//! time to every subordinate without an override.

pub mod allowed_types;
pub mod claims;
pub mod constraints;
pub mod crud;
pub mod general;
pub mod general_claims;
pub mod general_policies;
pub mod history;
pub mod jwks;
pub mod metadata;
pub mod policies;

pub use crate::admin::resource::{created_or_ok, find};

use std::sync::Arc;

use axum::extract::State;
use pharos_shared::jose::Jwks;
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::control_plane::ControlPlane;
use crate::db::subordinates::SubordinateRow;

type Cp = State<Arc<ControlPlane>>;

/// The `/subordinates` routes: one line per file.
pub fn routes() -> crate::admin::Routes {
    crate::admin::Routes::new()
        .merge(crud::routes())
        .merge(history::routes())
        .merge(jwks::routes())
        .merge(claims::routes())
        .merge(general::routes())
        .merge(general_claims::routes())
        .merge(constraints::routes())
        .merge(metadata::routes())
        .merge(policies::routes())
        .merge(general_policies::routes())
}

/// A subordinate as listed (no documents).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BasicRecord {
    /// Database id.
    pub id: i64,
    /// Creation time (Unix seconds).
    pub created_at: i64,
    /// Last update (Unix seconds).
    pub updated_at: i64,
    /// Entity identifier.
    pub entity_id: String,
    /// Free text.
    pub description: String,
    /// Registered entity types.
    pub registered_entity_types: Vec<String>,
    /// `active`, `pending`, `blocked` or `inactive`.
    pub status: String,
    /// Keys are polled from the subordinate's Entity Configuration.
    pub enable_jwks_update: bool,
    /// Poll interval, seconds (0 = derive).
    pub jwks_poll_interval: i64,
}

impl From<&SubordinateRow> for BasicRecord {
    fn from(r: &SubordinateRow) -> Self {
        Self {
            id: r.id,
            created_at: r.created_at,
            updated_at: r.updated_at,
            entity_id: r.entity_id.clone(),
            description: r.description.clone(),
            registered_entity_types: r.registered_entity_types.clone(),
            status: r.status.as_str().into(),
            enable_jwks_update: r.enable_jwks_update,
            jwks_poll_interval: r.jwks_poll_interval,
        }
    }
}

/// A subordinate in full. Documents show the values in effect (the subordinate's override, else
/// the general value), as the reference service does; only the override is ever stored.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FullRecord {
    /// The basic fields.
    #[serde(flatten)]
    pub basic: BasicRecord,
    /// Stored keys (null when none).
    #[schema(value_type = Object)]
    pub jwks: Option<Jwks>,
    /// Metadata in effect.
    #[schema(value_type = Object)]
    pub metadata: Option<Value>,
    /// Metadata policy in effect.
    #[schema(value_type = Object)]
    pub metadata_policy: Option<Value>,
    /// Constraints in effect.
    #[schema(value_type = Object)]
    pub constraints: Option<Value>,
    /// Additional claims in effect, claim → value.
    #[schema(value_type = Object)]
    pub additional_claims: Map<String, Value>,
}

/// The full record of `r`, with general fallbacks taken from the current snapshot.
pub fn full(cp: &ControlPlane, r: &SubordinateRow) -> FullRecord {
    let snap = cp.snapshot();
    let g = &snap.subordinates.general;
    let or = |own: &Option<Value>, gen_: &Option<Value>| own.clone().or_else(|| gen_.clone());
    let claims: Map<String, Value> = if r.additional_claims.is_empty() {
        g.additional_claims
            .iter()
            .map(|c| (c.claim.clone(), c.value.clone()))
            .collect()
    } else {
        r.additional_claims
            .iter()
            .map(|c| (c.claim.clone(), c.value.clone()))
            .collect()
    };
    FullRecord {
        basic: r.into(),
        jwks: r.jwks.clone(),
        metadata: or(&r.metadata, &g.metadata),
        metadata_policy: or(&r.metadata_policy, &g.metadata_policy),
        constraints: or(&r.constraints, &g.constraints),
        additional_claims: claims,
    }
}
