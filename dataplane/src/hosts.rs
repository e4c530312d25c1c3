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

use crate::front::Front;

/// On a response: the hosted entity that answered (absent: the default entity). The
/// statistics file the request under it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServedBy(pub EntityNo);

/// Where one hosted entity is served, and its front.
#[derive(Debug, Clone)]
pub struct HostedRoute {
    /// The entity.
    pub entity: EntityNo,
    /// Its host, port and path.
    place: Placement,
    /// Its front: its own router and ready answers.
    front: Front,
}

impl HostedRoute {
    /// The route of the entity identified by `entity_id`, served by `front`; `None` when the
    /// identifier is no http(s) URL (the control plane refuses those before they are stored).
    pub fn new(entity: EntityNo, entity_id: &str, front: Front) -> Option<Self> {
        let place = Placement::of(entity_id).ok()?;
        Some(Self {
            entity,
            place,
            front,
        })
    }

    /// Whether a request for `host` (with its port, if any) is for this entity's host. A
    /// request without a port matches the identifier's default port.
    fn serves_host(&self, host: &str) -> bool {
        let (name, port) = split_host(host);
        name.eq_ignore_ascii_case(&self.place.host)
            && port.map_or(self.place.port == 80 || self.place.port == 443, |p| {
                p == self.place.port
            })
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

/// Every hosted entity but the default one, longest path first (so `/a/b` is tried before
/// `/a`).
#[derive(Debug, Clone, Default)]
pub struct HostTable {
    routes: Vec<HostedRoute>,
    /// Positions in `routes` by the first segment of their path (`edu` for `/edu/test`; the
    /// empty string for a host's root), longest path first: a request looks at the entities
    /// of its own first segment only, whatever the number of entities hosted.
    by_segment: std::collections::HashMap<String, Vec<usize>>,
}

/// The first segment of `path` (`edu` for `/edu/fetch`; empty for `/` or ``).
fn first_segment(path: &str) -> &str {
    path.trim_start_matches('/')
        .split('/')
        .next()
        .unwrap_or_default()
}

impl HostTable {
    /// The table of `routes`.
    pub fn new(mut routes: Vec<HostedRoute>) -> Self {
        routes.sort_by_key(|r| std::cmp::Reverse(r.place.prefix.len()));
        let mut by_segment: std::collections::HashMap<String, Vec<usize>> = Default::default();
        for (i, r) in routes.iter().enumerate() {
            by_segment
                .entry(first_segment(&r.place.prefix).to_owned())
                .or_default()
                .push(i);
        }
        Self { routes, by_segment }
    }

    /// This table with `route` added (replacing the entity's previous route).
    pub fn with(&self, route: HostedRoute) -> Self {
        let mut routes: Vec<HostedRoute> = self
            .routes
            .iter()
            .filter(|r| r.entity != route.entity)
            .cloned()
            .collect();
        routes.push(route);
        Self::new(routes)
    }

    /// This table without entity `entity`.
    pub fn without(&self, entity: EntityNo) -> Self {
        let routes = self
            .routes
            .iter()
            .filter(|r| r.entity != entity)
            .cloned()
            .collect();
        Self::new(routes)
    }

    /// Whether no entity but the default one is hosted.
    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }

    /// The route for a request to `host` and `path`: an entity whose path starts with the
    /// request's first segment, else one at the root of the request's host.
    fn route(&self, host: &str, path: &str) -> Option<&HostedRoute> {
        let candidates = |segment: &str| {
            self.by_segment
                .get(segment)
                .into_iter()
                .flatten()
                .filter_map(|&i| self.routes.get(i))
        };
        candidates(first_segment(path))
            .chain(candidates(""))
            .find(|r| r.place.owns(path) && r.serves_host(host))
    }
}

/// The table the public port reads, swapped whole when an entity is created or deleted.
#[derive(Debug, Clone)]
pub struct Hosts {
    table: Arc<ArcSwap<HostTable>>,
    /// Proxies whose `X-Forwarded-Host` names the host the client asked for.
    proxies: Arc<TrustedProxies>,
    /// Paths the port keeps for itself on every host (health checks, the Admin API): never
    /// an entity's, whatever its identifier.
    reserved: Arc<[String]>,
}

impl Hosts {
    /// An empty table; `proxies` as `server.trusted_proxies` says; `reserved`: the paths the
    /// port keeps for itself.
    pub fn new(proxies: TrustedProxies, reserved: &[&str]) -> Self {
        Self {
            table: Arc::new(ArcSwap::from_pointee(HostTable::default())),
            proxies: Arc::new(proxies),
            reserved: reserved.iter().map(|p| (*p).to_owned()).collect(),
        }
    }

    /// Changes the table: `f` gets the current one and returns the next.
    pub fn update(&self, f: impl Fn(&HostTable) -> HostTable) {
        self.table.rcu(|t| f(t));
    }

    /// The hosted entity `req` is for: its own front, and the URI it should get (the
    /// entity's path taken off); `None` for the default entity.
    pub(crate) fn route(
        &self,
        req: &Request,
        peer: Option<std::net::SocketAddr>,
    ) -> Option<(EntityNo, Front, Uri)> {
        let table = self.table.load();
        if table.is_empty() {
            return None;
        }
        let path = req.uri().path();
        if self.reserved.iter().any(|p| path.starts_with(p.as_str())) {
            return None;
        }
        let host = request_host(req, peer, &self.proxies)?;
        let route = table.route(&host, path)?;
        let uri = strip(req.uri(), route.place.prefix.len())?;
        Some((route.entity, route.front.clone(), uri))
    }
}

/// The host a request asked for: `X-Forwarded-Host` from a trusted proxy, else `Host`, else
/// the URI's authority (HTTP/2).
fn request_host(
    req: &Request,
    peer: Option<std::net::SocketAddr>,
    proxies: &TrustedProxies,
) -> Option<String> {
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
            return Some(last.to_owned());
        }
    }
    if let Some(h) = headers.get(header::HOST).and_then(|v| v.to_str().ok()) {
        return Some(h.to_owned());
    }
    req.uri().authority().map(|a| a.as_str().to_owned())
}

/// `uri` with the first `n` bytes of its path taken off (at least `/` stays).
fn strip(uri: &Uri, n: usize) -> Option<Uri> {
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

    fn route(no: i64, id: &str) -> HostedRoute {
        let front = Front::new(axum::Router::new());
        HostedRoute::new(EntityNo::new(no).unwrap(), id, front).unwrap()
    }

    #[test]
    fn an_identifier_at_a_host_root_takes_the_whole_host() {
        let t = HostTable::new(vec![
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
        let t = HostTable::new(vec![
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
    }

    #[test]
    fn hosts_split_with_their_ports() {
        assert_eq!(split_host("a.example:8080"), ("a.example", Some(8080)));
        assert_eq!(split_host("a.example"), ("a.example", None));
        assert_eq!(split_host("[::1]:9"), ("::1", Some(9)));
        assert_eq!(split_host("[::1]"), ("::1", None));
    }
}
