//! `/entity-configuration/additional-claims`: extra top-level claims of our Entity
//! Configuration (storage and rules in [`crate::admin::claims`]; ids are row ids, and the claim
//! name is accepted wherever an id is).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;

use super::Cp;
use crate::admin::actor::Actor;
use crate::admin::claims::{self, ClaimInput};
use crate::admin::error::ApiResult;
use crate::admin::extract::Json;
use crate::control_plane::{ControlPlane, Write};
use crate::db::claims::{ClaimRow, Scope};

const SCOPE: Scope = Scope::EntityConfiguration;

/// Commits and publishes the Entity Configuration.
async fn publish(mut w: Write<'_>) -> ApiResult<()> {
    w.touch(crate::control_plane::Section::EntityConfiguration);
    Ok(w.commit().await?)
}

/// Claim `id` as stored after a write.
async fn stored(cp: &ControlPlane, id: i64) -> ApiResult<ClaimRow> {
    Ok(claims::by_id(&claims::rows(cp, SCOPE).await?, id)?.clone())
}

/// Lists the additional claims.
#[utoipa::path(get, path = "/entity-configuration/additional-claims", tag = "entity-configuration",
    responses((status = 200, body = [ClaimRow])))]
pub async fn list_claims(State(cp): Cp) -> ApiResult<axum::Json<Vec<ClaimRow>>> {
    Ok(axum::Json(claims::rows(&cp, SCOPE).await?))
}

/// Replaces all additional claims.
#[utoipa::path(put, path = "/entity-configuration/additional-claims", tag = "entity-configuration",
    request_body = [ClaimInput], responses((status = 200, body = [ClaimRow]), (status = 400), (status = 409)))]
pub async fn put_claims(
    State(cp): Cp,
    actor: Actor,
    Json(list): Json<Vec<ClaimInput>>,
) -> ApiResult<axum::Json<Vec<ClaimRow>>> {
    claims::check_list(&list)?;
    let mut w = cp.write(actor.name()).await;
    w.tx().await?;
    claims::replace(&cp, &mut w, SCOPE, &list).await?;
    publish(w).await?;
    Ok(axum::Json(claims::rows(&cp, SCOPE).await?))
}

/// Adds one additional claim.
#[utoipa::path(post, path = "/entity-configuration/additional-claims", tag = "entity-configuration",
    request_body = ClaimInput, responses((status = 201, body = ClaimRow), (status = 400), (status = 409)))]
pub async fn add_claim(
    State(cp): Cp,
    actor: Actor,
    Json(c): Json<ClaimInput>,
) -> ApiResult<impl IntoResponse> {
    c.name()?;
    let mut w = cp.write(actor.name()).await;
    w.tx().await?;
    let existing = claims::rows(&cp, SCOPE).await?;
    let id = claims::add(&cp, &mut w, SCOPE, &existing, &c).await?;
    publish(w).await?;
    Ok((StatusCode::CREATED, axum::Json(stored(&cp, id).await?)))
}

/// Shows one additional claim (by id or name).
#[utoipa::path(get, path = "/entity-configuration/additional-claims/{id}", tag = "entity-configuration",
    params(("id" = String, Path)), responses((status = 200, body = ClaimRow), (status = 404)))]
pub async fn get_claim_row(
    State(cp): Cp,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<ClaimRow>> {
    let rows = claims::rows(&cp, SCOPE).await?;
    Ok(axum::Json(claims::find(&rows, &id)?.clone()))
}

/// Changes one additional claim.
#[utoipa::path(put, path = "/entity-configuration/additional-claims/{id}", tag = "entity-configuration",
    params(("id" = String, Path)), request_body = ClaimInput,
    responses((status = 200, body = ClaimRow), (status = 400), (status = 404), (status = 409)))]
pub async fn put_claim_row(
    State(cp): Cp,
    actor: Actor,
    Path(id): Path<String>,
    Json(c): Json<ClaimInput>,
) -> ApiResult<axum::Json<ClaimRow>> {
    let mut w = cp.write(actor.name()).await;
    w.tx().await?;
    let existing = claims::rows(&cp, SCOPE).await?;
    let (row_id, _) = claims::update(&cp, &mut w, SCOPE, &existing, &id, c).await?;
    publish(w).await?;
    Ok(axum::Json(stored(&cp, row_id).await?))
}

/// Removes one additional claim.
#[utoipa::path(delete, path = "/entity-configuration/additional-claims/{id}", tag = "entity-configuration",
    params(("id" = String, Path)), responses((status = 204), (status = 404)))]
pub async fn delete_claim_row(
    State(cp): Cp,
    actor: Actor,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    let mut w = cp.write(actor.name()).await;
    w.tx().await?;
    let existing = claims::rows(&cp, SCOPE).await?;
    claims::remove(&cp, &mut w, SCOPE, &existing, &id).await?;
    publish(w).await?;
    Ok(StatusCode::NO_CONTENT)
}
