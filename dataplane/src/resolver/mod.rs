//! The resolver: trust chains resolved through two cache layers that are never cold for long.
//!
//! - [`statements`]: fetched statements, coalesced per URL, served within the grace period
//!   while one background refresh runs.
//! - Resolutions (this module): a validated chain plus its verified Trust Marks, keyed by
//!   subject, anchors (with their pinned keys) and Entity Types; same grace rule, same
//!   coalescing, so concurrent cold requests for one subject resolve it once.
//! - [`signed`]: signed resolve responses, per resolution, signing key and audience.
//! - [`front`]: finished anonymous responses by raw query, in front of all of the above.
//! - [`proactive`] and [`store`]: the proactive resolver and its response files.
//!
//! The resolver does network and file I/O only; it never touches the database.

pub mod front;
pub mod mark_status;
pub mod proactive;
pub mod service;
pub mod signed;
pub mod statements;
pub mod store;

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use moka::future::Cache;
use pharos_shared::chain::{
    self, AnchorSpec, DEFAULT_MAX_DEPTH, Fetcher, Freshness, GraceRule, ResolveRequest,
    ResolvedChain, TrustMarkStatusCheck,
};
use pharos_shared::endpoint::{AnchorRule, EndpointConfig, EndpointType, ResolveConfig};
use pharos_shared::snapshot::Snapshot;
use pharos_shared::trust_mark::VerifiedTrustMark;
use pharos_shared::trust_mark_issuer_keys::{self, IssuerKeys};
use pharos_shared::{Error, Result};

use statements::{CachedFetcher, StatementCache};

/// Upper bound of the resolutions cache, in bytes (see [`Resolution::weight`]). A bound on
/// entries alone let a client that can make many distinct valid chains (wildcard DNS under
/// an anchor, `entity_type` variations) hold up to 100,000 chains of up to 1 MiB each.
const MAX_RESOLUTION_BYTES: u64 = 256 * 1024 * 1024;

/// Failed resolutions remembered at most (each lives seconds; the bound is for floods).
const MAX_FAILURES: u64 = 10_000;

/// What one resolve request asks for.
#[derive(Clone, Debug, PartialEq)]
pub struct Query {
    /// `sub`.
    pub subject: String,
    /// The acceptable anchors, in request order, with pinned keys when the repository has them.
    pub anchors: Vec<AnchorSpec>,
    /// `entity_type`, sorted and deduplicated (the filter is a set).
    pub entity_types: Vec<String>,
    /// The snapshot the request is answered in (not part of the key).
    pub local: Local,
}

/// What the caller's snapshot adds to a query. Statements we issued ourselves (our Entity
/// Configuration, our Subordinate Statements with our policies) are only as current as the
/// snapshot that signed them: a cached statement of ours, or a resolution or failure that used
/// one, from another snapshot generation is not served, so an operator's correction applies at
/// once. Remote statements keep their lifetimes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Local {
    /// Our entity identifier (empty: none of the statements is taken as ours).
    pub entity_id: Arc<str>,
    /// The snapshot generation.
    pub generation: u64,
    /// Seconds a failed resolution is answered from the cache (0: not cached).
    pub error_ttl: i64,
}

impl Local {
    /// The local side of `snap`, with the failure lifetime of the resolve configuration `cfg`.
    pub fn of(snap: &Snapshot, cfg: &ResolveConfig) -> Self {
        Self {
            entity_id: snap.entity_id.clone(),
            generation: snap.generation,
            error_ttl: i64::try_from(cfg.error_cache_seconds).unwrap_or(i64::MAX),
        }
    }
}

impl Query {
    /// The cache key: every input that changes the answer. Pinned keys and the interoperation
    /// rules enter as a hash, so a key rollover at an anchor, or a change of its
    /// `anchor_ec_constraints`, starts a new entry instead of reusing a chain checked under
    /// the old ones.
    pub fn key(&self) -> String {
        let mut k = self.subject.clone();
        for a in &self.anchors {
            let mut h = DefaultHasher::new();
            serde_json::to_string(&a.jwks)
                .unwrap_or_default()
                .hash(&mut h);
            a.interop.hash(&mut h);
            a.trust_mark_issuer_self_signed.hash(&mut h);
            a.trust_mark_status.hash(&mut h);
            k.push_str(&format!("\n{}#{:x}", a.entity_id, h.finish()));
        }
        // The count first: no filter (`[]`) and a filter no type matches (`[""]`) differ.
        k.push_str(&format!("\n{}:", self.entity_types.len()));
        k.push_str(&self.entity_types.join(" "));
        k
    }
}

/// A resolved chain and the Trust Marks verified against its anchor.
#[derive(Debug)]
pub struct Resolution {
    /// The chain, resolved metadata and both ends' claims.
    pub chain: ResolvedChain,
    /// Trust Marks of the subject that the anchor admits and that verified.
    pub marks: Vec<VerifiedTrustMark>,
    /// When this resolution was computed.
    pub computed_at: i64,
    /// When its Trust Marks' statuses, asked of their issuers, are to be asked again: the
    /// resolution is recomputed then (`None`: not asked).
    pub recheck_at: Option<i64>,
    /// The snapshot generation it was computed in, when it used a statement of ours.
    generation: Option<u64>,
    refreshing: AtomicBool,
    /// Its weight in the cache, computed once (see [`Resolution::weight`]).
    bytes: u32,
}

impl Resolution {
    /// A resolution computed at `computed_at`, weighed once.
    pub fn new(chain: ResolvedChain, marks: Vec<VerifiedTrustMark>, computed_at: i64) -> Self {
        use json_len::JsonLen;
        let bytes = chain.trust_anchor.len()
            + chain.chain.iter().map(String::len).sum::<usize>()
            + chain.metadata.json_len()
            + chain.subject_claims.json_len()
            + chain.anchor_claims.json_len()
            + marks
                .iter()
                .map(|m| m.trust_mark.len() + m.trust_mark_type.len())
                .sum::<usize>()
            + 256;
        Self {
            chain,
            marks,
            computed_at,
            recheck_at: None,
            generation: None,
            refreshing: AtomicBool::new(false),
            bytes: u32::try_from(bytes).unwrap_or(u32::MAX),
        }
    }

    /// Approximate bytes held: the chain's statements, the JSON text of its decoded claims and
    /// metadata, the Trust Marks and a fixed overhead. Parsed JSON takes more memory than its
    /// text, so the cache's byte cap is a bound on text, not an exact allocator figure.
    pub fn weight(&self) -> u32 {
        self.bytes
    }

    /// The response's `exp` (chain and Trust Marks).
    pub fn exp(&self) -> i64 {
        chain::response_exp(&self.chain, &self.marks)
    }
}

/// A failed resolution, answered from the cache for a short while.
#[derive(Debug)]
struct Failed {
    error: Error,
    until: i64,
    generation: u64,
}

/// Resolutions and the statement cache beneath them.
#[derive(Debug)]
pub struct Resolver<F> {
    statements: StatementCache<F>,
    resolutions: Cache<String, Arc<Resolution>>,
    /// Failed resolutions by query key, each until its `until` (see [`Local::error_ttl`]).
    failures: Cache<String, Arc<Failed>>,
    /// Signed responses (see [`signed`]).
    pub signed: signed::SignedCache,
    /// Trust Mark statuses asked of their issuers (see [`mark_status`]).
    mark_status: mark_status::StatusCache,
}

impl<F: Fetcher + 'static> Resolver<F> {
    /// A resolver fetching through `upstream`.
    pub fn new(upstream: Arc<F>) -> Arc<Self> {
        Arc::new(Self {
            statements: StatementCache::new(upstream),
            resolutions: resolutions_cache(MAX_RESOLUTION_BYTES),
            failures: Cache::builder().max_capacity(MAX_FAILURES).build(),
            signed: signed::SignedCache::new(),
            mark_status: mark_status::StatusCache::default(),
        })
    }

    /// The Entity Configuration of `entity_id` through the statement cache (the same copy a
    /// resolution would use), for checks that must come before a whole resolution.
    pub async fn entity_configuration(
        &self,
        entity_id: &str,
        rule: GraceRule,
        now: i64,
        local: &Local,
    ) -> Result<String> {
        self.statements
            .at(rule, now, local)
            .entity_configuration(entity_id)
            .await
    }

    /// Forgets every cached statement, resolution and failure, or those about `sub` (its
    /// resolutions, its Entity Configuration and the Subordinate Statements about it).
    pub async fn flush(&self, sub: Option<&str>) {
        self.statements.flush(sub).await;
        let Some(sub) = sub else {
            self.resolutions.invalidate_all();
            self.failures.invalidate_all();
            return;
        };
        let prefix = format!("{sub}\n");
        let keys: Vec<Arc<String>> = self
            .resolutions
            .iter()
            .map(|(k, _)| k)
            .chain(self.failures.iter().map(|(k, _)| k))
            .filter(|k| k.starts_with(&prefix))
            .collect();
        for k in keys {
            self.resolutions.invalidate(k.as_str()).await;
            self.failures.invalidate(k.as_str()).await;
        }
    }

    /// The resolution of `q` at `now`: cached, refreshed in the background within grace, or
    /// computed (once for all concurrent callers) when absent or expired.
    pub async fn resolve(
        self: &Arc<Self>,
        q: &Query,
        rule: GraceRule,
        now: i64,
    ) -> Result<Arc<Resolution>> {
        let key = q.key();
        let local = &q.local;
        if let Some(f) = self.failures.get(&key).await {
            if now < f.until && f.generation == local.generation {
                return Err(clone_error(&f.error));
            }
            self.failures.invalidate(&key).await;
        }
        if let Some(hit) = self.resolutions.get(&key).await {
            let judged = match (hit.generation, hit.recheck_at) {
                (Some(g), _) if g != local.generation => Freshness::Expired,
                (_, Some(at)) if now >= at => Freshness::Expired,
                _ => rule.judge(hit.computed_at, hit.exp(), now),
            };
            match judged {
                Freshness::Fresh => return Ok(hit),
                Freshness::Refresh => {
                    if !hit.refreshing.swap(true, Ordering::SeqCst) {
                        self.refresh_in_background(key, q.clone(), rule, now, hit.clone());
                    }
                    return Ok(hit);
                }
                Freshness::Expired => self.resolutions.invalidate(&key).await,
            }
        }
        let r = self
            .resolutions
            .try_get_with(key.clone(), self.compute_afresh_on_failure(q, rule, now))
            .await
            .map_err(|e| clone_error(&e));
        if let Err(e) = &r
            && local.error_ttl > 0
        {
            let failed = Failed {
                error: clone_error(e),
                until: now.saturating_add(local.error_ttl),
                generation: local.generation,
            };
            self.failures.insert(key, Arc::new(failed)).await;
        }
        r
    }

    /// [`Self::compute`]; when that fails with statements from the cache, once more with
    /// those fetched anew: a cached statement may be what was wrong, and corrected upstream
    /// since (an intermediate's policy fixed after a conflict).
    async fn compute_afresh_on_failure(
        &self,
        q: &Query,
        rule: GraceRule,
        now: i64,
    ) -> Result<Arc<Resolution>> {
        match self.compute_with_hits(q, rule, now).await {
            (Err(_), hits) if !hits.is_empty() => {
                self.statements.forget(hits).await;
                self.compute(q, rule, now).await
            }
            (r, _) => r,
        }
    }

    fn refresh_in_background(
        self: &Arc<Self>,
        key: String,
        q: Query,
        rule: GraceRule,
        now: i64,
        old: Arc<Resolution>,
    ) {
        let me = self.clone();
        tokio::spawn(async move {
            match me.compute(&q, rule, now).await {
                Ok(r) => me.resolutions.insert(key, r).await,
                Err(e) => {
                    tracing::debug!(error = %e, subject = %q.subject, "background re-resolution failed");
                    old.refreshing.store(false, Ordering::SeqCst);
                }
            }
        });
    }

    async fn compute(&self, q: &Query, rule: GraceRule, now: i64) -> Result<Arc<Resolution>> {
        self.compute_with_hits(q, rule, now).await.0
    }

    /// The resolution, and the keys of the statements it took from the cache.
    async fn compute_with_hits(
        &self,
        q: &Query,
        rule: GraceRule,
        now: i64,
    ) -> (Result<Arc<Resolution>>, Vec<String>) {
        let fetcher = self.statements.at(rule, now, &q.local);
        let r = self.resolve_with(&fetcher, q, now).await;
        (r, fetcher.take_hits())
    }

    async fn resolve_with(
        &self,
        fetcher: &CachedFetcher<'_, F>,
        q: &Query,
        now: i64,
    ) -> Result<Arc<Resolution>> {
        let req = ResolveRequest {
            subject: &q.subject,
            anchors: &q.anchors,
            entity_types: &q.entity_types,
            now,
            max_depth: DEFAULT_MAX_DEPTH,
        };
        let chain = chain::resolve(fetcher, &req).await?;
        let anchor = q
            .anchors
            .iter()
            .find(|a| a.entity_id == chain.trust_anchor)
            .cloned()
            .unwrap_or_default();
        let marks = verified_marks(fetcher, &chain, &anchor, now).await;
        let asked = anchor.trust_mark_status != TrustMarkStatusCheck::Off && !marks.is_empty();
        let marks = if asked {
            let upstream = self.statements.upstream();
            self.mark_status
                .keep(upstream, anchor.trust_mark_status, &q.subject, marks, now)
                .await
        } else {
            marks.into_iter().map(|(m, _)| m).collect()
        };
        let mut resolution = Resolution::new(chain, marks, now);
        if asked {
            resolution.recheck_at = Some(now.saturating_add(mark_status::STATUS_TTL));
        }
        if fetcher.used_ours() {
            resolution.generation = Some(q.local.generation);
        }
        Ok(Arc::new(resolution))
    }
}

impl<F: Fetcher + 'static> Resolver<F> {
    /// `q` explained step by step (see [`chain::explain`]), through the statement cache the
    /// resolutions use, so the statements explained are those resolve would use. Nothing is
    /// cached: an explanation is asked for rarely, by an operator.
    pub async fn explain(&self, q: &Query, rule: GraceRule, now: i64) -> chain::Explanation {
        let fetcher = self.statements.at(rule, now, &q.local);
        let req = ResolveRequest {
            subject: &q.subject,
            anchors: &q.anchors,
            entity_types: &q.entity_types,
            now,
            max_depth: DEFAULT_MAX_DEPTH,
        };
        chain::explain(&fetcher, &req).await
    }
}

/// The resolutions cache: weighed by [`Resolution::weight`] plus the key, capped at `max_bytes`.
fn resolutions_cache(max_bytes: u64) -> Cache<String, Arc<Resolution>> {
    Cache::builder()
        .max_capacity(max_bytes)
        .weigher(|k: &String, v: &Arc<Resolution>| {
            v.weight()
                .saturating_add(u32::try_from(k.len()).unwrap_or(u32::MAX))
        })
        .build()
}

/// The length of a JSON value's text, without keeping the text.
mod json_len {
    use serde::Serialize;

    /// Counts bytes written by the serializer.
    struct Counter(usize);

    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Anything serializable as JSON, measured.
    pub trait JsonLen {
        /// Bytes of its compact JSON text (0 if it cannot be serialized).
        fn json_len(&self) -> usize;
    }

    impl<T: Serialize> JsonLen for T {
        fn json_len(&self) -> usize {
            let mut c = Counter(0);
            match serde_json::to_writer(&mut c, self) {
                Ok(()) => c.0,
                Err(_) => 0,
            }
        }
    }
}

/// The subject's Trust Marks that the chosen anchor admits (`trust_mark_issuers`) and that
/// verify with their issuer's keys, established through a trust chain to the same anchor
/// ([`trust_mark_issuer_keys`]; statements through the same cache), including delegation
/// when the anchor names an owner. Others are dropped. Each with its issuer (its keys and
/// status endpoint).
async fn verified_marks<F: Fetcher + 'static>(
    fetcher: &CachedFetcher<'_, F>,
    chain: &ResolvedChain,
    anchor: &AnchorSpec,
    now: i64,
) -> Vec<(VerifiedTrustMark, Arc<IssuerKeys>)> {
    let subject = chain.subject_claims.get("sub").and_then(|s| s.as_str());
    let Some(subject) = subject else {
        return Vec::new();
    };
    let (marks, refused) = trust_mark_issuer_keys::verified_marks_with_issuers(
        fetcher,
        anchor,
        &chain.anchor_claims,
        &chain.subject_claims,
        subject,
        now,
    )
    .await;
    for e in refused {
        tracing::debug!(error = %e, %subject, "trust mark left out");
    }
    marks
}

/// The `resolve` endpoint's configuration in `snap`, if the endpoint exists.
pub fn resolve_config(snap: &Snapshot) -> Option<&ResolveConfig> {
    match &snap.registry.by_type.get(&EndpointType::Resolve)?.config {
        EndpointConfig::Resolve(c) => Some(c),
        _ => None,
    }
}

/// The cache rule of a `resolve` endpoint configuration.
pub fn grace_rule(cfg: &ResolveConfig) -> GraceRule {
    GraceRule {
        grace_period: i64::try_from(cfg.grace_period).unwrap_or(i64::MAX),
        elapsed_factor: cfg.time_elapsed_grace_factor,
    }
}

/// The anchors this endpoint walks towards (see [`AnchorRule`]): its own
/// `allowed_trust_anchors`, or the `entity_collection` endpoint's when
/// `use_entity_collection_allowed_trust_anchors` is set (read from the same snapshot, so a
/// change applies with the next registry swap; no such endpoint, or an empty list there,
/// means no anchor is allowed); without a list, the trust anchor repository and our own
/// entity, unless `allow_any_trust_anchor` opens it to any.
pub fn anchor_rule(snap: &Snapshot, cfg: &ResolveConfig) -> AnchorRule {
    if cfg.use_entity_collection_allowed_trust_anchors {
        let ec = snap.registry.by_type.get(&EndpointType::EntityCollection);
        return AnchorRule::Listed(match ec.map(|e| &e.config) {
            Some(EndpointConfig::EntityCollection(c)) => c.allowed_trust_anchors.clone(),
            _ => Vec::new(),
        });
    }
    AnchorRule::new(&cfg.allowed_trust_anchors, cfg.allow_any_trust_anchor)
}

/// Whether `rule` admits `anchor` in `snap`: [`AnchorRule::Configured`] admits our own
/// entity and the anchors of the trust anchor repository.
pub fn admits(snap: &Snapshot, rule: &AnchorRule, anchor: &str) -> bool {
    rule.admits(anchor, |a| {
        a == snap.entity_id.as_ref() || snap.trust_anchors.by_id.contains_key(a)
    })
}

/// moka shares an initialiser's error between waiters as `Arc<Error>`; the shared error type
/// is not `Clone`, so rebuild it variant by variant.
pub(crate) fn clone_error(e: &Error) -> Error {
    match e {
        Error::Config(v) => Error::Config(v.clone()),
        Error::Key(m) => Error::Key(m.clone()),
        Error::Jws(m) => Error::Jws(m.clone()),
        Error::InvalidPolicy(m) => Error::InvalidPolicy(m.clone()),
        Error::InvalidMetadata(m) => Error::InvalidMetadata(m.clone()),
        Error::InvalidTrustChain(m) => Error::InvalidTrustChain(m.clone()),
        Error::InvalidTrustAnchor(m) => Error::InvalidTrustAnchor(m.clone()),
        Error::Fetch(m) => Error::Fetch(m.clone()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)] // a failing unwrap is a failing test
#[path = "tests.rs"]
mod tests;
