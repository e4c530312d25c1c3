//! General (all-subordinates) settings that are not documents: the statement lifetime and the
//! critical policy operators (the general additional claims are in `general_claims.rs`).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use pharos_shared::policy::check_crit_operator;
use serde::Serialize;

use super::Cp;
use crate::admin::actor::Actor;
use crate::admin::error::{ApiError, ApiResult};
use crate::admin::extract::{Json, Text, integer};
use crate::control_plane::{ControlPlane, Section, Write};
use crate::db::settings;

/// This module's routes, merged by [`crate::admin::routes`].
pub fn routes() -> crate::admin::Routes {
    use utoipa_axum::routes;
    crate::admin::Routes::new()
        .routes(routes!(get_lifetime, put_lifetime))
        .routes(routes!(get_crit, put_crit, add_crit))
        .routes(routes!(delete_crit))
}

async fn store(
    cp: &ControlPlane,
    mut w: Write<'_>,
    name: &str,
    value: &impl Serialize,
) -> ApiResult<()> {
    let v = serde_json::to_value(value).map_err(|e| ApiError::Internal(e.to_string()))?;
    let tx = w.tx().await?;
    settings::set(&cp.db, tx, settings::SUBORDINATE, name, &v).await?;
    w.touch(Section::SubordinateGeneral);
    Ok(w.commit().await?)
}

/// The statement lifetime in effect, seconds (general setting, else the fetch endpoint's
/// `statement_lifetime`, else 600000).
#[utoipa::path(get, path = "/subordinates/lifetime", tag = "subordinates", responses((status = 200, body = i64)))]
pub async fn get_lifetime(State(cp): Cp) -> axum::Json<i64> {
    axum::Json(pharos_shared::subordinate_statement::lifetime(
        &cp.snapshot(),
    ))
}

/// Sets the statement lifetime (plain-text integer seconds).
#[utoipa::path(put, path = "/subordinates/lifetime", tag = "subordinates",
    request_body(content = String, content_type = "text/plain"),
    responses((status = 200, body = i64), (status = 400)))]
pub async fn put_lifetime(
    State(cp): Cp,
    actor: Actor,
    Text(body): Text,
) -> ApiResult<axum::Json<i64>> {
    let secs = integer(&body)?;
    if secs <= 0 {
        return Err(ApiError::BadRequest("lifetime must be positive".into()));
    }
    let mut w = cp.write(actor.name()).await;
    w.tx().await?;
    store(&cp, w, "lifetime", &secs).await?;
    Ok(axum::Json(secs))
}

/// The stored critical operators, read in the write's transaction (after the Admin API write
/// lock), for adding or removing one: the snapshot may trail another replica's edit.
async fn stored_crit(cp: &ControlPlane, w: &mut Write<'_>) -> ApiResult<Vec<String>> {
    let tx = w.tx().await?;
    Ok(
        match settings::get_in(&cp.db, tx, settings::SUBORDINATE, "metadata_policy_crit").await? {
            Some(serde_json::Value::Array(a)) => a
                .into_iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect(),
            _ => Vec::new(),
        },
    )
}

fn crit_list(cp: &ControlPlane) -> Vec<String> {
    cp.snapshot()
        .subordinates
        .general
        .metadata_policy_crit
        .clone()
}

/// Checks the body of `PUT /subordinates/metadata-policy-crit`: distinct non-standard
/// operator names Pharos implements (an empty list clears the setting; statements never carry
/// an empty `metadata_policy_crit`).
pub fn check_crit(ops: &[String]) -> ApiResult<()> {
    let mut seen = std::collections::HashSet::new();
    for op in ops {
        check_operator(op)?;
        if !seen.insert(op) {
            return Err(ApiError::BadRequest(format!("duplicate operator {op:?}")));
        }
    }
    Ok(())
}

/// Checks one critical operator's name ([`check_crit_operator`]).
pub fn check_operator(op: &str) -> ApiResult<()> {
    check_crit_operator(op).map_err(|e| ApiError::BadRequest(format!("metadata_policy_crit: {e}")))
}

/// The non-standard operators that are critical when a statement uses them.
#[utoipa::path(get, path = "/subordinates/metadata-policy-crit", tag = "subordinates",
    responses((status = 200, body = [String])))]
pub async fn get_crit(State(cp): Cp) -> axum::Json<Vec<String>> {
    axum::Json(crit_list(&cp))
}

/// Replaces the critical operators.
#[utoipa::path(put, path = "/subordinates/metadata-policy-crit", tag = "subordinates",
    request_body = [String], responses((status = 200, body = [String]), (status = 400)))]
pub async fn put_crit(
    State(cp): Cp,
    actor: Actor,
    Json(ops): Json<Vec<String>>,
) -> ApiResult<axum::Json<Vec<String>>> {
    check_crit(&ops)?;
    let mut w = cp.write(actor.name()).await;
    w.tx().await?;
    store(&cp, w, "metadata_policy_crit", &ops).await?;
    Ok(axum::Json(ops))
}

/// Adds one critical operator (plain-text name); an existing one is a conflict.
#[utoipa::path(post, path = "/subordinates/metadata-policy-crit", tag = "subordinates",
    request_body(content = String, content_type = "text/plain"),
    responses((status = 201, body = [String]), (status = 400), (status = 409)))]
pub async fn add_crit(
    State(cp): Cp,
    actor: Actor,
    Text(body): Text,
) -> ApiResult<impl IntoResponse> {
    let op = body.trim_matches('"').to_string();
    check_operator(&op)?;
    let mut w = cp.write(actor.name()).await;
    let mut ops = stored_crit(&cp, &mut w).await?;
    if ops.contains(&op) {
        return Err(ApiError::Conflict(format!(
            "operator {op:?} is already critical"
        )));
    }
    ops.push(op);
    store(&cp, w, "metadata_policy_crit", &ops).await?;
    Ok((StatusCode::CREATED, axum::Json(ops)))
}

/// Removes one critical operator.
#[utoipa::path(delete, path = "/subordinates/metadata-policy-crit/{operator}", tag = "subordinates",
    params(("operator" = String, Path)), responses((status = 204), (status = 404)))]
pub async fn delete_crit(
    State(cp): Cp,
    actor: Actor,
    Path(op): Path<String>,
) -> ApiResult<StatusCode> {
    let mut w = cp.write(actor.name()).await;
    let mut ops = stored_crit(&cp, &mut w).await?;
    let before = ops.len();
    ops.retain(|o| *o != op);
    if ops.len() == before {
        return Err(ApiError::NotFound(format!(
            "operator {op:?} is not critical"
        )));
    }
    store(&cp, w, "metadata_policy_crit", &ops).await?;
    Ok(StatusCode::NO_CONTENT)
}
