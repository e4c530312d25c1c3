//! The two ends of the snapshot's publication point.
//!
//! One `ArcSwap` connects the planes. Handing the data plane the `ArcSwap` itself would let it
//! `store()` a snapshot of its own making, so that "the control plane is the only writer" would
//! rest on discipline; the data plane gets a [`SnapshotReader`] instead, which can only load,
//! and only the owner of the [`SnapshotPublisher`] can publish.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

use arc_swap::{ArcSwap, ArcSwapOption, Guard};

use super::Snapshot;
use crate::http_cache::Tagged;

/// The publication point: the current snapshot, its generation, and the Entity Configuration
/// signed from it, side by side in one cache line. A request for the Entity Configuration
/// reads that line and the signed answer, without reaching the snapshot or the data plane:
/// with a thousand hosted entities and a random one per request, each of those was one more
/// cache miss that had to finish before the answer could be found (BENCHMARKS.md, "Hosted
/// entities").
#[repr(C, align(64))]
struct Point {
    /// The generation of `current`, stored after it: never ahead of it.
    generation: AtomicU64,
    /// The size class of the kept Entity Configuration: which of the three cells holds it.
    class: AtomicU8,
    /// The signed Entity Configuration, and the generation it was signed from, in the cell of
    /// the smallest [`Kept`] it fits; the other two are empty.
    small: ArcSwapOption<Small>,
    medium: ArcSwapOption<Medium>,
    large: ArcSwapOption<Large>,
    current: ArcSwap<Snapshot>,
}

const SMALL: u8 = 0;
const MEDIUM: u8 = 1;
const LARGE: u8 = 2;

/// The three sizes of [`Kept`], 1, 2 and 4 KiB with their counts.
type Small = Kept<{ kept_inline(1024) }>;
type Medium = Kept<{ kept_inline(2048) }>;
type Large = Kept<{ kept_inline(4096) }>;

/// An answer signed from one generation's snapshot.
#[derive(Debug)]
pub struct Signed {
    /// The generation of the snapshot it was made from.
    pub generation: u64,
    /// The signed bytes, their tag and freshness.
    pub tagged: Tagged,
}

/// Bytes of an Entity Configuration (its tag, then its body) a [`Kept`] holds in itself when
/// the whole allocation, with its reference counts, is `size` bytes.
const fn kept_inline(size: usize) -> usize {
    size - 2 * size_of::<usize>() - size_of::<(u64, i64, usize)>() - size_of::<Option<Tagged>>()
}

/// An Entity Configuration as the publication point keeps it: its generation, its freshness,
/// then its tag and body in the same allocation, so that the line a request reads to know the
/// answer is current also holds the reference count it adds to, and the tag, with the body
/// following on the next lines. With a random one of many entities per request, the answer
/// kept apart from its bytes cost two more cache misses, each waiting for the one before: the
/// buffer's reference count, and the tag (BENCHMARKS.md, "Hosted entities").
///
/// It comes in three sizes (1, 2 and 4 KiB with its counts), and an answer is kept in the
/// smallest it fits: an unused tail is not free. Every 4 KiB answer is written whole, about a
/// page each; with a thousand hosted entities' short answers kept in 1 KiB, the
/// process held 3.2 MB less (BENCHMARKS.md, "thirteenth session"), and on an Intel host a
/// 1 KiB one serving a short answer measured about 3 % faster ("twelfth session"). An answer
/// too long for 4 KiB is kept as signed.
#[repr(C)]
struct Kept<const N: usize> {
    generation: u64,
    fresh_until: i64,
    /// Bytes of `inline` in use; 0 when the answer is `spilled`.
    len: usize,
    inline: [u8; N],
    spilled: Option<Tagged>,
}

// The counts, the fields before `inline` and the tag fill the first line.
const _: () = assert!(
    2 * size_of::<usize>() + std::mem::offset_of!(Small, inline) + crate::http_cache::ETAG_LEN
        == 64
);

impl<const N: usize> Kept<N> {
    /// Bytes of the tag and body it holds in itself.
    const INLINE: usize = N;

    /// `signed` kept in itself when it fits, else as signed.
    fn of(signed: Signed) -> Arc<Self> {
        let held = signed.tagged.held();
        let mut kept = Self {
            generation: signed.generation,
            fresh_until: signed.tagged.fresh_until,
            len: 0,
            inline: [0; N],
            spilled: None,
        };
        match kept.inline.get_mut(..held.len()) {
            Some(to) => {
                to.copy_from_slice(held);
                kept.len = held.len();
            }
            None => kept.spilled = Some(signed.tagged),
        }
        Arc::new(kept)
    }

    /// The tag, then the body. (`len` first: `spilled` is on the allocation's last line.)
    fn held(&self) -> &[u8] {
        match (self.len, &self.spilled) {
            (0, Some(tagged)) => tagged.held(),
            (len, _) => self.inline.get(..len).unwrap_or_default(),
        }
    }

    /// The answer in `cell`, if it was signed from `generation` and is fresh at `now`.
    fn current(cell: &ArcSwapOption<Self>, generation: u64, now: i64) -> Option<Tagged> {
        let kept = cell.load();
        kept.as_ref()
            .filter(|k| k.generation == generation && now < k.fresh_until)
            .map(|k| Tagged::held_by(Arc::clone(k), Self::held, k.fresh_until))
    }

    /// The generation of the answer in `cell`, if there is one.
    fn generation_in(cell: &ArcSwapOption<Self>) -> Option<u64> {
        cell.load().as_ref().map(|k| k.generation)
    }
}

impl<const N: usize> std::fmt::Debug for Kept<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kept")
            .field("generation", &self.generation)
            .field("fresh_until", &self.fresh_until)
            .field("len", &self.held().len())
            .finish()
    }
}

impl Point {
    fn new(first: Snapshot) -> Self {
        Self {
            generation: AtomicU64::new(first.generation),
            class: AtomicU8::new(SMALL),
            small: ArcSwapOption::empty(),
            medium: ArcSwapOption::empty(),
            large: ArcSwapOption::empty(),
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

    /// The Entity Configuration signed from the current generation, if one is kept and still
    /// fresh at `now`.
    pub fn entity_configuration(&self, now: i64) -> Option<Tagged> {
        let point = &*self.0;
        let generation = self.generation();
        match point.class.load(Ordering::Acquire) {
            SMALL => Kept::current(&point.small, generation, now),
            MEDIUM => Kept::current(&point.medium, generation, now),
            _ => Kept::current(&point.large, generation, now),
        }
    }

    /// Keeps `signed` as the Entity Configuration, unless one signed from a later generation
    /// is kept (a request that held an older snapshot while it signed). A data plane's
    /// signers take turns (its signing lock); should two ever race here, the older answer is
    /// still never served, as it does not match the current generation. A request that read
    /// the class just before it changed finds its cell emptied (and goes to the handler, as
    /// when nothing is kept), or still holding the answer this one replaces, which the
    /// generation and freshness checks judge as they did a moment before.
    pub fn keep_entity_configuration(&self, signed: Signed) {
        let point = &*self.0;
        let kept = match point.class.load(Ordering::Acquire) {
            SMALL => Kept::generation_in(&point.small),
            MEDIUM => Kept::generation_in(&point.medium),
            _ => Kept::generation_in(&point.large),
        };
        if kept.is_some_and(|g| g > signed.generation) {
            return;
        }
        let len = signed.tagged.held().len();
        let class = if len <= Small::INLINE {
            point.small.store(Some(Kept::of(signed)));
            SMALL
        } else if len <= Medium::INLINE {
            point.medium.store(Some(Kept::of(signed)));
            MEDIUM
        } else {
            point.large.store(Some(Kept::of(signed)));
            LARGE
        };
        point.class.store(class, Ordering::Release);
        if class != SMALL {
            point.small.store(None);
        }
        if class != MEDIUM {
            point.medium.store(None);
        }
        if class != LARGE {
            point.large.store(None);
        }
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
        // Made here rather than by the first request that needs it.
        let _ = next.ready();
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use bytes::Bytes;

    /// A kept answer is one allocation of 1, 2 or 4 KiB with its counts (see `Kept`), and
    /// the publication point one line.
    #[test]
    fn kept_answers_come_in_three_sizes() {
        let counts = 2 * size_of::<usize>();
        assert_eq!(size_of::<Small>() + counts, 1024);
        assert_eq!(size_of::<Medium>() + counts, 2048);
        assert_eq!(size_of::<Large>() + counts, 4096);
        assert_eq!(size_of::<Point>(), 64);
    }

    /// An answer is served as signed whichever size keeps it, and one too long to keep in
    /// itself is kept as signed.
    #[test]
    fn answers_of_every_length_are_served_as_signed() {
        let publisher = SnapshotPublisher::new(super::super::ready::tests::snap(vec![], &[]));
        let reader = publisher.reader();
        // Each size's longest answer and one byte more, then back to the smallest: the answer
        // read is the one kept last, whichever cell holds it.
        let tag = crate::http_cache::ETAG_LEN;
        let mut lens = vec![];
        for inline in [Small::INLINE, Medium::INLINE, Large::INLINE] {
            lens.extend([inline - tag, inline - tag + 1]);
        }
        for len in lens.into_iter().chain([3 * 4096, 10, Medium::INLINE - tag]) {
            let tagged = Tagged::new(Bytes::from(vec![b'a'; len]), 100);
            reader.keep_entity_configuration(Signed {
                generation: 1,
                tagged: tagged.clone(),
            });
            let kept = reader.entity_configuration(0).unwrap();
            assert_eq!(kept, tagged, "{len}");
            assert_eq!(kept.body().len(), len);
            // The cells of the other sizes are emptied: a smaller answer frees the larger one.
            let point = &publisher.0;
            let held = [
                point.small.load().is_some(),
                point.medium.load().is_some(),
                point.large.load().is_some(),
            ];
            assert_eq!(held.iter().filter(|h| **h).count(), 1, "{len}: {held:?}");
        }
    }

    /// What is kept is served as it was signed, while it is fresh and its generation current.
    #[test]
    fn the_kept_entity_configuration_is_served_as_signed() {
        let publisher = SnapshotPublisher::new(super::super::ready::tests::snap(vec![], &[]));
        let reader = publisher.reader();
        assert!(reader.entity_configuration(0).is_none());
        let tagged = Tagged::new(Bytes::from_static(b"header.payload.signature"), 100);
        reader.keep_entity_configuration(Signed {
            generation: 1,
            tagged: tagged.clone(),
        });
        assert_eq!(reader.entity_configuration(99), Some(tagged.clone()));
        assert!(reader.entity_configuration(100).is_none(), "stale");
        // An answer signed from an older generation does not replace it.
        reader.keep_entity_configuration(Signed {
            generation: 0,
            tagged: Tagged::new(Bytes::from_static(b"older"), 100),
        });
        assert_eq!(reader.entity_configuration(0), Some(tagged));
        // A new snapshot: the kept answer is no longer its.
        let mut next = super::super::ready::tests::snap(vec![], &[]);
        next.generation = 2;
        publisher.publish(Arc::new(next));
        assert!(reader.entity_configuration(0).is_none());
    }
}
