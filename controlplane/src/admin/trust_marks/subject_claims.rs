//! `…/subjects/{subject}/additional-claims`: the extra claims of one subject's marks, laid
//! over the spec's at issuance (the subject's win). Protected claims are refused.

use axum::extract::{Path, State};
use serde_json::{Map, Value};

use super::spec_input::claims_object;
use super::subjects::store;
use super::{Cp, find_spec, find_subject};
use crate::admin::actor::Actor;
use crate::admin::error::ApiResult;
use crate::admin::extract::Json;
use crate::control_plane::ControlPlane;
use crate::db::trust_mark_subjects::SubjectWrite;

/// This module's routes, merged by [`super::routes`].
pub fn routes() -> crate::admin::Routes {
    use utoipa_axum::routes;
    crate::admin::Routes::new().routes(routes!(get, put, post))
}

/// The subject's extra claims (`{}` when none).
#[utoipa::path(get, path = "/trust-marks/issuance-spec/{trustMarkSpecID}/subjects/{subjectID}/additional-claims",
    tag = "trust-marks", params(("trustMarkSpecID" = String, Path), ("subjectID" = String, Path)),
    responses((status = 200, body = Object), (status = 404)))]
pub async fn get(
    State(cp): Cp,
    Path((key, sub)): Path<(String, String)>,
) -> ApiResult<axum::Json<Map<String, Value>>> {
    let spec = find_spec(&cp, &key).await?;
    Ok(axum::Json(
        find_subject(&cp, &spec, &sub).await?.additional_claims,
    ))
}

/// Stores `claims` (replacing, or merged over the current ones with `merge`).
async fn save(
    cp: &ControlPlane,
    key: &str,
    sub: &str,
    actor: &Actor,
    claims: Value,
    merge: bool,
) -> ApiResult<Map<String, Value>> {
    let claims = claims_object("additional_claims", Some(claims))?;
    let mut w = cp.write(actor.name()).await;
    w.tx().await?;
    let spec = find_spec(cp, key).await?;
    let old = find_subject(cp, &spec, sub).await?;
    let next_claims = if merge {
        let mut m = old.additional_claims.clone();
        m.extend(claims);
        m
    } else {
        claims
    };
    let next = SubjectWrite {
        status: &old.status,
        additional_claims: &next_claims,
        description: &old.description,
    };
    store(cp, &mut w, &spec, &old, &next, "claims_updated").await?;
    w.commit().await?;
    Ok(next_claims)
}

/// Replaces the subject's extra claims.
#[utoipa::path(put, path = "/trust-marks/issuance-spec/{trustMarkSpecID}/subjects/{subjectID}/additional-claims",
    tag = "trust-marks", params(("trustMarkSpecID" = String, Path), ("subjectID" = String, Path)),
    request_body = Object, responses((status = 200, body = Object), (status = 400), (status = 404)))]
pub async fn put(
    State(cp): Cp,
    Path((key, sub)): Path<(String, String)>,
    actor: Actor,
    Json(claims): Json<Value>,
) -> ApiResult<axum::Json<Map<String, Value>>> {
    Ok(axum::Json(
        save(&cp, &key, &sub, &actor, claims, false).await?,
    ))
}

/// Merges claims into the subject's extra claims (the given ones win).
#[utoipa::path(post, path = "/trust-marks/issuance-spec/{trustMarkSpecID}/subjects/{subjectID}/additional-claims",
    tag = "trust-marks", params(("trustMarkSpecID" = String, Path), ("subjectID" = String, Path)),
    request_body = Object, responses((status = 200, body = Object), (status = 400), (status = 404)))]
pub async fn post(
    State(cp): Cp,
    Path((key, sub)): Path<(String, String)>,
    actor: Actor,
    Json(claims): Json<Value>,
) -> ApiResult<axum::Json<Map<String, Value>>> {
    Ok(axum::Json(
        save(&cp, &key, &sub, &actor, claims, true).await?,
    ))
}
