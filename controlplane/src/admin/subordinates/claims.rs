//! `/subordinates/{subordinateID}/additional-claims`: extra top-level claims of one
//! subordinate's statement (storage and rules in [`crate::admin::claims`]). Each change is
//! recorded in the subordinate's history.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::{Cp, find};
use crate::admin::actor::Actor;
use crate::admin::claims::{self, ClaimInput};
use crate::admin::error::ApiResult;
use crate::admin::extract::Json;
use crate::control_plane::{ControlPlane, Write};
use crate::db::claims::Scope;
use crate::db::subordinates::SubordinateRow;

/// This module's routes, merged by [`crate::admin::routes`].
pub fn routes() -> crate::admin::Routes {
    use utoipa_axum::routes;
    crate::admin::Routes::new()
        .routes(routes!(list, replace, add))
        .routes(routes!(get, put, delete))
}

/// A subordinate's additional claim as shown.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ClaimRecord {
    /// Row id.
    pub id: i64,
    /// Creation time.
    pub created_at: i64,
    /// Last update.
    pub updated_at: i64,
    /// Owning subordinate.
    pub subordinate_id: i64,
    /// Claim name.
    pub claim: String,
    /// Claim value.
    #[schema(value_type = Object)]
    pub value: Value,
    /// Listed in `crit`.
    pub crit: bool,
}

fn records(row: &SubordinateRow) -> Vec<ClaimRecord> {
    row.additional_claims
        .iter()
        .map(|c| ClaimRecord {
            id: c.id,
            created_at: c.created_at,
            updated_at: c.updated_at,
            subordinate_id: row.id,
            claim: c.claim.clone(),
            value: c.value.clone(),
            crit: c.crit,
        })
        .collect()
}

fn one(row: &SubordinateRow, key: &str) -> ApiResult<ClaimRecord> {
    let c = claims::find(&row.additional_claims, key)?;
    Ok(ClaimRecord {
        id: c.id,
        created_at: c.created_at,
        updated_at: c.updated_at,
        subordinate_id: row.id,
        claim: c.claim.clone(),
        value: c.value.clone(),
        crit: c.crit,
    })
}

/// Commits, publishes the subordinate and returns it as now stored.
async fn publish(
    cp: &ControlPlane,
    mut w: Write<'_>,
    row: &SubordinateRow,
    id: &str,
) -> ApiResult<SubordinateRow> {
    w.touch_subordinate(&row.entity_id);
    w.commit().await?;
    find(cp, id).await
}

/// Lists this subordinate's own additional claims.
#[utoipa::path(get, path = "/subordinates/{subordinateID}/additional-claims", tag = "subordinates",
    params(("subordinateID" = String, Path)), responses((status = 200, body = [ClaimRecord]), (status = 404)))]
pub async fn list(
    State(cp): Cp,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<Vec<ClaimRecord>>> {
    Ok(axum::Json(records(&find(&cp, &id).await?)))
}

/// Replaces all of this subordinate's additional claims.
#[utoipa::path(put, path = "/subordinates/{subordinateID}/additional-claims", tag = "subordinates",
    params(("subordinateID" = String, Path)), request_body = [ClaimInput],
    responses((status = 200, body = [ClaimRecord]), (status = 400), (status = 404), (status = 409)))]
pub async fn replace(
    State(cp): Cp,
    Path(id): Path<String>,
    actor: Actor,
    Json(list): Json<Vec<ClaimInput>>,
) -> ApiResult<axum::Json<Vec<ClaimRecord>>> {
    claims::check_list(&list)?;
    let mut w = cp.write(actor.name()).await;
    w.tx().await?;
    let row = find(&cp, &id).await?;
    claims::replace(&cp, &mut w, Scope::Subordinate(row.id), &list).await?;
    w.subordinate_event(
        row.id,
        row.status,
        "claims_updated",
        Some("additional claims replaced".into()),
    )
    .await?;
    Ok(axum::Json(records(&publish(&cp, w, &row, &id).await?)))
}

/// Adds one additional claim; an existing claim name is a conflict.
#[utoipa::path(post, path = "/subordinates/{subordinateID}/additional-claims", tag = "subordinates",
    params(("subordinateID" = String, Path)), request_body = ClaimInput,
    responses((status = 201, body = ClaimRecord), (status = 400), (status = 404), (status = 409)))]
pub async fn add(
    State(cp): Cp,
    Path(id): Path<String>,
    actor: Actor,
    Json(c): Json<ClaimInput>,
) -> ApiResult<impl IntoResponse> {
    let name = c.name()?;
    let mut w = cp.write(actor.name()).await;
    w.tx().await?;
    let row = find(&cp, &id).await?;
    let scope = Scope::Subordinate(row.id);
    claims::add(&cp, &mut w, scope, &row.additional_claims, &c).await?;
    w.subordinate_event(
        row.id,
        row.status,
        "claims_updated",
        Some(format!("claim {name} added")),
    )
    .await?;
    let row = publish(&cp, w, &row, &id).await?;
    Ok((StatusCode::CREATED, axum::Json(one(&row, &name)?)))
}

/// Shows one additional claim (by row id or claim name).
#[utoipa::path(get, path = "/subordinates/{subordinateID}/additional-claims/{claimID}", tag = "subordinates",
    params(("subordinateID" = String, Path), ("claimID" = String, Path)),
    responses((status = 200, body = ClaimRecord), (status = 404)))]
pub async fn get(
    State(cp): Cp,
    Path((id, key)): Path<(String, String)>,
) -> ApiResult<axum::Json<ClaimRecord>> {
    Ok(axum::Json(one(&find(&cp, &id).await?, &key)?))
}

/// Updates one additional claim.
#[utoipa::path(put, path = "/subordinates/{subordinateID}/additional-claims/{claimID}", tag = "subordinates",
    params(("subordinateID" = String, Path), ("claimID" = String, Path)), request_body = ClaimInput,
    responses((status = 200, body = ClaimRecord), (status = 400), (status = 404), (status = 409)))]
pub async fn put(
    State(cp): Cp,
    Path((id, key)): Path<(String, String)>,
    actor: Actor,
    Json(c): Json<ClaimInput>,
) -> ApiResult<axum::Json<ClaimRecord>> {
    let mut w = cp.write(actor.name()).await;
    w.tx().await?;
    let row = find(&cp, &id).await?;
    let scope = Scope::Subordinate(row.id);
    let (_, name) = claims::update(&cp, &mut w, scope, &row.additional_claims, &key, c).await?;
    w.subordinate_event(
        row.id,
        row.status,
        "claims_updated",
        Some(format!("claim {name} updated")),
    )
    .await?;
    Ok(axum::Json(one(&publish(&cp, w, &row, &id).await?, &name)?))
}

/// Removes one additional claim.
#[utoipa::path(delete, path = "/subordinates/{subordinateID}/additional-claims/{claimID}", tag = "subordinates",
    params(("subordinateID" = String, Path), ("claimID" = String, Path)),
    responses((status = 204), (status = 404)))]
pub async fn delete(
    State(cp): Cp,
    Path((id, key)): Path<(String, String)>,
    actor: Actor,
) -> ApiResult<StatusCode> {
    let mut w = cp.write(actor.name()).await;
    w.tx().await?;
    let row = find(&cp, &id).await?;
    let scope = Scope::Subordinate(row.id);
    let name = claims::remove(&cp, &mut w, scope, &row.additional_claims, &key).await?;
    let msg = format!("claim {name} deleted");
    w.subordinate_event(row.id, row.status, "claim_deleted", Some(msg))
        .await?;
    publish(&cp, w, &row, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
