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

/// How many entities' Admin APIs are kept built. One is about 400 kB and takes a few
/// milliseconds to build: kept for every entity an operator touched, a thousand entities'
/// APIs held 400 MB; the few an operator is working on stay at hand.
const KEPT_ROUTERS: usize = 16;

/// What the nested routes need: the hosted entities, and how to build one's Admin API.
#[derive(Clone)]
pub struct Nested {
    hosting: Arc<Hosting>,
    make: Arc<dyn Fn(Arc<ControlPlane>) -> Router + Send + Sync>,
    /// The Admin APIs of the entities used last (at most [`KEPT_ROUTERS`]), built on demand.
    routers: Arc<Mutex<Kept<ControlPlane>>>,
}

/// The kept Admin APIs: by entity, the control plane (`T`) each was built for, the API, and
/// when it was last used (a counter).
struct Kept<T> {
    by_entity: HashMap<EntityNo, Built<T>>,
    uses: u64,
}

/// An entity's Admin API, with the control plane it was built for and its last use.
struct Built<T> {
    cp: std::sync::Weak<T>,
    router: Router,
    used: u64,
}

impl<T> Default for Kept<T> {
    fn default() -> Self {
        Self {
            by_entity: HashMap::new(),
            uses: 0,
        }
    }
}

impl<T> Kept<T> {
    /// The API kept for `entity`, if it was built for `cp` (marked as used now).
    fn get(&mut self, entity: EntityNo, cp: &Arc<T>) -> Option<Router> {
        self.uses += 1;
        let now = self.uses;
        let built = self.by_entity.get_mut(&entity)?;
        if !built.cp.upgrade().is_some_and(|h| Arc::ptr_eq(&h, cp)) {
            return None;
        }
        built.used = now;
        Some(built.router.clone())
    }

    /// Keeps `router` for `entity` and `cp`, first dropping the APIs of entities no longer
    /// hosted (they hold their control planes) and, when [`KEPT_ROUTERS`] are kept, the
    /// least recently used.
    fn keep(
        &mut self,
        entity: EntityNo,
        cp: &Arc<T>,
        router: Router,
        hosted: impl Fn(EntityNo) -> bool,
    ) {
        self.by_entity.retain(|n, _| hosted(*n));
        if self.by_entity.len() >= KEPT_ROUTERS
            && !self.by_entity.contains_key(&entity)
            && let Some(oldest) = self
                .by_entity
                .iter()
                .min_by_key(|(_, b)| b.used)
                .map(|(n, _)| *n)
        {
            self.by_entity.remove(&oldest);
        }
        self.uses += 1;
        let used = self.uses;
        self.by_entity.insert(
            entity,
            Built {
                cp: Arc::downgrade(cp),
                router,
                used,
            },
        );
    }
}

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

    /// Entity `cp`'s Admin API: the kept one, or a new one (a deleted and re-created number
    /// gets a new one), kept in place of the least recently used.
    fn api_of(&self, cp: Arc<ControlPlane>) -> Router {
        let entity = cp.db.hosted();
        let Ok(mut kept) = self.routers.lock() else {
            return (self.make)(cp);
        };
        if let Some(router) = kept.get(entity, &cp) {
            return router;
        }
        let router = (self.make)(cp.clone());
        kept.keep(entity, &cp, router.clone(), |n| {
            self.hosting.get(n).is_some()
        });
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_api_goes_first_and_deleted_entities_go_at_once() {
        let no = |n: i64| EntityNo::new(n).unwrap_or(EntityNo::DEFAULT);
        let cps: Vec<Arc<()>> = (0..=KEPT_ROUTERS + 1).map(|_| Arc::new(())).collect();
        let mut kept = Kept::<()>::default();
        for (i, cp) in cps.iter().enumerate().take(KEPT_ROUTERS) {
            kept.keep(no(i as i64 + 2), cp, Router::new(), |_| true);
        }
        // Entity 2 is used again; entity 3 is now the least recently used.
        assert!(kept.get(no(2), &cps[0]).is_some());
        let extra = KEPT_ROUTERS as i64 + 2;
        kept.keep(no(extra), &cps[KEPT_ROUTERS], Router::new(), |_| true);
        assert_eq!(kept.by_entity.len(), KEPT_ROUTERS);
        assert!(kept.get(no(3), &cps[1]).is_none(), "the oldest went");
        assert!(kept.get(no(2), &cps[0]).is_some());
        // Another control plane under a kept number (deleted and created again): rebuilt.
        assert!(kept.get(no(2), &cps[KEPT_ROUTERS + 1]).is_none());
        // Entities no longer hosted go at the next build.
        kept.keep(no(99), &cps[KEPT_ROUTERS + 1], Router::new(), |n| {
            n == no(99)
        });
        assert_eq!(kept.by_entity.len(), 1);
    }
}
