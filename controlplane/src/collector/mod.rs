//! The entity collector: walks a federation from a Trust Anchor through the
//! `federation_list_endpoint`s of its Intermediates and keeps, per Entity, what the entity
//! collection endpoint shows ([`pharos_shared::collection`]).
//!
//! - [`walk`]: one walk, bounded in time, bytes, Entities, fetches and parallel fetches (the
//!   outbound rules of [`HttpFetcher`]: timeout, size limit, private-address policy);
//!   loop-safe and de-duplicated by a visited set; a member is collected only with its
//!   lister's verified Subordinate Statement; members that fail are logged and skipped.
//! - [`job`]: the periodic collector (`interval_seconds` > 0), one walk per allowed Trust
//!   Anchor at most `concurrency_limit` at once, results committed through `Write` and so
//!   published in the snapshot; restarted when the endpoint's settings change.
//! - [`demand`]: collection on request (no interval), single flight per anchor, cached briefly.

pub mod demand;
pub mod job;
pub mod walk;

use pharos_runtime::outbound::HttpFetcher;
use pharos_shared::Result;
use pharos_shared::chain::Fetcher;

/// Where a walk gets its documents: statements (a [`Fetcher`], also for the trust chains
/// of Trust Mark Issuers) and subordinate listings. The collector uses [`HttpFetcher`]; the
/// trait keeps the walk testable over in-memory fakes.
pub trait Source: Fetcher {
    /// The body of a subordinate listing at `url` (a JSON array of entity identifiers).
    fn list(&self, url: &str) -> impl std::future::Future<Output = Result<String>> + Send;
    /// The Subordinate Statement at `url` (a fetch endpoint with its `sub`).
    fn statement(&self, url: &str) -> impl std::future::Future<Output = Result<String>> + Send;
}

impl Source for HttpFetcher {
    async fn list(&self, url: &str) -> Result<String> {
        self.get_typed(url, "application/json").await
    }

    async fn statement(&self, url: &str) -> Result<String> {
        self.get(url).await
    }
}
