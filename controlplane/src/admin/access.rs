//! Who may use which Admin API route (issue 38). Administrators of the deployment (users
//! without a scope, and the bootstrap client before the first user exists) may use every
//! route. A user scoped to hosted entities has a role in each of them ([`Role`]); for any
//! other entity every route answers 404, as if it were not hosted. Within its entities a
//! `viewer` reads, an `operator` also changes subordinates and trust marks, an `admin` changes
//! everything of the entity and manages the users of its entities (`/users` shows and takes
//! only users limited to entities it administers; [`Scope::manages`]). No scoped user changes
//! hosted entities, or reaches the deployment's administrators (403 and 404).
//!
//! Which routes are which is the data below ([`ROUTES`], one row per path of the OpenAPI
//! document; a test checks that every documented path has exactly one row), decided by one
//! pure function ([`decide`]) and applied by [`middleware`] in every entity's Admin API.

use std::collections::BTreeMap;

use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use pharos_shared::hosted::{EntityNo, Role};

use crate::admin::error::ApiError;

/// What a route is about, which decides who may change it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The entity's subordinates and trust marks: an `operator` may change them.
    Registry,
    /// The rest of the entity (keys, Entity Configuration, endpoints, trust anchors, caches,
    /// statistics): only its `admin` may change it.
    Entity,
    /// Admin API users: the deployment's administrators, and the `admin` of an entity for
    /// the users limited to the entities it administers.
    Users,
    /// The hosted entities themselves: anyone reads the ones in scope, the deployment's
    /// administrators change them.
    Entities,
}

/// Every path of the Admin API (relative to [`super::PREFIX`], as in the OpenAPI document)
/// with its kind.
pub const ROUTES: &[(&str, Kind)] = &[
    ("/entities", Kind::Entities),
    ("/entities/{entity}", Kind::Entities),
    ("/entity-configuration", Kind::Entity),
    ("/entity-configuration/additional-claims", Kind::Entity),
    ("/entity-configuration/additional-claims/{id}", Kind::Entity),
    ("/entity-configuration/authority-hints", Kind::Entity),
    ("/entity-configuration/authority-hints/{id}", Kind::Entity),
    ("/entity-configuration/jwks", Kind::Entity),
    ("/entity-configuration/keys", Kind::Entity),
    ("/entity-configuration/keys/{kid}", Kind::Entity),
    ("/entity-configuration/lifetime", Kind::Entity),
    ("/entity-configuration/metadata", Kind::Entity),
    ("/entity-configuration/superiors", Kind::Entity),
    ("/entity-configuration/metadata/{entityType}", Kind::Entity),
    (
        "/entity-configuration/metadata/{entityType}/{claim}",
        Kind::Entity,
    ),
    ("/entity-configuration/trust-marks", Kind::Entity),
    ("/entity-configuration/trust-marks/{id}", Kind::Entity),
    ("/explain", Kind::Entity),
    ("/federation-endpoints", Kind::Entity),
    ("/federation-map", Kind::Registry),
    ("/federation-endpoints/{type}", Kind::Entity),
    (
        "/federation-endpoints/{type}/auth-trust-anchors",
        Kind::Entity,
    ),
    ("/keys/rotation", Kind::Entity),
    ("/kms", Kind::Entity),
    ("/kms/alg", Kind::Entity),
    ("/kms/rotate", Kind::Entity),
    ("/kms/rotation", Kind::Entity),
    ("/kms/rsa-key-len", Kind::Entity),
    ("/resolver/flush", Kind::Entity),
    ("/stats/daily", Kind::Entity),
    ("/stats/export", Kind::Entity),
    ("/stats/latency", Kind::Entity),
    ("/stats/summary", Kind::Entity),
    ("/stats/timeseries", Kind::Entity),
    ("/stats/top/{what}", Kind::Entity),
    ("/subordinates", Kind::Registry),
    ("/subordinates/additional-claims", Kind::Registry),
    ("/subordinates/additional-claims/{claimID}", Kind::Registry),
    ("/subordinates/constraints", Kind::Registry),
    (
        "/subordinates/constraints/allowed-entity-types",
        Kind::Registry,
    ),
    (
        "/subordinates/constraints/allowed-entity-types/{entityType}",
        Kind::Registry,
    ),
    ("/subordinates/constraints/max-path-length", Kind::Registry),
    (
        "/subordinates/constraints/naming-constraints",
        Kind::Registry,
    ),
    ("/subordinates/lifetime", Kind::Registry),
    ("/subordinates/metadata-policies", Kind::Registry),
    (
        "/subordinates/metadata-policies/{entityType}",
        Kind::Registry,
    ),
    (
        "/subordinates/metadata-policies/{entityType}/{claim}",
        Kind::Registry,
    ),
    (
        "/subordinates/metadata-policies/{entityType}/{claim}/{operator}",
        Kind::Registry,
    ),
    ("/subordinates/metadata-policy-crit", Kind::Registry),
    (
        "/subordinates/metadata-policy-crit/{operator}",
        Kind::Registry,
    ),
    ("/subordinates/{subordinateID}", Kind::Registry),
    (
        "/subordinates/{subordinateID}/additional-claims",
        Kind::Registry,
    ),
    (
        "/subordinates/{subordinateID}/additional-claims/{claimID}",
        Kind::Registry,
    ),
    ("/subordinates/{subordinateID}/constraints", Kind::Registry),
    (
        "/subordinates/{subordinateID}/constraints/allowed-entity-types",
        Kind::Registry,
    ),
    (
        "/subordinates/{subordinateID}/constraints/allowed-entity-types/{entityType}",
        Kind::Registry,
    ),
    (
        "/subordinates/{subordinateID}/constraints/max-path-length",
        Kind::Registry,
    ),
    (
        "/subordinates/{subordinateID}/constraints/naming-constraints",
        Kind::Registry,
    ),
    ("/subordinates/{subordinateID}/history", Kind::Registry),
    ("/subordinates/{subordinateID}/jwks", Kind::Registry),
    ("/subordinates/{subordinateID}/jwks/{kid}", Kind::Registry),
    ("/subordinates/{subordinateID}/metadata", Kind::Registry),
    (
        "/subordinates/{subordinateID}/metadata-policies",
        Kind::Registry,
    ),
    (
        "/subordinates/{subordinateID}/metadata-policies/{entityType}",
        Kind::Registry,
    ),
    (
        "/subordinates/{subordinateID}/metadata-policies/{entityType}/{claim}",
        Kind::Registry,
    ),
    (
        "/subordinates/{subordinateID}/metadata-policies/{entityType}/{claim}/{operator}",
        Kind::Registry,
    ),
    (
        "/subordinates/{subordinateID}/metadata/{entityType}",
        Kind::Registry,
    ),
    (
        "/subordinates/{subordinateID}/metadata/{entityType}/{claim}",
        Kind::Registry,
    ),
    ("/subordinates/{subordinateID}/statement", Kind::Registry),
    ("/subordinates/{subordinateID}/status", Kind::Registry),
    ("/trust-anchors", Kind::Entity),
    ("/trust-anchors/{entityID}", Kind::Entity),
    ("/trust-marks/issuance-spec", Kind::Registry),
    (
        "/trust-marks/issuance-spec/{trustMarkSpecID}",
        Kind::Registry,
    ),
    (
        "/trust-marks/issuance-spec/{trustMarkSpecID}/history",
        Kind::Registry,
    ),
    (
        "/trust-marks/issuance-spec/{trustMarkSpecID}/subjects",
        Kind::Registry,
    ),
    (
        "/trust-marks/issuance-spec/{trustMarkSpecID}/subjects/{subjectID}",
        Kind::Registry,
    ),
    (
        "/trust-marks/issuance-spec/{trustMarkSpecID}/subjects/{subjectID}/additional-claims",
        Kind::Registry,
    ),
    (
        "/trust-marks/issuance-spec/{trustMarkSpecID}/subjects/{subjectID}/history",
        Kind::Registry,
    ),
    (
        "/trust-marks/issuance-spec/{trustMarkSpecID}/subjects/{subjectID}/status",
        Kind::Registry,
    ),
    ("/trust-marks/issuers", Kind::Registry),
    ("/trust-marks/issuers/{issuerID}", Kind::Registry),
    ("/trust-marks/issuers/{issuerID}/types", Kind::Registry),
    (
        "/trust-marks/issuers/{issuerID}/types/{trustMarkTypeID}",
        Kind::Registry,
    ),
    ("/trust-marks/owners", Kind::Registry),
    ("/trust-marks/owners/{ownerID}", Kind::Registry),
    ("/trust-marks/owners/{ownerID}/types", Kind::Registry),
    (
        "/trust-marks/owners/{ownerID}/types/{trustMarkTypeID}",
        Kind::Registry,
    ),
    ("/trust-marks/types", Kind::Registry),
    ("/trust-marks/types/{trustMarkTypeID}", Kind::Registry),
    (
        "/trust-marks/types/{trustMarkTypeID}/issuers",
        Kind::Registry,
    ),
    (
        "/trust-marks/types/{trustMarkTypeID}/issuers/{issuerID}",
        Kind::Registry,
    ),
    ("/trust-marks/types/{trustMarkTypeID}/owner", Kind::Registry),
    ("/users", Kind::Users),
    ("/users/{username}", Kind::Users),
];

/// What the authenticated user may do: everything, or the roles of its entities.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// An administrator of the deployment.
    Deployment,
    /// A user limited to these entities, with its role in each.
    Entities(BTreeMap<EntityNo, Role>),
}

impl Scope {
    /// The scope of a user with these stored roles (none: the whole deployment).
    pub fn of(roles: Vec<(EntityNo, Role)>) -> Self {
        if roles.is_empty() {
            Self::Deployment
        } else {
            Self::Entities(roles.into_iter().collect())
        }
    }

    /// Whether `entity` is visible at all.
    pub fn sees(&self, entity: EntityNo) -> bool {
        match self {
            Self::Deployment => true,
            Self::Entities(roles) => roles.contains_key(&entity),
        }
    }

    /// Whether this user manages a user with `roles` (empty: an administrator of the
    /// deployment): the deployment's administrators manage everyone; an entity's `admin`
    /// manages the users limited to entities it administers, and no one else (it cannot make
    /// or change a user beyond its own reach).
    pub fn manages(&self, roles: &[(EntityNo, Role)]) -> bool {
        match self {
            Self::Deployment => true,
            Self::Entities(mine) => {
                !roles.is_empty()
                    && roles
                        .iter()
                        .all(|(e, _)| mine.get(e).is_some_and(|r| *r == Role::Admin))
            }
        }
    }

    /// Whether this user administers at least one entity (and so may manage users).
    fn administers_any(&self) -> bool {
        match self {
            Self::Deployment => true,
            Self::Entities(mine) => mine.values().any(|r| *r == Role::Admin),
        }
    }
}

/// The answer to a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Go on.
    Allow,
    /// 403: the entity is in scope, the route is not for this role.
    Forbidden,
    /// 404: the entity is not in scope.
    NotFound,
}

/// Whether `scope` may send `method` to a route of `kind` of `entity` (`None`: a path that is
/// in no row, which only the deployment's administrators reach).
pub fn decide(scope: &Scope, entity: EntityNo, method: &Method, kind: Option<Kind>) -> Decision {
    let Scope::Entities(roles) = scope else {
        return Decision::Allow;
    };
    let read = matches!(*method, Method::GET | Method::HEAD);
    match kind {
        // Which users it may see and change is the handlers' to decide (`Scope::manages`).
        Some(Kind::Users) if scope.administers_any() => return Decision::Allow,
        Some(Kind::Users) => return Decision::Forbidden,
        Some(Kind::Entities) if read => return Decision::Allow,
        Some(Kind::Entities) => return Decision::Forbidden,
        _ => {}
    }
    let Some(role) = roles.get(&entity) else {
        return Decision::NotFound;
    };
    let Some(kind) = kind else {
        return Decision::NotFound;
    };
    let needed = match (read, kind) {
        (true, _) => Role::Viewer,
        (false, Kind::Registry) => Role::Operator,
        (false, _) => Role::Admin,
    };
    if *role >= needed {
        Decision::Allow
    } else {
        Decision::Forbidden
    }
}

/// The row of `path` (relative to the Admin API's prefix): its template matched segment by
/// segment, `{…}` standing for any one segment.
pub fn kind_of(path: &str) -> Option<Kind> {
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    ROUTES.iter().find_map(|(template, kind)| {
        let t: Vec<&str> = template.split('/').collect();
        let same = t.len() == segments.len()
            && t.iter()
                .zip(&segments)
                .all(|(t, s)| (t.starts_with('{') && !s.is_empty()) || t == s);
        same.then_some(*kind)
    })
}

/// Middleware of entity `entity`'s Admin API, after authentication: applies [`decide`].
pub async fn middleware(State(entity): State<EntityNo>, req: Request, next: Next) -> Response {
    let scope = req
        .extensions()
        .get::<Scope>()
        .cloned()
        .unwrap_or(Scope::Deployment);
    let path = req.uri().path();
    let path = path.strip_prefix(super::PREFIX).unwrap_or(path);
    match decide(&scope, entity, req.method(), kind_of(path)) {
        Decision::Allow => next.run(req).await,
        Decision::Forbidden => ApiError::Forbidden(format!(
            "your role does not allow {} {path} for this entity",
            req.method()
        ))
        .into_response(),
        Decision::NotFound => ApiError::NotFound("no such entity".into()).into_response(),
    }
}

/// Middleware of the deployment's own routes (`/metrics`): its administrators only.
pub async fn deployment_only(req: Request, next: Next) -> Response {
    match req.extensions().get::<Scope>() {
        Some(Scope::Entities(_)) => {
            ApiError::Forbidden("only administrators of the deployment may read this".into())
                .into_response()
        }
        _ => next.run(req).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scoped(entity: i64, role: Role) -> Scope {
        Scope::of(vec![(EntityNo::new(entity).unwrap(), role)])
    }

    #[test]
    fn every_documented_path_has_exactly_one_row() {
        let settings = pharos_shared::config::AdminSettings {
            users_enabled: true,
            ..Default::default()
        };
        let (_, doc) = super::super::routes(&settings);
        // The nested copies (`/entities/{entity}/…`) are checked as the paths they repeat.
        let documented: Vec<&str> = doc
            .paths
            .paths
            .keys()
            .map(|p| {
                p.strip_prefix("/entities/{entity}")
                    .filter(|r| !r.is_empty())
                    .unwrap_or(p)
            })
            .collect();
        for p in &documented {
            let rows = ROUTES.iter().filter(|(t, _)| t == p).count();
            assert_eq!(rows, 1, "{p}: {rows} rows in access::ROUTES");
        }
        for (t, _) in ROUTES {
            assert!(documented.contains(t), "{t} is not documented");
        }
    }

    #[test]
    fn an_entity_admin_manages_only_users_within_its_reach() {
        let (two, three) = (EntityNo::new(2).unwrap(), EntityNo::new(3).unwrap());
        let admin = Scope::of(vec![(two, Role::Admin), (three, Role::Viewer)]);
        assert!(admin.manages(&[(two, Role::Viewer)]));
        assert!(admin.manages(&[(two, Role::Admin)]));
        assert!(!admin.manages(&[(three, Role::Viewer)]), "it only views 3");
        assert!(!admin.manages(&[(two, Role::Viewer), (three, Role::Viewer)]));
        assert!(!admin.manages(&[]), "an administrator of the deployment");
        assert!(Scope::Deployment.manages(&[]));
        assert!(!scoped(2, Role::Operator).manages(&[(two, Role::Viewer)]));
    }

    #[test]
    fn paths_find_their_rows_by_template() {
        assert_eq!(kind_of("/subordinates/5/jwks"), Some(Kind::Registry));
        assert_eq!(kind_of("/kms/rotate"), Some(Kind::Entity));
        assert_eq!(kind_of("/users/alice"), Some(Kind::Users));
        assert_eq!(kind_of("/entities"), Some(Kind::Entities));
        assert_eq!(kind_of("/subordinates//jwks"), None);
        assert_eq!(kind_of("/nothing"), None);
    }

    #[test]
    fn roles_decide_by_kind_and_method() {
        let two = EntityNo::new(2).unwrap();
        let (get, post) = (Method::GET, Method::POST);
        let d = |s: &Scope, m: &Method, k| decide(s, two, m, Some(k));
        let viewer = scoped(2, Role::Viewer);
        let operator = scoped(2, Role::Operator);
        let admin = scoped(2, Role::Admin);
        assert_eq!(d(&viewer, &get, Kind::Registry), Decision::Allow);
        assert_eq!(d(&viewer, &post, Kind::Registry), Decision::Forbidden);
        assert_eq!(d(&operator, &post, Kind::Registry), Decision::Allow);
        assert_eq!(
            d(&operator, &Method::DELETE, Kind::Registry),
            Decision::Allow
        );
        assert_eq!(d(&operator, &post, Kind::Entity), Decision::Forbidden);
        assert_eq!(d(&admin, &post, Kind::Entity), Decision::Allow);
        for s in [&viewer, &operator] {
            assert_eq!(d(s, &get, Kind::Users), Decision::Forbidden);
        }
        // An entity's admin reaches `/users`, where it manages its entities' users only.
        assert_eq!(d(&admin, &post, Kind::Users), Decision::Allow);
        for s in [&viewer, &operator, &admin] {
            assert_eq!(d(s, &post, Kind::Entities), Decision::Forbidden);
            assert_eq!(d(s, &get, Kind::Entities), Decision::Allow);
            // Another entity does not exist for them.
            assert_eq!(
                decide(s, EntityNo::DEFAULT, &get, Some(Kind::Registry)),
                Decision::NotFound
            );
            assert_eq!(decide(s, two, &get, None), Decision::NotFound);
        }
        assert_eq!(d(&Scope::Deployment, &post, Kind::Users), Decision::Allow);
        assert_eq!(
            decide(&Scope::Deployment, two, &post, None),
            Decision::Allow
        );
    }
}
