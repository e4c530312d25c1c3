//! `/entities/{entity}/<path>`: the Admin API of one hosted entity. Every per-entity resource
//! of the unprefixed API is here too, for the entity the path names (its number or its
//! URL-encoded identifier): the request is handed to that entity's own Admin API
//! ([`super::Parts::entity_api`]) with the prefix taken off, so the answer is the one the
//! unprefixed path gives for the default entity, authentication and `If-Match` included.
//! The deployment's own resources (`/users`, `/entities`) are not per entity and are not
//! repeated here.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{ConnectInfo, Path, Request, State};
use axum::response::{IntoResponse, Response};
use pharos_shared::hosted::EntityNo;
use tower::ServiceExt as _;

use super::{PREFIX, Parts};
use crate::admin::error::ApiError;
use crate::control_plane::ControlPlane;
use crate::hosting::Hosting;

/// Paths below `/entities/{entity}` that belong to the deployment, not to one entity.
const DEPLOYMENT_WIDE: &[&str] = &["users", "entities"];

/// Whether `path` (relative to the Admin API's prefix) is the deployment's, not an entity's.
pub fn is_deployment_wide(path: &str) -> bool {
    let first = path
        .trim_start_matches('/')
        .split('/')
        .next()
        .unwrap_or_default();
    DEPLOYMENT_WIDE.contains(&first)
}

/// What the nested routes need: the hosted entities, and how to build one's Admin API.
#[derive(Clone)]
pub struct Nested {
    hosting: Arc<Hosting>,
    make: Arc<dyn Fn(Arc<ControlPlane>) -> Router + Send + Sync>,
    /// Each entity's Admin API, built on its first request and kept while it is hosted.
    routers: Arc<Mutex<HashMap<EntityNo, Built>>>,
}

/// An entity's Admin API, with the control plane it was built for.
type Built = (std::sync::Weak<ControlPlane>, Router);

impl Nested {
    /// The nested routes over `hosting`; `make` builds an entity's Admin API (usually
    /// [`Parts::entity_api`] with the entity's own extensions).
    pub fn new(
        hosting: Arc<Hosting>,
        make: Arc<dyn Fn(Arc<ControlPlane>) -> Router + Send + Sync>,
    ) -> Self {
        Self {
            hosting,
            make,
            routers: Default::default(),
        }
    }

    /// The nested routes as a router to merge beside the unprefixed API.
    pub fn router(self) -> Router {
        Router::new()
            .route(
                &format!("{PREFIX}/entities/{{entity}}/{{*rest}}"),
                axum::routing::any(forward),
            )
            .with_state(self)
    }

    /// Entity `cp`'s Admin API (built once per hosted entity; a deleted and re-created
    /// number gets a new one).
    fn api_of(&self, cp: Arc<ControlPlane>) -> Router {
        let entity = cp.db.hosted();
        let Ok(mut routers) = self.routers.lock() else {
            return (self.make)(cp);
        };
        if let Some((held, router)) = routers.get(&entity)
            && held.upgrade().is_some_and(|h| Arc::ptr_eq(&h, &cp))
        {
            return router.clone();
        }
        // A deleted entity's API holds its control plane: let both go.
        routers.retain(|n, _| self.hosting.get(*n).is_some());
        let router = (self.make)(cp.clone());
        routers.insert(entity, (Arc::downgrade(&cp), router.clone()));
        router
    }
}

/// Builds [`Nested`] from the shared pieces: each entity's API is [`Parts::entity_api`] with
/// `extend` applied (the application adds the entity's own extensions).
pub fn from_parts(
    hosting: Arc<Hosting>,
    parts: Parts,
    extend: impl Fn(&ControlPlane, Router) -> Router + Send + Sync + 'static,
) -> Nested {
    Nested::new(
        hosting,
        Arc::new(move |cp: Arc<ControlPlane>| {
            let api = parts.entity_api(cp.clone());
            extend(&cp, api)
        }),
    )
}

async fn forward(
    State(nested): State<Nested>,
    Path((entity, _)): Path<(String, String)>,
    req: Request,
) -> Response {
    // The rest as sent (still percent-encoded: an encoded identifier in it must stay one).
    let raw = req.uri().path();
    let after = raw
        .strip_prefix(PREFIX)
        .and_then(|p| p.strip_prefix("/entities/"))
        .and_then(|p| p.split_once('/'))
        .map(|(_, rest)| rest.to_owned());
    let Some(rest) = after else {
        return ApiError::NotFound("no such admin route".into()).into_response();
    };
    let first = rest.split('/').next().unwrap_or_default();
    let Some(cp) = nested.hosting.find(&entity) else {
        return ApiError::NotFound(format!("unknown hosted entity {entity:?}")).into_response();
    };
    if is_deployment_wide(&rest) {
        return ApiError::NotFound(format!(
            "/{first} belongs to the deployment, not to one entity: use {PREFIX}/{first}"
        ))
        .into_response();
    }
    let query = req
        .uri()
        .query()
        .map(|q| format!("?{q}"))
        .unwrap_or_default();
    let Ok(uri) = format!("{PREFIX}/{rest}{query}").parse::<axum::http::Uri>() else {
        return ApiError::NotFound("no such admin route".into()).into_response();
    };
    // A new request, not this one with its URI changed: this route's path parameters are in
    // its extensions, and the entity's routes would read them as their own. Only the peer's
    // address goes along (the bootstrap rule and the login limits read it).
    let (parts, body) = req.into_parts();
    let mut inner = Request::new(body);
    *inner.method_mut() = parts.method;
    *inner.uri_mut() = uri;
    *inner.version_mut() = parts.version;
    *inner.headers_mut() = parts.headers;
    if let Some(peer) = parts.extensions.get::<ConnectInfo<std::net::SocketAddr>>() {
        inner.extensions_mut().insert(*peer);
    }
    let api = nested.api_of(cp);
    match api.oneshot(inner).await {
        Ok(r) => r,
        Err(never) => match never {},
    }
}
