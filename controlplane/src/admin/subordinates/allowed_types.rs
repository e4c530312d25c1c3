//! `constraints/allowed-entity-types`: adding one entity type (plain-text body) and removing
//! one, per subordinate and general.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::Value;

use super::{Cp, created_or_ok};
use crate::admin::actor::Actor;
use crate::admin::documents::{self as docs, Doc, target};
use crate::admin::error::{ApiError, ApiResult};
use crate::admin::extract::Text;
use crate::control_plane::ControlPlane;

const KEY: &str = "allowed_entity_types";

fn current(v: Option<Value>) -> Vec<Value> {
    match v.and_then(|c| c.get(KEY).cloned()) {
        Some(Value::Array(a)) => a,
        _ => Vec::new(),
    }
}

async fn add(cp: &ControlPlane, id: Option<&str>, t: String, actor: &Actor) -> ApiResult<Response> {
    let t = t.trim().trim_matches('"').to_string();
    if t.is_empty() {
        return Err(ApiError::BadRequest("entity type must not be empty".into()));
    }
    let mut w = cp.write(actor.name()).await;
    w.tx().await?;
    let target = target(cp, id).await?;
    let mut list = current(docs::own_in(cp, &mut w, &target, Doc::Constraints).await?);
    if list.iter().any(|v| v.as_str() == Some(&t)) {
        return Err(ApiError::Conflict(format!(
            "entity type {t:?} is already allowed"
        )));
    }
    list.push(Value::String(t));
    docs::put_at(
        cp,
        &target,
        Doc::Constraints,
        &[KEY],
        Value::Array(list.clone()),
        w,
    )
    .await?;
    Ok(created_or_ok(true, list))
}

async fn remove(
    cp: &ControlPlane,
    id: Option<&str>,
    t: &str,
    actor: &Actor,
) -> ApiResult<StatusCode> {
    let mut w = cp.write(actor.name()).await;
    w.tx().await?;
    let target = target(cp, id).await?;
    let mut list = current(docs::own_in(cp, &mut w, &target, Doc::Constraints).await?);
    let before = list.len();
    list.retain(|v| v.as_str() != Some(t));
    if list.len() == before {
        return Err(ApiError::NotFound(format!(
            "entity type {t:?} is not in allowed_entity_types"
        )));
    }
    let mut root = match docs::own_in(cp, &mut w, &target, Doc::Constraints).await? {
        Some(Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    };
    root.insert(KEY.into(), Value::Array(list));
    docs::save(
        cp,
        w,
        &target,
        Doc::Constraints,
        Some(Value::Object(root)),
        true,
    )
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Allows one more entity type for this subordinate (plain-text body).
#[utoipa::path(post, path = "/subordinates/{subordinateID}/constraints/allowed-entity-types", tag = "subordinates",
    params(("subordinateID" = String, Path)), request_body(content = String, content_type = "text/plain"),
    responses((status = 201, body = [String]), (status = 400), (status = 404), (status = 409)))]
pub async fn post(
    State(cp): Cp,
    Path(id): Path<String>,
    actor: Actor,
    Text(t): Text,
) -> ApiResult<Response> {
    add(&cp, Some(&id), t, &actor).await
}

/// Stops allowing one entity type for this subordinate.
#[utoipa::path(delete, path = "/subordinates/{subordinateID}/constraints/allowed-entity-types/{entityType}", tag = "subordinates",
    params(("subordinateID" = String, Path), ("entityType" = String, Path)), responses((status = 204), (status = 404)))]
pub async fn delete(
    State(cp): Cp,
    Path((id, t)): Path<(String, String)>,
    actor: Actor,
) -> ApiResult<StatusCode> {
    remove(&cp, Some(&id), &t, &actor).await
}

/// Allows one more entity type in the general constraints (plain-text body).
#[utoipa::path(post, path = "/subordinates/constraints/allowed-entity-types", tag = "subordinates",
    request_body(content = String, content_type = "text/plain"),
    responses((status = 201, body = [String]), (status = 400), (status = 409)))]
pub async fn general_post(State(cp): Cp, actor: Actor, Text(t): Text) -> ApiResult<Response> {
    add(&cp, None, t, &actor).await
}

/// Stops allowing one entity type in the general constraints.
#[utoipa::path(delete, path = "/subordinates/constraints/allowed-entity-types/{entityType}", tag = "subordinates",
    params(("entityType" = String, Path)), responses((status = 204), (status = 404)))]
pub async fn general_delete(
    State(cp): Cp,
    Path(t): Path<String>,
    actor: Actor,
) -> ApiResult<StatusCode> {
    remove(&cp, None, &t, &actor).await
}
