//! One computation per key among concurrent callers.
//!
//! When every cached statement is invalidated at once (a key or registry change), the next
//! burst of requests for one subject would each sign the same statement; with a slow signer
//! (RSA, a hardware token behind one session) that burst queues on the signer. Here the first
//! caller of a key computes and the callers that arrive meanwhile await its result.
//!
//! A key's entry lives exactly as long as some caller is inside [`SingleFlight::run`] for it:
//! the last caller to leave (finished or cancelled) removes it, so a result is never served
//! to a caller that arrives after the flight, who reads the cache the flight filled instead.
//! If the computing caller is cancelled, a waiting caller takes the computation over.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::OnceCell;

/// In-flight computations by key.
#[derive(Debug)]
pub struct SingleFlight<K, V> {
    flights: Mutex<HashMap<K, Arc<OnceCell<V>>>>,
}

impl<K, V> Default for SingleFlight<K, V> {
    fn default() -> Self {
        Self {
            flights: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Eq + Hash + Clone, V: Clone> SingleFlight<K, V> {
    /// The result of `work` for `key`, computed once for all callers that overlap in time.
    pub async fn run<F, Fut>(&self, key: K, work: F) -> V
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = V>,
    {
        let cell = self.lock().entry(key.clone()).or_default().clone();
        let seat = Seat {
            owner: self,
            key,
            cell: Some(cell),
        };
        match &seat.cell {
            Some(cell) => cell.get_or_init(work).await.clone(),
            None => work().await,
        }
    }

    /// How many callers are inside [`Self::run`] for `key` (for tests that must know when a
    /// burst has gathered).
    pub fn callers(&self, key: &K) -> usize {
        self.lock()
            .get(key)
            .map_or(0, |c| Arc::strong_count(c).saturating_sub(1))
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<K, Arc<OnceCell<V>>>> {
        // The map is consistent after every statement, so a panic elsewhere leaves it usable.
        self.flights.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One caller's place in a flight; leaving (by returning or by being dropped) releases it.
struct Seat<'a, K: Eq + Hash + Clone, V: Clone> {
    owner: &'a SingleFlight<K, V>,
    key: K,
    cell: Option<Arc<OnceCell<V>>>,
}

impl<K: Eq + Hash + Clone, V: Clone> Drop for Seat<'_, K, V> {
    fn drop(&mut self) {
        let mut flights = self.owner.lock();
        // Released under the lock, so that of two callers leaving together exactly the last
        // one sees the map's reference as the only one left.
        drop(self.cell.take());
        if flights
            .get(&self.key)
            .is_some_and(|c| Arc::strong_count(c) == 1)
        {
            flights.remove(&self.key);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test]
    async fn overlapping_callers_share_one_computation_and_the_entry_goes_with_them() {
        let flights = SingleFlight::<&str, u32>::default();
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
        assert_eq!(flights.callers(&"a"), 0);
        assert!(flights.lock().is_empty(), "no entry outlives its flight");
        // A later caller computes anew.
        assert_eq!(flights.run("a", || async { 8 }).await, 8);
    }

    #[tokio::test]
    async fn a_cancelled_first_caller_hands_the_computation_over() {
        let flights = SingleFlight::<&str, u32>::default();
        let mut first = Box::pin(flights.run("a", std::future::pending));
        let mut second = Box::pin(flights.run("a", || async { 5 }));
        // Both join the flight; the first one starts computing and never finishes.
        assert!(futures_poll(first.as_mut()).is_none());
        assert!(futures_poll(second.as_mut()).is_none());
        assert_eq!(flights.callers(&"a"), 2);
        drop(first);
        assert_eq!(second.await, 5);
        assert!(flights.lock().is_empty());
    }

    /// Polls once with a no-op waker.
    fn futures_poll<F: Future>(f: std::pin::Pin<&mut F>) -> Option<F::Output> {
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match f.poll(&mut cx) {
            std::task::Poll::Ready(v) => Some(v),
            std::task::Poll::Pending => None,
        }
    }
}
