//! `/trust-marks/types`: the trust mark types this entity knows, with their owner and issuers
//! (published in our Entity Configuration as `trust_mark_owners` / `trust_mark_issuers`).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use serde::Deserialize;
use utoipa::ToSchema;

use super::inputs::{IssuerInput, OwnerInput, replace_issuers};
use super::records::{TypeRecord, type_record};
use super::{Cp, find_type};
use crate::admin::actor::Actor;
use crate::admin::error::{ApiError, ApiResult};
use crate::admin::extract::Json;
use crate::control_plane::{ControlPlane, Section};
use crate::db::trust_mark_parties::Key;
use crate::db::trust_mark_types as repo;

/// This module's routes, merged by [`super::routes`].
pub fn routes() -> crate::admin::Routes {
    use utoipa_axum::routes;
    crate::admin::Routes::new()
        .routes(routes!(list, create))
        .routes(routes!(get, put, delete))
}

/// Body of `POST` / `PUT /trust-marks/types…`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct TypeInput {
    /// The type identifier (required on create; on update, renames the type).
    pub trust_mark_type: Option<String>,
    /// Free text.
    pub description: Option<String>,
    /// The owner (linked, or created when absent).
    pub trust_mark_owner: Option<OwnerInput>,
    /// The issuers recognised for the type (replace the current ones when given).
    pub trust_mark_issuers: Option<Vec<IssuerInput>>,
}

/// Checks a trust mark type identifier: non-empty, not a bare number (numbers address rows by
/// id in paths), at most 512 characters.
pub fn check_type_name(t: &str) -> ApiResult<()> {
    if t.trim().is_empty() || t.len() > 512 || t.parse::<i64>().is_ok() || t.trim() != t {
        return Err(ApiError::BadRequest(
            "trust_mark_type must be a non-numeric identifier of at most 512 characters".into(),
        ));
    }
    Ok(())
}

impl TypeInput {
    /// Checks the body as its routes do before they read the database (`accepted_kty`:
    /// `federation.accept.key_types`, for the owner's keys).
    pub fn validate(&self, accepted_kty: &[String]) -> ApiResult<()> {
        if let Some(t) = &self.trust_mark_type {
            check_type_name(t)?;
        }
        if let Some(o) = &self.trust_mark_owner {
            o.validate(accepted_kty)?;
        }
        for i in self.trust_mark_issuers.iter().flatten() {
            i.validate()?;
        }
        Ok(())
    }
}

/// Lists the trust mark types.
#[utoipa::path(get, path = "/trust-marks/types", tag = "trust-marks",
    responses((status = 200, body = [TypeRecord])))]
pub async fn list(State(cp): Cp) -> ApiResult<axum::Json<Vec<TypeRecord>>> {
    let mut out = Vec::new();
    for t in repo::list(&cp.db).await? {
        out.push(type_record(&cp, t).await?);
    }
    Ok(axum::Json(out))
}

/// Adds a trust mark type, with its owner and issuers.
#[utoipa::path(post, path = "/trust-marks/types", tag = "trust-marks", request_body = TypeInput,
    responses((status = 201, body = TypeRecord), (status = 400), (status = 409)))]
pub async fn create(
    State(cp): Cp,
    actor: Actor,
    Json(input): Json<TypeInput>,
) -> ApiResult<impl IntoResponse> {
    input.validate(&cp.settings.federation.accept.key_types)?;
    let name = input
        .trust_mark_type
        .clone()
        .ok_or_else(|| ApiError::BadRequest("trust_mark_type is required".into()))?;
    let mut w = cp.write(actor.name()).await;
    if repo::get(&cp.db, Key::Name(&name)).await?.is_some() {
        return Err(ApiError::Conflict(format!(
            "trust mark type {name:?} already exists"
        )));
    }
    let owner = match &input.trust_mark_owner {
        Some(o) => Some(o.resolve(&cp, &mut w).await?),
        None => None,
    };
    let description = input.description.clone().unwrap_or_default();
    let now = cp.now();
    let id = repo::insert(&cp.db, w.tx().await?, &name, owner, &description, now).await?;
    if let Some(issuers) = &input.trust_mark_issuers {
        replace_issuers(&cp, &mut w, id, issuers).await?;
    }
    w.trust_mark_event(&name, None, None, "type_created", None)
        .await?;
    w.touch(Section::TrustMarks);
    w.commit().await?;
    let rec = type_record(&cp, find_type(&cp, &name).await?).await?;
    Ok((StatusCode::CREATED, axum::Json(rec)))
}

/// Shows one type (numeric id or URL-encoded identifier).
#[utoipa::path(get, path = "/trust-marks/types/{trustMarkTypeID}", tag = "trust-marks",
    params(("trustMarkTypeID" = String, Path, description = "numeric id or URL-encoded type")),
    responses((status = 200, body = TypeRecord), (status = 404)))]
pub async fn get(State(cp): Cp, Path(key): Path<String>) -> ApiResult<axum::Json<TypeRecord>> {
    Ok(axum::Json(
        type_record(&cp, find_type(&cp, &key).await?).await?,
    ))
}

async fn update(
    cp: &ControlPlane,
    key: &str,
    actor: &Actor,
    input: TypeInput,
) -> ApiResult<TypeRecord> {
    input.validate(&cp.settings.federation.accept.key_types)?;
    let mut w = cp.write(actor.name()).await;
    let t = find_type(cp, key).await?;
    let name = input
        .trust_mark_type
        .clone()
        .unwrap_or(t.trust_mark_type.clone());
    if name != t.trust_mark_type && repo::get(&cp.db, Key::Name(&name)).await?.is_some() {
        return Err(ApiError::Conflict(format!(
            "trust mark type {name:?} already exists"
        )));
    }
    let now = cp.now();
    if let Some(o) = &input.trust_mark_owner {
        let owner = o.resolve(cp, &mut w).await?;
        repo::set_owner(&cp.db, w.tx().await?, t.id, Some(owner), now).await?;
    }
    if let Some(issuers) = &input.trust_mark_issuers {
        replace_issuers(cp, &mut w, t.id, issuers).await?;
    }
    let description = input.description.clone().unwrap_or(t.description.clone());
    repo::update(&cp.db, w.tx().await?, t.id, &name, &description, now).await?;
    let msg = (name != t.trust_mark_type).then(|| format!("renamed from {}", t.trust_mark_type));
    w.trust_mark_event(&name, None, None, "type_updated", msg)
        .await?;
    w.touch(Section::TrustMarks);
    w.commit().await?;
    type_record(cp, find_type(cp, &t.id.to_string()).await?).await
}

/// Updates a type: description, name, owner (created when absent) and issuers (replaced when
/// given).
#[utoipa::path(put, path = "/trust-marks/types/{trustMarkTypeID}", tag = "trust-marks",
    params(("trustMarkTypeID" = String, Path)), request_body = TypeInput,
    responses((status = 200, body = TypeRecord), (status = 400), (status = 404), (status = 409)))]
pub async fn put(
    State(cp): Cp,
    Path(key): Path<String>,
    actor: Actor,
    Json(input): Json<TypeInput>,
) -> ApiResult<axum::Json<TypeRecord>> {
    Ok(axum::Json(update(&cp, &key, &actor, input).await?))
}

/// Deletes a type (its owner and issuers stay as global rows).
#[utoipa::path(delete, path = "/trust-marks/types/{trustMarkTypeID}", tag = "trust-marks",
    params(("trustMarkTypeID" = String, Path)), responses((status = 204), (status = 404)))]
pub async fn delete(State(cp): Cp, actor: Actor, Path(key): Path<String>) -> ApiResult<StatusCode> {
    let mut w = cp.write(actor.name()).await;
    let t = find_type(&cp, &key).await?;
    repo::delete(&cp.db, w.tx().await?, t.id).await?;
    w.trust_mark_event(&t.trust_mark_type, None, None, "type_deleted", None)
        .await?;
    w.touch(Section::TrustMarks);
    w.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}
