//! `/trust-marks/types/{type}/issuers` and `/owner`: who may issue a type and who owns it.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;

use super::inputs::{IssuerInput, OwnerInput, replace_issuers};
use super::records::{IssuerRecord, OwnerRecord, issuers_of};
use super::{Cp, find_issuer, find_type};
use crate::admin::actor::Actor;
use crate::admin::error::{ApiError, ApiResult};
use crate::admin::extract::Json;
use crate::control_plane::{ControlPlane, Section};
use crate::db::trust_mark_parties::{self as parties, Key};
use crate::db::trust_mark_types as repo;

/// This module's routes, merged by [`super::routes`].
pub fn routes() -> crate::admin::Routes {
    use utoipa_axum::routes;
    crate::admin::Routes::new()
        .routes(routes!(list_issuers, put_issuers, add_issuer))
        .routes(routes!(remove_issuer))
        .routes(routes!(get_owner, put_owner, post_owner, delete_owner))
}

/// The issuers recognised for a type.
#[utoipa::path(get, path = "/trust-marks/types/{trustMarkTypeID}/issuers", tag = "trust-marks",
    params(("trustMarkTypeID" = String, Path)),
    responses((status = 200, body = [IssuerRecord]), (status = 404)))]
pub async fn list_issuers(
    State(cp): Cp,
    Path(key): Path<String>,
) -> ApiResult<axum::Json<Vec<IssuerRecord>>> {
    let t = find_type(&cp, &key).await?;
    Ok(axum::Json(issuers_of(&cp, t.id).await?))
}

/// Replaces the issuers of a type.
#[utoipa::path(put, path = "/trust-marks/types/{trustMarkTypeID}/issuers", tag = "trust-marks",
    params(("trustMarkTypeID" = String, Path)), request_body = [IssuerInput],
    responses((status = 200, body = [IssuerRecord]), (status = 400), (status = 404)))]
pub async fn put_issuers(
    State(cp): Cp,
    Path(key): Path<String>,
    actor: Actor,
    Json(issuers): Json<Vec<IssuerInput>>,
) -> ApiResult<axum::Json<Vec<IssuerRecord>>> {
    for i in &issuers {
        i.validate()?;
    }
    let mut w = cp.write(actor.name()).await;
    let t = find_type(&cp, &key).await?;
    replace_issuers(&cp, &mut w, t.id, &issuers).await?;
    w.trust_mark_event(&t.trust_mark_type, None, None, "issuers_replaced", None)
        .await?;
    w.touch(Section::TrustMarks);
    w.commit().await?;
    Ok(axum::Json(issuers_of(&cp, t.id).await?))
}

/// Adds one issuer to a type (`issuer_id` or `issuer`); answers the resulting list.
#[utoipa::path(post, path = "/trust-marks/types/{trustMarkTypeID}/issuers", tag = "trust-marks",
    params(("trustMarkTypeID" = String, Path)), request_body = IssuerInput,
    responses((status = 201, body = [IssuerRecord]), (status = 400), (status = 404)))]
pub async fn add_issuer(
    State(cp): Cp,
    Path(key): Path<String>,
    actor: Actor,
    Json(issuer): Json<IssuerInput>,
) -> ApiResult<impl IntoResponse> {
    issuer.validate()?;
    let mut w = cp.write(actor.name()).await;
    let t = find_type(&cp, &key).await?;
    let id = issuer.resolve(&cp, &mut w).await?;
    repo::link_issuer(&cp.db, w.tx().await?, t.id, id).await?;
    let msg = issuer.issuer.clone().map(|i| format!("issuer {i} added"));
    w.trust_mark_event(&t.trust_mark_type, None, None, "issuer_added", msg)
        .await?;
    w.touch(Section::TrustMarks);
    w.commit().await?;
    Ok((
        StatusCode::CREATED,
        axum::Json(issuers_of(&cp, t.id).await?),
    ))
}

/// Removes one issuer from a type (the global issuer stays).
#[utoipa::path(delete, path = "/trust-marks/types/{trustMarkTypeID}/issuers/{issuerID}", tag = "trust-marks",
    params(("trustMarkTypeID" = String, Path), ("issuerID" = String, Path, description = "numeric id or URL-encoded entity identifier")),
    responses((status = 204), (status = 404)))]
pub async fn remove_issuer(
    State(cp): Cp,
    actor: Actor,
    Path((key, issuer)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    let mut w = cp.write(actor.name()).await;
    let t = find_type(&cp, &key).await?;
    let i = find_issuer(&cp, &issuer).await?;
    if repo::unlink_issuer(&cp.db, w.tx().await?, t.id, i.id).await? {
        let msg = Some(format!("issuer {} removed", i.issuer));
        w.trust_mark_event(&t.trust_mark_type, None, None, "issuer_removed", msg)
            .await?;
        w.touch(Section::TrustMarks);
    }
    w.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The owner of a type (404 when it has none).
#[utoipa::path(get, path = "/trust-marks/types/{trustMarkTypeID}/owner", tag = "trust-marks",
    params(("trustMarkTypeID" = String, Path)),
    responses((status = 200, body = OwnerRecord), (status = 404)))]
pub async fn get_owner(
    State(cp): Cp,
    Path(key): Path<String>,
) -> ApiResult<axum::Json<OwnerRecord>> {
    let t = find_type(&cp, &key).await?;
    let owner = match t.owner_id {
        Some(id) => parties::owner(&cp.db, Key::Id(id)).await?,
        None => None,
    };
    owner
        .map(|o| axum::Json(o.into()))
        .ok_or_else(|| ApiError::NotFound(format!("trust mark type {key:?} has no owner")))
}

async fn set_owner(
    cp: &ControlPlane,
    key: &str,
    actor: &Actor,
    o: OwnerInput,
) -> ApiResult<OwnerRecord> {
    o.validate(&cp.settings.federation.accept.key_types)?;
    let mut w = cp.write(actor.name()).await;
    let t = find_type(cp, key).await?;
    let id = o.resolve(cp, &mut w).await?;
    repo::set_owner(&cp.db, w.tx().await?, t.id, Some(id), cp.now()).await?;
    w.trust_mark_event(&t.trust_mark_type, None, None, "owner_set", None)
        .await?;
    w.touch(Section::TrustMarks);
    w.commit().await?;
    let owner = parties::owner(&cp.db, Key::Id(id)).await?;
    owner
        .map(Into::into)
        .ok_or_else(|| ApiError::Internal("owner vanished after commit".into()))
}

/// Sets the owner of a type: `{entity_id, jwks}` (created, or updated when stored) or
/// `{owner_id}` linking a global owner.
#[utoipa::path(put, path = "/trust-marks/types/{trustMarkTypeID}/owner", tag = "trust-marks",
    params(("trustMarkTypeID" = String, Path)), request_body = OwnerInput,
    responses((status = 200, body = OwnerRecord), (status = 400), (status = 404)))]
pub async fn put_owner(
    State(cp): Cp,
    Path(key): Path<String>,
    actor: Actor,
    Json(o): Json<OwnerInput>,
) -> ApiResult<axum::Json<OwnerRecord>> {
    Ok(axum::Json(set_owner(&cp, &key, &actor, o).await?))
}

/// Sets the owner of a type (as `PUT`), answering `201`.
#[utoipa::path(post, path = "/trust-marks/types/{trustMarkTypeID}/owner", tag = "trust-marks",
    params(("trustMarkTypeID" = String, Path)), request_body = OwnerInput,
    responses((status = 201, body = OwnerRecord), (status = 400), (status = 404)))]
pub async fn post_owner(
    State(cp): Cp,
    Path(key): Path<String>,
    actor: Actor,
    Json(o): Json<OwnerInput>,
) -> ApiResult<impl IntoResponse> {
    let rec = set_owner(&cp, &key, &actor, o).await?;
    Ok((StatusCode::CREATED, axum::Json(rec)))
}

/// Removes the owner of a type (the global owner stays).
#[utoipa::path(delete, path = "/trust-marks/types/{trustMarkTypeID}/owner", tag = "trust-marks",
    params(("trustMarkTypeID" = String, Path)), responses((status = 204), (status = 404)))]
pub async fn delete_owner(
    State(cp): Cp,
    actor: Actor,
    Path(key): Path<String>,
) -> ApiResult<StatusCode> {
    let mut w = cp.write(actor.name()).await;
    let t = find_type(&cp, &key).await?;
    if t.owner_id.is_some() {
        repo::set_owner(&cp.db, w.tx().await?, t.id, None, cp.now()).await?;
        w.trust_mark_event(&t.trust_mark_type, None, None, "owner_removed", None)
            .await?;
        w.touch(Section::TrustMarks);
    }
    w.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}
