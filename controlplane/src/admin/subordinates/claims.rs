//! `additional-claims`: extra top-level claims of one subordinate's statement (rows in their
//! own table) and of every statement without its own (the general array in `settings`).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use pharos_shared::subordinate_statement::RESERVED_CLAIMS;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::{Cp, find};
use crate::admin::actor::Actor;
use crate::admin::body::Json;
use crate::admin::error::{ApiError, ApiResult};
use crate::control_plane::{ControlPlane, Write};
use crate::db::subordinate_claims as repo;
use crate::db::subordinates::SubordinateRow;

/// Body of an additional claim.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct ClaimInput {
    /// Claim name.
    pub claim: Option<String>,
    /// Claim value (any JSON).
    #[schema(value_type = Object)]
    pub value: Value,
    /// List the claim in `crit`.
    #[serde(default)]
    pub crit: bool,
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

/// The claim name, checked: present and not one Pharos sets itself.
pub fn check_claim(c: &ClaimInput) -> ApiResult<String> {
    let name = c
        .claim
        .clone()
        .filter(|n| !n.is_empty() && n.len() <= 255)
        .ok_or_else(|| ApiError::BadRequest("claim is required (at most 255 characters)".into()))?;
    if RESERVED_CLAIMS.contains(&name.as_str()) {
        return Err(ApiError::BadRequest(format!(
            "claim {name:?} is set by Pharos itself"
        )));
    }
    Ok(name)
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
    records(row)
        .into_iter()
        .find(|c| c.id.to_string() == key || c.claim == key)
        .ok_or_else(|| ApiError::NotFound(format!("unknown additional claim {key:?}")))
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
    let mut names = std::collections::HashSet::new();
    for c in &list {
        if !names.insert(check_claim(c)?) {
            return Err(ApiError::Conflict("duplicate claim in the list".into()));
        }
    }
    let mut w = cp.write(actor.name()).await;
    let row = find(&cp, &id).await?;
    let now = cp.now();
    let tx = w.tx().await?;
    repo::delete(&cp.db, tx, row.id, None).await?;
    for c in &list {
        repo::insert(&cp.db, tx, row.id, &check_claim(c)?, &c.value, c.crit, now).await?;
    }
    w.subordinate_event(
        row.id,
        &row.status,
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
    let name = check_claim(&c)?;
    let mut w = cp.write(actor.name()).await;
    let row = find(&cp, &id).await?;
    if row.additional_claims.iter().any(|x| x.claim == name) {
        return Err(ApiError::Conflict(format!("claim {name:?} already exists")));
    }
    let tx = w.tx().await?;
    repo::insert(&cp.db, tx, row.id, &name, &c.value, c.crit, cp.now()).await?;
    w.subordinate_event(
        row.id,
        &row.status,
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
    Json(mut c): Json<ClaimInput>,
) -> ApiResult<axum::Json<ClaimRecord>> {
    let mut w = cp.write(actor.name()).await;
    let row = find(&cp, &id).await?;
    let old = one(&row, &key)?;
    c.claim = c.claim.or(Some(old.claim.clone()));
    let name = check_claim(&c)?;
    if name != old.claim && row.additional_claims.iter().any(|x| x.claim == name) {
        return Err(ApiError::Conflict(format!("claim {name:?} already exists")));
    }
    let tx = w.tx().await?;
    repo::update(
        &cp.db,
        tx,
        row.id,
        old.id,
        &name,
        &c.value,
        c.crit,
        cp.now(),
    )
    .await?;
    w.subordinate_event(
        row.id,
        &row.status,
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
    let row = find(&cp, &id).await?;
    let old = one(&row, &key)?;
    let tx = w.tx().await?;
    repo::delete(&cp.db, tx, row.id, Some(old.id)).await?;
    let msg = format!("claim {} deleted", old.claim);
    w.subordinate_event(row.id, &row.status, "claim_deleted", Some(msg))
        .await?;
    publish(&cp, w, &row, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
