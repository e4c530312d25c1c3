//! What the Admin API may do to the resolver of this process without depending on the data
//! plane that holds it: forget what it cached (`POST /resolver/flush`), and explain a
//! resolution step by step (`GET /explain`).

use std::future::Future;
use std::pin::Pin;

use pharos_shared::chain::Explanation;

/// What to explain: a subject, optionally one Trust Anchor and Entity Types.
#[derive(Clone, Copy, Debug)]
pub struct ExplainQuery<'a> {
    /// The Entity to resolve.
    pub sub: &'a str,
    /// The Trust Anchor to resolve towards; `None`: every anchor this resolver accepts by
    /// configuration (the resolve endpoint's list, or the trust anchor repository and this
    /// entity).
    pub anchor: Option<&'a str>,
    /// Entity Types to keep in the resolved metadata (empty: all).
    pub entity_types: &'a [String],
}

/// The resolver's caches, as the control plane sees them.
pub trait ResolverCaches: Send + Sync + std::fmt::Debug {
    /// Forgets the cached statements, resolutions and failures about `sub` (all, without
    /// one) and every finished response, so the next request resolves anew.
    fn flush<'a>(&'a self, sub: Option<&'a str>) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

    /// Resolves `q.sub` as the resolve endpoint would (the same anchors rule, the same
    /// statement cache and outbound bounds), recording every step (see
    /// [`pharos_shared::chain::explain`]). A resolution that fails is explained too.
    fn explain<'a>(
        &'a self,
        q: ExplainQuery<'a>,
    ) -> Pin<Box<dyn Future<Output = Explanation> + Send + 'a>>;
}
