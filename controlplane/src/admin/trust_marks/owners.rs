//! `/trust-marks/owners`: global trust mark owners and the types they own. A change to an
//! owner is recorded in the history of each type it owns (its keys are published with them).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use pharos_shared::jose::Jwks;
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::records::{OwnerWithTypes, TypeRef, owner_with_types};
use super::{Cp, find_owner, find_type, named_type, named_types, record_in_types, type_key};
use crate::admin::actor::Actor;
use crate::admin::error::{ApiError, ApiResult};
use crate::admin::extract::{Json, Text, entity_id};
use crate::admin::trust_anchors::validate_jwks;
use crate::control_plane::{ControlPlane, Section, Write};
use crate::db::trust_mark_parties::{self as parties, Key, OwnerRow};
use crate::db::trust_mark_types::{self as types_repo, TypeRow};

/// This module's routes, merged by [`super::routes`].
pub fn routes() -> crate::admin::Routes {
    use utoipa_axum::routes;
    crate::admin::Routes::new()
        .routes(routes!(list, create))
        .routes(routes!(get, put, delete))
        .routes(routes!(get_types, put_types, add_type))
        .routes(routes!(remove_type))
}

/// Body of `POST` / `PUT /trust-marks/owners…`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct OwnerBody {
    /// Entity identifier (required on create).
    pub entity_id: Option<String>,
    /// Public keys its delegations are signed with (required on create).
    #[schema(value_type = Option<Object>)]
    pub jwks: Option<Jwks>,
    /// Free text.
    pub description: Option<String>,
    /// Types it owns (ids or identifiers; replace the current ones when given).
    #[schema(value_type = Option<Vec<Object>>)]
    pub types: Option<Vec<Value>>,
}

impl OwnerBody {
    /// Checks the body as its routes do before they read the database (`accepted_kty`:
    /// `federation.accept.key_types`).
    pub fn validate(&self, accepted_kty: &[String]) -> ApiResult<()> {
        if let Some(e) = &self.entity_id {
            entity_id("entity_id", e)?;
        }
        if let Some(j) = &self.jwks {
            if j.keys.is_empty() {
                return Err(ApiError::BadRequest(
                    "jwks must contain at least one key".into(),
                ));
            }
            validate_jwks(j, accepted_kty)?;
        }
        for t in self.types.iter().flatten() {
            type_key(t)?;
        }
        Ok(())
    }
}

/// Makes `owner_id` the owner of exactly `types` (types it owned before and not listed lose
/// their owner); returns the types it owns now. History: `owner_removed` in the types it lost,
/// `owner_set` in the ones it owns.
async fn replace_types(
    cp: &ControlPlane,
    w: &mut Write<'_>,
    owner: &OwnerRow,
    types: &[Value],
) -> ApiResult<Vec<TypeRow>> {
    let new = named_types(cp, types).await?;
    let old = types_repo::of_owner(&cp.db, owner.id).await?;
    let now = cp.now();
    let c = w.tx().await?;
    types_repo::clear_owner(&cp.db, c, owner.id, now).await?;
    for t in &new {
        types_repo::set_owner(&cp.db, c, t.id, Some(owner.id), now).await?;
    }
    let lost: Vec<TypeRow> = old
        .into_iter()
        .filter(|o| !new.iter().any(|n| n.id == o.id))
        .collect();
    let e = &owner.entity_id;
    record_in_types(w, &lost, "owner_removed", &format!("owner {e} unlinked")).await?;
    record_in_types(w, &new, "owner_set", &format!("owner {e} linked")).await?;
    Ok(new)
}

/// Lists the global owners with their types.
#[utoipa::path(get, path = "/trust-marks/owners", tag = "trust-marks",
    responses((status = 200, body = [OwnerWithTypes])))]
pub async fn list(State(cp): Cp) -> ApiResult<axum::Json<Vec<OwnerWithTypes>>> {
    let mut out = Vec::new();
    for o in parties::owners(&cp.db).await? {
        out.push(owner_with_types(&cp, o).await?);
    }
    Ok(axum::Json(out))
}

/// Adds a global owner (`entity_id` and `jwks` required).
#[utoipa::path(post, path = "/trust-marks/owners", tag = "trust-marks", request_body = OwnerBody,
    responses((status = 201, body = OwnerWithTypes), (status = 400), (status = 409)))]
pub async fn create(
    State(cp): Cp,
    actor: Actor,
    Json(b): Json<OwnerBody>,
) -> ApiResult<impl IntoResponse> {
    b.validate(&cp.settings.federation.accept.key_types)?;
    let (Some(e), Some(jwks)) = (&b.entity_id, &b.jwks) else {
        return Err(ApiError::BadRequest(
            "entity_id and jwks are required".into(),
        ));
    };
    let mut w = cp.write(actor.name()).await;
    if parties::owner(&cp.db, Key::Name(e)).await?.is_some() {
        return Err(ApiError::Conflict(format!(
            "trust mark owner {e:?} already exists"
        )));
    }
    let d = b.description.as_deref().unwrap_or_default();
    let now = cp.now();
    let id = parties::insert_owner(&cp.db, w.tx().await?, e, jwks, d, now).await?;
    if let Some(types) = &b.types {
        let owner = OwnerRow {
            id,
            entity_id: e.clone(),
            jwks: jwks.clone(),
            description: d.to_string(),
            created_at: now,
            updated_at: now,
        };
        replace_types(&cp, &mut w, &owner, types).await?;
    }
    w.touch(Section::TrustMarks);
    w.commit().await?;
    let rec = owner_with_types(&cp, find_owner(&cp, e).await?).await?;
    Ok((StatusCode::CREATED, axum::Json(rec)))
}

/// Shows one owner (numeric id or URL-encoded entity identifier).
#[utoipa::path(get, path = "/trust-marks/owners/{ownerID}", tag = "trust-marks",
    params(("ownerID" = String, Path, description = "numeric id or URL-encoded entity identifier")),
    responses((status = 200, body = OwnerWithTypes), (status = 404)))]
pub async fn get(State(cp): Cp, Path(key): Path<String>) -> ApiResult<axum::Json<OwnerWithTypes>> {
    Ok(axum::Json(
        owner_with_types(&cp, find_owner(&cp, &key).await?).await?,
    ))
}

/// Updates an owner: entity identifier, keys, description (fields given), types (replaced
/// when given).
#[utoipa::path(put, path = "/trust-marks/owners/{ownerID}", tag = "trust-marks",
    params(("ownerID" = String, Path)), request_body = OwnerBody,
    responses((status = 200, body = OwnerWithTypes), (status = 400), (status = 404), (status = 409)))]
pub async fn put(
    State(cp): Cp,
    Path(key): Path<String>,
    actor: Actor,
    Json(b): Json<OwnerBody>,
) -> ApiResult<axum::Json<OwnerWithTypes>> {
    b.validate(&cp.settings.federation.accept.key_types)?;
    let mut w = cp.write(actor.name()).await;
    let o = find_owner(&cp, &key).await?;
    let e = b.entity_id.clone().unwrap_or(o.entity_id.clone());
    let jwks = b.jwks.clone().unwrap_or(o.jwks.clone());
    let d = b.description.clone().unwrap_or(o.description.clone());
    parties::update_owner(&cp.db, w.tx().await?, o.id, &e, &jwks, &d, cp.now()).await?;
    let owned = types_repo::of_owner(&cp.db, o.id).await?;
    record_in_types(
        &mut w,
        &owned,
        "owner_updated",
        &format!("owner {e} updated"),
    )
    .await?;
    if let Some(types) = &b.types {
        replace_types(&cp, &mut w, &o, types).await?;
    }
    w.touch(Section::TrustMarks);
    w.commit().await?;
    Ok(axum::Json(
        owner_with_types(&cp, find_owner(&cp, &o.id.to_string()).await?).await?,
    ))
}

/// Deletes an owner; its types stay, without an owner.
#[utoipa::path(delete, path = "/trust-marks/owners/{ownerID}", tag = "trust-marks",
    params(("ownerID" = String, Path)), responses((status = 204), (status = 404)))]
pub async fn delete(State(cp): Cp, actor: Actor, Path(key): Path<String>) -> ApiResult<StatusCode> {
    let mut w = cp.write(actor.name()).await;
    let o = find_owner(&cp, &key).await?;
    let owned = types_repo::of_owner(&cp.db, o.id).await?;
    let msg = format!("owner {} deleted", o.entity_id);
    record_in_types(&mut w, &owned, "owner_removed", &msg).await?;
    parties::delete_owner(&cp.db, w.tx().await?, o.id).await?;
    w.touch(Section::TrustMarks);
    w.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn types_of(cp: &ControlPlane, owner_id: i64) -> ApiResult<Vec<TypeRef>> {
    let types = types_repo::of_owner(&cp.db, owner_id).await?;
    Ok(types.iter().map(Into::into).collect())
}

/// The types an owner owns.
#[utoipa::path(get, path = "/trust-marks/owners/{ownerID}/types", tag = "trust-marks",
    params(("ownerID" = String, Path)), responses((status = 200, body = [TypeRef]), (status = 404)))]
pub async fn get_types(
    State(cp): Cp,
    Path(key): Path<String>,
) -> ApiResult<axum::Json<Vec<TypeRef>>> {
    let o = find_owner(&cp, &key).await?;
    Ok(axum::Json(types_of(&cp, o.id).await?))
}

/// Replaces the types an owner owns (array of type ids or identifiers).
#[utoipa::path(put, path = "/trust-marks/owners/{ownerID}/types", tag = "trust-marks",
    params(("ownerID" = String, Path)), request_body = [Object],
    responses((status = 200, body = [TypeRef]), (status = 400), (status = 404)))]
pub async fn put_types(
    State(cp): Cp,
    Path(key): Path<String>,
    actor: Actor,
    Json(types): Json<Vec<Value>>,
) -> ApiResult<axum::Json<Vec<TypeRef>>> {
    let mut w = cp.write(actor.name()).await;
    let o = find_owner(&cp, &key).await?;
    replace_types(&cp, &mut w, &o, &types).await?;
    w.touch(Section::TrustMarks);
    w.commit().await?;
    Ok(axum::Json(types_of(&cp, o.id).await?))
}

/// Makes the owner own one more type (raw type id or identifier); answers the list.
#[utoipa::path(post, path = "/trust-marks/owners/{ownerID}/types", tag = "trust-marks",
    params(("ownerID" = String, Path)), request_body(content = String, content_type = "text/plain"),
    responses((status = 201, body = [TypeRef]), (status = 400), (status = 404)))]
pub async fn add_type(
    State(cp): Cp,
    Path(key): Path<String>,
    actor: Actor,
    Text(body): Text,
) -> ApiResult<impl IntoResponse> {
    let t_key = body.trim_matches('"').to_string();
    let mut w = cp.write(actor.name()).await;
    let o = find_owner(&cp, &key).await?;
    let t = named_type(&cp, &Value::String(t_key)).await?;
    types_repo::set_owner(&cp.db, w.tx().await?, t.id, Some(o.id), cp.now()).await?;
    let msg = Some(format!("owner {} linked", o.entity_id));
    w.trust_mark_event(&t.trust_mark_type, None, None, "owner_set", msg)
        .await?;
    w.touch(Section::TrustMarks);
    w.commit().await?;
    Ok((StatusCode::CREATED, axum::Json(types_of(&cp, o.id).await?)))
}

/// Takes a type away from an owner (the type stays, without an owner).
#[utoipa::path(delete, path = "/trust-marks/owners/{ownerID}/types/{trustMarkTypeID}", tag = "trust-marks",
    params(("ownerID" = String, Path), ("trustMarkTypeID" = String, Path)),
    responses((status = 204), (status = 404)))]
pub async fn remove_type(
    State(cp): Cp,
    actor: Actor,
    Path((key, t_key)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    let mut w = cp.write(actor.name()).await;
    let o = find_owner(&cp, &key).await?;
    let t = find_type(&cp, &t_key).await?;
    if t.owner_id == Some(o.id) {
        types_repo::set_owner(&cp.db, w.tx().await?, t.id, None, cp.now()).await?;
        let msg = Some(format!("owner {} unlinked", o.entity_id));
        w.trust_mark_event(&t.trust_mark_type, None, None, "owner_removed", msg)
            .await?;
        w.touch(Section::TrustMarks);
    }
    w.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}
