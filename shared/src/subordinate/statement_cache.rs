//! The signed statement about a subordinate, cached beside its record: the slot each record
//! carries ([`StatementSlot`]) and the byte budget all slots share, with CLOCK eviction
//! ([`StatementBudget`]).

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Weak};

use arc_swap::ArcSwapOption;

use super::Subordinate;

/// A signed Subordinate Statement and what it was made from besides the subordinate itself.
#[derive(Debug)]
pub struct SignedStatement {
    /// The general settings' version it applied.
    pub general_version: u64,
    /// The generation of our keys and endpoint registry it was signed under.
    pub statements_generation: u64,
    /// The compact JWS, its entity tag, and when to sign a new one (before `exp`, or at the
    /// next change of the subordinate's or our keys): HTTP caches keep it until then.
    pub signed: crate::http_cache::Tagged,
}

/// The bytes of signed statements all [`StatementSlot`]s may hold together
/// (`cache.statements_max_bytes`). A statement is about a kilobyte: a million subordinates
/// would hold a gigabyte of them beside the registry itself.
///
/// When a new statement finds the budget full, held ones are evicted by CLOCK (second chance):
/// the records holding a statement wait in a ring in the order they were first kept; a hit
/// marks its slot referenced (see [`StatementSlot::get`]); the hand passes over the ring from
/// its front, moves a referenced record to the back with its mark cleared, and evicts the first
/// unmarked one, until the new statement fits. A subject asked for between two passes keeps its
/// statement; one asked for once goes first. The hand moves at most [`SWEEP`] steps for one
/// statement; if there is still no room then, the statement is served and not kept (the next
/// request for it signs again, some 26 µs with ES256).
///
/// The ring is behind a mutex taken only by [`Subordinate::keep_statement`], i.e. on the path
/// that has just signed: serving a held statement takes no lock. With no bound (0) there is no
/// ring at all.
pub struct StatementBudget {
    held: std::sync::atomic::AtomicUsize,
    max: usize,
    evicted: std::sync::atomic::AtomicU64,
    /// The records whose slots hold a statement (and, until the hand passes them, records
    /// replaced by a write or emptied since). `None` when unbounded.
    clock: Option<std::sync::Mutex<std::collections::VecDeque<Weak<Subordinate>>>>,
}

/// How far the hand moves at most to make room for one statement.
const SWEEP: usize = 64;

/// How many ring entries a statement kept without evicting passes over, dropping those of
/// records that are gone (replaced by a write) or hold nothing (an evicting statement's sweep
/// does that as it goes). This bounds the ring whether or not the budget ever fills: the ring
/// gains at most one entry per statement kept without evicting (one that evicts also removes
/// one), and the hand moves `TIDY` > 1 for it, so while the hand goes once round a ring of `n`
/// entries at most `n / TIDY` join and every entry that was dead when the round began leaves;
/// the ring stays within about `TIDY / (TIDY − 1)` times the number of records holding a
/// statement (which the budget bounds) plus `TIDY`. A dead entry keeps its record's own block
/// (about 150 bytes; not what the record pointed to) until the hand passes it.
const TIDY: usize = 4;

impl StatementBudget {
    /// A budget of `max_bytes` (0 = unbounded).
    pub fn new(max_bytes: u64) -> Arc<Self> {
        let max = match usize::try_from(max_bytes) {
            Ok(0) | Err(_) => usize::MAX,
            Ok(m) => m,
        };
        Arc::new(Self {
            held: Default::default(),
            max,
            evicted: Default::default(),
            clock: (max != usize::MAX).then(Default::default),
        })
    }

    /// Bytes held now.
    pub fn held(&self) -> usize {
        self.held.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Statements evicted to make room for others since start.
    pub fn evicted(&self) -> u64 {
        self.evicted.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Entries in the ring now (records holding a statement, and gone ones not yet passed).
    pub fn tracked(&self) -> usize {
        self.clock.as_ref().map_or(0, |c| lock(c).len())
    }

    fn charge(self: &Arc<Self>, bytes: usize) -> Option<Charge> {
        use std::sync::atomic::Ordering;
        self.held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |h| {
                h.checked_add(bytes).filter(|n| *n <= self.max)
            })
            .ok()?;
        Some(Charge {
            budget: self.clone(),
            bytes,
        })
    }
}

impl std::fmt::Debug for StatementBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatementBudget")
            .field("held", &self.held())
            .field("max", &self.max)
            .field("evicted", &self.evicted())
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Every change to the ring is a single push or pop: a panic elsewhere leaves it usable.
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// What the hand does with the entry at the front of the ring.
enum Step {
    /// The record is gone or holds nothing: the entry leaves the ring.
    Drop,
    /// The entry went to the back (its mark cleared, when evicting).
    Keep,
    /// The record's statement was evicted; the entry left the ring.
    Evicted,
}

fn step(ring: &mut std::collections::VecDeque<Weak<Subordinate>>, evict: bool) -> Option<Step> {
    use std::sync::atomic::Ordering::Relaxed;
    let entry = ring.pop_front()?;
    let Some(sub) = entry.upgrade() else {
        return Some(Step::Drop);
    };
    let slot = &sub.statement;
    if slot.held.load().is_none() {
        slot.queued.store(false, Relaxed);
        return Some(Step::Drop);
    }
    if !evict {
        ring.push_back(entry);
        return Some(Step::Keep);
    }
    if slot.referenced.swap(false, Relaxed) {
        ring.push_back(entry);
        return Some(Step::Keep);
    }
    slot.queued.store(false, Relaxed);
    // Gives the bytes back once no reader holds the statement any more (readers only clone
    // the tagged body out, so at once but for a concurrent hit).
    slot.held.store(None);
    Some(Step::Evicted)
}

/// Bytes of a [`StatementBudget`] in use by one held statement, given back when it goes.
#[derive(Debug)]
struct Charge {
    budget: Arc<StatementBudget>,
    bytes: usize,
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.budget
            .held
            .fetch_sub(self.bytes, std::sync::atomic::Ordering::AcqRel);
    }
}

/// Where the data plane keeps the signed statement about one subordinate version, beside the
/// record it was made from: a cached fetch is then the one map lookup that finds the
/// subordinate, and the statement goes away with the version it describes (a write replaces
/// the record, so a fresh slot comes with it). Lock-free to read; a statement made under other
/// general settings or keys is simply replaced. Filled by [`Subordinate::keep_statement`].
///
/// It is a cache, not part of the record's value: clones start empty and it never makes two
/// records unequal.
#[derive(Default)]
pub struct StatementSlot {
    held: ArcSwapOption<(SignedStatement, Charge)>,
    /// Served since the clock hand last passed (see [`StatementBudget`]).
    referenced: AtomicBool,
    /// In the budget's ring; changed only under its mutex.
    queued: AtomicBool,
}

impl StatementSlot {
    /// The statement if it was made under `general_version` and `statements_generation` and is not
    /// due for refreshing at `now`.
    pub fn get(
        &self,
        general_version: u64,
        statements_generation: u64,
        now: i64,
    ) -> Option<crate::http_cache::Tagged> {
        use std::sync::atomic::Ordering::Relaxed;
        let guard = self.held.load();
        let (s, _) = guard.as_deref()?;
        let fresh = s.general_version == general_version
            && s.statements_generation == statements_generation
            && now < s.signed.fresh_until;
        // Read before writing: a hot statement's line is written once per pass of the hand,
        // not on every hit.
        if fresh && !self.referenced.load(Relaxed) {
            self.referenced.store(true, Relaxed);
        }
        fresh.then(|| s.signed.clone())
    }
}

impl Subordinate {
    /// Keeps `statement` in this record's slot, replacing whatever was there, if `budget` has
    /// room for it beside what it holds (the replaced statement's bytes count until it is
    /// gone), evicting others if needed (see [`StatementBudget`]); whether it was kept.
    pub fn keep_statement(
        self: &Arc<Self>,
        statement: SignedStatement,
        budget: &Arc<StatementBudget>,
    ) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        // The body and tag, and the record, slot and reference counts around them.
        let bytes = statement.signed.held_len() + 160;
        let slot = &self.statement;
        let Some(clock) = &budget.clock else {
            let Some(charge) = budget.charge(bytes) else {
                return false;
            };
            slot.held.store(Some(Arc::new((statement, charge))));
            return true;
        };
        if bytes > budget.max {
            return false;
        }
        let mut ring = lock(clock);
        let charge = match budget.charge(bytes) {
            Some(charge) => {
                for _ in 0..TIDY {
                    if step(&mut ring, false).is_none() {
                        break;
                    }
                }
                charge
            }
            None => {
                let mut sweep = 0;
                loop {
                    match step(&mut ring, true) {
                        None => return false,
                        Some(Step::Evicted) => {
                            budget.evicted.fetch_add(1, Relaxed);
                        }
                        Some(Step::Drop | Step::Keep) => {}
                    }
                    // Room comes back from evictions, and from records dropped meanwhile.
                    if let Some(charge) = budget.charge(bytes) {
                        break charge;
                    }
                    sweep += 1;
                    if sweep == SWEEP {
                        return false;
                    }
                }
            }
        };
        slot.held.store(Some(Arc::new((statement, charge))));
        if slot.queued.swap(true, Relaxed) {
            // Signed again (refreshed, or new settings) while in the ring: asked for again.
            slot.referenced.store(true, Relaxed);
        } else {
            slot.referenced.store(false, Relaxed);
            ring.push_back(Arc::downgrade(self));
        }
        true
    }
}

impl Clone for StatementSlot {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl PartialEq for StatementSlot {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for StatementSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let cached = self.held.load().is_some();
        f.debug_struct("StatementSlot")
            .field("cached", &cached)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::subordinate::tests::sub;
    fn statement(body: &[u8]) -> SignedStatement {
        SignedStatement {
            general_version: 1,
            statements_generation: 1,
            signed: crate::http_cache::Tagged::new(bytes::Bytes::copy_from_slice(body), 100),
        }
    }

    /// What a statement with a body of `n` bytes is charged.
    fn charged(n: usize) -> usize {
        n + crate::http_cache::ETAG_LEN + 160
    }

    fn held(s: &Subordinate) -> bool {
        s.statement.get(1, 1, 0).is_some()
    }

    #[test]
    fn statement_slot_serves_only_what_matches() {
        let s = sub("https://a", &[], None);
        assert_eq!(s.statement.get(1, 1, 0), None);
        s.keep_statement(
            SignedStatement {
                general_version: 1,
                statements_generation: 2,
                signed: crate::http_cache::Tagged::new(bytes::Bytes::from_static(b"jws"), 100),
            },
            &StatementBudget::new(0),
        );
        assert_eq!(s.statement.get(1, 2, 99).unwrap().body(), &b"jws"[..]);
        assert_eq!(s.statement.get(1, 2, 100), None, "due for refreshing");
        assert_eq!(s.statement.get(2, 2, 0), None, "other general settings");
        assert_eq!(s.statement.get(1, 3, 0), None, "other keys");
        assert_eq!(
            s.statement.clone().get(1, 2, 0),
            None,
            "a clone starts empty"
        );
    }

    #[test]
    fn the_budget_bounds_what_slots_hold_and_gets_bytes_back_when_they_go() {
        let one = charged(3);
        let budget = StatementBudget::new(u64::try_from(2 * one).unwrap());
        let (a, b, c) = (
            sub("https://a", &[], None),
            sub("https://b", &[], None),
            sub("https://c", &[], None),
        );
        assert!(a.keep_statement(statement(b"jws"), &budget));
        assert!(b.keep_statement(statement(b"jws"), &budget));
        assert_eq!(budget.held(), 2 * one);
        assert!(
            c.keep_statement(statement(b"jws"), &budget),
            "the oldest statement made room"
        );
        assert_eq!(budget.held(), 2 * one);
        assert_eq!(budget.evicted(), 1);
        assert!(!held(&a) && held(&b) && held(&c));
        drop(b);
        assert_eq!(budget.held(), one, "a dropped record gives its bytes back");
        assert!(
            !a.keep_statement(statement(&[b'x'; 4096]), &budget),
            "more than the whole budget: served, not kept"
        );
        assert!(held(&c), "and nothing was evicted for it");
        assert_eq!(budget.held(), one);
        drop(c);
        assert_eq!(budget.held(), 0);
        let d = sub("https://d", &[], None);
        assert!(d.keep_statement(statement(b"jws"), &budget));
        assert_eq!(budget.tracked(), 1, "the hand dropped the gone records");
    }

    #[test]
    fn a_subject_asked_for_between_evictions_keeps_its_statement() {
        let one = charged(3);
        let budget = StatementBudget::new(u64::try_from(4 * one).unwrap());
        let hot = sub("https://hot", &[], None);
        assert!(hot.keep_statement(statement(b"jws"), &budget));
        let cold: Vec<_> = (0..100)
            .map(|i| {
                let s = sub(&format!("https://cold/{i}"), &[], None);
                assert!(held(&hot), "hot evicted before cold {i}");
                assert!(s.keep_statement(statement(b"jws"), &budget));
                assert!(budget.held() <= 4 * one);
                s
            })
            .collect();
        assert!(held(&hot));
        assert_eq!(cold.iter().filter(|s| held(s)).count(), 3);
        assert!(
            cold[97..].iter().all(|s| held(s)),
            "the newest cold ones are held"
        );
        assert_eq!(budget.evicted(), 97);
        assert_eq!(budget.held(), 4 * one);
        // Left alone, the hot subject goes as the others.
        let late: Vec<_> = (0..4)
            .map(|i| {
                let s = sub(&format!("https://late/{i}"), &[], None);
                assert!(s.keep_statement(statement(b"jws"), &budget));
                s
            })
            .collect();
        assert!(!held(&hot), "not asked for since the hand last passed");
        drop((cold, late));
        assert_eq!(budget.held(), 0, "every byte came back");
    }

    #[test]
    fn the_budget_is_never_exceeded_and_accounts_for_every_byte() {
        let max = 40 * charged(600);
        let budget = StatementBudget::new(u64::try_from(max).unwrap());
        let subs: Vec<_> = (0..200)
            .map(|i| sub(&format!("https://s/{i}"), &[], None))
            .collect();
        let mut sizes = vec![0; subs.len()];
        // (hits, asks) of the five hot subjects and of the others.
        let (mut hot, mut cold) = ((0, 0), (0, 0));
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for round in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Half the requests are for five subjects, half for any of 200.
            let r = usize::try_from(x >> 8).unwrap();
            let i = if x.is_multiple_of(2) { r % 5 } else { r % 200 };
            let count = if i < 5 { &mut hot } else { &mut cold };
            count.1 += 1;
            if held(&subs[i]) {
                count.0 += 1;
            } else {
                let n = 100 + (r >> 12) % 1_000;
                if subs[i].keep_statement(statement(&b"x".repeat(n)), &budget) {
                    sizes[i] = charged(n);
                }
            }
            assert!(budget.held() <= max, "round {round}");
            let accounted: usize = (0..subs.len())
                .filter(|i| subs[*i].statement.held.load().is_some())
                .map(|i| sizes[i])
                .sum();
            assert_eq!(budget.held(), accounted, "round {round}");
            assert!(budget.tracked() <= 200, "round {round}");
        }
        let ratio = |(hits, asks): (u32, u32)| f64::from(hits) / f64::from(asks);
        assert!(ratio(hot) > 0.95, "hot hit ratio {}", ratio(hot));
        assert!(ratio(cold) < 0.3, "cold hit ratio {}", ratio(cold));
        drop(subs);
        assert_eq!(budget.held(), 0);
    }

    #[test]
    fn the_ring_stays_bounded_when_records_are_replaced_and_the_budget_never_fills() {
        let budget = StatementBudget::new(1 << 40);
        let live: Vec<_> = (0..100)
            .map(|i| {
                let s = sub(&format!("https://live/{i}"), &[], None);
                assert!(s.keep_statement(statement(b"jws"), &budget));
                s
            })
            .collect();
        for i in 0..10_000 {
            // A write replaces the record: the old one, and its statement, go.
            let s = sub(&format!("https://churn/{i}"), &[], None);
            assert!(s.keep_statement(statement(b"jws"), &budget));
            drop(s);
            // Held statements signed again (new settings) do not join twice.
            assert!(live[i % 100].keep_statement(statement(b"jws"), &budget));
            assert!(
                budget.tracked() <= 100 * TIDY / (TIDY - 1) + TIDY + 1,
                "{} entries after {i} replacements",
                budget.tracked()
            );
        }
        assert!(live.iter().all(|s| held(s)));
        assert_eq!(budget.evicted(), 0);
        assert_eq!(budget.held(), 100 * charged(3));
    }

    #[test]
    fn without_a_bound_nothing_is_tracked() {
        let unbounded = StatementBudget::new(0);
        let subs: Vec<_> = (0..1_000)
            .map(|i| {
                let s = sub(&format!("https://s/{i}"), &[], None);
                assert!(s.keep_statement(statement(b"jws"), &unbounded));
                s
            })
            .collect();
        assert_eq!(unbounded.tracked(), 0);
        assert_eq!(unbounded.evicted(), 0);
        assert_eq!(unbounded.held(), 1_000 * charged(3));
        drop(subs);
        assert_eq!(unbounded.held(), 0);
    }
}
