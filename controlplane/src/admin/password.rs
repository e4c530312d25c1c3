//! Admin password hashing: argon2id PHC strings with `api.admin.password_hashing.*`.
//!
//! Hashing costs tens of milliseconds of CPU and 64 MiB by default, so it never runs on the async
//! workers: every hash or verification goes to `spawn_blocking` behind a small semaphore, so a
//! burst of logins queues here instead of starving the public port. The queue itself is
//! bounded ([`QUEUED`]): beyond it a login is answered 503 at once, so a flood of wrong
//! passwords cannot hold real logins behind an ever-growing line. Successful verifications are
//! remembered for a short time (keyed by a SHA-256 of user and password, bound to the stored
//! hash), which keeps a script that sends Basic credentials on every call from costing a full
//! argon2 run each time. Unknown users are verified against a dummy hash so that response time
//! does not reveal which usernames exist.

use std::sync::Arc;
use std::time::Duration;

use argon2::{Algorithm, Argon2, Params, PasswordHash, PasswordHasher, PasswordVerifier, Version};
use pharos_shared::config::PasswordHashing;
use sha2::{Digest, Sha256};
use tokio::sync::{OnceCell, Semaphore};

use crate::admin::error::{ApiError, ApiResult};

/// Concurrent argon2 runs; each default run uses 64 MiB and one core per lane.
const PERMITS: usize = 2;
/// Hashes and verifications that may wait for a permit; more are refused (503).
const QUEUED: usize = 16;
/// How long a successful verification is trusted without re-running argon2.
const CACHE_TTL: Duration = Duration::from_secs(60);

/// The password hasher and verifier of the Admin API.
#[derive(Clone)]
pub struct Passwords {
    cfg: PasswordHashing,
    permits: Arc<Semaphore>,
    /// Running plus waiting runs ([`PERMITS`] + [`QUEUED`]), taken without waiting.
    line: Arc<Semaphore>,
    verified: moka::future::Cache<[u8; 32], Arc<str>>,
    dummy: Arc<OnceCell<String>>,
}

impl std::fmt::Debug for Passwords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Passwords").field("cfg", &self.cfg).finish()
    }
}

impl Passwords {
    /// A hasher for the configured cost parameters.
    pub fn new(cfg: PasswordHashing) -> Self {
        Self {
            cfg,
            permits: Arc::new(Semaphore::new(PERMITS)),
            line: Arc::new(Semaphore::new(PERMITS + QUEUED)),
            verified: moka::future::Cache::builder()
                .max_capacity(1_000)
                .time_to_live(CACHE_TTL)
                .build(),
            dummy: Arc::new(OnceCell::new()),
        }
    }

    /// Hashes `password` into a PHC string with the configured parameters and a fresh salt.
    pub async fn hash(&self, password: &str) -> ApiResult<String> {
        let cfg = self.cfg.clone();
        let password = password.to_string();
        self.blocking(move || hash_with(&cfg, &password)).await?
    }

    /// Whether `password` is right for `username`, whose stored hash is `stored` (`None` for an
    /// unknown user, which is checked against a dummy hash and always fails). Busy (the queue
    /// is full) is an error, not a wrong password.
    pub async fn verify(
        &self,
        username: &str,
        password: &str,
        stored: Option<&str>,
    ) -> ApiResult<bool> {
        let key = cache_key(username, password);
        if let Some(stored) = stored
            && self.verified.get(&key).await.as_deref() == Some(stored)
        {
            return Ok(true);
        }
        let target = match stored {
            Some(s) => s.to_string(),
            None => self.dummy().await?,
        };
        let pw = password.to_string();
        let t = target.clone();
        let ok = self
            .blocking(move || {
                PasswordHash::new(&t)
                    .map(|h| Argon2::default().verify_password(pw.as_bytes(), &h).is_ok())
                    .unwrap_or(false)
            })
            .await?;
        if ok && stored.is_some() {
            self.verified.insert(key, Arc::from(target)).await;
        }
        Ok(ok && stored.is_some())
    }

    /// Remembers that `password` matches `hash` (after a re-hash, so the next call is cheap).
    pub async fn remember(&self, username: &str, password: &str, hash: &str) {
        self.verified
            .insert(cache_key(username, password), Arc::from(hash))
            .await;
    }

    /// Forgets every remembered verification (a user was changed or deleted).
    pub fn forget_all(&self) {
        self.verified.invalidate_all();
    }

    /// Whether `phc` was made with other parameters than the configured ones.
    pub fn needs_rehash(&self, phc: &str) -> bool {
        let Ok(h) = PasswordHash::new(phc) else {
            return true;
        };
        let Ok(p) = Params::try_from(&h) else {
            return true;
        };
        h.algorithm.as_str() != "argon2id"
            || h.version != Some(0x13)
            || p.m_cost() != self.cfg.memory_kib
            || p.t_cost() != self.cfg.time
            || p.p_cost() != self.cfg.parallelism
            || p.output_len() != Some(self.cfg.key_len as usize)
            || h.salt.as_ref().map(|s| s.len()) != Some(self.cfg.salt_len as usize)
    }

    async fn dummy(&self) -> ApiResult<String> {
        self.dummy
            .get_or_try_init(|| self.hash("pharos-dummy-password"))
            .await
            .cloned()
    }

    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> ApiResult<T> {
        let Ok(_place) = self.line.try_acquire() else {
            return Err(ApiError::Unavailable(
                "too many password checks in progress; retry shortly".into(),
            ));
        };
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|e| ApiError::Internal(format!("password hashing unavailable: {e}")))?;
        tokio::task::spawn_blocking(f)
            .await
            .map_err(|e| ApiError::Internal(format!("password hashing failed: {e}")))
    }
}

fn cache_key(username: &str, password: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(username.as_bytes());
    h.update(b":");
    h.update(password.as_bytes());
    h.finalize().into()
}

fn hash_with(cfg: &PasswordHashing, password: &str) -> ApiResult<String> {
    let params = Params::new(
        cfg.memory_kib,
        cfg.time,
        cfg.parallelism,
        Some(cfg.key_len as usize),
    )
    .map_err(|e| ApiError::Internal(format!("argon2 parameters: {e}")))?;
    let salt = salt(cfg.salt_len as usize)?;
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
        .hash_password_with_salt(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| ApiError::Internal(format!("argon2: {e}")))
}

/// A random salt of `len` bytes from the system RNG (16 bytes per draw).
fn salt(len: usize) -> ApiResult<Vec<u8>> {
    let mut out = Vec::with_capacity(len + 16);
    while out.len() < len {
        let chunk = argon2::password_hash::try_generate_salt()
            .map_err(|e| ApiError::Internal(format!("random salt: {e}")))?;
        out.extend_from_slice(&chunk);
    }
    out.truncate(len);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> PasswordHashing {
        PasswordHashing {
            time: 1,
            memory_kib: 64,
            parallelism: 1,
            key_len: 32,
            salt_len: 16,
        }
    }

    #[tokio::test]
    async fn hash_verifies_and_detects_parameter_changes() {
        let p = Passwords::new(small());
        let h = p.hash("s3cret").await.unwrap();
        assert!(h.starts_with("$argon2id$v=19$m=64,t=1,p=1$"), "{h}");
        assert!(p.verify("a", "s3cret", Some(&h)).await.unwrap());
        assert!(!p.verify("a", "wrong", Some(&h)).await.unwrap());
        assert!(!p.verify("nobody", "s3cret", None).await.unwrap());
        assert!(!p.needs_rehash(&h));
        let mut other = small();
        other.salt_len = 32;
        assert!(Passwords::new(other).needs_rehash(&h));
    }

    #[tokio::test]
    async fn cached_verification_is_bound_to_the_stored_hash() {
        let p = Passwords::new(small());
        let h1 = p.hash("one").await.unwrap();
        let h2 = p.hash("two").await.unwrap();
        assert!(p.verify("a", "one", Some(&h1)).await.unwrap());
        // The cache remembers ("a","one") → h1; a changed stored hash must not match.
        assert!(!p.verify("a", "one", Some(&h2)).await.unwrap());
    }

    #[tokio::test]
    async fn a_full_queue_refuses_at_once_instead_of_waiting() {
        let p = Passwords::new(small());
        let h = p.hash("s3cret").await.unwrap();
        let _all = p.line.try_acquire_many((PERMITS + QUEUED) as u32).unwrap();
        let e = p.verify("a", "wrong", Some(&h)).await.unwrap_err();
        assert!(matches!(e, ApiError::Unavailable(_)), "{e:?}");
    }
}
