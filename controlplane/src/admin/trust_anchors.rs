//! `/trust-anchors`: the trust anchor repository.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use pharos_shared::chain::TrustMarkStatusCheck;
use pharos_shared::interop::AnchorEcConstraints;
use pharos_shared::jose::Jwks;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::extract::{Json, entity_id};
use crate::admin::actor::Actor;
use crate::admin::error::{ApiError, ApiResult};
use crate::control_plane::{ControlPlane, Section};
use crate::db::trust_anchors::{self as repo, TrustAnchorRow, TrustAnchorWrite};

type Cp = State<Arc<ControlPlane>>;

/// This module's routes, merged by [`crate::admin::routes`].
pub fn routes() -> crate::admin::Routes {
    use utoipa_axum::routes;
    crate::admin::Routes::new()
        .routes(routes!(list, create))
        .routes(routes!(get, update, delete))
}

/// A trust anchor as the Admin API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TrustAnchorRecord {
    /// Database id.
    pub id: i64,
    /// Creation time (Unix seconds).
    pub created_at: i64,
    /// Last update (Unix seconds).
    pub updated_at: i64,
    /// Entity identifier.
    pub entity_id: String,
    /// Stored keys (null until the first poll seeds them).
    #[schema(value_type = Object)]
    pub jwks: Option<Jwks>,
    /// Keys are polled from the anchor's Entity Configuration.
    pub enable_jwks_update: bool,
    /// Poll interval, seconds (0 = derive from the configuration's `exp`).
    pub key_poll_interval: i64,
    /// What chain validation does with `constraints` in this anchor's own Entity
    /// Configuration; null follows `federation.anchor_ec_constraints` (`docs/interop.md`).
    #[schema(value_type = Option<AnchorEcConstraintsValue>)]
    pub anchor_ec_constraints: Option<AnchorEcConstraints>,
    /// Trust Mark Issuers this anchor lists in `trust_mark_issuers` are trusted on their
    /// self-signed Entity Configuration when they have no trust chain to it (default false:
    /// the chain is required, `docs/roles/resolver.md`).
    pub trust_mark_issuer_self_signed: bool,
    /// Whether the resolver asks each returned Trust Mark's issuer for its status:
    /// `off` (default), `fail_closed` (an issuer that cannot be asked drops its marks) or
    /// `fail_open` (keeps them).
    #[schema(value_type = TrustMarkStatusValue)]
    pub trust_mark_status: TrustMarkStatusCheck,
}

/// The values of `trust_mark_status`, for the OpenAPI document.
#[derive(ToSchema)]
#[schema(rename_all = "snake_case")]
#[allow(dead_code)] // never built: it only describes the shared enum's JSON form
pub enum TrustMarkStatusValue {
    /// Not asked: signatures and `exp` decide.
    Off,
    /// Asked; marks whose issuer cannot be asked are dropped.
    FailClosed,
    /// Asked; marks whose issuer cannot be asked are kept.
    FailOpen,
}

/// The values of `anchor_ec_constraints`, for the OpenAPI document (the type itself lives in
/// the shared crate, which does not depend on utoipa).
#[derive(ToSchema)]
#[schema(rename_all = "lowercase")]
#[allow(dead_code)] // never built: it only describes the shared enum's JSON form
pub enum AnchorEcConstraintsValue {
    /// Enforce them as if the anchor's statement about each immediate subordinate carried them.
    Apply,
    /// Disregard them (logged once per anchor).
    Ignore,
    /// Refuse every chain to this anchor while its Entity Configuration carries them.
    Refuse,
}

impl From<TrustAnchorRow> for TrustAnchorRecord {
    fn from(r: TrustAnchorRow) -> Self {
        Self {
            id: r.id,
            created_at: r.created_at,
            updated_at: r.updated_at,
            entity_id: r.entity_id,
            jwks: r.jwks,
            enable_jwks_update: r.enable_jwks_update,
            key_poll_interval: r.key_poll_interval,
            anchor_ec_constraints: r.anchor_ec_constraints,
            trust_mark_issuer_self_signed: r.trust_mark_issuer_self_signed,
            trust_mark_status: r.trust_mark_status,
        }
    }
}

/// Create/update body of a trust anchor.
#[derive(Debug, Deserialize, ToSchema)]
pub struct TrustAnchorInput {
    /// Entity identifier (required on create).
    pub entity_id: Option<String>,
    /// Keys; optional when `enable_jwks_update` is true (the first poll seeds them).
    #[schema(value_type = Object)]
    pub jwks: Option<Jwks>,
    /// Poll the anchor's keys.
    #[serde(default)]
    pub enable_jwks_update: bool,
    /// Poll interval, seconds (0 = derive).
    #[serde(default)]
    pub key_poll_interval: i64,
    /// Override of `federation.anchor_ec_constraints` for chains to this anchor: `apply`,
    /// `ignore` or `refuse`; absent or null follows the setting. `federation.profile: strict`
    /// refuses whatever this says.
    #[serde(default)]
    #[schema(value_type = Option<AnchorEcConstraintsValue>)]
    pub anchor_ec_constraints: Option<AnchorEcConstraints>,
    /// Trust Mark Issuers this anchor lists in `trust_mark_issuers` may be trusted on their
    /// self-signed Entity Configuration when they have no trust chain to it; absent: false
    /// (the issuer must chain to the anchor).
    #[serde(default)]
    pub trust_mark_issuer_self_signed: bool,
    /// Ask each returned Trust Mark's issuer for its status: `off`, `fail_closed` or
    /// `fail_open`; absent: `off`.
    #[serde(default)]
    #[schema(value_type = Option<TrustMarkStatusValue>)]
    pub trust_mark_status: TrustMarkStatusCheck,
}

/// Checks a JWK Set given for a trust anchor, subordinate or trust mark owner (the shared
/// rule: [`pharos_shared::jose::check_public_key_set`]; `accepted_kty`:
/// `federation.accept.key_types`); the message names the key as `jwks.keys[i]`.
pub fn validate_jwks(jwks: &Jwks, accepted_kty: &[String]) -> ApiResult<()> {
    pharos_shared::jose::check_public_key_set(jwks, accepted_kty)
        .map_err(|e| ApiError::BadRequest(format!("jwks.{e}")))
}

/// Checks the body of a trust anchor named `entity` (create and update).
pub fn validate(input: &TrustAnchorInput, entity: &str, accepted_kty: &[String]) -> ApiResult<()> {
    entity_id("entity_id", entity)?;
    if input.key_poll_interval < 0 {
        return Err(ApiError::BadRequest(
            "key_poll_interval must not be negative".into(),
        ));
    }
    match &input.jwks {
        Some(j) if j.keys.is_empty() && !input.enable_jwks_update => Err(ApiError::BadRequest(
            "jwks must contain keys unless enable_jwks_update is true".into(),
        )),
        Some(j) => validate_jwks(j, accepted_kty),
        None => Ok(()),
    }
}

impl TrustAnchorInput {
    /// Checks the body of a new trust anchor as its route does before it reads the database:
    /// the anchor's entity identifier.
    pub fn check_new(&self, accepted_kty: &[String]) -> ApiResult<String> {
        let entity = self
            .entity_id
            .clone()
            .ok_or_else(|| ApiError::BadRequest("entity_id is required".into()))?;
        validate(self, &entity, accepted_kty)?;
        if self.jwks.is_none() && !self.enable_jwks_update {
            return Err(ApiError::BadRequest(
                "jwks is required unless enable_jwks_update is true".into(),
            ));
        }
        Ok(entity)
    }
}

async fn existing(cp: &ControlPlane, entity: &str) -> ApiResult<TrustAnchorRow> {
    repo::get(&cp.db, entity)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("unknown trust anchor {entity:?}")))
}

/// Lists the trust anchor repository.
#[utoipa::path(get, path = "/trust-anchors", tag = "trust-anchors",
    responses((status = 200, body = [TrustAnchorRecord])))]
pub async fn list(State(cp): Cp) -> ApiResult<axum::Json<Vec<TrustAnchorRecord>>> {
    let rows = repo::list(&cp.db).await?;
    Ok(axum::Json(rows.into_iter().map(Into::into).collect()))
}

/// Shows one trust anchor (entity identifier URL-encoded in the path).
#[utoipa::path(get, path = "/trust-anchors/{entityID}", tag = "trust-anchors",
    params(("entityID" = String, Path, description = "URL-encoded entity identifier")),
    responses((status = 200, body = TrustAnchorRecord), (status = 404)))]
pub async fn get(
    State(cp): Cp,
    Path(entity): Path<String>,
) -> ApiResult<axum::Json<TrustAnchorRecord>> {
    Ok(axum::Json(existing(&cp, &entity).await?.into()))
}

/// Adds a trust anchor to the repository.
#[utoipa::path(post, path = "/trust-anchors", tag = "trust-anchors",
    request_body = TrustAnchorInput,
    responses((status = 201, body = TrustAnchorRecord), (status = 400), (status = 409)))]
pub async fn create(
    State(cp): Cp,
    actor: Actor,
    Json(input): Json<TrustAnchorInput>,
) -> ApiResult<impl IntoResponse> {
    let entity = input.check_new(&cp.settings.federation.accept.key_types)?;
    let mut w = cp.write(actor.name()).await;
    if repo::get(&cp.db, &entity).await?.is_some() {
        return Err(ApiError::Conflict(format!(
            "trust anchor {entity:?} already exists"
        )));
    }
    let now = cp.now();
    let tx = w.tx().await?;
    repo::insert(
        &cp.db,
        tx,
        &TrustAnchorWrite {
            entity_id: entity.clone(),
            jwks: input.jwks,
            enable_jwks_update: input.enable_jwks_update,
            key_poll_interval: input.key_poll_interval,
            anchor_ec_constraints: input.anchor_ec_constraints,
            trust_mark_issuer_self_signed: input.trust_mark_issuer_self_signed,
            trust_mark_status: input.trust_mark_status,
        },
        now,
    )
    .await?;
    w.touch(Section::TrustAnchors);
    w.touch(Section::Registry);
    w.commit().await?;
    let rec: TrustAnchorRecord = existing(&cp, &entity).await?.into();
    Ok((StatusCode::CREATED, axum::Json(rec)))
}

/// Updates a trust anchor; keys are kept when `jwks` is absent.
#[utoipa::path(put, path = "/trust-anchors/{entityID}", tag = "trust-anchors",
    params(("entityID" = String, Path, description = "URL-encoded entity identifier")),
    request_body = TrustAnchorInput,
    responses((status = 200, body = TrustAnchorRecord), (status = 400), (status = 404), (status = 409)))]
pub async fn update(
    State(cp): Cp,
    actor: Actor,
    Path(entity): Path<String>,
    Json(input): Json<TrustAnchorInput>,
) -> ApiResult<axum::Json<TrustAnchorRecord>> {
    let new_id = input.entity_id.clone().unwrap_or_else(|| entity.clone());
    validate(&input, &new_id, &cp.settings.federation.accept.key_types)?;
    let mut w = cp.write(actor.name()).await;
    let old = existing(&cp, &entity).await?;
    if new_id != old.entity_id && repo::get(&cp.db, &new_id).await?.is_some() {
        return Err(ApiError::Conflict(format!(
            "trust anchor {new_id:?} already exists"
        )));
    }
    let jwks = input.jwks.or(old.jwks);
    if jwks.is_none() && !input.enable_jwks_update {
        return Err(ApiError::BadRequest(
            "jwks is required unless enable_jwks_update is true".into(),
        ));
    }
    let now = cp.now();
    let tx = w.tx().await?;
    repo::update(
        &cp.db,
        tx,
        old.id,
        &TrustAnchorWrite {
            entity_id: new_id.clone(),
            jwks,
            enable_jwks_update: input.enable_jwks_update,
            key_poll_interval: input.key_poll_interval,
            anchor_ec_constraints: input.anchor_ec_constraints,
            trust_mark_issuer_self_signed: input.trust_mark_issuer_self_signed,
            trust_mark_status: input.trust_mark_status,
        },
        now,
    )
    .await?;
    w.touch(Section::TrustAnchors);
    w.touch(Section::Registry);
    w.commit().await?;
    Ok(axum::Json(existing(&cp, &new_id).await?.into()))
}

/// Removes a trust anchor; endpoint links to it go with it.
#[utoipa::path(delete, path = "/trust-anchors/{entityID}", tag = "trust-anchors",
    params(("entityID" = String, Path, description = "URL-encoded entity identifier")),
    responses((status = 204), (status = 404)))]
pub async fn delete(
    State(cp): Cp,
    actor: Actor,
    Path(entity): Path<String>,
) -> ApiResult<StatusCode> {
    let mut w = cp.write(actor.name()).await;
    let old = existing(&cp, &entity).await?;
    let tx = w.tx().await?;
    repo::delete(&cp.db, tx, old.id).await?;
    w.touch(Section::TrustAnchors);
    w.touch(Section::Registry);
    w.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}
