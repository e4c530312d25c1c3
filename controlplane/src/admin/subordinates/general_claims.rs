//! `/subordinates/additional-claims`: the extra top-level claims of every subordinate
//! statement whose subordinate has none of its own (storage and rules in
//! [`crate::admin::claims`]). Ids are row ids, stable across changes and restarts; the claim
//! name is accepted wherever an id is.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;

use super::Cp;
use crate::admin::actor::Actor;
use crate::admin::claims::{self, ClaimInput, GeneralClaim};
use crate::admin::error::ApiResult;
use crate::admin::extract::Json;
use crate::control_plane::{ControlPlane, Section, Write};
use crate::db::claims::Scope;

/// This module's routes, merged by [`crate::admin::routes`].
pub fn routes() -> crate::admin::Routes {
    use utoipa_axum::routes;
    crate::admin::Routes::new()
        .routes(routes!(list_claims, put_claims, add_claim))
        .routes(routes!(get_claim, put_claim, delete_claim))
}

const SCOPE: Scope = Scope::SubordinateGeneral;

async fn list(cp: &ControlPlane) -> ApiResult<Vec<GeneralClaim>> {
    Ok(claims::rows(cp, SCOPE)
        .await?
        .into_iter()
        .map(GeneralClaim::from)
        .collect())
}

/// Commits and publishes the general settings.
async fn publish(mut w: Write<'_>) -> ApiResult<()> {
    w.touch(Section::SubordinateGeneral);
    Ok(w.commit().await?)
}

/// Lists the general additional claims.
#[utoipa::path(get, path = "/subordinates/additional-claims", tag = "subordinates",
    responses((status = 200, body = [GeneralClaim])))]
pub async fn list_claims(State(cp): Cp) -> ApiResult<axum::Json<Vec<GeneralClaim>>> {
    Ok(axum::Json(list(&cp).await?))
}

/// Replaces the general additional claims.
#[utoipa::path(put, path = "/subordinates/additional-claims", tag = "subordinates",
    request_body = [ClaimInput], responses((status = 200, body = [GeneralClaim]), (status = 400), (status = 409)))]
pub async fn put_claims(
    State(cp): Cp,
    actor: Actor,
    Json(input): Json<Vec<ClaimInput>>,
) -> ApiResult<axum::Json<Vec<GeneralClaim>>> {
    claims::check_list(&input)?;
    let mut w = cp.write(actor.name()).await;
    w.tx().await?;
    claims::replace(&cp, &mut w, SCOPE, &input).await?;
    publish(w).await?;
    Ok(axum::Json(list(&cp).await?))
}

/// Adds one general additional claim.
#[utoipa::path(post, path = "/subordinates/additional-claims", tag = "subordinates",
    request_body = ClaimInput, responses((status = 201, body = GeneralClaim), (status = 400), (status = 409)))]
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

/// Claim `id` as stored after a write.
async fn stored(cp: &ControlPlane, id: i64) -> ApiResult<GeneralClaim> {
    let rows = claims::rows(cp, SCOPE).await?;
    Ok(claims::by_id(&rows, id)?.clone().into())
}

async fn one(cp: &ControlPlane, key: &str) -> ApiResult<GeneralClaim> {
    let rows = claims::rows(cp, SCOPE).await?;
    Ok(claims::find(&rows, key)?.clone().into())
}

/// Shows one general additional claim (by id or claim name).
#[utoipa::path(get, path = "/subordinates/additional-claims/{claimID}", tag = "subordinates",
    params(("claimID" = String, Path)), responses((status = 200, body = GeneralClaim), (status = 404)))]
pub async fn get_claim(
    State(cp): Cp,
    Path(key): Path<String>,
) -> ApiResult<axum::Json<GeneralClaim>> {
    Ok(axum::Json(one(&cp, &key).await?))
}

/// Updates one general additional claim.
#[utoipa::path(put, path = "/subordinates/additional-claims/{claimID}", tag = "subordinates",
    params(("claimID" = String, Path)), request_body = ClaimInput,
    responses((status = 200, body = GeneralClaim), (status = 400), (status = 404), (status = 409)))]
pub async fn put_claim(
    State(cp): Cp,
    actor: Actor,
    Path(key): Path<String>,
    Json(c): Json<ClaimInput>,
) -> ApiResult<axum::Json<GeneralClaim>> {
    let mut w = cp.write(actor.name()).await;
    w.tx().await?;
    let existing = claims::rows(&cp, SCOPE).await?;
    let (id, _) = claims::update(&cp, &mut w, SCOPE, &existing, &key, c).await?;
    publish(w).await?;
    Ok(axum::Json(stored(&cp, id).await?))
}

/// Removes one general additional claim (the others keep their ids).
#[utoipa::path(delete, path = "/subordinates/additional-claims/{claimID}", tag = "subordinates",
    params(("claimID" = String, Path)), responses((status = 204), (status = 404)))]
pub async fn delete_claim(
    State(cp): Cp,
    actor: Actor,
    Path(key): Path<String>,
) -> ApiResult<StatusCode> {
    let mut w = cp.write(actor.name()).await;
    w.tx().await?;
    let existing = claims::rows(&cp, SCOPE).await?;
    claims::remove(&cp, &mut w, SCOPE, &existing, &key).await?;
    publish(w).await?;
    Ok(StatusCode::NO_CONTENT)
}
