//! The poll schedule of one refresher: per polled entity its settings, when it is due next,
//! and its backoff. One entry is one entity's "task"; starting, restarting and stopping a
//! task are [`Schedule::sync`] outcomes, so they are tested without spawning anything.

use std::collections::HashMap;

use pharos_shared::refresh::Backoff;

/// One polled entity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry<S> {
    /// The settings the entry was (re)started with.
    pub settings: S,
    /// Unix seconds at which the next poll is due.
    pub next_at: i64,
    /// Failures since the last success.
    pub backoff: Backoff,
}

/// What [`Schedule::sync`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Synced {
    /// A new entry, due at once.
    Started,
    /// The settings changed: the entry starts over, due at once, backoff reset.
    Restarted,
    /// The entity is no longer polled.
    Stopped,
    /// Nothing changed.
    Unchanged,
}

/// Entries by entity identifier.
#[derive(Debug)]
pub struct Schedule<S> {
    entries: HashMap<String, Entry<S>>,
    /// Entries whose last poll failed, kept as entries change so that `/metrics` reads it
    /// without walking a million subordinates.
    failing: usize,
}

impl<S> Default for Schedule<S> {
    fn default() -> Self {
        Self {
            entries: HashMap::new(),
            failing: 0,
        }
    }
}

/// Whether `e`'s last poll failed.
fn is_failing<S>(e: &Entry<S>) -> bool {
    e.backoff.failures() > 0
}

impl<S: PartialEq + Clone> Schedule<S> {
    /// Brings `id`'s entry in line with `wanted` (`None` = not polled) at `now`.
    pub fn sync(&mut self, id: &str, wanted: Option<S>, now: i64) -> Synced {
        match (wanted, self.entries.get(id)) {
            (None, None) => Synced::Unchanged,
            (None, Some(_)) => {
                self.forget(id);
                Synced::Stopped
            }
            (Some(s), Some(e)) if e.settings == s => Synced::Unchanged,
            (Some(s), existing) => {
                let outcome = if existing.is_some() {
                    Synced::Restarted
                } else {
                    Synced::Started
                };
                let entry = Entry {
                    settings: s,
                    next_at: now,
                    backoff: Backoff::default(),
                };
                self.forget(id);
                self.entries.insert(id.to_owned(), entry);
                outcome
            }
        }
    }

    /// Removes `id`'s entry, if any, from the entries and the failing count.
    fn forget(&mut self, id: &str) {
        if self.entries.remove(id).is_some_and(|e| is_failing(&e)) {
            self.failing = self.failing.saturating_sub(1);
        }
    }

    /// Stops every entry whose id `keep` rejects.
    pub fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        let mut failing = self.failing;
        self.entries.retain(|id, e| {
            let kept = keep(id);
            if !kept && is_failing(e) {
                failing = failing.saturating_sub(1);
            }
            kept
        });
        self.failing = failing;
    }

    /// Entities due at `now`, with the settings to poll them with.
    pub fn due(&self, now: i64) -> Vec<(String, S)> {
        self.entries
            .iter()
            .filter(|(_, e)| e.next_at <= now)
            .map(|(id, e)| (id.clone(), e.settings.clone()))
            .collect()
    }

    /// Records a successful poll: the backoff resets, the next poll is `interval` from `now`.
    /// Ignored when the entry was stopped or restarted with other settings meanwhile.
    pub fn succeeded(&mut self, id: &str, settings: &S, now: i64, interval: i64) {
        if let Some(e) = self.entries.get_mut(id).filter(|e| e.settings == *settings) {
            if is_failing(e) {
                self.failing = self.failing.saturating_sub(1);
            }
            e.backoff.reset();
            e.next_at = now + interval.max(1);
        }
    }

    /// Records a failed poll and returns the retry delay (same conditions as
    /// [`Self::succeeded`]).
    pub fn failed(&mut self, id: &str, settings: &S, now: i64) -> Option<i64> {
        let e = self
            .entries
            .get_mut(id)
            .filter(|e| e.settings == *settings)?;
        if !is_failing(e) {
            self.failing += 1;
        }
        let delay = e.backoff.fail_secs();
        e.next_at = now + delay;
        Some(delay)
    }

    /// [`Self::failed`] with the caller's delay rule: `delay` gets the number of consecutive
    /// failures, this one included (held trust marks back off from their own rate limit).
    pub fn failed_with(
        &mut self,
        id: &str,
        settings: &S,
        now: i64,
        delay: impl FnOnce(u32) -> i64,
    ) -> Option<i64> {
        let e = self
            .entries
            .get_mut(id)
            .filter(|e| e.settings == *settings)?;
        if !is_failing(e) {
            self.failing += 1;
        }
        e.backoff.fail();
        let d = delay(e.backoff.failures()).max(1);
        e.next_at = now + d;
        Some(d)
    }

    /// The earliest due time, if anything is polled.
    pub fn next_wake(&self) -> Option<i64> {
        self.entries.values().map(|e| e.next_at).min()
    }

    /// One entry (tests and diagnostics).
    pub fn get(&self, id: &str) -> Option<&Entry<S>> {
        self.entries.get(id)
    }

    /// How many polled entities failed their last poll.
    pub fn failing(&self) -> usize {
        self.failing
    }

    /// Every polled entity with its failures since its last success.
    pub fn failures(&self) -> impl Iterator<Item = (&str, u32)> {
        self.entries
            .iter()
            .map(|(id, e)| (id.as_str(), e.backoff.failures()))
    }

    /// How many entities are polled.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is polled.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn start_restart_stop() {
        let mut s = Schedule::default();
        assert_eq!(s.sync("a", Some(10), 100), Synced::Started);
        assert_eq!(s.get("a").unwrap().next_at, 100);
        s.succeeded("a", &10, 100, 10);
        assert_eq!(s.sync("a", Some(10), 105), Synced::Unchanged);
        assert_eq!(s.get("a").unwrap().next_at, 110);
        // A changed setting restarts at once.
        assert_eq!(s.sync("a", Some(20), 105), Synced::Restarted);
        assert_eq!(s.get("a").unwrap().next_at, 105);
        assert_eq!(s.sync("a", None, 106), Synced::Stopped);
        assert!(s.is_empty() && s.next_wake().is_none());
    }

    #[test]
    fn failures_back_off_and_a_success_resets() {
        let mut s = Schedule::default();
        s.sync("a", Some(()), 0);
        let delays: Vec<i64> = (0..10).map(|_| s.failed("a", &(), 0).unwrap()).collect();
        assert_eq!(delays, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300]);
        assert_eq!(s.next_wake(), Some(300));
        s.succeeded("a", &(), 1_000, 50);
        assert_eq!(s.get("a").unwrap().next_at, 1_050);
        assert_eq!(s.failed("a", &(), 1_050), Some(1));
    }

    #[test]
    fn a_caller_rule_sets_the_failure_delay_and_a_success_resets_the_count() {
        let mut s = Schedule::default();
        s.sync("a", Some(()), 0);
        let rule = |f: u32| 60 * i64::from(f);
        assert_eq!(s.failed_with("a", &(), 0, rule), Some(60));
        assert_eq!(s.failed_with("a", &(), 60, rule), Some(120));
        assert_eq!(s.get("a").unwrap().next_at, 180);
        s.succeeded("a", &(), 200, 10);
        assert_eq!(s.failed_with("a", &(), 210, rule), Some(60));
    }

    #[test]
    fn the_failing_count_follows_failures_successes_restarts_and_removals() {
        let mut s = Schedule::default();
        for id in ["a", "b", "c", "d"] {
            s.sync(id, Some(1), 0);
        }
        s.failed("a", &1, 0);
        s.failed("a", &1, 1);
        s.failed_with("b", &1, 0, |_| 5);
        s.failed("c", &1, 0);
        s.failed("d", &1, 0);
        assert_eq!(s.failing(), 4, "a failing entry counts once");
        s.succeeded("a", &1, 2, 10);
        assert_eq!(s.failing(), 3);
        // A restart starts over with no failures; a stop forgets the entry.
        s.sync("b", Some(2), 3);
        s.sync("c", None, 3);
        assert_eq!(s.failing(), 1);
        s.retain(|id| id != "d");
        assert_eq!(s.failing(), 0);
        s.failed("a", &1, 4);
        let failures: Vec<_> = s.failures().collect();
        assert_eq!(failures.len(), 2);
        assert!(failures.contains(&("a", 1)) && failures.contains(&("b", 0)));
    }

    #[test]
    fn results_of_a_stale_poll_are_ignored() {
        let mut s = Schedule::default();
        s.sync("a", Some(1), 0);
        s.sync("a", Some(2), 5);
        s.succeeded("a", &1, 5, 1_000);
        assert_eq!(s.get("a").unwrap().next_at, 5);
        assert_eq!(s.failed("a", &1, 5), None);
        assert_eq!(s.due(5), vec![("a".to_owned(), 2)]);
    }
}
