//! The Admin API (`/api/v1/admin`): how operators run Pharos without restarts.
//!
//! Routes are registered through utoipa's router so that the OpenAPI document is generated from
//! the handlers themselves and cannot drift from what is served.

pub mod actor;
pub mod api_keys;
pub mod body;
pub mod endpoints;
pub mod entity_configuration;
pub mod kms;
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
        .routes(routes!(api_keys::list, api_keys::add))
        .routes(routes!(
            api_keys::update,
            api_keys::rotate,
            api_keys::remove
        ))
        .routes(routes!(kms::get_kms))
        .routes(routes!(kms::put_alg))
        .routes(routes!(kms::put_rsa_key_len))
        .routes(routes!(kms::rotate))
        .routes(routes!(
            kms::get_rotation,
            kms::put_rotation,
            kms::patch_rotation
        ))
        .routes(routes!(
            kms::get_kms_rotation,
            kms::put_kms_rotation,
            kms::patch_kms_rotation
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
