//! HTTP Basic authentication of the Admin API, and the audit log line of every admin write.
//!
//! The rule is evaluated on every request against the database, not a cached flag: while the
//! `users` table is empty only bootstrap clients are let in (loopback peers or the start-up
//! token, see [`super::bootstrap`]), so that the first user can be created but not by a
//! stranger; from the moment one exists every request needs valid Basic credentials of an
//! enabled user. Creating the first user therefore locks the API at once, also when another
//! process changed the table.
//!
//! Before any credential is looked at, a write from another web origin is refused
//! ([`super::guard`]), and a client over its failed-login limit gets 429 ([`super::login_limit`]).
//! The authenticated user is put into the request's extensions: it is the audit actor, and no
//! header can replace it ([`super::actor`]).
//!
//! The rule does not depend on `api.admin.users_enabled`: that switch only removes the `/users`
//! routes. Turning user management off must not silently open an API whose users exist.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{ConnectInfo, FromRequestParts, Request, State};
use axum::http::header::{AUTHORIZATION, HOST, WWW_AUTHENTICATE};
use axum::http::{HeaderMap, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;

use super::actor::{Actor, AuthenticatedUser};
use super::bootstrap::Bootstrap;
use super::guard;
use super::login_limit::FailedLogins;
use super::password::Passwords;
use crate::admin::error::{ApiError, ApiResult, DatabaseDown};
use crate::control_plane::ControlPlane;
use crate::db::users;
use pharos_shared::client_ip::TrustedProxies;

/// What the authentication middleware needs.
#[derive(Debug, Clone)]
pub struct AuthState {
    /// The control plane (database, settings).
    pub cp: Arc<ControlPlane>,
    /// The password verifier shared with the `/users` handlers.
    pub passwords: Passwords,
    /// Who may use the API while no user exists.
    pub bootstrap: Arc<Bootstrap>,
    /// Failed logins per (client, user name) and per client.
    pub failures: FailedLogins,
    /// `server.trusted_proxies`: behind a reverse proxy the failed-login limit counts the
    /// forwarded client, not the proxy (which would lock every operator out at once).
    pub proxies: Arc<TrustedProxies>,
    /// The hosted entity whose Admin API this is (named in the audit log).
    pub entity: pharos_shared::hosted::EntityNo,
}

impl AuthState {
    /// The client a failed-login bucket belongs to: the peer, or the address a trusted proxy
    /// forwarded. Unknown peers (never on a real listener) share one bucket rather than
    /// escaping the limit.
    fn client(&self, headers: &HeaderMap, peer: Option<IpAddr>) -> IpAddr {
        let peer = peer.unwrap_or(IpAddr::from([0, 0, 0, 0]));
        let header = &self.cp.settings.server.forwarded_ip_header;
        let forwarded = headers.get(header.as_str()).and_then(|v| v.to_str().ok());
        self.proxies.client_ip(peer, forwarded)
    }
}

/// Username and password of an HTTP Basic `Authorization` header, if well-formed.
pub fn basic_credentials(headers: &HeaderMap) -> Option<(String, String)> {
    let h = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, b64) = h.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let raw = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .ok()?;
    let text = String::from_utf8(raw).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}

/// Middleware: refuses cross-origin writes, authenticates the request, runs it, and logs admin
/// writes with their actor.
pub async fn middleware(State(auth): State<AuthState>, req: Request, next: Next) -> Response {
    let write = guard::is_write(req.method());
    if write && let Err(e) = guard::check_origin(req.headers(), &auth.cp.settings.api.admin.cors) {
        return e.into_response();
    }
    // A database known to be down answers writes at once (before authentication, which needs
    // the database too) instead of after the pool's acquire timeout each.
    if write && let Err(e) = auth.cp.db.refuse_if_down() {
        return ApiError::from(e).into_response();
    }
    let response = authenticated(&auth, req, next, write).await;
    if response.extensions().get::<DatabaseDown>().is_some() {
        auth.cp.db.suspect();
    }
    response
}

/// The rest of [`middleware`]: authentication, the request, the audit log line.
async fn authenticated(auth: &AuthState, mut req: Request, next: Next, write: bool) -> Response {
    let peer = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    // The host the request was sent to: `Host`, or an HTTP/2 request's authority.
    let host = req
        .headers()
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| req.uri().authority().map(|a| a.as_str()))
        .map(str::to_owned);
    match authenticate(auth, req.headers(), peer, host.as_deref()).await {
        Ok(Some((user, scope))) => {
            req.extensions_mut().insert(AuthenticatedUser(user));
            req.extensions_mut().insert(scope);
        }
        Ok(None) => {}
        Err(e) => {
            let mut r = e.into_response();
            if r.status() == axum::http::StatusCode::UNAUTHORIZED && !from_script(req.headers()) {
                r.headers_mut().insert(
                    WWW_AUTHENTICATE,
                    HeaderValue::from_static("Basic realm=\"admin\""),
                );
            }
            return r;
        }
    }
    if !write {
        return next.run(req).await;
    }
    let (mut parts, body) = req.into_parts();
    let actor = match Actor::from_request_parts(&mut parts, &auth.cp).await {
        Ok(a) => a,
        Err(never) => match never {},
    };
    let method = parts.method.clone();
    let path = parts.uri.path().to_string();
    let response = next.run(Request::from_parts(parts, body)).await;
    tracing::info!(
        target: "pharos::audit",
        actor = actor.name().unwrap_or("-"),
        entity = %auth.entity,
        %method,
        path,
        status = response.status().as_u16(),
        "admin change"
    );
    response
}

/// A request made by a page's script (`X-Requested-With: XMLHttpRequest`, as the admin console
/// sends): its 401 carries no `WWW-Authenticate` challenge, because a browser answers a
/// challenge by popping up its own login dialog over the page's login form.
fn from_script(headers: &HeaderMap) -> bool {
    headers
        .get("x-requested-with")
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"xmlhttprequest"))
}

/// The authenticated username and what it may reach (`None` while no user exists and the
/// client may bootstrap).
async fn authenticate(
    auth: &AuthState,
    headers: &HeaderMap,
    peer: Option<IpAddr>,
    host: Option<&str>,
) -> ApiResult<Option<(String, super::access::Scope)>> {
    let db = &auth.cp.db;
    if !users::any(db).await? {
        if auth.bootstrap.admits(peer, headers, host) {
            return Ok(None);
        }
        return Err(ApiError::Unauthorized(
            "no admin user exists yet: create the first one from this machine (loopback, Host \
             127.0.0.1, [::1], localhost or the entity's host, not from a web page) or with \
             the bootstrap token written to the log at start (Authorization: Bearer)"
                .into(),
        ));
    }
    auth.bootstrap.spend();
    let client = auth.client(headers, peer);
    let Some((username, password)) = basic_credentials(headers) else {
        return Err(ApiError::Unauthorized(
            auth.bootstrap.missing_credentials(headers).into(),
        ));
    };
    let now = auth.cp.now();
    if let Some(retry_after) = auth.failures.retry_after(client, &username, now) {
        return Err(ApiError::TooManyRequests {
            message: "too many failed logins for this user from this client; try again later"
                .into(),
            retry_after,
        });
    }
    let row = users::get(db, &username).await?;
    let stored = row.as_ref().map(|r| r.password_hash.as_str());
    let ok = auth.passwords.verify(&username, &password, stored).await?;
    let Some(user) = row.filter(|u| ok && !u.disabled) else {
        auth.failures.record(client, &username, now);
        return Err(ApiError::Unauthorized("invalid credentials".into()));
    };
    auth.failures.clear(client, &username);
    if auth.passwords.needs_rehash(&user.password_hash) {
        // Parameters changed since this password was set: upgrade the hash while the
        // plaintext is at hand. A failure only costs the upgrade, not the login.
        match auth.passwords.hash(&password).await {
            Ok(new) => match users::rehash(db, user.id, &user.password_hash, &new).await {
                Ok(()) => {
                    auth.passwords.remember(&username, &password, &new).await;
                    tracing::info!(user = %username, "re-hashed admin password with new parameters");
                }
                Err(e) => {
                    tracing::warn!(user = %username, error = %e, "password re-hash not stored")
                }
            },
            Err(e) => tracing::warn!(user = %username, error = %e, "password re-hash failed"),
        }
    }
    let scope = super::access::Scope::of(users::scope(db, user.id).await?);
    Ok(Some((user.username, scope)))
}
