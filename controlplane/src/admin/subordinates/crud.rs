//! Create, read, update and delete subordinates; their status, history and statement preview.

use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use pharos_shared::config::AcceptSettings;
use pharos_shared::jose::Jwks;
use pharos_shared::metadata_types::check_entity_type;
use pharos_shared::subordinate::SubordinateStatus;
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use super::{BasicRecord, Cp, FullRecord, find, full};
use crate::admin::actor::Actor;
use crate::admin::error::{ApiError, ApiResult};
use crate::admin::extract::{Json, Text, entity_id};
use crate::admin::trust_anchors::validate_jwks;
use crate::db::subordinates::{self as repo, BasicWrite, PageFilter};
use crate::new_subordinate::{self, NewSubordinate};

/// This module's routes, merged by [`crate::admin::routes`].
pub fn routes() -> crate::admin::Routes {
    use utoipa_axum::routes;
    crate::admin::Routes::new()
        .routes(routes!(list, create))
        .routes(routes!(get, put, patch, delete))
        .routes(routes!(set_status))
}

/// Filters of the subordinate list.
#[derive(Debug, Deserialize, IntoParams)]
pub struct ListQuery {
    /// Only subordinates with this status.
    pub status: Option<String>,
    /// Only subordinates registered with this entity type.
    pub entity_type: Option<String>,
}

/// Subordinates per database read while listing.
const LIST_PAGE: i64 = 5_000;

/// Lists subordinates, optionally filtered by status and entity type. The body is streamed a
/// page at a time (a registry of a million is never held in memory, as rows or as JSON); the
/// first page is read before answering, so an unreachable database is a 503, not a cut body.
#[utoipa::path(get, path = "/subordinates", tag = "subordinates", params(ListQuery),
    responses((status = 200, body = [BasicRecord]), (status = 400)))]
pub async fn list(State(cp): Cp, Query(q): Query<ListQuery>) -> ApiResult<Response> {
    let status: Option<&'static str> = match q.status.as_deref().filter(|s| !s.is_empty()) {
        Some(s) => Some(parse_status(s)?.as_str()),
        None => None,
    };
    let entity_type = q.entity_type.filter(|t| !t.is_empty());
    fn filter<'a>(status: Option<&'static str>, t: &'a Option<String>) -> PageFilter<'a> {
        PageFilter {
            status,
            entity_type: t.as_deref(),
        }
    }
    let first = repo::page(&cp.db, filter(status, &entity_type), None, LIST_PAGE).await?;
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(2);
    tokio::spawn(async move {
        let mut rows = first;
        let mut chunk = b"[".to_vec();
        let mut comma = false;
        loop {
            for r in &rows {
                if std::mem::replace(&mut comma, true) {
                    chunk.push(b',');
                }
                if let Err(e) = serde_json::to_writer(&mut chunk, &BasicRecord::from(r)) {
                    tracing::error!(error = %e, "serialising a subordinate failed");
                }
            }
            let last = match rows.last() {
                Some(r) if rows.len() as i64 == LIST_PAGE => r.entity_id.clone(),
                _ => break,
            };
            if tx
                .send(Ok(std::mem::take(&mut chunk).into()))
                .await
                .is_err()
            {
                return; // The client went away.
            }
            rows = match repo::page(&cp.db, filter(status, &entity_type), Some(&last), LIST_PAGE)
                .await
            {
                Ok(r) => r,
                Err(e) => {
                    // Too late for a status: end the body unfinished, so the client sees a
                    // broken transfer rather than a short list.
                    tracing::error!(error = %e, "listing subordinates failed midway");
                    let _ = tx.send(Err(std::io::Error::other("database error"))).await;
                    return;
                }
            };
        }
        chunk.push(b']');
        let _ = tx.send(Ok(chunk.into())).await;
    });
    let body = crate::admin::streaming::channel_body(rx);
    Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
}

/// A status word of a body (400 for an unknown one).
pub fn parse_status(s: &str) -> ApiResult<SubordinateStatus> {
    SubordinateStatus::parse(s).ok_or_else(|| {
        ApiError::BadRequest(format!(
            "invalid status {s:?}: expected active, pending, blocked or inactive"
        ))
    })
}

/// Body of `POST /subordinates`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CreateInput {
    /// Entity identifier (required).
    pub entity_id: Option<String>,
    /// Initial status (default `active`; `active` requires keys).
    pub status: Option<String>,
    /// Free text.
    #[serde(default)]
    pub description: String,
    /// Registered entity types.
    #[serde(default)]
    pub registered_entity_types: Vec<String>,
    /// The subordinate's federation keys.
    #[schema(value_type = Object)]
    pub jwks: Option<Jwks>,
    /// Poll the subordinate's keys.
    #[serde(default)]
    pub enable_jwks_update: bool,
    /// Poll interval, seconds (0 = derive).
    #[serde(default)]
    pub jwks_poll_interval: i64,
}

impl CreateInput {
    /// Checks the body as `POST /subordinates` does before it reads the database (`us`: our
    /// own entity identifier; `accept`: `federation.accept`): the entity identifier, the
    /// initial status, the keys and the entity types.
    pub fn check(
        &self,
        us: &str,
        accept: &AcceptSettings,
    ) -> ApiResult<(String, SubordinateStatus)> {
        let entity = self
            .entity_id
            .clone()
            .ok_or_else(|| ApiError::BadRequest("entity_id is required".into()))?;
        entity_id("entity_id", &entity)?;
        if entity.trim_end_matches('/') == us.trim_end_matches('/') {
            return Err(ApiError::BadRequest(
                "a subordinate cannot be ourselves".into(),
            ));
        }
        let status = match self.status.as_deref() {
            Some(s) => parse_status(s)?,
            None => SubordinateStatus::Active,
        };
        if let Some(j) = &self.jwks {
            validate_jwks(j, &accept.key_types)?;
        }
        require_keys(status, &self.jwks)?;
        check_types(&self.registered_entity_types, &accept.entity_types)?;
        if self.jwks_poll_interval < 0 {
            return Err(ApiError::BadRequest(
                "jwks_poll_interval must not be negative".into(),
            ));
        }
        Ok((entity, status))
    }
}

fn require_keys(status: SubordinateStatus, jwks: &Option<Jwks>) -> ApiResult<()> {
    if status == SubordinateStatus::Active && jwks.as_ref().is_none_or(|j| j.keys.is_empty()) {
        return Err(ApiError::BadRequest(
            "status cannot be active without keys".into(),
        ));
    }
    Ok(())
}

/// Registered entity types: entity types of the specifications, or allowed ones (`allowed`:
/// `federation.accept.entity_types`; the column holds at most 255 characters).
fn check_types(types: &[String], allowed: &[String]) -> ApiResult<()> {
    if types.iter().any(|t| t.trim().is_empty() || t.len() > 255) {
        return Err(ApiError::BadRequest(
            "registered_entity_types must be non-empty strings of at most 255 characters".into(),
        ));
    }
    for t in types {
        check_entity_type(t, allowed)
            .map_err(|e| ApiError::BadRequest(format!("registered_entity_types: {e}")))?;
    }
    Ok(())
}

/// Adds a subordinate.
#[utoipa::path(post, path = "/subordinates", tag = "subordinates", request_body = CreateInput,
    responses((status = 201, body = FullRecord), (status = 400), (status = 409)))]
pub async fn create(
    State(cp): Cp,
    actor: Actor,
    Json(input): Json<CreateInput>,
) -> ApiResult<impl IntoResponse> {
    let (entity, status) = input.check(&cp.settings.entity_id, &cp.settings.federation.accept)?;
    let mut w = cp.write(actor.name()).await;
    if let Some(row) = new_subordinate::taken(&cp, &entity).await? {
        return Err(ApiError::Conflict(if row.entity_id == entity {
            format!("subordinate {entity:?} already exists")
        } else {
            format!(
                "subordinate {:?} already exists with the same Entity Configuration URL as \
                 {entity:?} (a terminating \"/\" is removed before the well-known path)",
                row.entity_id
            )
        }));
    }
    let new = NewSubordinate {
        entity_id: &entity,
        basic: BasicWrite {
            description: input.description,
            status,
            enable_jwks_update: input.enable_jwks_update,
            jwks_poll_interval: input.jwks_poll_interval,
        },
        jwks: &input.jwks,
        entity_types: &input.registered_entity_types,
    };
    new_subordinate::insert(&cp, &mut w, &new, "subordinate created").await?;
    w.commit().await?;
    let row = find(&cp, &entity).await?;
    Ok((StatusCode::CREATED, axum::Json(full(&cp, &row))))
}

/// Shows one subordinate with the documents in effect.
#[utoipa::path(get, path = "/subordinates/{subordinateID}", tag = "subordinates",
    params(("subordinateID" = String, Path, description = "numeric id or URL-encoded entity identifier")),
    responses((status = 200, body = FullRecord), (status = 404)))]
pub async fn get(State(cp): Cp, Path(id): Path<String>) -> ApiResult<axum::Json<FullRecord>> {
    Ok(axum::Json(full(&cp, &find(&cp, &id).await?)))
}

/// Body of `PUT`/`PATCH /subordinates/{subordinateID}`: every field optional.
#[derive(Debug, Deserialize, ToSchema)]
pub struct UpdateInput {
    /// Free text.
    pub description: Option<String>,
    /// Registered entity types (replaced as a whole).
    pub registered_entity_types: Option<Vec<String>>,
    /// Poll the subordinate's keys.
    pub enable_jwks_update: Option<bool>,
    /// Poll interval, seconds.
    pub jwks_poll_interval: Option<i64>,
}

impl UpdateInput {
    /// Checks the body as `PUT`/`PATCH /subordinates/{id}` do before they read the database
    /// (`accept`: `federation.accept`).
    pub fn check(&self, accept: &AcceptSettings) -> ApiResult<()> {
        if let Some(t) = &self.registered_entity_types {
            check_types(t, &accept.entity_types)?;
        }
        if self.jwks_poll_interval.is_some_and(|i| i < 0) {
            return Err(ApiError::BadRequest(
                "jwks_poll_interval must not be negative".into(),
            ));
        }
        Ok(())
    }
}

async fn apply_update(
    cp: &crate::control_plane::ControlPlane,
    id: &str,
    actor: &Actor,
    u: UpdateInput,
) -> ApiResult<FullRecord> {
    u.check(&cp.settings.federation.accept)?;
    let mut w = cp.write(actor.name()).await;
    // The transaction (and with it the Admin API write lock) first: the fields the update
    // keeps are read after it, so a concurrent edit on another replica is not reverted.
    w.tx().await?;
    let row = find(cp, id).await?;
    let basic = BasicWrite {
        description: u.description.unwrap_or_else(|| row.description.clone()),
        status: row.status,
        enable_jwks_update: u.enable_jwks_update.unwrap_or(row.enable_jwks_update),
        jwks_poll_interval: u.jwks_poll_interval.unwrap_or(row.jwks_poll_interval),
    };
    let tx = w.tx().await?;
    repo::update_basic(&cp.db, tx, row.id, &basic, cp.now()).await?;
    if let Some(t) = &u.registered_entity_types {
        repo::set_types(&cp.db, tx, row.id, t).await?;
    }
    w.subordinate_event(
        row.id,
        row.status,
        "updated",
        Some("subordinate updated".into()),
    )
    .await?;
    w.touch_subordinate(&row.entity_id);
    w.commit().await?;
    Ok(full(cp, &find(cp, id).await?))
}

/// Updates basic fields of a subordinate (same as PATCH).
#[utoipa::path(put, path = "/subordinates/{subordinateID}", tag = "subordinates",
    params(("subordinateID" = String, Path)), request_body = UpdateInput,
    responses((status = 200, body = FullRecord), (status = 400), (status = 404)))]
pub async fn put(
    State(cp): Cp,
    Path(id): Path<String>,
    actor: Actor,
    Json(u): Json<UpdateInput>,
) -> ApiResult<axum::Json<FullRecord>> {
    Ok(axum::Json(apply_update(&cp, &id, &actor, u).await?))
}

/// Partially updates a subordinate.
#[utoipa::path(patch, path = "/subordinates/{subordinateID}", tag = "subordinates",
    params(("subordinateID" = String, Path)), request_body = UpdateInput,
    responses((status = 200, body = FullRecord), (status = 400), (status = 404)))]
pub async fn patch(
    State(cp): Cp,
    Path(id): Path<String>,
    actor: Actor,
    Json(u): Json<UpdateInput>,
) -> ApiResult<axum::Json<FullRecord>> {
    Ok(axum::Json(apply_update(&cp, &id, &actor, u).await?))
}

/// Deletes a subordinate with its history (hard delete: the entity can be added again).
#[utoipa::path(delete, path = "/subordinates/{subordinateID}", tag = "subordinates",
    params(("subordinateID" = String, Path)), responses((status = 204), (status = 404)))]
pub async fn delete(State(cp): Cp, actor: Actor, Path(id): Path<String>) -> ApiResult<StatusCode> {
    let mut w = cp.write(actor.name()).await;
    let row = find(&cp, &id).await?;
    let now = cp.now();
    let tx = w.tx().await?;
    repo::delete(&cp.db, tx, row.id, now).await?;
    w.touch_subordinate(&row.entity_id);
    w.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Sets the status (plain-text body): how enrollment requests are approved or declined.
#[utoipa::path(put, path = "/subordinates/{subordinateID}/status", tag = "subordinates",
    params(("subordinateID" = String, Path)), request_body(content = String, content_type = "text/plain"),
    responses((status = 200, body = FullRecord), (status = 400), (status = 404)))]
pub async fn set_status(
    State(cp): Cp,
    Path(id): Path<String>,
    actor: Actor,
    Text(body): Text,
) -> ApiResult<axum::Json<FullRecord>> {
    let status = parse_status(&body)?;
    let mut w = cp.write(actor.name()).await;
    w.tx().await?;
    let mut row = find(&cp, &id).await?;
    require_keys(status, &row.jwks)?;
    let old = std::mem::replace(&mut row.status, status);
    let basic = BasicWrite {
        description: row.description.clone(),
        status: row.status,
        enable_jwks_update: row.enable_jwks_update,
        jwks_poll_interval: row.jwks_poll_interval,
    };
    let tx = w.tx().await?;
    repo::update_basic(&cp.db, tx, row.id, &basic, cp.now()).await?;
    let msg = format!("status changed from {old} to {status}");
    w.subordinate_event(row.id, row.status, "status_updated", Some(msg))
        .await?;
    w.touch_subordinate(&row.entity_id);
    w.commit().await?;
    Ok(axum::Json(full(&cp, &find(&cp, &id).await?)))
}
