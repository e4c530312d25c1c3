//! The cache of fetched statements (Entity Configurations and Subordinate Statements), in
//! front of any [`Fetcher`].
//!
//! - A cold key is fetched once however many requests want it at the same moment: moka's
//!   `try_get_with` runs one initialiser per key and hands its result to every waiter.
//! - A cached statement is served until its `exp`. Inside the grace period, once enough of
//!   its lifetime has elapsed ([`GraceRule`]), the first request that sees it starts exactly
//!   one background refresh and every request keeps getting the cached copy meanwhile.
//! - Failures are not cached: the next request tries again.
//!
//! Time comes from the caller (`now`), so tests drive it with a manual clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use moka::future::Cache;
use pharos_shared::chain::{Fetcher, Freshness, GraceRule};
use pharos_shared::{Result, jose};

use super::{Local, clone_error};

/// Upper bound of the cache, in bytes of statement text.
const MAX_BYTES: u64 = 256 * 1024 * 1024;

/// One cached statement.
#[derive(Debug)]
struct Cached {
    jws: String,
    issued: i64,
    exp: i64,
    /// Its `iss`: a statement we issued ourselves is only as current as our snapshot.
    iss: Option<String>,
    /// The snapshot generation when it was fetched.
    generation: u64,
    refreshing: AtomicBool,
}

impl Cached {
    /// `issued`/`exp` from the statement's own `iat`/`exp`; an undecodable statement is kept
    /// as already expired, so it is handed to validation (which reports it) but never reused.
    fn new(jws: String, now: i64, generation: u64) -> Self {
        let claims = jose::decode_unverified(&jws).ok().map(|d| d.claims);
        let num = |n: &str| claims.as_ref().and_then(|c| c.get(n)?.as_i64());
        let iss = claims
            .as_ref()
            .and_then(|c| c.get("iss")?.as_str().map(str::to_owned));
        Self {
            issued: num("iat").unwrap_or(now).min(now),
            exp: num("exp").unwrap_or(now),
            iss,
            generation,
            jws,
            refreshing: AtomicBool::new(false),
        }
    }

    /// Whether we issued it ourselves.
    fn ours(&self, local: &Local) -> bool {
        self.iss
            .as_deref()
            .is_some_and(|i| same_entity(i, &local.entity_id))
    }
}

/// Entity identifiers equal but for a terminating `/`.
fn same_entity(a: &str, b: &str) -> bool {
    !b.is_empty() && a.trim_end_matches('/') == b.trim_end_matches('/')
}

/// Which statement: the key of the cache and the call that fetches it.
#[derive(Clone, Debug)]
enum Wanted {
    Configuration(String),
    Subordinate { endpoint: String, sub: String },
}

impl Wanted {
    fn key(&self) -> String {
        match self {
            Self::Configuration(id) => format!("ec\n{id}"),
            Self::Subordinate { endpoint, sub } => format!("ss\n{endpoint}\n{sub}"),
        }
    }

    async fn fetch<F: Fetcher>(&self, f: &F) -> Result<String> {
        match self {
            Self::Configuration(id) => f.entity_configuration(id).await,
            Self::Subordinate { endpoint, sub } => f.subordinate_statement(endpoint, sub).await,
        }
    }
}

/// Fetched statements by URL-like key, shared by every resolution of the process.
#[derive(Debug)]
pub struct StatementCache<F> {
    upstream: Arc<F>,
    cache: Cache<String, Arc<Cached>>,
}

impl<F: Fetcher + 'static> StatementCache<F> {
    /// What the cache fetches through (for requests that are not statements).
    pub fn upstream(&self) -> &F {
        &self.upstream
    }

    /// A cache in front of `upstream`.
    pub fn new(upstream: Arc<F>) -> Self {
        let cache = Cache::builder()
            .max_capacity(MAX_BYTES)
            .weigher(|k: &String, v: &Arc<Cached>| {
                u32::try_from(k.len() + v.jws.len()).unwrap_or(u32::MAX)
            })
            .build();
        Self { upstream, cache }
    }

    /// A [`Fetcher`] view of this cache for one resolution at `now` under `rule`, in the
    /// snapshot `local` describes.
    pub fn at<'a>(&'a self, rule: GraceRule, now: i64, local: &'a Local) -> CachedFetcher<'a, F> {
        CachedFetcher {
            cache: self,
            rule,
            now,
            local,
            hits: std::sync::Mutex::new(Vec::new()),
            ours: AtomicBool::new(false),
        }
    }

    /// Forgets the statements whose keys are given (they were used in a failed resolution).
    pub(crate) async fn forget(&self, keys: Vec<String>) {
        for k in keys {
            self.cache.invalidate(&k).await;
        }
    }

    /// Forgets every statement, or those about `sub` (its Entity Configuration and every
    /// Subordinate Statement about it).
    pub(crate) async fn flush(&self, sub: Option<&str>) {
        let Some(sub) = sub else {
            self.cache.invalidate_all();
            return;
        };
        let ec = Wanted::Configuration(sub.to_owned()).key();
        let about = format!("\n{sub}");
        let keys: Vec<String> = self
            .cache
            .iter()
            .filter(|(k, _)| **k == ec || (k.starts_with("ss\n") && k.ends_with(&about)))
            .map(|(k, _)| (*k).clone())
            .collect();
        self.forget(keys).await;
    }

    /// The cached text of an Entity Configuration, without side effects (for tests).
    #[cfg(test)]
    pub(crate) fn peek_configuration(&self, entity_id: &str) -> Option<String> {
        let key = Wanted::Configuration(entity_id.to_owned()).key();
        self.cache
            .iter()
            .find(|(k, _)| **k == key)
            .map(|(_, v)| v.jws.clone())
    }

    /// The statement, and whether it was served from the cache (not fetched for this call).
    async fn get(
        &self,
        wanted: Wanted,
        rule: GraceRule,
        now: i64,
        local: &Local,
    ) -> Result<(Arc<Cached>, bool)> {
        let key = wanted.key();
        if let Some(hit) = self.cache.get(&key).await {
            // Our own statements change with our snapshot, at once: one fetched in another
            // generation is not served (remote ones keep their lifetimes).
            let judged = if hit.ours(local) && hit.generation != local.generation {
                Freshness::Expired
            } else {
                rule.judge(hit.issued, hit.exp, now)
            };
            match judged {
                Freshness::Fresh => return Ok((hit, true)),
                Freshness::Refresh => {
                    if !hit.refreshing.swap(true, Ordering::SeqCst) {
                        self.refresh_in_background(key, wanted, hit.clone(), now, local);
                    }
                    return Ok((hit, true));
                }
                Freshness::Expired => self.cache.invalidate(&key).await,
            }
        }
        let upstream = &self.upstream;
        let generation = local.generation;
        self.cache
            .try_get_with(key, async move {
                let jws = wanted.fetch(upstream.as_ref()).await?;
                Ok::<_, pharos_shared::Error>(Arc::new(Cached::new(jws, now, generation)))
            })
            .await
            .map(|c| (c, false))
            .map_err(|e| clone_error(&e))
    }

    fn refresh_in_background(
        &self,
        key: String,
        wanted: Wanted,
        old: Arc<Cached>,
        now: i64,
        local: &Local,
    ) {
        let (upstream, cache) = (self.upstream.clone(), self.cache.clone());
        let generation = local.generation;
        tokio::spawn(async move {
            match wanted.fetch(upstream.as_ref()).await {
                Ok(jws) => {
                    let fresh = Arc::new(Cached::new(jws, now, generation));
                    cache.insert(key, fresh).await
                }
                Err(e) => {
                    tracing::debug!(error = %e, "background refresh failed; serving the cached copy");
                    old.refreshing.store(false, Ordering::SeqCst);
                }
            }
        });
    }
}

/// The cache seen as a [`Fetcher`] by chain collection: one value per resolution, carrying
/// the grace rule of the endpoint and the request's `now`.
#[derive(Debug)]
pub struct CachedFetcher<'a, F> {
    cache: &'a StatementCache<F>,
    rule: GraceRule,
    now: i64,
    local: &'a Local,
    /// Keys of the statements served from the cache, not fetched for this resolution.
    hits: std::sync::Mutex<Vec<String>>,
    /// Whether any statement served was ours.
    ours: AtomicBool,
}

impl<F: Fetcher + 'static> CachedFetcher<'_, F> {
    async fn get(&self, wanted: Wanted) -> Result<String> {
        let key = wanted.key();
        let (c, hit) = self
            .cache
            .get(wanted, self.rule, self.now, self.local)
            .await?;
        if c.ours(self.local) {
            self.ours.store(true, Ordering::Relaxed);
        }
        if hit {
            match self.hits.lock() {
                Ok(mut h) => h.push(key),
                Err(p) => p.into_inner().push(key),
            }
        }
        Ok(c.jws.clone())
    }

    /// The keys of the statements that came from the cache.
    pub(crate) fn take_hits(&self) -> Vec<String> {
        match self.hits.lock() {
            Ok(mut h) => std::mem::take(&mut *h),
            Err(p) => std::mem::take(&mut *p.into_inner()),
        }
    }

    /// Whether any statement served so far was issued by us.
    pub(crate) fn used_ours(&self) -> bool {
        self.ours.load(Ordering::Relaxed)
    }
}

impl<F: Fetcher + 'static> Fetcher for CachedFetcher<'_, F> {
    async fn entity_configuration(&self, entity_id: &str) -> Result<String> {
        self.get(Wanted::Configuration(entity_id.to_owned())).await
    }

    async fn subordinate_statement(&self, fetch_endpoint: &str, sub: &str) -> Result<String> {
        self.get(Wanted::Subordinate {
            endpoint: fetch_endpoint.to_owned(),
            sub: sub.to_owned(),
        })
        .await
    }

    fn run_blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> impl std::future::Future<Output = Option<T>> + Send {
        pharos_runtime::outbound::off_the_workers(work)
    }
}
