//! Hosted entities: one deployment serves several federation entities (a trust anchor, its
//! intermediates, a trust mark issuer, a test federation), each with its own keys, Entity
//! Configuration, endpoints, subordinates and statistics.
//!
//! An entity's state is stored under its number ([`EntityNo`], the `entities` row); the entity
//! configured in `entity_id` is [`EntityNo::DEFAULT`], so a single-entity deployment, and every
//! database made before entities were hosted, is entity 1 with nothing moved.

use std::fmt;

/// The number of a hosted entity: the `entities` row its state is stored under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EntityNo(i64);

impl EntityNo {
    /// The entity configured in `entity_id`: what the unprefixed Admin API paths and a
    /// single-entity deployment mean.
    pub const DEFAULT: Self = Self(1);

    /// A stored entity number. Numbers come from the database (or from a request path,
    /// checked against it before use), so any positive number is well-formed.
    pub fn new(n: i64) -> Option<Self> {
        (n > 0).then_some(Self(n))
    }

    /// The number, as the database stores it.
    pub fn get(self) -> i64 {
        self.0
    }

    /// Whether this is the entity configured in `entity_id`.
    pub fn is_default(self) -> bool {
        self == Self::DEFAULT
    }
}

impl fmt::Display for EntityNo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// What an administrator scoped to a hosted entity may do there. Administrators of the
/// deployment (users without a scope) may do everything everywhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// Reads everything of the entity, changes nothing.
    Viewer,
    /// Also changes its subordinates and trust marks (not its keys, endpoints, Entity
    /// Configuration or users).
    Operator,
    /// Changes everything of the entity.
    Admin,
}

impl Role {
    /// Every role, weakest first.
    pub const ALL: [Self; 3] = [Self::Viewer, Self::Operator, Self::Admin];

    /// The role's name as the Admin API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Viewer => "viewer",
            Self::Operator => "operator",
            Self::Admin => "admin",
        }
    }

    /// The role named `s`; `None` for an unknown name.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == s)
    }
}

/// Where a hosted entity is served on the public port, read from its identifier: its host,
/// its port (or the scheme's default) and its path without the trailing `/` (empty for the
/// root of the host).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// Host, lower case, without IPv6 brackets.
    pub host: String,
    /// Port, or the scheme's default.
    pub port: u16,
    /// Path without the trailing `/`: `/edu`, or empty for the host's root.
    pub prefix: String,
}

impl Placement {
    /// The placement of `entity_id`; an identifier that is no http(s) URL with a host, or
    /// has a query or fragment, is refused with the reason (as `entity_id` is at start-up).
    pub fn of(entity_id: &str) -> Result<Self, String> {
        let url = url::Url::parse(entity_id).map_err(|e| format!("not a URL: {e}"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err("must be an http(s) URL".into());
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err("must not have a query or fragment".into());
        }
        let host = url
            .host_str()
            .ok_or("must have a host")?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase();
        let port = url.port_or_known_default().ok_or("must have a port")?;
        Ok(Self {
            host,
            port,
            prefix: url.path().trim_end_matches('/').to_owned(),
        })
    }

    /// Whether `path` is this entity's path or below it, by whole segments (`/edu` owns
    /// `/edu/fetch`, not `/education`); the host's root owns every path.
    pub fn owns(&self, path: &str) -> bool {
        under(path, &self.prefix)
    }

    /// Whether both are on the same host and port.
    pub fn same_host(&self, other: &Self) -> bool {
        self.host == other.host && self.port == other.port
    }
}

/// Whether `path` is `prefix` or below it, by whole segments (an empty prefix, a host's root,
/// has every path under it).
pub fn under(path: &str, prefix: &str) -> bool {
    under_bytes(path.as_bytes(), prefix.as_bytes())
}

/// [`under`] of bytes (a prefix kept inline, as bytes).
pub fn under_bytes(path: &[u8], prefix: &[u8]) -> bool {
    path.strip_prefix(prefix)
        .is_some_and(|rest| rest.first().is_none_or(|b| *b == b'/'))
}

/// Whether one of two paths is the other or below it, by whole segments.
pub fn nested(a: &str, b: &str) -> bool {
    let (a, b) = (a.trim_end_matches('/'), b.trim_end_matches('/'));
    under(a, b) || under(b, a)
}

/// Why a hosted entity placed at `new` cannot be served beside the others, naming the one it
/// collides with; `None` when it can. The default entity answers at the root of every host:
/// its endpoint paths and the reserved paths (health checks, the Admin API, `/metrics`) are
/// taken on every host, and its own identifier cannot be hosted again. Two hosted entities on
/// one host may not nest (`/edu` and `/edu/fetch`): the inner one's paths would be the outer
/// one's endpoint paths.
pub fn collision<'a>(
    new: &Placement,
    default: &Placement,
    hosted: impl IntoIterator<Item = (&'a str, &'a Placement)>,
    default_paths: impl IntoIterator<Item = &'a str>,
    reserved: &[&str],
) -> Option<String> {
    if new.prefix.is_empty() {
        // The root of a host: every path of that host would be this entity's.
        if new.same_host(default) {
            return Some("the host's root is the default entity's".into());
        }
        for (id, other) in hosted {
            if other.same_host(new) {
                return Some(format!("the host is already served by hosted entity {id}"));
            }
        }
        return None;
    }
    for (id, other) in hosted {
        if other.same_host(new) && nested(&new.prefix, &other.prefix) {
            return Some(format!(
                "its path {} collides with hosted entity {id}",
                new.prefix
            ));
        }
    }
    for p in reserved {
        if nested(&new.prefix, p) {
            return Some(format!("its path {} is reserved for {p}", new.prefix));
        }
    }
    for p in default_paths {
        if nested(&new.prefix, p) {
            return Some(format!(
                "its path {} collides with the default entity's endpoint path {p}",
                new.prefix
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(id: &str) -> Placement {
        Placement::of(id).unwrap()
    }

    #[test]
    fn roles_are_ordered_and_named() {
        assert!(Role::Viewer < Role::Operator && Role::Operator < Role::Admin);
        for r in Role::ALL {
            assert_eq!(Role::parse(r.as_str()), Some(r));
        }
        assert_eq!(Role::parse("root"), None);
    }

    #[test]
    fn placements_are_read_from_identifiers() {
        assert_eq!(
            at("https://FED.example.org/edu/"),
            Placement {
                host: "fed.example.org".into(),
                port: 443,
                prefix: "/edu".into()
            }
        );
        assert_eq!(at("http://[::1]:8080/x").host, "::1");
        assert_eq!(at("http://127.0.0.1:9").prefix, "");
        assert!(Placement::of("ftp://x.example/a").is_err());
        assert!(Placement::of("https://x.example/a?b=c").is_err());
        assert!(Placement::of("https://x.example/a#b").is_err());
        assert!(Placement::of("not a url").is_err());
        assert!(at("https://x.example/edu").owns("/edu/fetch"));
        assert!(at("https://x.example/edu").owns("/edu"));
        assert!(!at("https://x.example/edu").owns("/education"));
        assert!(at("https://x.example").owns("/anything"));
    }

    #[test]
    fn colliding_placements_are_refused_naming_the_other() {
        let edu = at("https://fed.example.org/edu");
        let hosted = [("https://fed.example.org/edu", &edu)];
        let reserved = ["/api/v1/admin", "/healthz", "/.well-known"];
        let default = at("https://ta.example.org");
        let check = |id: &str| collision(&at(id), &default, hosted, ["/fetch", "/list"], &reserved);
        assert!(
            check("https://fed.example.org/edu/test")
                .unwrap()
                .contains("/edu")
        );
        assert!(check("https://fed.example.org/edu").is_some());
        assert!(
            check("https://fed.example.org/fetch")
                .unwrap()
                .contains("/fetch")
        );
        assert!(check("https://fed.example.org/fetch/x").is_some());
        assert!(
            check("https://fed.example.org/api")
                .unwrap()
                .contains("reserved")
        );
        assert!(check("https://fed.example.org/healthz").is_some());
        assert!(
            check("https://fed.example.org")
                .unwrap()
                .contains("hosted entity")
        );
        assert_eq!(check("https://fed.example.org/research"), None);
        assert_eq!(check("https://other.example.org/edu"), None);
        assert_eq!(check("https://other.example.org"), None);
        assert!(
            check("https://ta.example.org")
                .unwrap()
                .contains("default entity")
        );
        assert_eq!(check("https://ta.example.org/edu"), None);
        assert_eq!(check("https://fed.example.org:8443/edu"), None);
        assert_eq!(check("https://fed.example.org/healthzx"), None);
    }

    #[test]
    fn numbers_are_positive() {
        assert_eq!(EntityNo::new(1), Some(EntityNo::DEFAULT));
        assert_eq!(EntityNo::new(0), None);
        assert_eq!(EntityNo::new(-3), None);
        assert_eq!(EntityNo::new(7).map(EntityNo::get), Some(7));
        assert!(EntityNo::DEFAULT.is_default());
    }
}
