//! The two ends of the snapshot's publication point.
//!
//! One `ArcSwap` connects the planes. Handing the data plane the `ArcSwap` itself would let it
//! `store()` a snapshot of its own making, so that "the control plane is the only writer" would
//! rest on discipline; the data plane gets a [`SnapshotReader`] instead, which can only load,
//! and only the owner of the [`SnapshotPublisher`] can publish.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arc_swap::{ArcSwap, Guard};

use super::Snapshot;

/// The publication point: the current snapshot, and its generation beside it. A ready answer
/// is checked against the generation without reaching the snapshot itself: with a thousand
/// hosted entities and a random one per request, that snapshot is one more cache miss, which
/// must finish before the answer can be found (BENCHMARKS.md, "Hosted entities").
struct Point {
    current: ArcSwap<Snapshot>,
    /// The generation of `current`, stored after it: never ahead of it.
    generation: AtomicU64,
}

impl Point {
    fn new(first: Snapshot) -> Self {
        Self {
            generation: AtomicU64::new(first.generation),
            current: ArcSwap::from_pointee(first),
        }
    }
}

/// The read-only end: what the data plane and its background tasks hold.
#[derive(Clone)]
pub struct SnapshotReader(Arc<Point>);

impl SnapshotReader {
    /// The current snapshot without touching its shared reference count: for synchronous
    /// work only. A guard kept across an `.await` pins a snapshot (and a slot of arc-swap's
    /// per-thread debt list) for as long as the await lasts; use [`Self::load_full`] there.
    pub fn load(&self) -> Guard<Arc<Snapshot>> {
        self.0.current.load()
    }

    /// The current snapshot as an owned `Arc`, for work that awaits or outlives the request.
    pub fn load_full(&self) -> Arc<Snapshot> {
        self.0.current.load_full()
    }

    /// The generation of the current snapshot, without loading it: an answer made for this
    /// generation is current. During a publication it may still name the previous one (as
    /// for a request that came a moment earlier); once `publish` returns, it names the new one.
    pub fn generation(&self) -> u64 {
        self.0.generation.load(Ordering::Acquire)
    }
}

impl std::fmt::Debug for SnapshotReader {
    // The snapshot itself is 100,000 subordinates; its generation identifies it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SnapshotReader")
            .field("generation", &self.generation())
            .finish()
    }
}

/// The writing end, kept by the control plane (and by tests that play its part).
pub struct SnapshotPublisher(Arc<Point>);

impl SnapshotPublisher {
    /// A publication point holding `first`.
    pub fn new(first: Snapshot) -> Self {
        Self(Arc::new(Point::new(first)))
    }

    /// A read-only handle on this publication point.
    pub fn reader(&self) -> SnapshotReader {
        SnapshotReader(self.0.clone())
    }

    /// Makes `next` the snapshot every later load sees.
    pub fn publish(&self, next: Arc<Snapshot>) {
        let generation = next.generation;
        self.0.current.store(next);
        self.0.generation.store(generation, Ordering::Release);
    }

    /// The current snapshot (the base of the next one).
    pub fn load_full(&self) -> Arc<Snapshot> {
        self.0.current.load_full()
    }
}

impl std::fmt::Debug for SnapshotPublisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SnapshotPublisher")
            .field("generation", &self.0.generation.load(Ordering::Acquire))
            .finish()
    }
}
