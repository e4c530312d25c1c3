//! Owners and issuers as a type's body names them: a link to an existing global row
//! (`owner_id` / `issuer_id`, number or natural key) or the row itself (`entity_id` + `jwks` /
//! `issuer`), created when absent. Validation is pure and runs before the writer lock; the
//! lookups and inserts run inside the caller's write.

use std::collections::BTreeSet;

use pharos_shared::jose::Jwks;
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::type_key;
use crate::admin::error::{ApiError, ApiResult};
use crate::admin::extract::entity_id;
use crate::admin::trust_anchors::validate_jwks;
use crate::control_plane::{ControlPlane, Write};
use crate::db::trust_mark_parties::{self as parties, Key};
use crate::db::trust_mark_types as types_repo;

/// A type's owner in a body: `owner_id` links a global owner, otherwise `entity_id` + `jwks`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct OwnerInput {
    /// Id or entity identifier of an existing global owner.
    #[schema(value_type = Option<Object>)]
    pub owner_id: Option<Value>,
    /// The owner's entity identifier.
    pub entity_id: Option<String>,
    /// The owner's public keys.
    #[schema(value_type = Option<Object>)]
    pub jwks: Option<Jwks>,
    /// Free text.
    pub description: Option<String>,
}

impl OwnerInput {
    /// Checks the form: a link, or an entity identifier with at least one valid public key
    /// (`accepted_kty`: `federation.accept.key_types`).
    pub fn validate(&self, accepted_kty: &[String]) -> ApiResult<()> {
        if let Some(id) = &self.owner_id {
            return type_key(id).map(|_| ());
        }
        let e = self.entity_id.as_deref().ok_or_else(|| {
            ApiError::BadRequest("owner: entity_id or owner_id is required".into())
        })?;
        entity_id("owner entity_id", e)?;
        let jwks = self
            .jwks
            .as_ref()
            .filter(|j| !j.keys.is_empty())
            .ok_or_else(|| {
                ApiError::BadRequest("owner: jwks with at least one key is required".into())
            })?;
        validate_jwks(jwks, accepted_kty)
    }

    /// The owner's id: the linked one, or the one stored under `entity_id` (its keys and
    /// description replaced by the given ones), or a new one.
    pub async fn resolve(&self, cp: &ControlPlane, w: &mut Write<'_>) -> ApiResult<i64> {
        if let Some(id) = &self.owner_id {
            let key = type_key(id)?;
            let o = parties::owner(&cp.db, Key::parse(&key))
                .await?
                .ok_or_else(|| ApiError::BadRequest(format!("unknown trust mark owner {key:?}")))?;
            return Ok(o.id);
        }
        let (Some(e), Some(jwks)) = (self.entity_id.as_deref(), self.jwks.as_ref()) else {
            return Err(ApiError::BadRequest(
                "owner: entity_id and jwks are required".into(),
            ));
        };
        let now = cp.now();
        let existing = parties::owner(&cp.db, Key::Name(e)).await?;
        let c = w.tx().await?;
        match existing {
            Some(o) => {
                let d = self.description.as_deref().unwrap_or(&o.description);
                parties::update_owner(&cp.db, c, o.id, e, jwks, d, now).await?;
                Ok(o.id)
            }
            None => {
                let d = self.description.as_deref().unwrap_or_default();
                Ok(parties::insert_owner(&cp.db, c, e, jwks, d, now).await?)
            }
        }
    }
}

/// An issuer in a body: `issuer_id` links a global issuer, otherwise `issuer`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct IssuerInput {
    /// Id or entity identifier of an existing global issuer.
    #[schema(value_type = Option<Object>)]
    pub issuer_id: Option<Value>,
    /// The issuer's entity identifier (created when unknown).
    pub issuer: Option<String>,
    /// Free text (of a new issuer).
    pub description: Option<String>,
}

impl IssuerInput {
    /// Checks the form.
    pub fn validate(&self) -> ApiResult<()> {
        match (&self.issuer_id, &self.issuer) {
            (Some(id), _) => type_key(id).map(|_| ()),
            (None, Some(i)) => entity_id("issuer", i),
            (None, None) => Err(ApiError::BadRequest(
                "issuer or issuer_id is required".into(),
            )),
        }
    }

    /// The issuer's id: the linked one, the one stored under `issuer`, or a new one.
    pub async fn resolve(&self, cp: &ControlPlane, w: &mut Write<'_>) -> ApiResult<i64> {
        if let Some(id) = &self.issuer_id {
            let key = type_key(id)?;
            let i = parties::issuer(&cp.db, Key::parse(&key))
                .await?
                .ok_or_else(|| {
                    ApiError::BadRequest(format!("unknown trust mark issuer {key:?}"))
                })?;
            return Ok(i.id);
        }
        let name = self
            .issuer
            .as_deref()
            .ok_or_else(|| ApiError::BadRequest("issuer or issuer_id is required".into()))?;
        if let Some(i) = parties::issuer(&cp.db, Key::Name(name)).await? {
            return Ok(i.id);
        }
        let d = self.description.as_deref().unwrap_or_default();
        let now = cp.now();
        Ok(parties::insert_issuer(&cp.db, w.tx().await?, name, d, now).await?)
    }
}

/// Links exactly `issuers` to type `type_id` (a replacement; duplicates collapse).
pub async fn replace_issuers(
    cp: &ControlPlane,
    w: &mut Write<'_>,
    type_id: i64,
    issuers: &[IssuerInput],
) -> ApiResult<()> {
    let mut ids = BTreeSet::new();
    for i in dedup(issuers) {
        ids.insert(i.resolve(cp, w).await?);
    }
    let c = w.tx().await?;
    types_repo::clear_issuers(&cp.db, c, type_id).await?;
    for id in ids {
        types_repo::link_issuer(&cp.db, c, type_id, id).await?;
    }
    Ok(())
}

/// The inputs with a name given twice reduced to its first occurrence, so a new issuer named
/// twice in one body is created once.
fn dedup(issuers: &[IssuerInput]) -> Vec<&IssuerInput> {
    let mut seen = BTreeSet::new();
    issuers
        .iter()
        .filter(|i| match (&i.issuer_id, &i.issuer) {
            (None, Some(name)) => seen.insert(name.clone()),
            _ => true,
        })
        .collect()
}
