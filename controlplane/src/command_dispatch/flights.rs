//! Single flight: concurrent requests for the same key share one run of the work and all get
//! its outcome. Used for jwks_update_trigger, where a burst of triggers naming one subordinate
//! must cost one fetch of its Entity Configuration, not one each.
//!
//! The waiters are the callers' reply channels, not tasks: a follower costs one stored
//! `oneshot::Sender` until the leader finishes. Per key at most `max_waiters` wait; the
//! number of keys is bounded by whoever starts leaders (one fetch slot each).

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::oneshot;

/// The flights in progress, by key.
#[derive(Debug)]
pub struct Flights<T> {
    waiting: Mutex<HashMap<String, Vec<oneshot::Sender<T>>>>,
    max_waiters: usize,
}

/// What [`Flights::join`] made of a caller.
#[derive(Debug)]
pub enum Joined<T> {
    /// No flight was in progress: the caller runs the work and must [`Lead::finish`] it.
    Leader(Lead<T>),
    /// The caller's reply will get the outcome of the flight in progress.
    Follower,
    /// The flight has as many waiters as allowed; the reply is handed back unused.
    Full(oneshot::Sender<T>),
}

/// The duty to finish one flight. Dropped without finishing (the work panicked or was
/// cancelled), it ends the flight and drops the waiters' replies, so they learn at once that
/// no answer is coming and the key is free for the next caller.
#[derive(Debug)]
pub struct Lead<T> {
    flights: Arc<Flights<T>>,
    key: String,
    finished: bool,
}

impl<T: Clone> Flights<T> {
    /// No flights; at most `max_waiters` callers (the leader included) per flight.
    pub fn new(max_waiters: usize) -> Arc<Self> {
        Arc::new(Self {
            waiting: Mutex::new(HashMap::new()),
            max_waiters: max_waiters.max(1),
        })
    }

    /// Adds `reply` to `key`'s flight, starting one if none is in progress.
    pub fn join(self: &Arc<Self>, key: &str, reply: oneshot::Sender<T>) -> Joined<T> {
        let mut waiting = self.lock();
        match waiting.entry(key.to_owned()) {
            Entry::Occupied(mut e) if e.get().len() < self.max_waiters => {
                e.get_mut().push(reply);
                Joined::Follower
            }
            Entry::Occupied(_) => Joined::Full(reply),
            Entry::Vacant(e) => {
                e.insert(vec![reply]);
                Joined::Leader(Lead {
                    flights: self.clone(),
                    key: key.to_owned(),
                    finished: false,
                })
            }
        }
    }

    /// How many flights are in progress (tests and diagnostics).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no flight is in progress.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    fn take(&self, key: &str) -> Vec<oneshot::Sender<T>> {
        self.lock().remove(key).unwrap_or_default()
    }

    /// The map stays consistent even if a holder panicked: every operation is one insert,
    /// push or remove.
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<oneshot::Sender<T>>>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<T: Clone> Lead<T> {
    /// Ends the flight: every waiter gets `outcome` (one that stopped waiting is skipped).
    pub fn finish(mut self, outcome: T) {
        self.finished = true;
        for reply in self.flights.take(&self.key) {
            let _ = reply.send(outcome.clone());
        }
    }
}

impl<T> Drop for Lead<T> {
    fn drop(&mut self) {
        // After `finish` the key may already belong to a newer flight: leave it alone.
        if self.finished {
            return;
        }
        let mut waiting = self
            .flights
            .waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        waiting.remove(&self.key);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn followers_get_the_leaders_outcome() {
        let f = Flights::new(10);
        let (tx1, rx1) = oneshot::channel();
        let (tx2, rx2) = oneshot::channel();
        let Joined::Leader(lead) = f.join("a", tx1) else {
            panic!("first caller must lead")
        };
        assert!(matches!(f.join("a", tx2), Joined::Follower));
        lead.finish(7);
        assert_eq!((rx1.await.unwrap(), rx2.await.unwrap()), (7, 7));
        assert!(f.is_empty());
    }

    #[tokio::test]
    async fn full_flights_hand_the_reply_back() {
        let f = Flights::<u8>::new(1);
        let (tx1, _rx1) = oneshot::channel();
        let (tx2, rx2) = oneshot::channel();
        let _lead = f.join("a", tx1);
        let Joined::Full(back) = f.join("a", tx2) else {
            panic!("a full flight must refuse")
        };
        back.send(1).unwrap();
        assert_eq!(rx2.await.unwrap(), 1);
    }

    #[tokio::test]
    async fn a_dropped_lead_frees_the_key_and_its_waiters() {
        let f = Flights::<u8>::new(10);
        let (tx1, rx1) = oneshot::channel();
        let Joined::Leader(lead) = f.join("a", tx1) else {
            panic!("first caller must lead")
        };
        drop(lead);
        assert!(rx1.await.is_err());
        let (tx2, _rx2) = oneshot::channel();
        assert!(matches!(f.join("a", tx2), Joined::Leader(_)));
    }

    #[tokio::test]
    async fn a_finished_lead_leaves_the_next_flight_alone() {
        let f = Flights::<u8>::new(10);
        let (tx1, _rx1) = oneshot::channel();
        let Joined::Leader(first) = f.join("a", tx1) else {
            panic!("first caller must lead")
        };
        let (tx2, rx2) = oneshot::channel();
        // The first flight's waiters are taken before the next flight starts; its lead is
        // dropped only afterwards (as `finish` does at its end).
        let waiters = f.take("a");
        let Joined::Leader(second) = f.join("a", tx2) else {
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
}
