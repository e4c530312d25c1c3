//! Replay protection for client assertions: each `jti` is accepted once per issuer.
//!
//! `storage.endpoint_auth.jti_backend` picks the store: `cache` keeps used identifiers in this
//! process (moka, each entry living until its assertion's `exp` plus a minute); `db` records
//! them in the database through the control plane's command channel (the data plane never
//! touches the database), so a replay is refused after a restart and across instances.
//! Check and record are one atomic step in both stores.
//!
//! The in-process store never forgets an identifier before its assertion has expired: a cache
//! that evicted when full would let an attacker flush a used `jti` out and replay it. Instead
//! it refuses new assertions while it is full (503, retry shortly); since assertions live at
//! most `storage.endpoint_auth.max_assertion_lifetime`, entries leave on their own soon.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use moka::Expiry;
use moka::future::Cache;
use pharos_shared::config::JtiBackend;
use sha2::{Digest, Sha256};

use crate::error::FedError;
use pharos_runtime::command::{Command, Commands};

/// Most identifiers the in-process store holds (an attacker cannot grow it past this; when it
/// is full, new assertions are refused, never old identifiers evicted).
pub const MAX_CACHED: u64 = 1_000_000;
/// Kept this long after the assertion's `exp` (clock skew between client and us).
const EXTRA_TTL: i64 = 60;

/// How many identifiers the in-process store holds, exactly (moka's own count lags behind
/// inserts), and how many it may.
#[derive(Debug)]
pub struct Held {
    now: AtomicU64,
    limit: u64,
}

/// Per-entry lifetime: the value is the entry's time to live in seconds.
struct UntilExp;

impl Expiry<String, i64> for UntilExp {
    fn expire_after_create(&self, _: &String, ttl: &i64, _: Instant) -> Option<Duration> {
        Some(Duration::from_secs(u64::try_from(*ttl).unwrap_or(0)))
    }
}

/// The in-process store: its cache is made on the first assertion (an empty one is tens of
/// kilobytes, and most hosted entities never authenticate a client; BENCHMARKS.md, "Hosted
/// entities").
#[derive(Debug)]
pub struct InProcess {
    cache: OnceLock<Cache<String, i64>>,
    held: Arc<Held>,
}

impl InProcess {
    fn cache(&self) -> &Cache<String, i64> {
        self.cache.get_or_init(|| {
            let h = self.held.clone();
            Cache::builder()
                .expire_after(UntilExp)
                .eviction_listener(move |_, _, _| {
                    h.now.fetch_sub(1, Ordering::Relaxed);
                })
                .build()
        })
    }
}

/// Where used `jti`s are remembered.
#[derive(Clone)]
pub enum ReplayStore {
    /// In this process (no size bound of its own: [`MAX_CACHED`] is enforced by refusing).
    Cache(Arc<InProcess>),
    /// In the database, through the control plane.
    Db(Commands),
}

impl std::fmt::Debug for ReplayStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Cache(..) => "ReplayStore::Cache",
            Self::Db(_) => "ReplayStore::Db",
        })
    }
}

impl ReplayStore {
    /// The store `backend` names.
    pub fn new(backend: &JtiBackend, commands: Commands) -> Self {
        Self::with_limit(backend, commands, MAX_CACHED)
    }

    /// As [`Self::new`], holding at most `limit` identifiers in process (tests fill it).
    pub fn with_limit(backend: &JtiBackend, commands: Commands, limit: u64) -> Self {
        match backend {
            JtiBackend::Db => Self::Db(commands),
            JtiBackend::Cache => Self::Cache(Arc::new(InProcess {
                cache: OnceLock::new(),
                held: Arc::new(Held {
                    now: AtomicU64::new(0),
                    limit,
                }),
            })),
        }
    }

    /// Records `jti` of `iss`, valid until `exp`; `Ok(false)` when it was used before.
    pub async fn first_use(
        &self,
        iss: &str,
        jti: &str,
        exp: i64,
        now: i64,
    ) -> Result<bool, FedError> {
        let key = key(iss, jti);
        match self {
            Self::Cache(store) => {
                let (c, held) = (store.cache(), &store.held);
                if c.contains_key(&key) {
                    return Ok(false);
                }
                if held.now.load(Ordering::Relaxed) >= held.limit {
                    c.run_pending_tasks().await; // expired entries leave
                    if held.now.load(Ordering::Relaxed) >= held.limit {
                        return Err(FedError::new(
                            axum::http::StatusCode::SERVICE_UNAVAILABLE,
                            "temporarily_unavailable",
                            "too many client assertions in flight; retry shortly",
                        ));
                    }
                }
                let ttl = (exp - now + EXTRA_TTL).max(1);
                let fresh = c.entry(key).or_insert(ttl).await.is_fresh();
                if fresh {
                    held.now.fetch_add(1, Ordering::Relaxed);
                }
                Ok(fresh)
            }
            Self::Db(commands) => commands
                .call(|reply| Command::RecordJti {
                    jti: key,
                    expires_at: exp,
                    reply,
                })
                .await
                .map_err(FedError::from),
        }
    }
}

/// Fixed-length key: the hex SHA-256 of issuer and `jti` (a `jti` is unique per issuer).
fn key(iss: &str, jti: &str) -> String {
    let mut h = Sha256::new();
    h.update(iss.as_bytes());
    h.update([0]);
    h.update(jti.as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn cache_store_accepts_each_jti_once_per_issuer() {
        let (c, _rx) = Commands::channel();
        let s = ReplayStore::new(&JtiBackend::Cache, c);
        assert!(s.first_use("a", "1", 100, 0).await.unwrap());
        assert!(!s.first_use("a", "1", 100, 0).await.unwrap());
        assert!(s.first_use("b", "1", 100, 0).await.unwrap());
        assert_eq!(key("a", "1").len(), 64);
        assert_ne!(key("a", "1"), key("a1", ""));
    }

    #[tokio::test]
    async fn a_full_cache_refuses_new_assertions_and_never_forgets_used_ones() {
        let (c, _rx) = Commands::channel();
        let s = ReplayStore::with_limit(&JtiBackend::Cache, c, 3);
        for jti in ["1", "2", "3"] {
            assert!(s.first_use("a", jti, 100, 0).await.unwrap());
        }
        let e = s.first_use("a", "4", 100, 0).await.unwrap_err();
        assert_eq!(e.status.as_u16(), 503);
        // Every used identifier is still refused (an evicting cache would have dropped one).
        for jti in ["1", "2", "3"] {
            assert!(!s.first_use("a", jti, 100, 0).await.unwrap(), "{jti}");
        }
    }
}
