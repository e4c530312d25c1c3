//! `/entity-configuration`: what our Entity Configuration says, edited at run time. The
//! preview, the published keys and the lifetime are here; metadata, authority hints,
//! additional claims and the trust marks we hold have a file each.

mod claims;
pub mod hints;
mod metadata;
pub(crate) mod trust_marks;

use std::sync::Arc;

use axum::extract::State;
use pharos_shared::entity_configuration::payload;
use serde_json::{Value, json};
use utoipa_axum::routes;

use super::extract::{Text, integer};
use crate::admin::actor::Actor;
use crate::admin::error::{ApiError, ApiResult};
use crate::control_plane::{ControlPlane, Section};
use crate::db::settings;

type Cp = State<Arc<ControlPlane>>;
type Json2 = axum::Json<Value>;

/// The `/entity-configuration` routes.
pub fn routes() -> crate::admin::Routes {
    crate::admin::Routes::new()
        .routes(routes!(show))
        .routes(routes!(jwks))
        .routes(routes!(metadata::get_metadata, metadata::put_metadata))
        .routes(routes!(
            metadata::get_type,
            metadata::put_type,
            metadata::post_type,
            metadata::delete_type
        ))
        .routes(routes!(
            metadata::get_claim,
            metadata::put_claim,
            metadata::delete_claim
        ))
        .routes(routes!(get_lifetime, put_lifetime))
        .routes(routes!(hints::list_hints, hints::add_hint))
        .routes(routes!(
            hints::get_hint,
            hints::put_hint,
            hints::delete_hint
        ))
        .routes(routes!(
            claims::list_claims,
            claims::put_claims,
            claims::add_claim
        ))
        .routes(routes!(
            claims::get_claim_row,
            claims::put_claim_row,
            claims::delete_claim_row
        ))
        .routes(routes!(trust_marks::list_held, trust_marks::add_held))
        .routes(routes!(
            trust_marks::get_held,
            trust_marks::put_held,
            trust_marks::delete_held
        ))
}

/// Shows the unsigned Entity Configuration payload as it would be signed now.
#[utoipa::path(get, path = "/entity-configuration", tag = "entity-configuration",
    responses((status = 200, body = Object)))]
pub async fn show(State(cp): Cp) -> Json2 {
    let snap = cp.snapshot();
    axum::Json(Value::Object(payload(&snap, cp.now())))
}

/// Shows the published keys.
#[utoipa::path(get, path = "/entity-configuration/jwks", tag = "entity-configuration",
    responses((status = 200, body = Object)))]
pub async fn jwks(State(cp): Cp) -> Json2 {
    axum::Json(json!({ "keys": cp.snapshot().keys.published }))
}

/// Shows the Entity Configuration lifetime in seconds.
#[utoipa::path(get, path = "/entity-configuration/lifetime", tag = "entity-configuration",
    responses((status = 200, body = i64)))]
pub async fn get_lifetime(State(cp): Cp) -> axum::Json<i64> {
    axum::Json(cp.snapshot().entity_configuration.lifetime)
}

/// Sets the Entity Configuration lifetime (integer seconds, raw or JSON).
#[utoipa::path(put, path = "/entity-configuration/lifetime", tag = "entity-configuration",
    request_body = i64, responses((status = 200, body = i64), (status = 400)))]
pub async fn put_lifetime(
    State(cp): Cp,
    actor: Actor,
    Text(body): Text,
) -> ApiResult<axum::Json<i64>> {
    let secs = integer(&body)?;
    if secs <= 0 {
        return Err(ApiError::BadRequest(
            "lifetime must be a positive number of seconds".into(),
        ));
    }
    let mut w = cp.write(actor.name()).await;
    let tx = w.tx().await?;
    settings::set(&cp.db, tx, settings::EC, "lifetime", &json!(secs)).await?;
    w.touch(Section::EntityConfiguration);
    w.commit().await?;
    Ok(axum::Json(secs))
}
