//! Optimistic concurrency of the Admin API (RFC 9110 §8.8.3, §13.1.1): entity tags and
//! `If-Match`.
//!
//! - **The tag** of a resource is the strong hash ([`pharos_shared::http_cache::etag`]) of the
//!   representation its `GET` answers. That representation is built from what is stored, so
//!   two replicas on one database give the same tag for the same state, and no version column
//!   or migration is needed. `GET` answers carry it; a successful write answers the hash of the
//!   representation it returns (the new state of the resource). If a write's answer is not
//!   exactly what a `GET` would show, the tag only makes the client's next `If-Match` fail
//!   (412, read again): a wrong tag can refuse a write, never let one through on a stale read.
//! - **`If-Match`** on a `PUT`, `PATCH`, `DELETE` or a `POST` into a document (a path that
//!   also has `PUT`) is evaluated inside the write's transaction: when the handler begins it
//!   (`Write::tx`, which calls [`on_begin`]), after the cluster-wide Admin API write lock is
//!   taken. The current representation is read by the route's own `GET` handler, so the check
//!   and the tag a client saw cannot disagree. A stale tag is 412 and the transaction is rolled
//!   back: nothing changes.
//! - **The write lock.** Every Admin API write takes, as the first statement of its
//!   transaction, a row lock (`SELECT … FOR UPDATE` on one `settings` row) on PostgreSQL and
//!   MariaDB; SQLite's `BEGIN IMMEDIATE` already serialises writers. So the per-process writer
//!   lock extends to every replica on the database: a read-modify-write (a claim path, a
//!   `PATCH`, a `POST` into a document) that reads after beginning its transaction sees every
//!   committed edit and no other replica's edit can land before its commit. Without `If-Match`
//!   nothing concurrent is lost; a whole-document `PUT` without it is last-writer-wins.
//! - **`api.admin.require_if_match`** makes such a write without `If-Match` a 428 before the
//!   handler runs.
//!
//! - **Limit.** A few representations are built partly from this replica's snapshot rather
//!   than from the database (the statement lifetimes, the critical operators list, the general
//!   fallbacks shown in a subordinate's record). On a replica whose snapshot still trails
//!   another replica's commit (the propagation delay), `If-Match` on those is compared with the
//!   trailing state. The edits that add to or remove from what is stored (critical operators,
//!   document members, claims) read the database in the transaction and lose nothing.
//!
//! Which writes are preconditioned is decided once, from the OpenAPI document ([`Rules`]),
//! so the document's `If-Match`/412/428 entries ([`document`]) and what is enforced agree.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use pharos_shared::http_cache;
use sqlx::AnyConnection;
use tower::ServiceExt;

use crate::admin::error::ApiError;
use crate::control_plane::{BeginHook, with_begin_hook};
use crate::db::{Db, Dialect, settings};
use crate::error::{Error, Result};

/// Largest answer hashed for a tag. Bigger answers (the subordinate list, exports) are
/// streamed page by page and never held whole; they are not written back as a whole either.
const MAX_TAGGED: usize = 16 * 1024 * 1024;

/// What a write request does about preconditions, by route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A write to a resource that a client reads (`GET` on the same path): `If-Match` is
    /// evaluated, `require_if_match` applies, the answer carries the new tag.
    Checked,
    /// Any other write (creating in a collection, an action): the write lock only.
    Plain,
}

/// The methods of every documented path template, for deciding [`Kind`].
#[derive(Debug, Clone, Default)]
pub struct Rules {
    /// Path template (`/subordinates/{subordinateID}`) → its methods.
    paths: BTreeMap<String, Vec<Method>>,
}

impl Rules {
    /// The rules of an OpenAPI document (paths relative to the API prefix).
    pub fn from_doc(doc: &utoipa::openapi::OpenApi) -> Self {
        let mut paths = BTreeMap::new();
        for (path, item) in &doc.paths.paths {
            let mut m = Vec::new();
            for (op, method) in [
                (&item.get, Method::GET),
                (&item.put, Method::PUT),
                (&item.post, Method::POST),
                (&item.patch, Method::PATCH),
                (&item.delete, Method::DELETE),
            ] {
                if op.is_some() {
                    m.push(method);
                }
            }
            paths.insert(path.clone(), m);
        }
        Self { paths }
    }

    /// The template `path` is routed to: the one with most literal segments, as the router
    /// prefers a static segment over a parameter.
    fn template(&self, path: &str) -> Option<&str> {
        let segs: Vec<&str> = path.trim_end_matches('/').split('/').collect();
        self.paths
            .keys()
            .filter_map(|t| {
                let ts: Vec<&str> = t.split('/').collect();
                if ts.len() != segs.len() {
                    return None;
                }
                let mut literal = 0;
                for (a, b) in ts.iter().zip(&segs) {
                    if a.starts_with('{') && a.ends_with('}') {
                        continue;
                    }
                    if a != b {
                        return None;
                    }
                    literal += 1;
                }
                Some((literal, t.as_str()))
            })
            .max_by_key(|(literal, _)| *literal)
            .map(|(_, t)| t)
    }

    /// What a `method` request on the template `template` does about preconditions.
    pub fn kind_of_template(&self, method: &Method, template: &str) -> Kind {
        let Some(methods) = self.paths.get(template) else {
            return Kind::Plain;
        };
        let read = methods.contains(&Method::GET) && methods.contains(method);
        let checked = match *method {
            Method::PUT | Method::PATCH | Method::DELETE => read,
            // A POST on a path that also has PUT merges into (or starts) that document; a POST
            // on a collection without PUT creates a new resource elsewhere.
            Method::POST => read && methods.contains(&Method::PUT),
            _ => false,
        };
        if checked { Kind::Checked } else { Kind::Plain }
    }

    /// What a `method` request on `path` (relative to the API prefix) does.
    pub fn kind(&self, method: &Method, path: &str) -> Kind {
        self.template(path)
            .map_or(Kind::Plain, |t| self.kind_of_template(method, t))
    }
}

/// Whether a write's `If-Match` holds for the current tag, and what to answer if not
/// (`None`: no `If-Match`, which is the caller's to decide).
pub fn evaluate(if_match: Option<&HeaderValue>, current: Option<&[u8]>) -> Result<()> {
    match if_match {
        Some(h) if !http_cache::if_match(h.as_bytes(), current) => Err(Error::IfMatchFailed {
            exists: current.is_some(),
        }),
        _ => Ok(()),
    }
}

/// The precondition of the write request being served (a task-local, see [`on_begin`]).
struct Pending {
    /// The request's `If-Match` on a [`Kind::Checked`] write.
    if_match: Option<HeaderValue>,
    /// The `GET` that reads the current representation (path and query, headers).
    get: (String, HeaderMap),
    /// The routes, without layers, to answer that `GET`.
    api: Router,
    /// `If-Match` was evaluated (in the first transaction begun).
    checked: AtomicBool,
}

impl Pending {
    /// The current tag of the resource, read by its `GET` route (`None`: it does not exist).
    async fn current_tag(&self) -> Result<Option<Bytes>> {
        let (uri, headers) = &self.get;
        let mut req = Request::new(Body::empty());
        *req.uri_mut() = uri
            .parse()
            .map_err(|e| Error::Internal(format!("re-reading {uri}: {e}")))?;
        *req.headers_mut() = headers.clone();
        let resp = match self.api.clone().oneshot(req).await {
            Ok(r) => r,
            Err(never) => match never {},
        };
        match resp.status() {
            StatusCode::OK => {
                let body = axum::body::to_bytes(resp.into_body(), MAX_TAGGED)
                    .await
                    .map_err(|e| Error::Internal(format!("re-reading {uri}: {e}")))?;
                Ok(Some(http_cache::etag(&body)))
            }
            StatusCode::NOT_FOUND | StatusCode::GONE => Ok(None),
            s if s.is_server_error() => Err(Error::Internal(format!(
                "re-reading {uri} for If-Match answered {s}"
            ))),
            // Anything else (a 400 on a path that reads differently than it writes) is no
            // current representation: `*` and every tag fail.
            _ => Ok(None),
        }
    }
}

/// The scope of one row that every Admin API write locks on PostgreSQL and MariaDB.
const LOCK_SCOPE: &str = "cluster";
/// Its name.
const LOCK_NAME: &str = "admin_write_lock";

/// Called by `Write::tx` right after it began a transaction inside an Admin API write
/// request: takes the cluster-wide write lock and evaluates `If-Match` (once per request).
/// Background jobs and federation commands run outside any request and skip it.
impl BeginHook for Pending {
    fn on_begin<'a>(
        &'a self,
        db: &'a Db,
        c: &'a mut AnyConnection,
    ) -> Pin<Box<dyn Future<Output = Result<()>> + Send + 'a>> {
        Box::pin(async move {
            lock(db, c).await?;
            if self.if_match.is_some() && !self.checked.swap(true, Ordering::SeqCst) {
                let current = self.current_tag().await?;
                evaluate(self.if_match.as_ref(), current.as_deref())?;
            }
            Ok(())
        })
    }
}

/// Takes the Admin API write lock in the caller's transaction (PostgreSQL and MariaDB; held
/// until commit or rollback). Its row was created by [`settings::ensure_row`] before the request's
/// transaction began: creating it inside would take a gap lock on MariaDB that a second
/// creator's insert waits on.
async fn lock(db: &Db, c: &mut AnyConnection) -> Result<()> {
    if db.dialect == Dialect::Sqlite {
        return Ok(());
    }
    let row = sqlx::query(
        db.sql("SELECT value FROM settings WHERE entity = ? AND scope = ? AND name = ? FOR UPDATE"),
    )
    .bind(db.entity())
    .bind(LOCK_SCOPE)
    .bind(LOCK_NAME)
    .fetch_optional(&mut *c)
    .await?;
    match row {
        Some(_) => Ok(()),
        None => Err(Error::Internal(
            "the Admin API write lock row is missing".into(),
        )),
    }
}

/// State of [`middleware`].
#[derive(Clone)]
pub struct Preconditions {
    /// Which writes are checked.
    pub rules: Arc<Rules>,
    /// The routes without layers, for re-reading a resource.
    pub api: Router,
    /// `api.admin.require_if_match`.
    pub require: bool,
    /// The control plane, whose database holds the lock row.
    pub cp: Arc<crate::control_plane::ControlPlane>,
    /// The lock row exists (created before this process's first write).
    pub lock_row: Arc<AtomicBool>,
}

/// Tags `GET` answers, refuses a checked write without `If-Match` when required (428), arms
/// the check that [`on_begin`] makes inside the write's transaction, and tags the answer of a
/// successful checked write.
pub async fn middleware(State(s): State<Preconditions>, req: Request, next: Next) -> Response {
    let method = req.method().clone();
    if method == Method::GET {
        return tag(next.run(req).await).await;
    }
    if !matches!(
        method,
        Method::PUT | Method::PATCH | Method::DELETE | Method::POST
    ) {
        return next.run(req).await;
    }
    let kind = s.rules.kind(&method, req.uri().path());
    let if_match = req.headers().get(header::IF_MATCH).cloned();
    if kind == Kind::Checked && if_match.is_none() && s.require {
        return ApiError::PreconditionRequired(
            "this server requires If-Match on writes: GET the resource and send its ETag".into(),
        )
        .into_response();
    }
    if !s.lock_row.load(Ordering::Acquire) {
        if let Err(e) = settings::ensure_row(&s.cp.db, LOCK_SCOPE, LOCK_NAME).await {
            return ApiError::from(e).into_response();
        }
        s.lock_row.store(true, Ordering::Release);
    }
    let mut headers = req.headers().clone();
    for h in [
        header::IF_MATCH,
        header::CONTENT_TYPE,
        header::CONTENT_LENGTH,
        header::TRANSFER_ENCODING,
    ] {
        headers.remove(h);
    }
    let path = req
        .uri()
        .path_and_query()
        .map_or_else(|| req.uri().path().to_string(), |p| p.as_str().to_string());
    let p = Arc::new(Pending {
        if_match: if_match.filter(|_| kind == Kind::Checked),
        get: (path, headers),
        api: s.api.clone(),
        checked: AtomicBool::new(false),
    });
    let resp = with_begin_hook(p.clone(), next.run(req)).await;
    if kind != Kind::Checked || !resp.status().is_success() {
        return resp;
    }
    // A write that answered success without beginning a transaction changed nothing; its
    // If-Match still has to hold, or the client would take a stale read for current.
    if p.if_match.is_some() && !p.checked.load(Ordering::SeqCst) {
        let current = match p.current_tag().await {
            Ok(t) => t,
            Err(e) => return ApiError::from(e).into_response(),
        };
        if let Err(e) = evaluate(p.if_match.as_ref(), current.as_deref()) {
            return ApiError::from(e).into_response();
        }
    }
    tag(resp).await
}

/// Adds the strong tag of a `200`/`201` answer's body (unless the handler set one), when the
/// body is of known size and not larger than [`MAX_TAGGED`].
async fn tag(resp: Response) -> Response {
    use http_body::Body as _;
    if !matches!(resp.status(), StatusCode::OK | StatusCode::CREATED)
        || resp.headers().contains_key(header::ETAG)
    {
        return resp;
    }
    match resp.body().size_hint().exact() {
        Some(n) if usize::try_from(n).is_ok_and(|n| n <= MAX_TAGGED) => {}
        _ => return resp,
    }
    let (mut parts, body) = resp.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_TAGGED).await else {
        return ApiError::Internal("could not read an answer to tag it".into()).into_response();
    };
    if let Ok(v) = HeaderValue::from_bytes(&http_cache::etag(&bytes)) {
        parts.headers.insert(header::ETAG, v);
    }
    Response::from_parts(parts, Body::from(bytes))
}

/// Documents the tags in the OpenAPI document: `ETag` on the `GET` and on the successful
/// answers of every checked write, `If-Match` on checked writes with their 412 and 428.
pub fn document(doc: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::path::{ParameterBuilder, ParameterIn};
    use utoipa::openapi::{HeaderBuilder, ObjectBuilder, RefOr, ResponseBuilder, Type};
    let rules = Rules::from_doc(doc);
    let etag = || {
        HeaderBuilder::new()
            .schema(Some(ObjectBuilder::new().schema_type(Type::String)))
            .description(Some(
                "Strong entity tag of the resource as stored (the same on every replica); \
                 send it as If-Match to change exactly this version.",
            ))
            .build()
    };
    for (path, item) in doc.paths.paths.iter_mut() {
        let written = [Method::PUT, Method::PATCH, Method::DELETE, Method::POST]
            .iter()
            .any(|m| rules.kind_of_template(m, path) == Kind::Checked);
        let ops = [
            (Method::GET, &mut item.get),
            (Method::PUT, &mut item.put),
            (Method::POST, &mut item.post),
            (Method::PATCH, &mut item.patch),
            (Method::DELETE, &mut item.delete),
        ];
        for (method, op) in ops {
            let Some(op) = op.as_mut() else { continue };
            let checked = rules.kind_of_template(&method, path) == Kind::Checked;
            if (method == Method::GET && written) || checked {
                for (code, resp) in op.responses.responses.iter_mut() {
                    if let RefOr::T(r) = resp
                        && (code == "200" || code == "201")
                    {
                        r.headers.insert("ETag".into(), RefOr::T(etag()));
                    }
                }
            }
            if !checked {
                continue;
            }
            let param = ParameterBuilder::new()
                .name("If-Match")
                .parameter_in(ParameterIn::Header)
                .required(utoipa::openapi::Required::False)
                .schema(Some(ObjectBuilder::new().schema_type(Type::String)))
                .description(Some(
                    "ETag of the version this write changes, or `*` (any existing version). \
                     Without it (allowed unless `api.admin.require_if_match`), edits of a \
                     member are made on the stored document and lose nothing concurrent; a \
                     whole-document PUT is last-writer-wins.",
                ))
                .build();
            op.parameters
                .get_or_insert_with(Vec::new)
                .push(RefOr::T(param));
            let error = |d: &str| {
                RefOr::T(
                    ResponseBuilder::new()
                        .description(d)
                        .content(
                            "application/json",
                            utoipa::openapi::ContentBuilder::new()
                                .schema(Some(
                                    ObjectBuilder::new()
                                        .property(
                                            "error",
                                            ObjectBuilder::new().schema_type(Type::String),
                                        )
                                        .property(
                                            "error_description",
                                            ObjectBuilder::new().schema_type(Type::String),
                                        )
                                        .required("error"),
                                ))
                                .build(),
                        )
                        .build(),
                )
            };
            op.responses.responses.insert(
                "412".into(),
                error("If-Match does not hold: the resource changed since it was read; nothing was written"),
            );
            op.responses.responses.insert(
                "428".into(),
                error("If-Match is required (`api.admin.require_if_match`) and missing"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(paths: &[(&str, &[Method])]) -> Rules {
        Rules {
            paths: paths
                .iter()
                .map(|(p, m)| ((*p).to_string(), m.to_vec()))
                .collect(),
        }
    }

    #[test]
    fn writes_to_readable_resources_are_checked_and_creations_are_not() {
        let r = rules(&[
            ("/subordinates", &[Method::GET, Method::POST]),
            (
                "/subordinates/{subordinateID}",
                &[Method::GET, Method::PUT, Method::PATCH, Method::DELETE],
            ),
            (
                "/subordinates/additional-claims",
                &[Method::GET, Method::POST, Method::PUT],
            ),
            (
                "/subordinates/{subordinateID}/metadata/{entityType}",
                &[Method::GET, Method::PUT, Method::POST, Method::DELETE],
            ),
            ("/subordinates/{subordinateID}/status", &[Method::PUT]),
        ]);
        assert_eq!(r.kind(&Method::POST, "/subordinates"), Kind::Plain);
        assert_eq!(r.kind(&Method::PATCH, "/subordinates/x"), Kind::Checked);
        assert_eq!(r.kind(&Method::DELETE, "/subordinates/x"), Kind::Checked);
        assert_eq!(
            r.kind(&Method::POST, "/subordinates/x/metadata/openid_provider"),
            Kind::Checked,
            "POST into a document"
        );
        assert_eq!(
            r.kind(&Method::POST, "/subordinates/additional-claims"),
            Kind::Checked,
            "the static segment wins over {{subordinateID}}"
        );
        assert_eq!(r.kind(&Method::PUT, "/subordinates/x/status"), Kind::Plain);
        assert_eq!(r.kind(&Method::PUT, "/nowhere"), Kind::Plain);
        assert_eq!(
            r.kind(&Method::PUT, "/subordinates"),
            Kind::Plain,
            "not routed"
        );
        assert_eq!(r.kind(&Method::GET, "/subordinates/x"), Kind::Plain);
    }

    #[test]
    fn a_stale_or_weak_tag_fails_and_no_header_passes() {
        let current = http_cache::etag(b"{\"a\":1}");
        let good = HeaderValue::from_bytes(&current).ok();
        assert!(evaluate(good.as_ref(), Some(&current)).is_ok());
        assert!(evaluate(None, Some(&current)).is_ok());
        assert!(evaluate(None, None).is_ok());
        let stale = HeaderValue::from_static("\"stale\"");
        assert!(matches!(
            evaluate(Some(&stale), Some(&current)),
            Err(Error::IfMatchFailed { .. })
        ));
        let star = HeaderValue::from_static("*");
        assert!(evaluate(Some(&star), Some(&current)).is_ok());
        assert!(matches!(
            evaluate(Some(&star), None),
            Err(Error::IfMatchFailed { .. })
        ));
    }

    #[tokio::test]
    async fn only_sized_successful_answers_are_tagged() {
        let r = tag((StatusCode::OK, "{}").into_response()).await;
        let t = r.headers().get(header::ETAG).cloned();
        assert_eq!(
            t.as_ref().map(HeaderValue::as_bytes),
            Some(&http_cache::etag(b"{}")[..])
        );
        let r = tag((StatusCode::NOT_FOUND, "{}").into_response()).await;
        assert!(r.headers().get(header::ETAG).is_none());
        let stream = futures_util::stream::iter([Ok::<_, std::io::Error>(Bytes::from("{}"))]);
        let r = tag(Body::from_stream(stream).into_response()).await;
        assert!(
            r.headers().get(header::ETAG).is_none(),
            "streamed: untagged"
        );
    }
}
