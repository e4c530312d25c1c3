//! `/trust-marks/issuers`: global trust mark issuers and the types they are recognised for. A
//! change is recorded in the history of each type it concerns.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::records::{IssuerWithTypes, TypeRef, issuer_with_types};
use super::{Cp, find_issuer, find_type, named_type, named_types, record_in_types, type_key};
use crate::admin::actor::Actor;
use crate::admin::error::{ApiError, ApiResult};
use crate::admin::extract::{Json, Text, entity_id};
use crate::control_plane::{ControlPlane, Section, Write};
use crate::db::trust_mark_parties::{self as parties, Key};
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

/// Body of `POST` / `PUT /trust-marks/issuers…`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct IssuerBody {
    /// Entity identifier (required on create).
    pub issuer: Option<String>,
    /// Free text.
    pub description: Option<String>,
    /// Types it is recognised for (ids or identifiers; replace the current ones when given).
    #[schema(value_type = Option<Vec<Object>>)]
    pub types: Option<Vec<Value>>,
}

impl IssuerBody {
    /// Checks the body as its routes do before they read the database.
    pub fn validate(&self) -> ApiResult<()> {
        if let Some(i) = &self.issuer {
            entity_id("issuer", i)?;
        }
        for t in self.types.iter().flatten() {
            type_key(t)?;
        }
        Ok(())
    }
}

/// Recognises issuer `id` (named `name`) for exactly `types`; history `issuer_removed` in the
/// types it lost, `issuer_added` in the ones it has now.
async fn replace_types(
    cp: &ControlPlane,
    w: &mut Write<'_>,
    id: i64,
    name: &str,
    types: &[Value],
) -> ApiResult<()> {
    let new = named_types(cp, types).await?;
    let old = types_repo::of_issuer(&cp.db, id).await?;
    let c = w.tx().await?;
    types_repo::clear_types_of_issuer(&cp.db, c, id).await?;
    for t in &new {
        types_repo::link_issuer(&cp.db, c, t.id, id).await?;
    }
    let lost: Vec<TypeRow> = old
        .into_iter()
        .filter(|o| !new.iter().any(|n| n.id == o.id))
        .collect();
    record_in_types(
        w,
        &lost,
        "issuer_removed",
        &format!("issuer {name} removed"),
    )
    .await?;
    record_in_types(w, &new, "issuer_added", &format!("issuer {name} added")).await
}

/// Lists the global issuers with their types.
#[utoipa::path(get, path = "/trust-marks/issuers", tag = "trust-marks",
    responses((status = 200, body = [IssuerWithTypes])))]
pub async fn list(State(cp): Cp) -> ApiResult<axum::Json<Vec<IssuerWithTypes>>> {
    let mut out = Vec::new();
    for i in parties::issuers(&cp.db).await? {
        out.push(issuer_with_types(&cp, i).await?);
    }
    Ok(axum::Json(out))
}

/// Adds a global issuer (`issuer` required).
#[utoipa::path(post, path = "/trust-marks/issuers", tag = "trust-marks", request_body = IssuerBody,
    responses((status = 201, body = IssuerWithTypes), (status = 400), (status = 409)))]
pub async fn create(
    State(cp): Cp,
    actor: Actor,
    Json(b): Json<IssuerBody>,
) -> ApiResult<impl IntoResponse> {
    b.validate()?;
    let name = b
        .issuer
        .clone()
        .ok_or_else(|| ApiError::BadRequest("issuer is required".into()))?;
    let mut w = cp.write(actor.name()).await;
    if parties::issuer(&cp.db, Key::Name(&name)).await?.is_some() {
        return Err(ApiError::Conflict(format!(
            "trust mark issuer {name:?} already exists"
        )));
    }
    let d = b.description.as_deref().unwrap_or_default();
    let id = parties::insert_issuer(&cp.db, w.tx().await?, &name, d, cp.now()).await?;
    if let Some(types) = &b.types {
        replace_types(&cp, &mut w, id, &name, types).await?;
    }
    w.touch(Section::TrustMarks);
    w.commit().await?;
    let rec = issuer_with_types(&cp, find_issuer(&cp, &name).await?).await?;
    Ok((StatusCode::CREATED, axum::Json(rec)))
}

/// Shows one issuer (numeric id or URL-encoded entity identifier).
#[utoipa::path(get, path = "/trust-marks/issuers/{issuerID}", tag = "trust-marks",
    params(("issuerID" = String, Path, description = "numeric id or URL-encoded entity identifier")),
    responses((status = 200, body = IssuerWithTypes), (status = 404)))]
pub async fn get(State(cp): Cp, Path(key): Path<String>) -> ApiResult<axum::Json<IssuerWithTypes>> {
    Ok(axum::Json(
        issuer_with_types(&cp, find_issuer(&cp, &key).await?).await?,
    ))
}

/// Updates an issuer: entity identifier and description (fields given), types (replaced when
/// given).
#[utoipa::path(put, path = "/trust-marks/issuers/{issuerID}", tag = "trust-marks",
    params(("issuerID" = String, Path)), request_body = IssuerBody,
    responses((status = 200, body = IssuerWithTypes), (status = 400), (status = 404), (status = 409)))]
pub async fn put(
    State(cp): Cp,
    Path(key): Path<String>,
    actor: Actor,
    Json(b): Json<IssuerBody>,
) -> ApiResult<axum::Json<IssuerWithTypes>> {
    b.validate()?;
    let mut w = cp.write(actor.name()).await;
    let i = find_issuer(&cp, &key).await?;
    let name = b.issuer.clone().unwrap_or(i.issuer.clone());
    let d = b.description.clone().unwrap_or(i.description.clone());
    parties::update_issuer(&cp.db, w.tx().await?, i.id, &name, &d, cp.now()).await?;
    let linked = types_repo::of_issuer(&cp.db, i.id).await?;
    record_in_types(
        &mut w,
        &linked,
        "issuer_updated",
        &format!("issuer {name} updated"),
    )
    .await?;
    if let Some(types) = &b.types {
        replace_types(&cp, &mut w, i.id, &name, types).await?;
    }
    w.touch(Section::TrustMarks);
    w.commit().await?;
    Ok(axum::Json(
        issuer_with_types(&cp, find_issuer(&cp, &i.id.to_string()).await?).await?,
    ))
}

/// Deletes an issuer and its links to types.
#[utoipa::path(delete, path = "/trust-marks/issuers/{issuerID}", tag = "trust-marks",
    params(("issuerID" = String, Path)), responses((status = 204), (status = 404)))]
pub async fn delete(State(cp): Cp, actor: Actor, Path(key): Path<String>) -> ApiResult<StatusCode> {
    let mut w = cp.write(actor.name()).await;
    let i = find_issuer(&cp, &key).await?;
    let linked = types_repo::of_issuer(&cp.db, i.id).await?;
    record_in_types(
        &mut w,
        &linked,
        "issuer_removed",
        &format!("issuer {} deleted", i.issuer),
    )
    .await?;
    parties::delete_issuer(&cp.db, w.tx().await?, i.id).await?;
    w.touch(Section::TrustMarks);
    w.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn types_of(cp: &ControlPlane, id: i64) -> ApiResult<Vec<TypeRef>> {
    let types = types_repo::of_issuer(&cp.db, id).await?;
    Ok(types.iter().map(Into::into).collect())
}

/// The types an issuer is recognised for.
#[utoipa::path(get, path = "/trust-marks/issuers/{issuerID}/types", tag = "trust-marks",
    params(("issuerID" = String, Path)), responses((status = 200, body = [TypeRef]), (status = 404)))]
pub async fn get_types(
    State(cp): Cp,
    Path(key): Path<String>,
) -> ApiResult<axum::Json<Vec<TypeRef>>> {
    let i = find_issuer(&cp, &key).await?;
    Ok(axum::Json(types_of(&cp, i.id).await?))
}

/// Replaces the types an issuer is recognised for (array of type ids or identifiers).
#[utoipa::path(put, path = "/trust-marks/issuers/{issuerID}/types", tag = "trust-marks",
    params(("issuerID" = String, Path)), request_body = [Object],
    responses((status = 200, body = [TypeRef]), (status = 400), (status = 404)))]
pub async fn put_types(
    State(cp): Cp,
    Path(key): Path<String>,
    actor: Actor,
    Json(types): Json<Vec<Value>>,
) -> ApiResult<axum::Json<Vec<TypeRef>>> {
    let mut w = cp.write(actor.name()).await;
    let i = find_issuer(&cp, &key).await?;
    replace_types(&cp, &mut w, i.id, &i.issuer, &types).await?;
    w.touch(Section::TrustMarks);
    w.commit().await?;
    Ok(axum::Json(types_of(&cp, i.id).await?))
}

/// Recognises the issuer for one more type (raw type id or identifier); answers the list.
#[utoipa::path(post, path = "/trust-marks/issuers/{issuerID}/types", tag = "trust-marks",
    params(("issuerID" = String, Path)), request_body(content = String, content_type = "text/plain"),
    responses((status = 201, body = [TypeRef]), (status = 400), (status = 404)))]
pub async fn add_type(
    State(cp): Cp,
    Path(key): Path<String>,
    actor: Actor,
    Text(body): Text,
) -> ApiResult<impl IntoResponse> {
    let t_key = body.trim_matches('"').to_string();
    let mut w = cp.write(actor.name()).await;
    let i = find_issuer(&cp, &key).await?;
    let t = named_type(&cp, &Value::String(t_key)).await?;
    types_repo::link_issuer(&cp.db, w.tx().await?, t.id, i.id).await?;
    let msg = Some(format!("issuer {} added", i.issuer));
    w.trust_mark_event(&t.trust_mark_type, None, None, "issuer_added", msg)
        .await?;
    w.touch(Section::TrustMarks);
    w.commit().await?;
    Ok((StatusCode::CREATED, axum::Json(types_of(&cp, i.id).await?)))
}

/// Stops recognising the issuer for one type.
#[utoipa::path(delete, path = "/trust-marks/issuers/{issuerID}/types/{trustMarkTypeID}", tag = "trust-marks",
    params(("issuerID" = String, Path), ("trustMarkTypeID" = String, Path)),
    responses((status = 204), (status = 404)))]
pub async fn remove_type(
    State(cp): Cp,
    actor: Actor,
    Path((key, t_key)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    let mut w = cp.write(actor.name()).await;
    let i = find_issuer(&cp, &key).await?;
    let t = find_type(&cp, &t_key).await?;
    if types_repo::unlink_issuer(&cp.db, w.tx().await?, t.id, i.id).await? {
        let msg = Some(format!("issuer {} removed", i.issuer));
        w.trust_mark_event(&t.trust_mark_type, None, None, "issuer_removed", msg)
            .await?;
        w.touch(Section::TrustMarks);
    }
    w.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}
