//! What the Admin API may do to the resolver of this process without depending on the data
//! plane that holds it: forget what it cached (`POST /resolver/flush`).

use std::future::Future;
use std::pin::Pin;

/// The resolver's caches, as the control plane sees them.
pub trait ResolverCaches: Send + Sync + std::fmt::Debug {
    /// Forgets the cached statements, resolutions and failures about `sub` (all, without
    /// one) and every finished response, so the next request resolves anew.
    fn flush<'a>(&'a self, sub: Option<&'a str>) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>>;
}
