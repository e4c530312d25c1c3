//! `/users`: Admin API accounts (mounted while `api.admin.users_enabled`).
//!
//! Bodies and status codes follow the reference service (§3.6) so operators' scripts keep
//! working; times are RFC 3339 there, unlike the Unix seconds of other records. The password
//! hash never leaves this module.
//!
//! An entity's `admin` manages the users limited to entities it administers
//! ([`Scope::manages`]): it lists and changes only those, gives roles only there, and the
//! other users do not exist for it (404).

use std::time::{Duration, UNIX_EPOCH};

use axum::Extension;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::actor::Actor;
use super::extract::Json;
use super::password::Passwords;
use crate::admin::access::Scope;
use crate::admin::error::{ApiError, ApiResult};
use crate::control_plane::ControlPlane;
use crate::db::users::{self as repo, UserRow};
use crate::hosting::Hosting;
use pharos_shared::hosted::{EntityNo, Role};
use std::sync::Arc;

type Cp = State<std::sync::Arc<ControlPlane>>;

/// This module's routes, merged by [`crate::admin::routes`].
pub fn routes() -> crate::admin::Routes {
    use utoipa_axum::routes;
    crate::admin::Routes::new()
        .routes(routes!(list, create))
        .routes(routes!(get, update, delete))
}

/// An admin user as the API shows it (without the password hash).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct UserRecord {
    /// Database id.
    pub id: i64,
    /// Creation time, RFC 3339.
    pub created_at: String,
    /// Last update, RFC 3339.
    pub updated_at: String,
    /// Login name.
    pub username: String,
    /// Free-text name.
    pub display_name: String,
    /// Refused at login.
    pub disabled: bool,
    /// The hosted entities this user is limited to, with its role in each; empty for an
    /// administrator of the whole deployment.
    pub entities: Vec<EntityRole>,
}

/// One hosted entity a user is limited to, and the user's role there.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EntityRole {
    /// The entity's number (`GET /entities`).
    pub entity: i64,
    /// `viewer` (reads), `operator` (also changes subordinates and trust marks) or `admin`
    /// (changes everything of the entity).
    pub role: String,
}

/// Checks a user's `entities` list: known roles, entity numbers, no entity twice.
fn parse_scope(list: &[EntityRole]) -> ApiResult<Vec<(EntityNo, Role)>> {
    let mut out: Vec<(EntityNo, Role)> = Vec::with_capacity(list.len());
    for (i, e) in list.iter().enumerate() {
        let entity = EntityNo::new(e.entity).ok_or_else(|| {
            ApiError::BadRequest(format!("entities[{i}].entity must be an entity number"))
        })?;
        let role = Role::parse(&e.role).ok_or_else(|| {
            ApiError::BadRequest(format!(
                "entities[{i}].role must be one of viewer, operator, admin"
            ))
        })?;
        if out.iter().any(|(n, _)| *n == entity) {
            return Err(ApiError::BadRequest(format!(
                "entities[{i}].entity {entity} is listed twice"
            )));
        }
        out.push((entity, role));
    }
    Ok(out)
}

/// Refuses a scope naming an entity that is not hosted.
fn check_hosted(scope: &[(EntityNo, Role)], hosting: &Hosting) -> ApiResult<()> {
    match scope.iter().position(|(n, _)| hosting.get(*n).is_none()) {
        Some(i) => Err(ApiError::BadRequest(format!(
            "entities[{i}].entity {} is not a hosted entity",
            scope[i].0
        ))),
        None => Ok(()),
    }
}

/// Whether another user than `except` administers the whole deployment.
async fn other_deployment_admin(cp: &ControlPlane, except: Option<i64>) -> ApiResult<bool> {
    for u in repo::list(&cp.db).await? {
        if Some(u.id) != except && !u.disabled && repo::scope(&cp.db, u.id).await?.is_empty() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Refuses deleting or disabling `user` when it is the last administrator of the whole
/// deployment while other (scoped) users remain: nobody could manage users or hosted entities
/// any more. The last user of all may go (the API is then open to local clients again).
async fn keep_a_deployment_admin(cp: &ControlPlane, user: &UserRow) -> ApiResult<()> {
    let is_admin = !user.disabled && repo::scope(&cp.db, user.id).await?.is_empty();
    if !is_admin || other_deployment_admin(cp, Some(user.id)).await? {
        return Ok(());
    }
    if repo::list(&cp.db).await?.iter().any(|u| u.id != user.id) {
        return Err(ApiError::Conflict(
            "this is the last administrator of the whole deployment while users limited to \
             entities remain; make another user an administrator first"
                .into(),
        ));
    }
    Ok(())
}

fn rfc3339(secs: i64) -> String {
    let t = UNIX_EPOCH + Duration::from_secs(u64::try_from(secs).unwrap_or(0));
    humantime::format_rfc3339_seconds(t).to_string()
}

impl UserRecord {
    fn new(r: UserRow, scope: Vec<(EntityNo, Role)>) -> Self {
        Self {
            id: r.id,
            created_at: rfc3339(r.created_at),
            updated_at: rfc3339(r.updated_at),
            username: r.username,
            display_name: r.display_name,
            disabled: r.disabled,
            entities: scope
                .into_iter()
                .map(|(e, role)| EntityRole {
                    entity: e.get(),
                    role: role.as_str().to_owned(),
                })
                .collect(),
        }
    }
}

async fn record(cp: &ControlPlane, r: UserRow) -> ApiResult<UserRecord> {
    let scope = repo::scope(&cp.db, r.id).await?;
    Ok(UserRecord::new(r, scope))
}

/// Body of `POST /users`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct NewUser {
    /// Login name (required; no `:`, at most 255 characters).
    pub username: Option<String>,
    /// Password (required).
    pub password: Option<String>,
    /// Free-text name.
    #[serde(default)]
    pub display_name: String,
    /// The hosted entities the user is limited to, with a role in each; absent or empty for
    /// an administrator of the whole deployment.
    #[serde(default)]
    pub entities: Vec<EntityRole>,
}

/// Body of `PUT /users/{username}`; absent fields stay as they are.
#[derive(Debug, Deserialize, ToSchema)]
pub struct UserUpdate {
    /// New free-text name.
    pub display_name: Option<String>,
    /// New password.
    pub password: Option<String>,
    /// Refuse or allow logins.
    pub disabled: Option<bool>,
    /// New scope: the hosted entities the user is limited to (empty: the whole deployment).
    pub entities: Option<Vec<EntityRole>>,
}

impl NewUser {
    /// Checks the body as `POST /users` does before it hashes the password: the username and
    /// the password.
    pub fn check(&self) -> ApiResult<(&str, &str)> {
        let (Some(username), Some(password)) = (&self.username, &self.password) else {
            return Err(ApiError::BadRequest(
                "username and password are required".into(),
            ));
        };
        if username.is_empty() || username.contains(':') || username.chars().count() > 255 {
            return Err(ApiError::BadRequest(
                "username must be 1 to 255 characters without ':'".into(),
            ));
        }
        check_password(username, password)?;
        parse_scope(&self.entities)?;
        Ok((username, password))
    }
}

impl UserUpdate {
    /// Checks the body as `PUT /users/{username}` does before it hashes the password.
    pub fn check(&self, username: &str) -> ApiResult<()> {
        if let Some(list) = &self.entities {
            parse_scope(list)?;
        }
        self.password
            .as_deref()
            .map_or(Ok(()), |p| check_password(username, p))
    }
}

/// The password policy ([`super::password_policy`]) as a 400.
fn check_password(username: &str, p: &str) -> ApiResult<()> {
    super::password_policy::check(username, p).map_err(ApiError::BadRequest)
}

async fn existing(cp: &ControlPlane, username: &str) -> ApiResult<UserRow> {
    repo::get(&cp.db, username)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("unknown user {username:?}")))
}

/// The caller's reach (no scope: the bootstrap client, before the first user).
fn caller(scope: Option<Extension<Scope>>) -> Scope {
    scope.map_or(Scope::Deployment, |Extension(s)| s)
}

/// User `username` if `me` manages it; one beyond its reach is unknown to it (404).
async fn managed(cp: &ControlPlane, me: &Scope, username: &str) -> ApiResult<UserRow> {
    let row = existing(cp, username).await?;
    if me.manages(&repo::scope(&cp.db, row.id).await?) {
        Ok(row)
    } else {
        Err(ApiError::NotFound(format!("unknown user {username:?}")))
    }
}

/// Refuses a scope `me` may not give: an administrator of the deployment (empty), or roles
/// in entities it does not administer.
fn may_give(me: &Scope, scope: &[(EntityNo, Role)]) -> ApiResult<()> {
    match (me.manages(scope), scope.is_empty()) {
        (true, _) => Ok(()),
        (false, true) => Err(ApiError::Forbidden(
            "only administrators of the deployment make users without entities (administrators \
             of the deployment)"
                .into(),
        )),
        (false, false) => Err(ApiError::Forbidden(
            "entities: you may give roles only in entities you administer".into(),
        )),
    }
}

/// Lists the admin users.
#[utoipa::path(get, path = "/users", tag = "users",
    responses((status = 200, body = [UserRecord])))]
pub async fn list(
    State(cp): Cp,
    scope: Option<Extension<Scope>>,
) -> ApiResult<axum::Json<Vec<UserRecord>>> {
    let me = caller(scope);
    let mut out = Vec::new();
    for r in repo::list(&cp.db).await? {
        let roles = repo::scope(&cp.db, r.id).await?;
        if me.manages(&roles) {
            out.push(UserRecord::new(r, roles));
        }
    }
    Ok(axum::Json(out))
}

/// Creates an admin user; the first one switches on Basic authentication for the Admin API.
#[utoipa::path(post, path = "/users", tag = "users", request_body = NewUser,
    responses((status = 201, body = UserRecord), (status = 400), (status = 403), (status = 409)))]
pub async fn create(
    State(cp): Cp,
    actor: Actor,
    caller_scope: Option<Extension<Scope>>,
    Extension(pw): Extension<Passwords>,
    Extension(hosting): Extension<Arc<Hosting>>,
    Json(input): Json<NewUser>,
) -> ApiResult<impl IntoResponse> {
    let (username, password) = input.check()?;
    let (username, password) = (username.to_owned(), password.to_owned());
    let scope = parse_scope(&input.entities)?;
    may_give(&caller(caller_scope), &scope)?;
    check_hosted(&scope, &hosting)?;
    let now = cp.now();
    let row = UserRow {
        id: 0,
        username,
        password_hash: pw.hash(&password).await?,
        display_name: input.display_name,
        disabled: false,
        created_at: now,
        updated_at: now,
    };
    let mut w = cp.write(actor.name()).await;
    if !scope.is_empty() && !other_deployment_admin(&cp, None).await? {
        return Err(ApiError::Conflict(
            "create an administrator of the whole deployment (a user without entities) first"
                .into(),
        ));
    }
    let tx = w.tx().await?;
    let id = repo::insert(&cp.db, tx, &row).await?;
    repo::set_scope(&cp.db, tx, id, &scope).await?;
    w.commit().await?;
    let created = existing(&cp, &row.username).await?;
    Ok((StatusCode::CREATED, axum::Json(record(&cp, created).await?)))
}

/// Shows one admin user.
#[utoipa::path(get, path = "/users/{username}", tag = "users",
    params(("username" = String, Path, description = "Login name")),
    responses((status = 200, body = UserRecord), (status = 404)))]
pub async fn get(
    State(cp): Cp,
    scope: Option<Extension<Scope>>,
    Path(username): Path<String>,
) -> ApiResult<axum::Json<UserRecord>> {
    let row = managed(&cp, &caller(scope), &username).await?;
    Ok(axum::Json(record(&cp, row).await?))
}

/// Changes display name, password or the disabled flag of an admin user.
#[utoipa::path(put, path = "/users/{username}", tag = "users",
    params(("username" = String, Path, description = "Login name")),
    request_body = UserUpdate,
    responses((status = 200, body = UserRecord), (status = 400), (status = 403), (status = 404)))]
pub async fn update(
    State(cp): Cp,
    actor: Actor,
    caller_scope: Option<Extension<Scope>>,
    Extension(pw): Extension<Passwords>,
    Extension(hosting): Extension<Arc<Hosting>>,
    Path(username): Path<String>,
    Json(input): Json<UserUpdate>,
) -> ApiResult<axum::Json<UserRecord>> {
    let me = caller(caller_scope);
    input.check(&username)?;
    let scope = input.entities.as_deref().map(parse_scope).transpose()?;
    if let Some(s) = &scope {
        may_give(&me, s)?;
        check_hosted(s, &hosting)?;
    }
    // Hash before taking the writer lock: Argon2 takes long and must not hold up other writes.
    let new_hash = match &input.password {
        Some(p) => Some(pw.hash(p).await?),
        None => None,
    };
    let mut w = cp.write(actor.name()).await;
    let mut row = managed(&cp, &me, &username).await?;
    if input.disabled == Some(true) {
        keep_a_deployment_admin(&cp, &row).await?;
    }
    if let Some(h) = new_hash {
        row.password_hash = h;
    }
    if let Some(d) = input.display_name {
        row.display_name = d;
    }
    if let Some(d) = input.disabled {
        row.disabled = d;
    }
    if let Some(s) = &scope
        && !s.is_empty()
        && !other_deployment_admin(&cp, Some(row.id)).await?
    {
        return Err(ApiError::Conflict(
            "this is the last administrator of the whole deployment; it cannot be limited to \
             entities"
                .into(),
        ));
    }
    row.updated_at = cp.now();
    let tx = w.tx().await?;
    repo::update(&cp.db, tx, &row).await?;
    if let Some(s) = &scope {
        repo::set_scope(&cp.db, tx, row.id, s).await?;
    }
    w.commit().await?;
    pw.forget_all();
    let row = existing(&cp, &username).await?;
    Ok(axum::Json(record(&cp, row).await?))
}

/// Deletes an admin user; deleting the last one makes the Admin API open again.
#[utoipa::path(delete, path = "/users/{username}", tag = "users",
    params(("username" = String, Path, description = "Login name")),
    responses((status = 204), (status = 404), (status = 409)))]
pub async fn delete(
    State(cp): Cp,
    actor: Actor,
    scope: Option<Extension<Scope>>,
    Extension(pw): Extension<Passwords>,
    Path(username): Path<String>,
) -> ApiResult<StatusCode> {
    let mut w = cp.write(actor.name()).await;
    let row = managed(&cp, &caller(scope), &username).await?;
    keep_a_deployment_admin(&cp, &row).await?;
    repo::delete(&cp.db, w.tx().await?, row.id).await?;
    w.commit().await?;
    pw.forget_all();
    Ok(StatusCode::NO_CONTENT)
}
