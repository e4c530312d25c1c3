//! The catch-all dispatcher: every path that is not a fixed route is looked up in the
//! snapshot's endpoint registry and handed to its type's handler (see [`crate::endpoints`]).

use std::sync::Arc;

use arc_swap::Guard;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use pharos_shared::endpoint::http_method;
use pharos_shared::snapshot::{ReadyView, Snapshot};

use crate::DataPlane;
use crate::cache_counters::CacheCounters;
use crate::endpoints::{self, Call};
use crate::error::FedError;

/// The ready answer of an anonymous GET to a registered endpoint (a cached signed answer),
/// if there is one: what [`handler`] answers first, without its future (see
/// [`crate::front`]). `path` is the request's path as the entity sees it (a hosted entity's
/// path taken off). `None` leaves the request to the router.
pub(crate) fn ready(dp: &DataPlane, req: &Request, path: &str) -> Option<Response> {
    let now = dp.now();
    let snap = dp.snapshot_ref();
    if let Some(view) = fetch_view(&snap, req, path) {
        return ready_fetch(&dp.caches, &snap, view, req, now);
    }
    let entry = snap.registry.lookup(path, now)?;
    if entry.kind.method(entry.auth_enabled) != http_method::Method::Get
        || req.method() != Method::GET
    {
        return None;
    }
    endpoints::cached(dp, &snap, entry, req, now).map(|resp| cache_policy(resp, true))
}

/// `snap`'s ready view when `req` is an anonymous GET of its fetch endpoint, told by the
/// view rather than the registry (see [`ReadyView`]): a hosted entity's route asks this of
/// the snapshot at its publication point, without reaching the entity's data plane. `None`
/// leaves the request to [`ready`]'s registry lookup.
pub(crate) fn fetch_view<'s>(
    snap: &'s Snapshot,
    req: &Request,
    path: &str,
) -> Option<&'s ReadyView> {
    (req.method() == Method::GET)
        .then(|| snap.ready())
        .flatten()
        .filter(|v| v.is_anonymous_fetch(path))
}

/// The ready answer of a request [`fetch_view`] found: a statement signed before, if there
/// is one.
pub(crate) fn ready_fetch(
    caches: &CacheCounters,
    snap: &Snapshot,
    view: &ReadyView,
    req: &Request,
    now: i64,
) -> Option<Response> {
    let query = req.uri().query().unwrap_or("");
    let inm = req.headers().get(header::IF_NONE_MATCH);
    endpoints::fetch::cached(caches, snap, Some(view), query, now, inm)
        .map(|resp| cache_policy(resp, true))
}

/// The fallback handler of the public router.
pub async fn handler(State(dp): State<Arc<DataPlane>>, req: Request) -> Response {
    let now = dp.now();
    let snap = dp.snapshot_ref();
    let path = req.uri().path();
    let Some(entry) = snap.registry.lookup(path, now) else {
        let mut resp =
            FedError::not_found(format!("no endpoint registered for path {path}")).into_response();
        resp.extensions_mut().insert(crate::stats::Unregistered);
        return resp;
    };
    let required = entry.kind.method(entry.auth_enabled);
    let allowed = match required {
        http_method::Method::Get => req.method() == Method::GET,
        http_method::Method::Post => req.method() == Method::POST,
    };
    if !allowed {
        let mut resp = FedError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            format!("endpoint {path} requires {}", required.as_str()),
        )
        .into_response();
        resp.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static(required.as_str()));
        return resp;
    }
    if let Some(resp) = endpoints::cached(&dp, &snap, entry, &req, now) {
        // Only anonymous GETs have cached answers.
        return cache_policy(resp, true);
    }
    // From here on handlers may await remote work: they get the snapshot as an owned `Arc`,
    // and the guard is given up.
    let anonymous = endpoints::anonymous_get(entry, &req);
    let entry = Arc::clone(entry);
    let snap = Guard::into_inner(snap);
    let resp = endpoints::serve(Call {
        dp: &dp,
        snap,
        entry,
        req,
        now,
    })
    .await;
    cache_policy(resp, anonymous)
}

/// Only an anonymous GET's successful answer that its handler declared cacheable (with
/// `Cache-Control`, see [`crate::jwt_response::cacheable`]) may be kept by a cache; everything
/// else (errors, authenticated or POST answers, answers whose lifetime nothing bounds) is
/// `no-store`, so a CDN never serves one client's answer to another nor a stale one.
fn cache_policy(resp: Response, anonymous: bool) -> Response {
    let declared = resp.headers().contains_key(header::CACHE_CONTROL);
    let status = resp.status();
    if anonymous && declared && (status.is_success() || status == StatusCode::NOT_MODIFIED) {
        return resp;
    }
    crate::jwt_response::no_store(resp)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resp(status: StatusCode, cc: Option<&'static str>) -> Response {
        let mut r = status.into_response();
        if let Some(v) = cc {
            r.headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static(v));
        }
        r
    }

    fn cc(r: &Response) -> &str {
        r.headers()[header::CACHE_CONTROL].to_str().unwrap()
    }

    #[test]
    fn only_declared_anonymous_successes_stay_cacheable() {
        let public = "public, max-age=60";
        let declared = Some(public);
        assert_eq!(
            cc(&cache_policy(resp(StatusCode::OK, declared), true)),
            public
        );
        assert_eq!(
            cc(&cache_policy(
                resp(StatusCode::NOT_MODIFIED, declared),
                true
            )),
            public
        );
        for (status, cc_in, anonymous) in [
            (StatusCode::OK, declared, false),
            (StatusCode::OK, None, true),
            (StatusCode::NOT_FOUND, declared, true),
            (StatusCode::INTERNAL_SERVER_ERROR, None, true),
        ] {
            let r = cache_policy(resp(status, cc_in), anonymous);
            assert_eq!(cc(&r), "no-store", "{status} {cc_in:?} {anonymous}");
        }
    }
}
