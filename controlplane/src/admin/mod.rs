//! The Admin API (`/api/v1/admin`): how operators run Pharos without restarts.
//!
//! Routes are registered through utoipa's router so that the OpenAPI document is generated from
//! the handlers themselves and cannot drift from what is served.

pub mod actor;
pub mod api_keys;
pub mod auth;
pub mod body;
pub mod docs;
pub mod endpoints;
pub mod entity_configuration;
pub mod error;
pub mod kms;
pub mod password;
pub mod subordinates;
pub mod trust_anchors;
pub mod users;

use std::sync::Arc;

use axum::{Extension, Router};
use pharos_shared::config::AdminSettings;
use utoipa::OpenApi;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::control_plane::ControlPlane;

/// Path prefix of every admin route.
pub const PREFIX: &str = "/api/v1/admin";

#[derive(OpenApi)]
#[openapi(
    info(title = "Pharos Admin API", description = "Runtime management of a Pharos OpenID Federation entity."),
    servers((url = "/api/v1/admin")),
    modifiers(&BasicAuth)
)]
struct ApiDoc;

/// Declares HTTP Basic as the Admin API's security scheme; optional (`{}`) because the API is
/// open until the first user exists.
struct BasicAuth;

impl utoipa::Modify for BasicAuth {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let scheme = SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Basic).build());
        doc.components
            .get_or_insert_with(Default::default)
            .add_security_scheme("basicAuth", scheme);
        doc.security = Some(vec![
            SecurityRequirement::new("basicAuth", Vec::<String>::new()),
            SecurityRequirement::default(),
        ]);
    }
}

/// The admin routes (relative to [`PREFIX`]) and their OpenAPI document. Routes are added only
/// through `routes!` so that each one is documented; `/users` only while `users_enabled`.
pub fn routes(settings: &AdminSettings) -> (Router<Arc<ControlPlane>>, utoipa::openapi::OpenApi) {
    use entity_configuration as ec;
    use subordinates as subs;
    let mut api = OpenApiRouter::with_openapi(ApiDoc::openapi());
    if settings.users_enabled {
        api = api
            .routes(routes!(users::list, users::create))
            .routes(routes!(users::get, users::update, users::delete));
    }
    api.routes(routes!(endpoints::list, endpoints::create))
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
        .map_doc(tidy_document)
}

trait MapDoc {
    fn map_doc(self, f: fn(&mut utoipa::openapi::OpenApi)) -> Self;
}

impl<R> MapDoc for (R, utoipa::openapi::OpenApi) {
    fn map_doc(mut self, f: fn(&mut utoipa::openapi::OpenApi)) -> Self {
        f(&mut self.1);
        self
    }
}

/// Operation ids come from function names (`list`, `get`, …), which repeat across modules;
/// OpenAPI requires them unique, so each is prefixed with its first tag (`trust_anchors_list`).
fn unique_operation_ids(doc: &mut utoipa::openapi::OpenApi) {
    let mut used = std::collections::HashSet::new();
    for item in doc.paths.paths.values_mut() {
        let ops = [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.options,
            &mut item.head,
            &mut item.patch,
            &mut item.trace,
        ];
        for op in ops.into_iter().flatten() {
            let tag = op.tags.as_ref().and_then(|t| t.first()).cloned();
            if let (Some(tag), Some(id)) = (tag, op.operation_id.as_mut()) {
                *id = format!("{}_{id}", tag.replace(['-', ' ', '/'], "_"));
            }
            // Handlers in different modules may share a name and a tag (e.g. two `rotate`s
            // under `keys`): number the later ones so ids stay unique whatever is added.
            if let Some(id) = op.operation_id.as_mut() {
                let base = id.clone();
                let mut n = 2;
                while !used.insert(id.clone()) {
                    *id = format!("{base}_{n}");
                    n += 1;
                }
            }
        }
    }
}

/// Makes the generated document valid OpenAPI: unique operation ids, and a description on
/// every response (handlers often list bare status codes such as `(status = 404)`; those get the
/// status's reason phrase). Done after all routes are registered, so later routes are covered.
fn tidy_document(doc: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::RefOr;
    unique_operation_ids(doc);
    for item in doc.paths.paths.values_mut() {
        let ops = [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.options,
            &mut item.head,
            &mut item.patch,
            &mut item.trace,
        ];
        for op in ops.into_iter().flatten() {
            for (code, resp) in op.responses.responses.iter_mut() {
                if let RefOr::T(r) = resp
                    && r.description.is_empty()
                {
                    r.description = code
                        .parse::<u16>()
                        .ok()
                        .and_then(|c| axum::http::StatusCode::from_u16(c).ok())
                        .and_then(|c| c.canonical_reason())
                        .unwrap_or("Response")
                        .to_string();
                }
            }
        }
    }
}

/// The Admin API mounted under [`PREFIX`] behind Basic authentication, plus its public
/// documentation routes (see [`docs`]).
pub fn router(cp: Arc<ControlPlane>) -> Router {
    let passwords = password::Passwords::new(cp.settings.api.admin.password_hashing.clone());
    let (api, doc) = routes(&cp.settings.api.admin);
    let auth = auth::AuthState {
        cp: cp.clone(),
        passwords: passwords.clone(),
    };
    let api = api
        .layer(axum::middleware::from_fn_with_state(auth, auth::middleware))
        .layer(Extension(passwords));
    Router::new()
        .nest(PREFIX, api)
        .with_state(cp)
        .merge(docs::router(&doc))
}
