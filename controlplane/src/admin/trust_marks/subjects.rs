//! `/trust-marks/issuance-spec/{spec}/subjects`: who is entitled to a type. Setting a subject
//! `blocked` or `inactive` (or deleting it) revokes every instance issued to it, in the same
//! transaction, so the status endpoint answers `revoked` from the next snapshot on; this is
//! also how trust mark requests (`pending`) are approved or declined.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use pharos_shared::subordinate::SubordinateStatus;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::{IntoParams, ToSchema};

use super::spec_input::claims_object;
use super::{Cp, find_spec, find_subject};
use crate::admin::actor::Actor;
use crate::admin::error::{ApiError, ApiResult};
use crate::admin::extract::{Json, Text, entity_id};
use crate::control_plane::{ControlPlane, Section, Write};
use crate::db::trust_mark_parties::Key;
use crate::db::trust_mark_specs::SpecRow;
use crate::db::trust_mark_subjects::{self as repo, SubjectRow, SubjectWrite};

/// This module's routes, merged by [`super::routes`].
pub fn routes() -> crate::admin::Routes {
    use utoipa_axum::routes;
    crate::admin::Routes::new()
        .routes(routes!(list, create))
        .routes(routes!(get, put, delete))
        .routes(routes!(set_status))
}

/// A subject as the Admin API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SubjectRecord {
    /// Database id.
    pub id: i64,
    /// Creation time (Unix seconds).
    pub created_at: i64,
    /// Last update (Unix seconds).
    pub updated_at: i64,
    /// Entity identifier.
    pub entity_id: String,
    /// `active`, `pending`, `blocked` or `inactive`.
    pub status: String,
    /// Extra claims of its marks (over the spec's).
    #[schema(value_type = Object)]
    pub additional_claims: Map<String, Value>,
    /// Free text.
    pub description: String,
}

impl From<SubjectRow> for SubjectRecord {
    fn from(r: SubjectRow) -> Self {
        Self {
            id: r.id,
            created_at: r.created_at,
            updated_at: r.updated_at,
            entity_id: r.entity_id,
            status: r.status,
            additional_claims: r.additional_claims,
            description: r.description,
        }
    }
}

/// A status word of a body (400 for an unknown one).
pub fn parse_status(s: &str) -> ApiResult<SubordinateStatus> {
    SubordinateStatus::parse(s).ok_or_else(|| {
        ApiError::BadRequest(format!(
            "invalid status {s:?}: expected active, pending, blocked or inactive"
        ))
    })
}

/// Stores `next` for subject `old` of `spec`, revoking its issued instances when it loses its
/// standing, and records `kind` in its history.
pub async fn store(
    cp: &ControlPlane,
    w: &mut Write<'_>,
    spec: &SpecRow,
    old: &SubjectRow,
    next: &SubjectWrite<'_>,
    kind: &str,
) -> ApiResult<()> {
    let now = cp.now();
    let tm_type = &spec.spec.trust_mark_type;
    let c = w.tx().await?;
    repo::update(&cp.db, c, old.id, next, now).await?;
    let mut parts = Vec::new();
    if old.status != next.status {
        parts.push(format!(
            "status changed from {} to {}",
            old.status, next.status
        ));
    }
    if matches!(next.status, "blocked" | "inactive") {
        let n = repo::revoke_issued(&cp.db, c, tm_type, &old.entity_id, now).await?;
        if n > 0 {
            parts.push(format!("{n} issued trust mark(s) revoked"));
        }
    }
    let msg = (!parts.is_empty()).then(|| parts.join("; "));
    w.trust_mark_event(tm_type, Some(&old.entity_id), Some(next.status), kind, msg)
        .await?;
    w.touch(Section::TrustMarks);
    Ok(())
}

/// Filter of the subject list.
#[derive(Debug, Deserialize, IntoParams)]
pub struct ListQuery {
    /// Only subjects with this status.
    pub status: Option<String>,
}

/// Lists the subjects of a spec, optionally by status (e.g. `pending`: open requests).
#[utoipa::path(get, path = "/trust-marks/issuance-spec/{trustMarkSpecID}/subjects", tag = "trust-marks",
    params(("trustMarkSpecID" = String, Path), ListQuery),
    responses((status = 200, body = [SubjectRecord]), (status = 400), (status = 404)))]
pub async fn list(
    State(cp): Cp,
    Path(key): Path<String>,
    Query(q): Query<ListQuery>,
) -> ApiResult<axum::Json<Vec<SubjectRecord>>> {
    let status = match q.status.as_deref().filter(|s| !s.is_empty()) {
        Some(s) => Some(parse_status(s)?.as_str()),
        None => None,
    };
    let spec = find_spec(&cp, &key).await?;
    let rows = repo::list(&cp.db, spec.id, status).await?;
    Ok(axum::Json(rows.into_iter().map(Into::into).collect()))
}

/// Body of `POST` / `PUT …/subjects…`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct SubjectInput {
    /// Entity identifier (required on create; cannot change).
    pub entity_id: Option<String>,
    /// Status (default `active`).
    pub status: Option<String>,
    /// Extra claims of its marks (not protected claims).
    #[schema(value_type = Option<Object>)]
    pub additional_claims: Option<Value>,
    /// Free text.
    pub description: Option<String>,
}

impl SubjectInput {
    /// Checks the body of a new subject as its route does before it reads the database: the
    /// entity identifier, the status and the additional claims.
    pub fn check_new(&self) -> ApiResult<(String, SubordinateStatus, Map<String, Value>)> {
        let e = self
            .entity_id
            .clone()
            .ok_or_else(|| ApiError::BadRequest("entity_id is required".into()))?;
        entity_id("entity_id", &e)?;
        let status = match self.status.as_deref() {
            Some(s) => parse_status(s)?,
            None => SubordinateStatus::Active,
        };
        let claims = claims_object("additional_claims", self.additional_claims.clone())?;
        Ok((e, status, claims))
    }
}

/// Adds a subject to a spec (status `active` unless given).
#[utoipa::path(post, path = "/trust-marks/issuance-spec/{trustMarkSpecID}/subjects", tag = "trust-marks",
    params(("trustMarkSpecID" = String, Path)), request_body = SubjectInput,
    responses((status = 201, body = SubjectRecord), (status = 400), (status = 404), (status = 409)))]
pub async fn create(
    State(cp): Cp,
    Path(key): Path<String>,
    actor: Actor,
    Json(input): Json<SubjectInput>,
) -> ApiResult<impl IntoResponse> {
    let (e, status, claims) = input.check_new()?;
    let mut w = cp.write(actor.name()).await;
    let spec = find_spec(&cp, &key).await?;
    if repo::get(&cp.db, spec.id, Key::Name(&e)).await?.is_some() {
        return Err(ApiError::Conflict(format!("subject {e:?} already exists")));
    }
    let write = SubjectWrite {
        status: status.as_str(),
        additional_claims: &claims,
        description: input.description.as_deref().unwrap_or_default(),
    };
    let id = repo::insert(&cp.db, w.tx().await?, spec.id, &e, &write, cp.now()).await?;
    let tm_type = &spec.spec.trust_mark_type;
    w.trust_mark_event(tm_type, Some(&e), Some(status.as_str()), "created", None)
        .await?;
    w.touch(Section::TrustMarks);
    w.commit().await?;
    let rec: SubjectRecord = find_subject(&cp, &spec, &id.to_string()).await?.into();
    Ok((StatusCode::CREATED, axum::Json(rec)))
}

/// Shows one subject (numeric id or URL-encoded entity identifier).
#[utoipa::path(get, path = "/trust-marks/issuance-spec/{trustMarkSpecID}/subjects/{subjectID}", tag = "trust-marks",
    params(("trustMarkSpecID" = String, Path), ("subjectID" = String, Path, description = "numeric id or URL-encoded entity identifier")),
    responses((status = 200, body = SubjectRecord), (status = 404)))]
pub async fn get(
    State(cp): Cp,
    Path((key, sub)): Path<(String, String)>,
) -> ApiResult<axum::Json<SubjectRecord>> {
    let spec = find_spec(&cp, &key).await?;
    Ok(axum::Json(find_subject(&cp, &spec, &sub).await?.into()))
}

/// Updates a subject: status, extra claims, description (fields given).
#[utoipa::path(put, path = "/trust-marks/issuance-spec/{trustMarkSpecID}/subjects/{subjectID}", tag = "trust-marks",
    params(("trustMarkSpecID" = String, Path), ("subjectID" = String, Path)), request_body = SubjectInput,
    responses((status = 200, body = SubjectRecord), (status = 400), (status = 404)))]
pub async fn put(
    State(cp): Cp,
    Path((key, sub)): Path<(String, String)>,
    actor: Actor,
    Json(input): Json<SubjectInput>,
) -> ApiResult<axum::Json<SubjectRecord>> {
    let status = input.status.as_deref().map(parse_status).transpose()?;
    let claims = input
        .additional_claims
        .map(|c| claims_object("additional_claims", Some(c)))
        .transpose()?;
    let mut w = cp.write(actor.name()).await;
    w.tx().await?;
    let spec = find_spec(&cp, &key).await?;
    let old = find_subject(&cp, &spec, &sub).await?;
    if input
        .entity_id
        .as_ref()
        .is_some_and(|e| *e != old.entity_id)
    {
        return Err(ApiError::BadRequest("entity_id cannot be changed".into()));
    }
    let next = SubjectWrite {
        status: status.map_or(old.status.as_str(), |s| s.as_str()),
        additional_claims: claims.as_ref().unwrap_or(&old.additional_claims),
        description: input.description.as_deref().unwrap_or(&old.description),
    };
    store(&cp, &mut w, &spec, &old, &next, "updated").await?;
    w.commit().await?;
    Ok(axum::Json(
        find_subject(&cp, &spec, &old.id.to_string()).await?.into(),
    ))
}

/// Removes a subject after revoking every instance issued to it.
#[utoipa::path(delete, path = "/trust-marks/issuance-spec/{trustMarkSpecID}/subjects/{subjectID}", tag = "trust-marks",
    params(("trustMarkSpecID" = String, Path), ("subjectID" = String, Path)),
    responses((status = 204), (status = 404)))]
pub async fn delete(
    State(cp): Cp,
    actor: Actor,
    Path((key, sub)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    let mut w = cp.write(actor.name()).await;
    w.tx().await?;
    let spec = find_spec(&cp, &key).await?;
    let old = find_subject(&cp, &spec, &sub).await?;
    let tm_type = &spec.spec.trust_mark_type;
    let now = cp.now();
    let c = w.tx().await?;
    let n = repo::revoke_issued(&cp.db, c, tm_type, &old.entity_id, now).await?;
    repo::delete(&cp.db, c, old.id).await?;
    let msg = Some(format!("subject deleted; {n} issued trust mark(s) revoked"));
    w.trust_mark_event(tm_type, Some(&old.entity_id), None, "deleted", msg)
        .await?;
    w.touch(Section::TrustMarks);
    w.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Sets the status (plain text or a JSON string): `active` approves a request, `blocked` or
/// `inactive` declines it and revokes every instance issued to the subject.
#[utoipa::path(put, path = "/trust-marks/issuance-spec/{trustMarkSpecID}/subjects/{subjectID}/status", tag = "trust-marks",
    params(("trustMarkSpecID" = String, Path), ("subjectID" = String, Path)),
    request_body(content = String, content_type = "text/plain"),
    responses((status = 200, body = SubjectRecord), (status = 400), (status = 404)))]
pub async fn set_status(
    State(cp): Cp,
    Path((key, sub)): Path<(String, String)>,
    actor: Actor,
    Text(body): Text,
) -> ApiResult<axum::Json<SubjectRecord>> {
    let status = parse_status(body.trim_matches('"'))?;
    let mut w = cp.write(actor.name()).await;
    w.tx().await?;
    let spec = find_spec(&cp, &key).await?;
    let old = find_subject(&cp, &spec, &sub).await?;
    let next = SubjectWrite {
        status: status.as_str(),
        additional_claims: &old.additional_claims,
        description: &old.description,
    };
    store(&cp, &mut w, &spec, &old, &next, "status_updated").await?;
    w.commit().await?;
    Ok(axum::Json(
        find_subject(&cp, &spec, &old.id.to_string()).await?.into(),
    ))
}
