//! Single flight: concurrent callers asking for the same key share one run of the work and
//! all get its outcome.
//!
//! Two kinds of caller use it. The control plane's commands (enrollment, eligibility checks,
//! on-demand collections) join with their reply channel and return at once: a follower costs
//! one stored `oneshot::Sender` until the leader, a task of its own, finishes ([`Flights::join`]).
//! The data plane's fetch endpoint awaits in place ([`Flights::run`]): when every cached
//! statement is invalidated at once, the burst of requests for one subject signs it once
//! instead of queueing that many signatures on a slow signer.
//!
//! A key's entry lives exactly as long as its flight: the leader's `finish` (or its drop, if
//! the work panicked or was cancelled) removes it, so an outcome is never handed to a caller
//! that arrives after the flight; that caller starts a new one (and reads whatever cache the
//! flight filled).

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::oneshot;

/// The flights in progress, by key.
#[derive(Debug)]
pub struct Flights<K, T> {
    waiting: Mutex<HashMap<K, Vec<oneshot::Sender<T>>>>,
    max_waiters: usize,
}

/// What [`Flights::join`] made of a caller.
#[derive(Debug)]
pub enum Joined<K: Eq + Hash, T> {
    /// No flight was in progress: the caller runs the work and must [`Lead::finish`] it.
    Leader(Lead<K, T>),
    /// The caller's reply will get the outcome of the flight in progress.
    Follower,
    /// The flight has as many waiters as allowed; the reply is handed back unused.
    Full(oneshot::Sender<T>),
}

/// The duty to finish one flight. Dropped without finishing (the work panicked or was
/// cancelled), it ends the flight and drops the waiters' replies, so they learn at once that
/// no answer is coming and the key is free for the next caller.
#[derive(Debug)]
pub struct Lead<K: Eq + Hash, T> {
    flights: Arc<Flights<K, T>>,
    key: K,
    finished: bool,
}

impl<K: Eq + Hash + Clone, T: Clone> Flights<K, T> {
    /// No flights; at most `max_waiters` callers (the leader included) per flight.
    pub fn new(max_waiters: usize) -> Arc<Self> {
        Arc::new(Self {
            waiting: Mutex::new(HashMap::new()),
            max_waiters: max_waiters.max(1),
        })
    }

    /// Adds `reply` to `key`'s flight, starting one if none is in progress.
    pub fn join(self: &Arc<Self>, key: &K, reply: oneshot::Sender<T>) -> Joined<K, T> {
        let mut waiting = self.lock();
        match waiting.entry(key.clone()) {
            Entry::Occupied(mut e) if e.get().len() < self.max_waiters => {
                e.get_mut().push(reply);
                Joined::Follower
            }
            Entry::Occupied(_) => Joined::Full(reply),
            Entry::Vacant(e) => {
                e.insert(vec![reply]);
                Joined::Leader(Lead {
                    flights: self.clone(),
                    key: key.clone(),
                    finished: false,
                })
            }
        }
    }

    /// [`Self::join`] for a caller that runs the work in a task of its own and must bound how
    /// many run at once: `None` when its reply is taken care of (it follows a flight, or the
    /// flight was full and `busy` was sent), else the lead and a permit from `slot`. A leader
    /// that gets no permit ends its flight at once with `busy` for every waiter.
    pub fn lead_with<P>(
        self: &Arc<Self>,
        key: &K,
        reply: oneshot::Sender<T>,
        busy: impl Fn() -> T,
        slot: impl FnOnce() -> Option<P>,
    ) -> Option<(Lead<K, T>, P)> {
        let lead = match self.join(key, reply) {
            Joined::Follower => return None,
            Joined::Full(reply) => {
                let _ = reply.send(busy());
                return None;
            }
            Joined::Leader(lead) => lead,
        };
        // Only the caller starts flights for its keys, so no follower joined since `join`.
        match slot() {
            Some(permit) => Some((lead, permit)),
            None => {
                lead.finish(busy());
                None
            }
        }
    }

    /// The outcome of `work` for `key`, computed once for all callers that overlap in time.
    /// If the computing caller is cancelled, a waiting caller takes the computation over; a
    /// caller finding its flight full computes alone.
    pub async fn run<F, Fut>(self: &Arc<Self>, key: K, work: F) -> T
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = T>,
    {
        let lead = loop {
            let (reply, outcome) = oneshot::channel();
            match self.join(&key, reply) {
                Joined::Leader(lead) => break Some(lead),
                Joined::Full(_) => break None,
                Joined::Follower => {
                    if let Ok(outcome) = outcome.await {
                        return outcome;
                    }
                    // The leader went away without an outcome: try again, maybe as leader.
                }
            }
        };
        let outcome = work().await;
        if let Some(lead) = lead {
            lead.finish(outcome.clone());
        }
        outcome
    }

    /// How many flights are in progress (tests and diagnostics).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no flight is in progress.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// How many callers (the leader included) wait for `key`'s flight, for tests that must
    /// know when a burst has gathered.
    pub fn callers(&self, key: &K) -> usize {
        self.lock().get(key).map_or(0, Vec::len)
    }

    fn take(&self, key: &K) -> Vec<oneshot::Sender<T>> {
        self.lock().remove(key).unwrap_or_default()
    }
}

impl<K, T> Flights<K, T> {
    /// The map stays consistent even if a holder panicked: every operation is one insert,
    /// push or remove.
    fn lock(&self) -> MutexGuard<'_, HashMap<K, Vec<oneshot::Sender<T>>>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<K: Eq + Hash + Clone, T: Clone> Lead<K, T> {
    /// Ends the flight: every waiter gets `outcome` (one that stopped waiting is skipped).
    pub fn finish(mut self, outcome: T) {
        self.finished = true;
        for reply in self.flights.take(&self.key) {
            let _ = reply.send(outcome.clone());
        }
    }
}

impl<K: Eq + Hash, T> Drop for Lead<K, T> {
    fn drop(&mut self) {
        // After `finish` the key may already belong to a newer flight: leave it alone.
        if !self.finished {
            self.flights.lock().remove(&self.key);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    fn key(k: &str) -> String {
        k.to_owned()
    }

    #[tokio::test]
    async fn followers_get_the_leaders_outcome() {
        let f = Flights::new(10);
        let (tx1, rx1) = oneshot::channel();
        let (tx2, rx2) = oneshot::channel();
        let Joined::Leader(lead) = f.join(&key("a"), tx1) else {
            panic!("first caller must lead")
        };
        assert!(matches!(f.join(&key("a"), tx2), Joined::Follower));
        lead.finish(7);
        assert_eq!((rx1.await.unwrap(), rx2.await.unwrap()), (7, 7));
        assert!(f.is_empty());
    }

    #[tokio::test]
    async fn full_flights_hand_the_reply_back() {
        let f = Flights::<String, u8>::new(1);
        let (tx1, _rx1) = oneshot::channel();
        let (tx2, rx2) = oneshot::channel();
        let _lead = f.join(&key("a"), tx1);
        let Joined::Full(back) = f.join(&key("a"), tx2) else {
            panic!("a full flight must refuse")
        };
        back.send(1).unwrap();
        assert_eq!(rx2.await.unwrap(), 1);
    }

    #[tokio::test]
    async fn a_dropped_lead_frees_the_key_and_its_waiters() {
        let f = Flights::<String, u8>::new(10);
        let (tx1, rx1) = oneshot::channel();
        let Joined::Leader(lead) = f.join(&key("a"), tx1) else {
            panic!("first caller must lead")
        };
        drop(lead);
        assert!(rx1.await.is_err());
        let (tx2, _rx2) = oneshot::channel();
        assert!(matches!(f.join(&key("a"), tx2), Joined::Leader(_)));
    }

    #[tokio::test]
    async fn a_finished_lead_leaves_the_next_flight_alone() {
        let f = Flights::<String, u8>::new(10);
        let (tx1, _rx1) = oneshot::channel();
        let Joined::Leader(first) = f.join(&key("a"), tx1) else {
            panic!("first caller must lead")
        };
        let (tx2, rx2) = oneshot::channel();
        // The first flight's waiters are taken before the next flight starts; its lead is
        // dropped only afterwards (as `finish` does at its end).
        let waiters = f.take(&key("a"));
        let Joined::Leader(second) = f.join(&key("a"), tx2) else {
            panic!("the key must be free")
        };
        let mut first = first;
        first.finished = true;
        drop(first);
        drop(waiters);
        assert_eq!(f.len(), 1);
        second.finish(3);
        assert_eq!(rx2.await.unwrap(), 3);
    }

    #[tokio::test]
    async fn a_leader_without_a_slot_ends_its_flight_busy() {
        let f = Flights::<String, u8>::new(1);
        let (tx1, rx1) = oneshot::channel();
        assert!(f.lead_with(&key("a"), tx1, || 9, || None::<()>).is_none());
        assert_eq!(rx1.await.unwrap(), 9);
        assert!(f.is_empty());
        let (tx2, _rx2) = oneshot::channel();
        let (lead, ()) = f.lead_with(&key("a"), tx2, || 9, || Some(())).unwrap();
        let (tx3, rx3) = oneshot::channel();
        assert!(f.lead_with(&key("a"), tx3, || 9, || Some(())).is_none());
        assert_eq!(rx3.await.unwrap(), 9, "a full flight answers busy at once");
        lead.finish(1);
    }

    #[tokio::test]
    async fn callers_awaiting_in_place_share_one_computation() {
        let flights = Flights::<&str, u32>::new(usize::MAX);
        let runs = AtomicUsize::new(0);
        let (release, gate) = tokio::sync::watch::channel(false);
        let (runs, gate) = (&runs, &gate);
        let work = move || async move {
            runs.fetch_add(1, Ordering::SeqCst);
            gate.clone().wait_for(|open| *open).await.unwrap();
            7
        };
        let burst = async {
            tokio::join!(
                flights.run("a", work),
                flights.run("a", work),
                flights.run("a", work)
            )
        };
        let opener = async {
            while flights.callers(&"a") < 3 {
                tokio::task::yield_now().await;
            }
            release.send(true).unwrap();
        };
        let (results, ()) = tokio::join!(burst, opener);
        assert_eq!(results, (7, 7, 7));
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert!(flights.is_empty(), "no entry outlives its flight");
        // A later caller computes anew.
        assert_eq!(flights.run("a", || async { 8 }).await, 8);
    }

    #[tokio::test]
    async fn a_cancelled_first_caller_hands_the_computation_over() {
        let flights = Flights::<&str, u32>::new(usize::MAX);
        let mut first = Box::pin(flights.run("a", std::future::pending));
        let mut second = Box::pin(flights.run("a", || async { 5 }));
        // Both join the flight; the first one starts computing and never finishes.
        assert!(poll_once(first.as_mut()).is_none());
        assert!(poll_once(second.as_mut()).is_none());
        assert_eq!(flights.callers(&"a"), 2);
        drop(first);
        assert_eq!(second.await, 5);
        assert!(flights.is_empty());
    }

    /// Polls once with a no-op waker.
    fn poll_once<F: Future>(f: std::pin::Pin<&mut F>) -> Option<F::Output> {
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match f.poll(&mut cx) {
            std::task::Poll::Ready(v) => Some(v),
            std::task::Poll::Pending => None,
        }
    }
}
