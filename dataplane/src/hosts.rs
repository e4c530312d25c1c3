//! Hosted entities on the public port: which entity a request is for.
//!
//! The entity configured in `entity_id` is served as it always was, at the root of every host.
//! Every other hosted entity is served where its identifier says: the Entity Configuration of
//! `https://fed.example.org/edu` at `/edu/.well-known/openid-federation` on requests for host
//! `fed.example.org`, its endpoints under `/edu`. [`Front`](crate::front::Front) asks the
//! table here first; a request it matches goes to that entity's own front (its data plane, its
//! caches) with the entity's path taken off, so the entity's routes are the same as the
//! default entity's. An empty table costs one atomic load per request.

use std::sync::{Arc, OnceLock};

use arc_swap::ArcSwap;
use axum::extract::Request;
use axum::http::{HeaderMap, Uri, header};
use pharos_shared::client_ip::TrustedProxies;
use pharos_shared::hosted::{EntityNo, Placement};
use pharos_shared::inline_path::InlinePath;
use pharos_shared::snapshot::SnapshotReader;
use pharos_shared::time::Clock;

use crate::cache_counters::CacheCounters;
use crate::front::Front;
use crate::stats::Served;
use crate::stats::metrics::{KnownSeries, RequestMetrics};

/// The future of an answer that knows which hosted entity gives it: the statistics file the
/// request under it. Read from the future rather than marked on the response, which would
/// cost an allocation of the response's extensions per request.
pub trait ServedBy {
    /// The hosted entity answering (none: the default one), and its series when known.
    fn served_by(&self) -> Served;
}

/// Where one hosted entity is served, and its front. Laid out in the order written
/// (`repr(C)`, from a cache line's start): what a ready answer reads (the entity, its kept
/// answers) first.
#[derive(Debug, Clone)]
#[repr(C, align(64))]
pub struct HostedRoute {
    /// The entity.
    pub entity: EntityNo,
    /// Where its signed Entity Configuration is kept, when its front gives ready answers.
    pub(crate) kept: Option<KeptAnswers>,
    /// Its front: its own router and ready answers.
    front: Front,
    /// Its host, port and path.
    place: Placement,
}

/// A hosted entity's publication point, the clock its answers are made at and the port's
/// cache counters: its Entity Configuration and its cached fetches are answered from the
/// point, without reaching its data plane (a cache miss per request for a random entity).
/// Kept only when its front gives ready answers on every path (no `foreign` prefixes).
#[derive(Debug, Clone)]
#[repr(C)]
pub(crate) struct KeptAnswers {
    /// What its Entity Configuration is answered from (copied into the table's segment
    /// index, see [`Slot`]).
    pub(crate) configuration: KeptConfiguration,
    pub(crate) caches: Arc<CacheCounters>,
    /// The series these answers count into, when the route knows the port's metrics.
    pub(crate) series: Option<ReadySeries>,
}

/// What a hosted entity's kept Entity Configuration is answered from: the entity, its
/// publication point, its clock and the series the answer counts into (56 bytes, one line of
/// a [`Slot`]).
#[derive(Debug, Clone)]
#[repr(C)]
pub(crate) struct KeptConfiguration {
    pub(crate) entity: EntityNo,
    pub(crate) reader: SnapshotReader,
    pub(crate) clock: Arc<dyn Clock>,
    /// Found on the first answer (see [`ReadySeries`]); `None` when the route does not count
    /// its answers.
    series: OnceLock<Option<KnownSeries>>,
}

impl KeptConfiguration {
    /// The series of the answer to `path` (the request's whole path), found through `ready`
    /// (the route's series) the first time.
    pub(crate) fn series<'r>(
        &self,
        path: &str,
        ready: impl FnOnce() -> Option<&'r ReadySeries>,
    ) -> Option<KnownSeries> {
        *self
            .series
            .get_or_init(|| ready().map(|r| r.found(self.entity, path)))
    }
}

/// The request metrics' series of a hosted entity's kept answers, found on their first
/// request and kept with the route (see [`crate::stats::metrics`]).
///
/// A series is that of the request's label, its normalised path. A kept answer's path is the
/// route's path followed by the rest it answers (the table matches the route's path byte for
/// byte), so the label of its Entity Configuration is the same on every request, and that of
/// its fetch as long as the rest is the one kept here (the endpoint may move: another path is
/// then looked up as any other).
#[derive(Debug, Clone)]
#[repr(C)]
pub(crate) struct ReadySeries {
    fetch: OnceLock<(InlinePath, KnownSeries)>,
    metrics: RequestMetrics,
}

impl ReadySeries {
    /// The series of `entity`'s fetch at `path` (the request's whole path), `rest` being what
    /// follows the entity's own path; `None` when the fetch kept is at another.
    pub(crate) fn fetch(&self, entity: EntityNo, path: &str, rest: &str) -> Option<KnownSeries> {
        let (at, series) = self.fetch.get_or_init(|| {
            (
                InlinePath::new(rest).unwrap_or_default(),
                self.found(entity, path),
            )
        });
        kept_at(at, *series, rest)
    }

    /// What [`Self::fetch`] answers, when it has been found before (else `None`): for
    /// reading the series early (see [`KnownSeries::touch`]) before the request is known to
    /// be a fetch.
    pub(crate) fn fetch_found(&self, rest: &str) -> Option<KnownSeries> {
        let (at, series) = self.fetch.get()?;
        kept_at(at, *series, rest)
    }

    fn found(&self, entity: EntityNo, path: &str) -> KnownSeries {
        let label = pharos_runtime::stats_ring::normalised(path);
        self.metrics.series(Some(entity), &label)
    }
}

/// `series` when the path it was kept for is `rest`.
fn kept_at(at: &InlinePath, series: KnownSeries, rest: &str) -> Option<KnownSeries> {
    at.is(rest).then_some(series)
}

impl HostedRoute {
    /// The route of the entity identified by `entity_id`, served by `front`; `None` when the
    /// identifier is no http(s) URL (the control plane refuses those before they are stored).
    pub fn new(entity: EntityNo, entity_id: &str, front: Front) -> Option<Self> {
        let place = Placement::of(entity_id).ok()?;
        let kept = front.ready_everywhere().map(|dp| KeptAnswers {
            configuration: KeptConfiguration {
                entity,
                reader: dp.reader().clone(),
                clock: dp.clock().clone(),
                series: OnceLock::new(),
            },
            caches: dp.caches.clone(),
            series: None,
        });
        Some(Self {
            entity,
            kept,
            front,
            place,
        })
    }

    /// This route, its kept answers counted in `metrics` (the port's, which the statistics
    /// count every other request in) through series it keeps.
    pub fn counted_in(mut self, metrics: &RequestMetrics) -> Self {
        if let Some(kept) = &mut self.kept {
            kept.series = Some(ReadySeries {
                fetch: OnceLock::new(),
                metrics: metrics.clone(),
            });
        }
        self
    }

    /// The `Host` values a client most likely sends for it, which the table compares byte for
    /// byte before [`Self::serves_host`]: `host:port`, and the bare host on the scheme's
    /// default port (else empty).
    fn usual_hosts(&self) -> (String, String) {
        let place = &self.place;
        let name = if place.host.contains(':') {
            format!("[{}]", place.host)
        } else {
            place.host.clone()
        };
        let with_port = format!("{name}:{}", place.port);
        let bare = if place.port == 80 || place.port == 443 {
            name
        } else {
            String::new()
        };
        (with_port, bare)
    }

    /// Whether a request for `host` (with its port, if any) is for this entity's host. A
    /// request without a port matches the identifier's default port. (The table compares
    /// the usual values first, from its packed names.)
    fn serves_host(&self, host: &str) -> bool {
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

/// What the table compares a request with for one entity, packed: its path and usual `Host`
/// values are ranges of the table's one `names` string, so that matching a request reads two
/// small contiguous arrays (about 40 bytes an entity) rather than following each entity's own
/// allocations. With a thousand entities and a random one per request, those were a cache
/// miss each: the compact form stays in a core's cache (BENCHMARKS.md, "Hosted entities").
#[derive(Debug, Clone, Copy)]
struct Matcher {
    /// Where its names start in `names`: the path, then the usual hosts.
    at: u32,
    /// Length of its path (`/edu`; 0 at the host's root).
    prefix: u16,
    /// Length of its first usual `Host` value (`host:port`).
    host: u16,
    /// Length of the second (the bare host on the scheme's default port; 0 if none).
    bare: u16,
    /// Whether its path comes near one the port keeps for itself (see [`HostedRoute::near`]):
    /// only then is the request's path compared with those.
    near_reserved: bool,
    /// Whether its names fit the packed form (lengths within `u16`, offset within `u32`);
    /// if not, the request is compared with the route's own fields.
    packed: bool,
}

impl Matcher {
    /// Its path and usual `Host` values in the table's packed `names`, when packed there
    /// whole.
    fn names<'n>(&self, names: &'n str) -> Option<(&'n str, &'n str, &'n str)> {
        if !self.packed {
            return None;
        }
        let at = self.at as usize;
        let (prefix, host, bare) = (
            usize::from(self.prefix),
            usize::from(self.host),
            usize::from(self.bare),
        );
        Some((
            names.get(at..at + prefix)?,
            names.get(at + prefix..at + prefix + host)?,
            names.get(at + prefix + host..at + prefix + host + bare)?,
        ))
    }
}

/// Bytes of a group's first route's names (its path, then its first usual `Host` value) a
/// [`Slot`] keeps inline: what fills the slot's line.
const INLINE_NAMES: usize = 43;

/// One group of routes in the table's segment index: an open-addressed array (linear
/// probing, at most half full) of two cache lines per slot. With a thousand entities and a
/// random one per request, the hash map this replaces cost its control bytes, its bucket, the
/// group's matcher, its names and the route, a cache miss each and each waiting for the one
/// before. A slot holds the group's range, the first route's names and a copy of what its
/// Entity Configuration is answered from, so a request for an entity whose path is the only
/// one with its first segment (the usual case: hosted entities of one host may not nest) is
/// matched and answered from one pair of adjacent lines, then the entity's publication point.
#[derive(Debug, Clone)]
#[repr(C, align(128))]
struct Slot {
    /// The hash of the group's first segment.
    hash: u64,
    /// The group's range of routes (`count` 0: an empty slot).
    start: u32,
    count: u32,
    /// Lengths of the first route's path and first usual `Host` value in `names`, and of the
    /// bare host (a prefix of that value; 0 if none).
    prefix: u8,
    host: u8,
    bare: u8,
    /// Whether `names` holds the first route's names (they fit), and whether its path comes
    /// near one the port keeps for itself (see [`HostedRoute::near`]).
    inline: bool,
    near_reserved: bool,
    names: [u8; INLINE_NAMES],
    /// The first route's kept Entity Configuration, when its names are inline (the second
    /// line).
    first: Option<KeptConfiguration>,
}

const _: () = assert!(std::mem::offset_of!(Slot, first) == 64);
const _: () = assert!(std::mem::size_of::<Slot>() == 128);

impl Slot {
    const EMPTY: Self = Self {
        hash: 0,
        start: 0,
        count: 0,
        prefix: 0,
        host: 0,
        bare: 0,
        inline: false,
        near_reserved: false,
        names: [0; INLINE_NAMES],
        first: None,
    };

    /// The slot of the group `start..start + count`, whose first route is `route` (matched
    /// by `m`, its names packed in `names`): those names inline when they fit, and then a
    /// copy of what its kept Entity Configuration is answered from.
    fn of(
        hash: u64,
        (start, count): (u32, u32),
        (m, names): (&Matcher, &str),
        route: &HostedRoute,
    ) -> Self {
        let mut slot = Self {
            hash,
            start,
            count,
            near_reserved: m.near_reserved,
            ..Self::EMPTY
        };
        let Some((prefix, host, bare)) = m.names(names) else {
            return slot;
        };
        let fits = prefix.len() + host.len() <= INLINE_NAMES && host.starts_with(bare);
        if let (true, Ok(p), Ok(h), Ok(b)) = (
            fits,
            u8::try_from(prefix.len()),
            u8::try_from(host.len()),
            u8::try_from(bare.len()),
        ) {
            let (path_at, host_at) = slot.names.split_at_mut(prefix.len());
            path_at.copy_from_slice(prefix.as_bytes());
            if let Some(to) = host_at.get_mut(..host.len()) {
                to.copy_from_slice(host.as_bytes());
                (slot.prefix, slot.host, slot.bare, slot.inline) = (p, h, b, true);
                slot.first = route.kept.as_ref().map(|k| k.configuration.clone());
            }
        }
        slot
    }

    /// Whether `path` is the group's first route's path or below it, and whether `host` is
    /// one of its usual `Host` values, by the names kept here; `None` when they are not kept
    /// (the route's own are compared then).
    fn first_names(&self, host: &str, path: &str) -> Option<(bool, bool)> {
        if !self.inline {
            return None;
        }
        let (prefix, rest) = self.names.split_at(usize::from(self.prefix));
        let usual = rest.get(..usize::from(self.host))?;
        let under = pharos_shared::hosted::under_bytes(path.as_bytes(), prefix);
        let host = host.as_bytes();
        let usual =
            host == usual || (self.bare != 0 && usual.get(..usize::from(self.bare)) == Some(host));
        Some((under, usual))
    }
}

/// Every hosted entity but the default one, grouped by the first segment of their path and
/// longest path first within a group (so `/a/b` is tried before `/a`).
#[derive(Debug, Clone, Default)]
pub struct HostTable {
    /// The routes, in the order of `matchers`, held in the table itself: a matched route is
    /// read where the table keeps it, not through a pointer of its own (one cache miss less
    /// per request for a random entity).
    routes: Vec<HostedRoute>,
    /// One per route, same order.
    matchers: Vec<Matcher>,
    /// The paths and usual hosts of every route, one after the other.
    names: String,
    /// The groups of routes by the hash of their path's first segment (`edu` for
    /// `/edu/test`): a request looks at the entities of its own first segment only (and of
    /// any other segment with the same hash, told apart by the path comparison), whatever the
    /// number of entities hosted. See [`Slot`].
    slots: Box<[Slot]>,
    /// The range of the entities at the root of their host (they sort first).
    at_root: (u32, u32),
    /// The paths the port keeps for itself.
    reserved: Arc<[String]>,
}

/// The first segment of `path` (`edu` for `/edu/fetch`; empty for `/` or ``).
fn first_segment(path: &str) -> &str {
    let path = path.strip_prefix('/').unwrap_or(path);
    path.split_once('/').map_or(path, |(first, _)| first)
}

/// The table's hash of a first segment (FxHash: the segments are the operator's, and a
/// request's segment can only collide into a group, never past the path comparison).
fn segment_hash(segment: &str) -> u64 {
    use std::hash::BuildHasher as _;
    rustc_hash::FxBuildHasher.hash_one(segment)
}

impl HostTable {
    /// The table of `routes`, beside the port's `reserved` paths.
    fn of(mut routes: Vec<HostedRoute>, reserved: Arc<[String]>) -> Self {
        // At the root first (empty segment), then by segment hash and segment, longest first.
        routes.sort_by_cached_key(|r| {
            let first = first_segment(&r.place.prefix);
            (
                !first.is_empty(),
                segment_hash(first),
                first.to_owned(),
                std::cmp::Reverse(r.place.prefix.len()),
            )
        });
        let mut names = String::new();
        let mut matchers = Vec::with_capacity(routes.len());
        // (hash, (start, count)) of each first segment's group, in order: the sort keeps a
        // group's routes together.
        let mut groups: Vec<(u64, (u32, u32))> = Vec::new();
        let mut at_root = (0, 0);
        for (i, r) in routes.iter().enumerate() {
            let (host, bare) = r.usual_hosts();
            let (host, bare) = (host.as_str(), bare.as_str());
            let at = u32::try_from(names.len()).ok();
            let len = |s: &str| u16::try_from(s.len()).ok();
            let matcher = match (at, len(&r.place.prefix), len(host), len(bare)) {
                (Some(at), Some(prefix), Some(host_len), Some(bare_len)) => {
                    names.push_str(&r.place.prefix);
                    names.push_str(host);
                    names.push_str(bare);
                    Matcher {
                        at,
                        prefix,
                        host: host_len,
                        bare: bare_len,
                        near_reserved: false,
                        packed: true,
                    }
                }
                _ => Matcher {
                    at: 0,
                    prefix: 0,
                    host: 0,
                    bare: 0,
                    near_reserved: false,
                    packed: false,
                },
            };
            matchers.push(Matcher {
                near_reserved: r.near(&reserved),
                ..matcher
            });
            let i = u32::try_from(i).unwrap_or(u32::MAX);
            let group = match first_segment(&r.place.prefix) {
                "" => &mut at_root,
                first => {
                    let hash = segment_hash(first);
                    match groups.last_mut() {
                        Some((h, group)) if *h == hash => group,
                        _ => &mut groups.push_mut((hash, (i, 0))).1,
                    }
                }
            };
            if group.1 == 0 {
                group.0 = i;
            }
            group.1 += 1;
        }
        let slots = Self::slots(&routes, (&matchers, &names), &groups);
        Self {
            routes,
            matchers,
            names,
            slots,
            at_root,
            reserved,
        }
    }

    /// The segment index of `groups` (see [`Slot`]): a power of two of slots, at least twice
    /// as many as groups.
    fn slots(
        routes: &[HostedRoute],
        (matchers, names): (&[Matcher], &str),
        groups: &[(u64, (u32, u32))],
    ) -> Box<[Slot]> {
        if groups.is_empty() {
            return Box::default();
        }
        let len = (groups.len() * 2).next_power_of_two();
        let mut slots = vec![Slot::EMPTY; len];
        for &(hash, range) in groups {
            let first = range.0 as usize;
            let (Some(route), Some(m)) = (routes.get(first), matchers.get(first)) else {
                continue;
            };
            let slot = Slot::of(hash, range, (m, names), route);
            let mut at = hash as usize & (len - 1);
            while slots.get(at).is_some_and(|s| s.count != 0) {
                at = (at + 1) & (len - 1);
            }
            if let Some(free) = slots.get_mut(at) {
                *free = slot;
            }
        }
        slots.into_boxed_slice()
    }

    /// This table with `route` added (replacing the entity's previous route).
    pub fn with(&self, route: HostedRoute) -> Self {
        self.with_all(vec![route])
    }

    /// This table with `routes` added, each in place of any route of the same entity: made
    /// once for all of them (a thousand entities started one table at a time copied every
    /// route a thousand times).
    pub fn with_all(&self, routes: Vec<HostedRoute>) -> Self {
        let mut all: Vec<HostedRoute> = self
            .routes
            .iter()
            .filter(|r| !routes.iter().any(|n| n.entity == r.entity))
            .cloned()
            .collect();
        all.extend(routes);
        Self::of(all, self.reserved.clone())
    }

    /// This table without entity `entity`.
    pub fn without(&self, entity: EntityNo) -> Self {
        let routes = self
            .routes
            .iter()
            .filter(|r| r.entity != entity)
            .cloned()
            .collect();
        Self::of(routes, self.reserved.clone())
    }

    /// Whether no entity but the default one is hosted.
    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }

    /// The route for a request to `host` and `path`: an entity whose path starts with the
    /// request's first segment, else one at the root of the request's host; never one for a
    /// path the port keeps for itself. With the route, the length of its path (from the
    /// slot or the packed names: the route itself is not read for it).
    fn route(&self, host: &str, path: &str) -> Option<(Found<'_>, usize)> {
        let first = first_segment(path);
        let mut group = 0..0;
        if let Some(slot) = (!first.is_empty())
            .then(|| self.slot(segment_hash(first)))
            .flatten()
        {
            let start = slot.start as usize;
            let slot_prefix = slot.prefix;
            group = start..start + slot.count as usize;
            // The first route by the names in the slot, when it keeps them.
            if let Some((under, usual)) = slot.first_names(host, path) {
                group.start += 1;
                if under {
                    match self.accept(start, host, path, usual, slot.near_reserved) {
                        Candidate::Not => {}
                        Candidate::Refused => return None,
                        Candidate::Is(route) => {
                            let slot = slot.first.as_ref();
                            return Some((Found { route, slot }, usize::from(slot_prefix)));
                        }
                    }
                }
            }
        }
        let at_root = self.at_root.0 as usize..(self.at_root.0 + self.at_root.1) as usize;
        for i in group.chain(at_root) {
            let Some(m) = self.matchers.get(i) else {
                continue;
            };
            let packed = m.names(&self.names);
            // A name too long to pack (never an identifier in practice) is compared from the
            // route itself.
            let prefix = match (packed, self.routes.get(i)) {
                (Some((p, _, _)), _) => p,
                (None, Some(route)) => route.place.prefix.as_str(),
                (None, None) => continue,
            };
            if !pharos_shared::hosted::under(path, prefix) {
                continue;
            }
            let usual = packed.is_some_and(|(_, h, b)| h == host || (!b.is_empty() && b == host));
            match self.accept(i, host, path, usual, m.near_reserved) {
                Candidate::Not => {}
                Candidate::Refused => return None,
                Candidate::Is(route) => return Some((Found { route, slot: None }, prefix.len())),
            }
        }
        None
    }

    /// Route `i`, whose path `path` is under, for a request to `host` (`usual`: one of its
    /// usual `Host` values, known without reading the route).
    fn accept(
        &self,
        i: usize,
        host: &str,
        path: &str,
        usual: bool,
        near_reserved: bool,
    ) -> Candidate<'_> {
        let Some(route) = self.routes.get(i) else {
            return Candidate::Not;
        };
        if !usual && !route.serves_host(host) {
            return Candidate::Not;
        }
        if near_reserved && self.reserved.iter().any(|p| path.starts_with(p.as_str())) {
            return Candidate::Refused;
        }
        Candidate::Is(route)
    }

    /// The slot of the group whose first segment hashes to `hash`, if there is one.
    fn slot(&self, hash: u64) -> Option<&Slot> {
        let mask = self.slots.len().checked_sub(1)?;
        // At most half full: an empty slot ends every probe.
        let mut at = hash as usize & mask;
        loop {
            let slot = self.slots.get(at)?;
            if slot.count == 0 {
                return None;
            }
            if slot.hash == hash {
                return Some(slot);
            }
            at = (at + 1) & mask;
        }
    }
}

/// A request's hosted entity as the table found it: its route, and the copy of its kept
/// Entity Configuration in the slot that matched it, if one did (read instead of the
/// route's, see [`Slot`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Found<'t> {
    pub(crate) route: &'t HostedRoute,
    slot: Option<&'t KeptConfiguration>,
}

impl<'t> Found<'t> {
    /// What the entity's kept Entity Configuration is answered from, if it keeps one.
    pub(crate) fn configuration(&self) -> Option<&'t KeptConfiguration> {
        self.slot
            .or_else(|| self.route.kept.as_ref().map(|k| &k.configuration))
    }

    /// The entity.
    pub(crate) fn entity(&self) -> EntityNo {
        self.slot.map_or(self.route.entity, |k| k.entity)
    }
}

/// What a request makes of one route (see [`HostTable::accept`]).
enum Candidate<'t> {
    /// Not its route.
    Not,
    /// Its route's path, but one the port keeps for itself: no entity's.
    Refused,
    /// Its route.
    Is(&'t HostedRoute),
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

    /// What the hosted entity `req` is for makes of it (`f` gets the entity's route and the
    /// rest of the path, with the entity's own path taken off); `None` for the default entity.
    /// The request is not changed, and the route is lent, not cloned: a ready answer touches
    /// the route and the entity's ready data only, no reference count of the entity's (with a
    /// random entity per request those are cache misses, and atomic ones).
    pub(crate) fn with_route<R>(
        &self,
        req: &Request,
        peer: Option<std::net::SocketAddr>,
        f: impl FnOnce(Found<'_>, &str) -> R,
    ) -> Option<R> {
        let table = self.table.load();
        if table.is_empty() {
            return None;
        }
        let host = request_host(req, peer, &self.proxies)?;
        let path = req.uri().path();
        let (found, prefix) = table.route(host, path)?;
        Some(f(found, rest_of(path, prefix)))
    }
}

impl HostedRoute {
    /// The entity's front (its router and ready answers).
    pub(crate) fn front(&self) -> &Front {
        &self.front
    }

    /// The length of the entity's path, a prefix of the request's.
    pub(crate) fn prefix_len(&self) -> usize {
        self.place.prefix.len()
    }
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
    fn routes_added_together_replace_those_of_their_entities() {
        let t = table(vec![
            route(2, "https://fed.example.org/edu"),
            route(3, "https://fed.example.org/old"),
        ])
        .with_all(vec![
            route(3, "https://fed.example.org/new"),
            route(4, "https://ta2.example.org/"),
        ]);
        let at = |host: &str, path: &str| t.route(host, path).map(|(f, _)| f.entity().get());
        assert_eq!(at("fed.example.org", "/edu/fetch"), Some(2));
        assert_eq!(at("fed.example.org", "/new/fetch"), Some(3));
        assert_eq!(at("fed.example.org", "/old/fetch"), None);
        assert_eq!(at("ta2.example.org", "/fetch"), Some(4));
        assert_eq!(t.routes.len(), 3);
    }

    #[test]
    fn an_identifier_at_a_host_root_takes_the_whole_host() {
        let t = table(vec![
            route(2, "https://fed.example.org/edu"),
            route(3, "https://ta2.example.org/"),
        ]);
        let at = |host: &str, path: &str| t.route(host, path).map(|(f, _)| f.entity().get());
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
        let at = |host: &str, path: &str| t.route(host, path).map(|(f, _)| f.entity().get());
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
        let at = |host: &str, path: &str| t.route(host, path).map(|(f, _)| f.entity().get());
        assert_eq!(at("root.example.org", "/healthz"), None);
        assert_eq!(at("root.example.org", "/healthz/x"), None);
        assert_eq!(at("root.example.org", "/fetch"), Some(2));
        assert_eq!(at("fed.example.org", "/api/v1/admin/users"), None);
        assert_eq!(at("fed.example.org", "/api/fetch"), Some(4));
        assert_eq!(at("fed.example.org", "/h/fetch"), Some(3));
        let near = |no: i64| {
            let i = t.routes.iter().position(|r| r.entity.get() == no).unwrap();
            t.matchers[i].near_reserved
        };
        assert!(near(2) && near(4));
        assert!(!near(3), "/h does not meet /healthz");
    }

    #[test]
    fn a_thousand_entities_each_get_their_own_requests() {
        let mut routes: Vec<HostedRoute> = (0..1000)
            .map(|i| route(i + 2, &format!("http://127.0.0.1:8080/e{i:04}")))
            .collect();
        // Nested under one of them, and one at the root of another host.
        routes.push(route(2000, "http://127.0.0.1:8080/e0007/test"));
        routes.push(route(2001, "https://root.example.org"));
        let t = table(routes);
        let at = |host: &str, path: &str| t.route(host, path).map(|(f, _)| f.entity().get());
        for i in 0..1000 {
            assert_eq!(
                at("127.0.0.1:8080", &format!("/e{i:04}/fetch")),
                Some(i + 2)
            );
        }
        assert_eq!(at("127.0.0.1:8080", "/e0007/test/fetch"), Some(2000));
        assert_eq!(at("127.0.0.1:8080", "/e0007/tes"), Some(9));
        assert_eq!(at("127.0.0.1:8080", "/e1000/fetch"), None);
        assert_eq!(at("127.0.0.1:8081", "/e0001/fetch"), None);
        assert_eq!(at("root.example.org", "/e0001/fetch"), Some(2001));
        assert_eq!(at("ROOT.example.org:443", "/"), Some(2001));
        let t = t.without(EntityNo::new(9).unwrap());
        assert_eq!(
            t.route("127.0.0.1:8080", "/e0007/fetch")
                .map(|(f, _)| f.entity().get()),
            None
        );
        assert_eq!(
            t.route("127.0.0.1:8080", "/e0007/test/x")
                .map(|(f, _)| f.entity().get()),
            Some(2000)
        );
    }

    #[test]
    fn a_name_too_long_to_pack_is_still_routed_by_its_own_fields() {
        let long = "a".repeat(70_000);
        let t = table(vec![
            route(2, &format!("https://fed.example.org/{long}")),
            route(3, "https://fed.example.org/edu"),
        ]);
        let at = |host: &str, path: &str| t.route(host, path).map(|(f, _)| f.entity().get());
        assert_eq!(at("fed.example.org", &format!("/{long}/fetch")), Some(2));
        assert_eq!(
            at("fed.example.org", &format!("/{}/fetch", &long[1..])),
            None
        );
        assert_eq!(at("fed.example.org", "/edu/fetch"), Some(3));
        assert_eq!(at("other.example.org", &format!("/{long}")), None);
        // The length of the path to take off, packed or not.
        let len = |path: &str| t.route("fed.example.org", path).map(|(_, n)| n);
        assert_eq!(len(&format!("/{long}/fetch")), Some(long.len() + 1));
        assert_eq!(len("/edu/fetch"), Some(4));
    }

    #[test]
    fn a_segment_shared_by_two_hosts_and_names_too_long_to_keep_inline_route_alike() {
        let long_host = format!("{}.example.org", "h".repeat(40));
        let t = table(vec![
            route(2, "https://a.example.org/edu"),
            route(3, "https://b.example.org/edu"),
            route(4, &format!("https://{long_host}/lab")),
        ]);
        let at = |host: &str, path: &str| t.route(host, path).map(|(f, _)| f.entity().get());
        for _ in 0..2 {
            assert_eq!(at("a.example.org", "/edu/fetch"), Some(2));
            assert_eq!(at("b.example.org", "/edu/fetch"), Some(3));
            assert_eq!(at("B.example.org:443", "/edu"), Some(3));
            assert_eq!(at("c.example.org", "/edu/fetch"), None);
        }
        assert_eq!(at(&long_host, "/lab/fetch"), Some(4));
        assert_eq!(at(&format!("{long_host}:443"), "/lab/fetch"), Some(4));
        assert_eq!(at(&long_host, "/labs"), None);
        // The one group of /edu, its first route's names kept in its slot; /lab's are not.
        let slots: Vec<&Slot> = t.slots.iter().filter(|s| s.count != 0).collect();
        assert_eq!(slots.len(), 2);
        assert!(slots.iter().any(|s| s.count == 2 && s.inline));
        assert!(slots.iter().any(|s| s.count == 1 && !s.inline));
    }

    #[test]
    fn every_slot_of_a_thousand_entities_keeps_its_names_and_probes_end() {
        let routes: Vec<HostedRoute> = (0..1000)
            .map(|i| route(i + 2, &format!("http://127.0.0.1:8080/e{i:04}")))
            .collect();
        let t = table(routes);
        let used = t.slots.iter().filter(|s| s.count != 0).count();
        assert_eq!(used, 1000);
        assert!(t.slots.len() >= 2 * used && t.slots.len().is_power_of_two());
        assert!(t.slots.iter().all(|s| s.count == 0 || s.inline));
        // A segment no entity has ends at an empty slot.
        assert!(t.route("127.0.0.1:8080", "/nobody/fetch").is_none());
    }

    #[test]
    fn hosts_split_with_their_ports() {
        assert_eq!(split_host("a.example:8080"), ("a.example", Some(8080)));
        assert_eq!(split_host("a.example"), ("a.example", None));
        assert_eq!(split_host("[::1]:9"), ("::1", Some(9)));
        assert_eq!(split_host("[::1]"), ("::1", None));
    }
}
