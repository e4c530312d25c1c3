//! The Admin API (`/api/v1/admin`): how operators run Pharos without restarts.
//!
//! Routes are registered through utoipa's router so that the OpenAPI document is generated from
//! the handlers themselves and cannot drift from what is served.

pub mod actor;
pub mod body;
pub mod endpoints;
pub mod entity_configuration;
pub mod subordinates;
pub mod trust_anchors;

use std::sync::Arc;

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::IntoResponse;
use axum::routing::get;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::ControlPlane;

/// Path prefix of every admin route.
pub const PREFIX: &str = "/api/v1/admin";

#[derive(OpenApi)]
#[openapi(
    info(title = "Pharos Admin API", description = "Runtime management of a Pharos OpenID Federation entity."),
    servers((url = "/api/v1/admin"))
)]
struct ApiDoc;

/// The admin routes (relative to [`PREFIX`]) and their OpenAPI document.
pub fn routes() -> (Router<Arc<ControlPlane>>, utoipa::openapi::OpenApi) {
    use entity_configuration as ec;
    use subordinates as subs;
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(endpoints::list, endpoints::create))
        .routes(routes!(
            endpoints::get,
            endpoints::update,
            endpoints::delete
        ))
        .routes(routes!(endpoints::set_auth_trust_anchors))
        .routes(routes!(trust_anchors::list, trust_anchors::create))
        .routes(routes!(
            trust_anchors::get,
            trust_anchors::update,
            trust_anchors::delete
        ))
        .routes(routes!(ec::show))
        .routes(routes!(ec::jwks))
        .routes(routes!(ec::get_metadata, ec::put_metadata))
        .routes(routes!(
            ec::get_type,
            ec::put_type,
            ec::post_type,
            ec::delete_type
        ))
        .routes(routes!(ec::get_claim, ec::put_claim, ec::delete_claim))
        .routes(routes!(ec::get_lifetime, ec::put_lifetime))
        .routes(routes!(ec::list_hints, ec::add_hint))
        .routes(routes!(ec::get_hint, ec::put_hint, ec::delete_hint))
        .routes(routes!(ec::list_claims, ec::put_claims, ec::add_claim))
        .routes(routes!(
            ec::get_claim_row,
            ec::put_claim_row,
            ec::delete_claim_row
        ))
        .routes(routes!(subs::crud::list, subs::crud::create))
        .routes(routes!(
            subs::crud::get,
            subs::crud::put,
            subs::crud::patch,
            subs::crud::delete
        ))
        .routes(routes!(subs::crud::set_status))
        .routes(routes!(subs::history::history))
        .routes(routes!(subs::history::statement))
        .routes(routes!(subs::jwks::get, subs::jwks::put, subs::jwks::add))
        .routes(routes!(subs::jwks::remove))
        .routes(routes!(subs::allowed_types::delete))
        .routes(routes!(subs::allowed_types::general_delete))
        .routes(routes!(
            subs::claims::list,
            subs::claims::replace,
            subs::claims::add
        ))
        .routes(routes!(
            subs::claims::get,
            subs::claims::put,
            subs::claims::delete
        ))
        .routes(routes!(
            subs::general::get_lifetime,
            subs::general::put_lifetime
        ))
        .routes(routes!(
            subs::general::get_crit,
            subs::general::put_crit,
            subs::general::add_crit
        ))
        .routes(routes!(subs::general::delete_crit))
        .routes(routes!(
            subs::general::list_claims,
            subs::general::put_claims,
            subs::general::add_claim
        ))
        .routes(routes!(
            subs::general::get_claim,
            subs::general::put_claim,
            subs::general::delete_claim
        ))
        .routes(routes!(
            subs::constraints::get_constraints,
            subs::constraints::put_constraints,
            subs::constraints::post_constraints,
            subs::constraints::delete_constraints
        ))
        .routes(routes!(
            subs::constraints::get_max_path_length,
            subs::constraints::put_max_path_length,
            subs::constraints::delete_max_path_length
        ))
        .routes(routes!(
            subs::constraints::get_naming_constraints,
            subs::constraints::put_naming_constraints,
            subs::constraints::delete_naming_constraints
        ))
        .routes(routes!(
            subs::constraints::get_allowed_entity_types,
            subs::constraints::put_allowed_entity_types,
            subs::allowed_types::post
        ))
        .routes(routes!(
            subs::constraints::general_get_constraints,
            subs::constraints::general_put_constraints,
            subs::constraints::general_delete_constraints
        ))
        .routes(routes!(
            subs::constraints::general_get_max_path_length,
            subs::constraints::general_put_max_path_length,
            subs::constraints::general_delete_max_path_length
        ))
        .routes(routes!(
            subs::constraints::general_get_naming_constraints,
            subs::constraints::general_put_naming_constraints,
            subs::constraints::general_delete_naming_constraints
        ))
        .routes(routes!(
            subs::constraints::general_get_allowed_entity_types,
            subs::constraints::general_put_allowed_entity_types,
            subs::allowed_types::general_post
        ))
        .routes(routes!(
            subs::metadata::get_metadata,
            subs::metadata::put_metadata
        ))
        .routes(routes!(
            subs::metadata::get_type,
            subs::metadata::put_type,
            subs::metadata::post_type,
            subs::metadata::delete_type
        ))
        .routes(routes!(
            subs::metadata::get_claim,
            subs::metadata::put_claim,
            subs::metadata::delete_claim
        ))
        .routes(routes!(
            subs::policies::get_policy,
            subs::policies::put_policy,
            subs::policies::post_policy,
            subs::policies::delete_policy
        ))
        .routes(routes!(
            subs::policies::get_type,
            subs::policies::put_type,
            subs::policies::post_type,
            subs::policies::delete_type
        ))
        .routes(routes!(
            subs::policies::get_claim,
            subs::policies::put_claim,
            subs::policies::post_claim,
            subs::policies::delete_claim
        ))
        .routes(routes!(
            subs::policies::get_operator,
            subs::policies::put_operator,
            subs::policies::delete_operator
        ))
        .routes(routes!(
            subs::general_policies::general_get_policy,
            subs::general_policies::general_put_policy,
            subs::general_policies::general_delete_policy
        ))
        .routes(routes!(
            subs::general_policies::general_get_type,
            subs::general_policies::general_put_type,
            subs::general_policies::general_post_type,
            subs::general_policies::general_delete_type
        ))
        .routes(routes!(
            subs::general_policies::general_get_claim,
            subs::general_policies::general_put_claim,
            subs::general_policies::general_post_claim,
            subs::general_policies::general_delete_claim
        ))
        .routes(routes!(
            subs::general_policies::general_get_operator,
            subs::general_policies::general_put_operator,
            subs::general_policies::general_delete_operator
        ))
        .split_for_parts()
}

/// The Admin API mounted under [`PREFIX`], with its OpenAPI document at `openapi.json`.
pub fn router(cp: Arc<ControlPlane>) -> Router {
    let (api, doc) = routes();
    let json = Arc::new(doc.to_pretty_json().unwrap_or_else(|_| "{}".into()));
    let api = api.route(
        "/openapi.json",
        get(move || {
            let json = json.clone();
            async move {
                let mut r = (*json).clone().into_response();
                r.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                r
            }
        }),
    );
    Router::new().nest(PREFIX, api).with_state(cp)
}
