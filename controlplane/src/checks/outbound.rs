//! Calls to operator-configured services for the `http`, `http_list` and `http_list_jwt`
//! checks, and the cache of the list answers.
//!
//! The client is the checks' own, not the resolver's: these URLs come from the Admin API, not
//! from entities, so private addresses are allowed (an allow-list service usually runs next to
//! Pharos), and no media type is imposed. The limits still hold: rustls, no proxy from the
//! environment, at most [`MAX_REDIRECTS`] redirects, the call's own timeout for the whole
//! exchange, and the body streamed and refused past `federation.max_response_bytes`.
//!
//! A call with a `cache_ttl` is answered from the cache while an answer younger than that
//! exists. Only `200` answers are kept; concurrent calls for one key share one fetch
//! (moka's `try_get_with`). The cache belongs to the control plane ([`Outbound`] lives as long
//! as it does), so it outlives the per-check `Env`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use pharos_shared::time::Stopwatch;

use moka::Expiry;
use moka::future::Cache;
use pharos_shared::checks::{HttpAnswer, HttpCall};

/// Redirects followed per call.
pub const MAX_REDIRECTS: usize = 3;
/// Cached list answers kept at most.
pub const CACHE_ENTRIES: u64 = 1_024;

/// What identifies a cacheable call: method, URL, headers and body.
type Key = (String, String, Vec<(String, String)>, Option<Vec<u8>>);

/// A cached `200` answer and when it was obtained.
#[derive(Debug)]
struct Cached {
    at: Stopwatch,
    ttl: Duration,
    answer: HttpAnswer,
}

/// Why a call was not cached: it failed, or its answer is not a `200`.
#[derive(Debug)]
enum NotCached {
    Failed(String),
    Answer(HttpAnswer),
}

/// Entries live as long as the `cache_ttl` of the call that stored them.
struct ByTtl;

impl Expiry<Key, Arc<Cached>> for ByTtl {
    fn expire_after_create(&self, _: &Key, value: &Arc<Cached>, _: Instant) -> Option<Duration> {
        Some(value.ttl)
    }
}

/// The checks' HTTP client and list cache (one per control plane).
#[derive(Debug)]
pub struct Outbound {
    /// The client, or why it could not be built (reported by every call).
    client: Result<reqwest::Client, String>,
    max_bytes: u64,
    cache: Cache<Key, Arc<Cached>>,
}

impl Outbound {
    /// A client whose answers may be at most `max_bytes` long.
    pub fn new(max_bytes: u64) -> Self {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::limited(MAX_REDIRECTS))
            .no_proxy()
            .user_agent(concat!("pharos/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"));
        let cache = Cache::builder()
            .max_capacity(CACHE_ENTRIES)
            .expire_after(ByTtl)
            .build();
        Self {
            client,
            max_bytes,
            cache,
        }
    }

    /// Performs `call`, from the cache when it allows and an answer young enough exists.
    pub async fn call(&self, call: HttpCall) -> Result<HttpAnswer, String> {
        let Some(ttl) = call.cache_ttl else {
            return self.exchange(&call).await;
        };
        let key: Key = (
            call.method.clone(),
            call.url.clone(),
            call.headers.clone(),
            call.body.clone(),
        );
        if let Some(hit) = self.cache.get(&key).await {
            if hit.at.elapsed() < ttl {
                return Ok(hit.answer.clone());
            }
            self.cache.invalidate(&key).await;
        }
        let fetched = self
            .cache
            .try_get_with(key, async {
                match self.exchange(&call).await {
                    Ok(answer) if answer.status == 200 => Ok(Arc::new(Cached {
                        at: Stopwatch::start(),
                        ttl,
                        answer,
                    })),
                    Ok(answer) => Err(NotCached::Answer(answer)),
                    Err(e) => Err(NotCached::Failed(e)),
                }
            })
            .await;
        match fetched {
            Ok(c) => Ok(c.answer.clone()),
            Err(e) => match &*e {
                NotCached::Answer(a) => Ok(a.clone()),
                NotCached::Failed(m) => Err(m.clone()),
            },
        }
    }

    /// One exchange, within the call's timeout and the size limit.
    async fn exchange(&self, call: &HttpCall) -> Result<HttpAnswer, String> {
        let url = &call.url;
        match tokio::time::timeout(call.timeout, self.send(call)).await {
            Ok(result) => result,
            Err(_) => Err(format!("{url}: no answer within {:?}", call.timeout)),
        }
    }

    async fn send(&self, call: &HttpCall) -> Result<HttpAnswer, String> {
        let url = &call.url;
        let client = self.client.as_ref().map_err(Clone::clone)?;
        let method = reqwest::Method::from_bytes(call.method.as_bytes())
            .map_err(|_| format!("{url}: bad method {}", call.method))?;
        let mut req = client.request(method, url).timeout(call.timeout);
        for (k, v) in &call.headers {
            req = req.header(k, v);
        }
        if let Some(body) = &call.body {
            req = req
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.clone());
        }
        let fail = |e: reqwest::Error| pharos_runtime::outbound::transport_failure(url, &e);
        let mut resp = req.send().await.map_err(fail)?;
        let status = resp.status().as_u16();
        let content_type = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let too_large = || format!("{url}: answer larger than {} bytes", self.max_bytes);
        if resp.content_length().is_some_and(|n| n > self.max_bytes) {
            return Err(too_large());
        }
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(fail)? {
            if (body.len() + chunk.len()) as u64 > self.max_bytes {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(HttpAnswer {
            status,
            content_type,
            body,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
#[path = "outbound_tests.rs"]
pub(crate) mod tests;
