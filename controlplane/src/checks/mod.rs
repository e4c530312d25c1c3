//! The control plane's side of entity checks: [`Env`] gives `pharos_shared::checks` the
//! outbound fetcher, the trust anchor repository and the trust mark standings of one snapshot,
//! operator HTTP services ([`outbound`]) and operator programs ([`process`]); [`entity`]
//! fetches and verifies the Entity Configuration a check is run on.

pub mod entity;
pub mod outbound;
pub mod process;

use std::sync::Arc;

use pharos_shared::chain::{AnchorSpec, Fetcher};
use pharos_shared::checks::{CheckEnv, HttpAnswer, HttpCall, ProcessCall, ProcessOutcome};
use pharos_shared::snapshot::Snapshot;
use pharos_shared::trust_mark_issuer::{Standing, standing};

pub use outbound::Outbound;

/// What one check run sees: the snapshot current when it started and the clock reading then,
/// plus the control plane's long-lived [`Outbound`] (its list cache outlives the run).
#[derive(Debug)]
pub struct Env<F> {
    snap: Arc<Snapshot>,
    fetcher: Arc<F>,
    outbound: Arc<Outbound>,
    now: i64,
}

impl<F: Fetcher> Env<F> {
    /// An environment over `snap`, fetching statements with `fetcher`, calling operator
    /// services through `outbound` (the control plane's `cp.checks`), at `now`.
    pub fn new(snap: Arc<Snapshot>, fetcher: Arc<F>, outbound: Arc<Outbound>, now: i64) -> Self {
        Self {
            snap,
            fetcher,
            outbound,
            now,
        }
    }
}

impl<F: Fetcher> CheckEnv for Env<F> {
    type Fetcher = F;

    fn fetcher(&self) -> &F {
        &self.fetcher
    }

    fn now(&self) -> i64 {
        self.now
    }

    fn anchor(&self, entity_id: &str) -> Option<AnchorSpec> {
        // Built as the resolver builds it, so every validator applies the same anchor rules.
        self.snap
            .trust_anchors
            .by_id
            .contains_key(entity_id)
            .then(|| self.snap.trust_anchors.spec(entity_id))
    }

    fn draft_shapes(&self) -> bool {
        self.snap.trust_anchors.profile != pharos_shared::interop::Profile::Strict
    }

    fn standing(&self, trust_mark_type: &str, sub: &str) -> Standing {
        let key = (trust_mark_type.to_owned(), sub.to_owned());
        standing(self.snap.trust_marks.subjects.get(&key).map(|s| &**s))
    }

    async fn http(&self, call: HttpCall) -> Result<HttpAnswer, String> {
        self.outbound.call(call).await
    }

    async fn run(&self, call: ProcessCall) -> ProcessOutcome {
        process::run(call).await
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod env_tests;
