//! The Admin API (`/api/v1/admin`): how operators run Pharos without restarts.
//!
//! Routes are registered through utoipa's router so that the OpenAPI document is generated from
//! the handlers themselves and cannot drift from what is served.

pub mod access;
pub mod actor;
pub mod api_keys;
pub mod auth;
pub mod body_checks;
pub mod bootstrap;
pub mod claims;
pub mod docs;
pub mod documents;
pub mod endpoints;
pub mod entities;
pub mod entity_configuration;
pub mod error;
pub mod explain;
pub mod extract;
pub mod federation_map;
pub mod guard;
pub mod kms;
pub mod login_limit;
pub mod nested;
pub mod password;
pub mod password_policy;
pub mod precondition;
pub mod resolver;
pub mod resource;
pub mod stats;
pub mod streaming;
pub mod subordinates;
pub mod superiors;
pub mod trust_anchors;
pub mod trust_marks;
pub mod users;

use std::sync::Arc;

use axum::{Extension, Router};
use pharos_shared::config::AdminSettings;
use utoipa::OpenApi;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
use utoipa_axum::router::OpenApiRouter;

use crate::control_plane::ControlPlane;

/// A resource module's routes with their OpenAPI operations (each module's `routes()`).
pub type Routes = OpenApiRouter<Arc<ControlPlane>>;

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

/// The admin routes (relative to [`PREFIX`]) and their OpenAPI document. Each resource
/// module registers its own routes (through `routes!`, so that each one is documented); a new
/// resource is one more `merge` here. `/users` only while `users_enabled`.
pub fn routes(settings: &AdminSettings) -> (Router<Arc<ControlPlane>>, utoipa::openapi::OpenApi) {
    let mut api = OpenApiRouter::with_openapi(ApiDoc::openapi());
    if settings.users_enabled {
        api = api.merge(users::routes());
    }
    api.merge(endpoints::routes())
        .merge(entities::routes())
        .merge(trust_anchors::routes())
        .merge(entity_configuration::routes())
        .merge(api_keys::routes())
        .merge(kms::routes())
        .merge(subordinates::routes())
        .merge(trust_marks::routes())
        .merge(stats::routes())
        .merge(resolver::routes())
        .merge(federation_map::routes())
        .merge(superiors::routes())
        .merge(explain::routes())
        .split_for_parts()
        .map_doc(nest_entity_paths)
        .map_doc(tidy_document)
}

/// Adds `/entities/{entity}<path>` for every per-entity path (see [`nested`]): the same
/// operations, with the entity as a path parameter. The deployment's own resources (`/users`,
/// `/entities`) are not repeated.
fn nest_entity_paths(doc: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::path::{ParameterBuilder, ParameterIn};
    use utoipa::openapi::{ObjectBuilder, RefOr, Required, Type};
    let entity = ParameterBuilder::new()
        .name("entity")
        .parameter_in(ParameterIn::Path)
        .required(Required::True)
        .schema(Some(ObjectBuilder::new().schema_type(Type::String)))
        .description(Some(
            "The hosted entity: its number, or its URL-encoded entity identifier",
        ))
        .build();
    let copies: Vec<(String, utoipa::openapi::PathItem)> = doc
        .paths
        .paths
        .iter()
        .filter(|(path, _)| !nested::is_deployment_wide(path))
        .map(|(path, item)| {
            let mut item = item.clone();
            let ops = [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.patch,
            ];
            for op in ops.into_iter().flatten() {
                op.parameters
                    .get_or_insert_with(Vec::new)
                    .insert(0, RefOr::T(entity.clone()));
                if let Some(id) = op.operation_id.as_mut() {
                    id.push_str("_in_entity");
                }
            }
            (format!("/entities/{{entity}}{path}"), item)
        })
        .collect();
    doc.paths.paths.extend(copies);
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
    precondition::document(doc);
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
/// documentation routes (see [`docs`]) and the admin console (see [`crate::console`]), which
/// therefore live on whichever listener the API is on. `metrics` is the `/metrics` route, built
/// by the application (it reads both planes' counters) and served behind the same
/// authentication.
pub fn router(
    cp: Arc<ControlPlane>,
    bootstrap: Arc<bootstrap::Bootstrap>,
    metrics: Router,
) -> Router {
    Parts::new(cp.clone(), bootstrap).router(cp, metrics)
}

/// The pieces of the Admin API that every hosted entity's routes share: one authentication
/// (users are the deployment's), one password verifier, one set of routes and their document.
#[derive(Clone)]
pub struct Parts {
    auth: auth::AuthState,
    passwords: password::Passwords,
    api: Router<Arc<ControlPlane>>,
    /// The document's routes (`openapi.json`, `.yaml`, the page), rendered once: the
    /// document's own structures (megabytes, with the per-entity copies) are not kept.
    docs: Router,
    /// Which writes check `If-Match`, read from the document once.
    rules: Arc<precondition::Rules>,
}

impl Parts {
    /// The shared pieces; `default` is the default entity's control plane (whose database
    /// holds the users).
    pub fn new(default: Arc<ControlPlane>, bootstrap: Arc<bootstrap::Bootstrap>) -> Self {
        let passwords =
            password::Passwords::new(default.settings.api.admin.password_hashing.clone());
        let (api, doc) = routes(&default.settings.api.admin);
        let auth = auth::AuthState {
            proxies: Arc::new(pharos_shared::client_ip::TrustedProxies::parse(
                &default.settings.server.trusted_proxies,
            )),
            cp: default,
            passwords: passwords.clone(),
            bootstrap,
            failures: login_limit::FailedLogins::default(),
            entity: pharos_shared::hosted::EntityNo::DEFAULT,
        };
        let rules = Arc::new(precondition::Rules::from_doc(&doc));
        Self {
            auth,
            passwords,
            api,
            docs: docs::router(&doc),
            rules,
        }
    }

    /// The Admin API of entity `cp` under [`PREFIX`]: authentication, `If-Match` and the
    /// routes, all reading and writing `cp`.
    pub fn entity_api(&self, cp: Arc<ControlPlane>) -> Router {
        let preconditions = precondition::Preconditions {
            rules: self.rules.clone(),
            api: self.api.clone().with_state(cp.clone()),
            require: cp.settings.api.admin.require_if_match,
            cp: cp.clone(),
            lock_row: Default::default(),
        };
        let api = self
            .api
            .clone()
            .layer(axum::middleware::from_fn_with_state(
                preconditions,
                precondition::middleware,
            ))
            .layer(axum::middleware::from_fn_with_state(
                cp.db.hosted(),
                access::middleware,
            ))
            .layer(axum::middleware::from_fn_with_state(
                auth::AuthState {
                    entity: cp.db.hosted(),
                    ..self.auth.clone()
                },
                auth::middleware,
            ))
            .layer(Extension(self.passwords.clone()))
            .layer(axum::middleware::map_response(no_store));
        Router::new().nest(PREFIX, api).with_state(cp)
    }

    /// The default entity's Admin API with `/metrics`, the documentation and the console.
    pub fn router(&self, cp: Arc<ControlPlane>, metrics: Router) -> Router {
        // Prometheus scrapes with the same credentials as every other admin call.
        let metrics = metrics
            .layer(axum::middleware::from_fn(access::deployment_only))
            .layer(axum::middleware::from_fn_with_state(
                self.auth.clone(),
                auth::middleware,
            ));
        self.entity_api(cp)
            .merge(metrics)
            .merge(self.docs.clone())
            .merge(crate::console::router())
    }
}

/// Admin answers carry configuration and history: no cache may keep them.
async fn no_store(mut r: axum::response::Response) -> axum::response::Response {
    r.headers_mut().insert(
        axum::http::header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("no-store"),
    );
    r
}
