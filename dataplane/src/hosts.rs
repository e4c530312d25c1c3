//! Hosted entities on the public port: which entity a request is for.
//!
//! The entity configured in `entity_id` is served as it always was, at the root of every host.
//! Every other hosted entity is served where its identifier says: the Entity Configuration of
//! `https://fed.example.org/edu` at `/edu/.well-known/openid-federation` on requests for host
//! `fed.example.org`, its endpoints under `/edu`. [`Front`](crate::front::Front) asks the
//! table here first; a request it matches goes to that entity's own front (its data plane, its
//! caches) with the entity's path taken off, so the entity's routes are the same as the
//! default entity's. An empty table costs one atomic load per request.

use std::sync::Arc;

use arc_swap::ArcSwap;
use axum::extract::Request;
use axum::http::{HeaderMap, Uri, header};
use pharos_shared::client_ip::TrustedProxies;
use pharos_shared::hosted::{EntityNo, Placement};
use rustc_hash::FxHashMap;

use crate::front::Front;

/// The future of an answer that knows which hosted entity gives it (`None`: the default
/// entity): the statistics file the request under it. Read from the future rather than marked
/// on the response, which would cost an allocation of the response's extensions per request.
pub trait ServedBy {
    /// The hosted entity answering, other than the default one.
    fn served_by(&self) -> Option<EntityNo>;
}

/// Where one hosted entity is served, and its front.
#[derive(Debug, Clone)]
pub struct HostedRoute {
    /// The entity.
    pub entity: EntityNo,
    /// Its host, port and path.
    place: Placement,
    /// The `Host` values a client most likely sends for it, compared byte for byte before
    /// the general comparison (`host:port`, and the bare host on the scheme's default port).
    usual_hosts: Vec<Box<str>>,
    /// Its front: its own router and ready answers.
    front: Front,
}

impl HostedRoute {
    /// The route of the entity identified by `entity_id`, served by `front`; `None` when the
    /// identifier is no http(s) URL (the control plane refuses those before they are stored).
    pub fn new(entity: EntityNo, entity_id: &str, front: Front) -> Option<Self> {
        let place = Placement::of(entity_id).ok()?;
        let name = if place.host.contains(':') {
            format!("[{}]", place.host)
        } else {
            place.host.clone()
        };
        let mut usual_hosts = vec![format!("{name}:{}", place.port).into_boxed_str()];
        if place.port == 80 || place.port == 443 {
            usual_hosts.push(name.into_boxed_str());
        }
        Some(Self {
            entity,
            place,
            usual_hosts,
            front,
        })
    }

    /// Whether a request for `host` (with its port, if any) is for this entity's host. A
    /// request without a port matches the identifier's default port.
    fn serves_host(&self, host: &str) -> bool {
        if self.usual_hosts.iter().any(|h| **h == *host) {
            return true;
        }
        let (name, port) = split_host(host);
        name.eq_ignore_ascii_case(&self.place.host)
            && port.map_or(self.place.port == 80 || self.place.port == 443, |p| {
                p == self.place.port
            })
    }

    /// Whether a path this entity owns may start with one of `reserved` (the port's own
    /// paths, matched as plain prefixes), so that the port may have to answer it instead:
    /// when a reserved path is this entity's path or below it (`/` and `/healthz`), or is a
    /// prefix of this entity's path (`/api` and `/apix`). `/h` and `/healthz` do not meet.
    fn near(&self, reserved: &[String]) -> bool {
        let prefix = self.place.prefix.as_str();
        reserved
            .iter()
            .any(|r| self.place.owns(r) || prefix.starts_with(r.as_str()))
    }
}

/// `host:port` → (`host`, port); `[v6]:port` keeps its brackets off.
fn split_host(host: &str) -> (&str, Option<u16>) {
    if let Some(rest) = host.strip_prefix('[') {
        let Some((addr, after)) = rest.split_once(']') else {
            return (host, None);
        };
        let port = after.strip_prefix(':').and_then(|p| p.parse().ok());
        return (addr, port);
    }
    match host.rsplit_once(':') {
        Some((name, port)) => match port.parse() {
            Ok(p) => (name, Some(p)),
            Err(_) => (host, None),
        },
        None => (host, None),
    }
}

/// A hosted entity in the table: its route, and whether its path comes near one the port
/// keeps for itself (only then is the request's path compared with those).
#[derive(Debug)]
struct Entry {
    route: HostedRoute,
    near_reserved: bool,
}

/// Every hosted entity but the default one, longest path first (so `/a/b` is tried before
/// `/a`).
#[derive(Debug, Clone, Default)]
pub struct HostTable {
    entries: Vec<Arc<Entry>>,
    /// Positions in `entries` by the first segment of their path (`edu` for `/edu/test`),
    /// longest path first: a request looks at the entities of its own first segment only,
    /// whatever the number of entities hosted.
    by_segment: FxHashMap<Box<str>, Vec<usize>>,
    /// Positions of the entities at the root of their host.
    at_root: Vec<usize>,
    /// The paths the port keeps for itself.
    reserved: Arc<[String]>,
}

/// The first segment of `path` (`edu` for `/edu/fetch`; empty for `/` or ``).
fn first_segment(path: &str) -> &str {
    let path = path.strip_prefix('/').unwrap_or(path);
    path.split_once('/').map_or(path, |(first, _)| first)
}

impl HostTable {
    /// The table of `entries`, beside the port's `reserved` paths.
    fn of(mut entries: Vec<Arc<Entry>>, reserved: Arc<[String]>) -> Self {
        entries.sort_by_key(|e| std::cmp::Reverse(e.route.place.prefix.len()));
        let mut by_segment: FxHashMap<Box<str>, Vec<usize>> = FxHashMap::default();
        let mut at_root = Vec::new();
        for (i, e) in entries.iter().enumerate() {
            match first_segment(&e.route.place.prefix) {
                "" => at_root.push(i),
                first => by_segment.entry(first.into()).or_default().push(i),
            }
        }
        Self {
            entries,
            by_segment,
            at_root,
            reserved,
        }
    }

    /// This table with `route` added (replacing the entity's previous route).
    pub fn with(&self, route: HostedRoute) -> Self {
        let mut entries: Vec<Arc<Entry>> = self
            .entries
            .iter()
            .filter(|e| e.route.entity != route.entity)
            .cloned()
            .collect();
        entries.push(Arc::new(Entry {
            near_reserved: route.near(&self.reserved),
            route,
        }));
        Self::of(entries, self.reserved.clone())
    }

    /// This table without entity `entity`.
    pub fn without(&self, entity: EntityNo) -> Self {
        let entries = self
            .entries
            .iter()
            .filter(|e| e.route.entity != entity)
            .cloned()
            .collect();
        Self::of(entries, self.reserved.clone())
    }

    /// Whether no entity but the default one is hosted.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The route for a request to `host` and `path`: an entity whose path starts with the
    /// request's first segment, else one at the root of the request's host; never one for a
    /// path the port keeps for itself.
    fn route(&self, host: &str, path: &str) -> Option<&HostedRoute> {
        let first = first_segment(path);
        let by_segment = if first.is_empty() {
            None
        } else {
            self.by_segment.get(first)
        };
        let entry = by_segment
            .into_iter()
            .flatten()
            .chain(&self.at_root)
            .filter_map(|&i| self.entries.get(i))
            .find(|e| e.route.place.owns(path) && e.route.serves_host(host))?;
        if entry.near_reserved && self.reserved.iter().any(|p| path.starts_with(p.as_str())) {
            return None;
        }
        Some(&entry.route)
    }
}

/// The table the public port reads, swapped whole when an entity is created or deleted.
#[derive(Debug, Clone)]
pub struct Hosts {
    table: Arc<ArcSwap<HostTable>>,
    /// Proxies whose `X-Forwarded-Host` names the host the client asked for.
    proxies: Arc<TrustedProxies>,
}

impl Hosts {
    /// An empty table; `proxies` as `server.trusted_proxies` says; `reserved`: the paths the
    /// port keeps for itself on every host (health checks, the Admin API), never an
    /// entity's, whatever its identifier.
    pub fn new(proxies: TrustedProxies, reserved: &[&str]) -> Self {
        let reserved: Arc<[String]> = reserved.iter().map(|p| (*p).to_owned()).collect();
        Self {
            table: Arc::new(ArcSwap::from_pointee(HostTable::of(Vec::new(), reserved))),
            proxies: Arc::new(proxies),
        }
    }

    /// Changes the table: `f` gets the current one and returns the next.
    pub fn update(&self, f: impl Fn(&HostTable) -> HostTable) {
        self.table.rcu(|t| f(t));
    }

    /// The hosted entity `req` is for, and how many bytes of the request's path are the
    /// entity's own (to take off before its front sees the path); `None` for the default
    /// entity. The request is not changed: a ready answer needs only the rest of the path,
    /// and the URI is rebuilt only for a request that goes on to the entity's router.
    pub(crate) fn route(
        &self,
        req: &Request,
        peer: Option<std::net::SocketAddr>,
    ) -> Option<Routed> {
        let table = self.table.load();
        if table.is_empty() {
            return None;
        }
        let host = request_host(req, peer, &self.proxies)?;
        let route = table.route(host, req.uri().path())?;
        Some(Routed {
            entity: route.entity,
            front: route.front.clone(),
            prefix: route.place.prefix.len(),
        })
    }
}

/// A request's hosted entity (see [`Hosts::route`]).
pub(crate) struct Routed {
    pub entity: EntityNo,
    pub front: Front,
    /// The length of the entity's path, a prefix of the request's.
    pub prefix: usize,
}

/// `path` with the entity's `prefix` bytes taken off (at least `/` stays).
pub(crate) fn rest_of(path: &str, prefix: usize) -> &str {
    match path.get(prefix..) {
        Some(rest) if rest.starts_with('/') => rest,
        _ => "/",
    }
}

/// The host a request asked for: `X-Forwarded-Host` from a trusted proxy, else `Host`, else
/// the URI's authority (HTTP/2).
fn request_host<'r>(
    req: &'r Request,
    peer: Option<std::net::SocketAddr>,
    proxies: &TrustedProxies,
) -> Option<&'r str> {
    let headers: &HeaderMap = req.headers();
    if let Some(peer) = peer
        && proxies.contains(peer.ip())
        && let Some(h) = headers
            .get("x-forwarded-host")
            .and_then(|v| v.to_str().ok())
    {
        // The nearest proxy's value is the last one.
        let last = h.rsplit(',').next().unwrap_or(h).trim();
        if !last.is_empty() {
            return Some(last);
        }
    }
    if let Some(h) = headers.get(header::HOST).and_then(|v| v.to_str().ok()) {
        return Some(h);
    }
    req.uri().authority().map(|a| a.as_str())
}

/// `uri` with the first `n` bytes of its path taken off (at least `/` stays).
pub(crate) fn strip(uri: &Uri, n: usize) -> Option<Uri> {
    let pq = uri.path_and_query()?.as_str();
    let rest = pq.get(n..)?;
    let rest = if rest.is_empty() || rest.starts_with('?') {
        format!("/{rest}")
    } else {
        rest.to_owned()
    };
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = Some(rest.parse().ok()?);
    Uri::from_parts(parts).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table of `routes`, the port keeping no path for itself.
    fn table(routes: Vec<HostedRoute>) -> HostTable {
        routes
            .into_iter()
            .fold(HostTable::default(), |t, r| t.with(r))
    }

    fn route(no: i64, id: &str) -> HostedRoute {
        let front = Front::new(axum::Router::new());
        HostedRoute::new(EntityNo::new(no).unwrap(), id, front).unwrap()
    }

    #[test]
    fn an_identifier_at_a_host_root_takes_the_whole_host() {
        let t = table(vec![
            route(2, "https://fed.example.org/edu"),
            route(3, "https://ta2.example.org/"),
        ]);
        let at = |host: &str, path: &str| t.route(host, path).map(|r| r.entity.get());
        assert_eq!(
            at("ta2.example.org", "/.well-known/openid-federation"),
            Some(3)
        );
        assert_eq!(at("ta2.example.org", "/edu/fetch"), Some(3));
        assert_eq!(at("fed.example.org", "/edu/fetch"), Some(2));
        assert_eq!(at("fed.example.org", "/fetch"), None);
    }

    #[test]
    fn the_longest_path_on_the_right_host_wins_by_whole_segments() {
        let t = table(vec![
            route(2, "https://fed.example.org/edu"),
            route(3, "https://fed.example.org/edu/test"),
            route(4, "http://127.0.0.1:8080/edu/"),
        ]);
        let at = |host: &str, path: &str| t.route(host, path).map(|r| r.entity.get());
        assert_eq!(
            at("fed.example.org", "/edu/.well-known/openid-federation"),
            Some(2)
        );
        assert_eq!(at("FED.example.org:443", "/edu/fetch"), Some(2));
        assert_eq!(at("fed.example.org", "/edu/test/fetch"), Some(3));
        assert_eq!(at("fed.example.org", "/edu"), Some(2));
        assert_eq!(at("fed.example.org", "/education"), None);
        assert_eq!(at("fed.example.org:8443", "/edu/fetch"), None);
        assert_eq!(at("other.example.org", "/edu/fetch"), None);
        assert_eq!(at("127.0.0.1:8080", "/edu/fetch"), Some(4));
        assert_eq!(at("127.0.0.1", "/edu/fetch"), None);
        assert!(
            t.without(EntityNo::new(2).unwrap())
                .route("fed.example.org", "/edu")
                .is_none()
        );
    }

    #[test]
    fn the_entity_path_is_taken_off_the_request() {
        let uri: Uri = "/edu/fetch?sub=https%3A%2F%2Fx".parse().unwrap();
        assert_eq!(strip(&uri, 4).unwrap(), "/fetch?sub=https%3A%2F%2Fx");
        let uri: Uri = "/edu".parse().unwrap();
        assert_eq!(strip(&uri, 4).unwrap(), "/");
        let uri: Uri = "/edu?x=1".parse().unwrap();
        assert_eq!(strip(&uri, 4).unwrap(), "/?x=1");
        assert_eq!(rest_of("/edu/fetch", 4), "/fetch");
        assert_eq!(rest_of("/edu", 4), "/");
        assert_eq!(rest_of("/edu/", 4), "/");
    }

    #[test]
    fn a_path_and_its_rebuilt_uri_agree() {
        for (path, n) in [("/edu/fetch", 4), ("/edu", 4), ("/a/b/.well-known/x", 4)] {
            let uri: Uri = path.parse().unwrap();
            assert_eq!(strip(&uri, n).unwrap().path(), rest_of(path, n), "{path}");
        }
    }

    #[test]
    fn the_ports_own_paths_are_never_an_entitys() {
        let reserved: Arc<[String]> = ["/healthz", "/api/v1/admin"]
            .iter()
            .map(|p| (*p).to_owned())
            .collect();
        let t = HostTable::of(Vec::new(), reserved)
            .with(route(2, "https://root.example.org/"))
            .with(route(3, "https://fed.example.org/h"))
            .with(route(4, "https://fed.example.org/api"));
        let at = |host: &str, path: &str| t.route(host, path).map(|r| r.entity.get());
        assert_eq!(at("root.example.org", "/healthz"), None);
        assert_eq!(at("root.example.org", "/healthz/x"), None);
        assert_eq!(at("root.example.org", "/fetch"), Some(2));
        assert_eq!(at("fed.example.org", "/api/v1/admin/users"), None);
        assert_eq!(at("fed.example.org", "/api/fetch"), Some(4));
        assert_eq!(at("fed.example.org", "/h/fetch"), Some(3));
        let near = |no: i64| {
            t.entries
                .iter()
                .find(|e| e.route.entity.get() == no)
                .unwrap()
                .near_reserved
        };
        assert!(near(2) && near(4));
        assert!(!near(3), "/h does not meet /healthz");
    }

    #[test]
    fn hosts_split_with_their_ports() {
        assert_eq!(split_host("a.example:8080"), ("a.example", Some(8080)));
        assert_eq!(split_host("a.example"), ("a.example", None));
        assert_eq!(split_host("[::1]:9"), ("::1", Some(9)));
        assert_eq!(split_host("[::1]"), ("::1", None));
    }
}
