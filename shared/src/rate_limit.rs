//! Request rates of the public endpoints that write or fetch: a token bucket per (endpoint
//! class, client) in a table of fixed capacity, and one bucket per class for all clients.
//!
//! The table must not grow with the number of addresses a stranger can send from: it holds at
//! most `capacity` clients in shards of fixed size, each forgetting its least recently seen
//! client to make room for a new one (a forgotten client starts again with a full bucket,
//! which costs at most one burst). Its memory is allocated once, when the limiter is built.
//! IPv6 clients are keyed by their /64, the smallest block one subscriber usually holds, so
//! rotating through the addresses of one prefix does not make new clients. The hash map uses
//! the standard library's randomly keyed hasher, so keys cannot be chosen to collide.
//!
//! Time is a parameter (`now_ms`, milliseconds on any monotonic scale), as everywhere in this
//! crate: the tests drive refill without sleeping.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;

use crate::config::RateLimit;

/// Shards of the client table: a request locks one, so clients rarely wait for each other.
const SHARDS: usize = 16;

/// A client as the limiter counts it: an IPv4 address, or an IPv6 /64, tagged with the
/// endpoint class (each class has its own bucket per client).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClientKey(u128);

impl ClientKey {
    /// The key of `ip` for endpoint class `class`. IPv4-mapped IPv6 addresses count as the IPv4
    /// address they carry; other IPv6 addresses count by their first 64 bits.
    pub fn new(class: u8, ip: IpAddr) -> Self {
        let (family, value) = match ip {
            IpAddr::V4(v4) => (1u128, u128::from(u32::from(v4))),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => (1, u128::from(u32::from(v4))),
                None => (2, u128::from(v6) >> 64),
            },
        };
        Self((u128::from(class) << 72) | (family << 64) | value)
    }
}

/// Why a request was refused, and when to come back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused {
    /// Which bound was hit.
    pub bound: Bound,
    /// Seconds until the bucket holds a request again (at least 1).
    pub retry_after: u64,
}

/// The two bounds of a class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// `per_client` (with its `burst`): this client's rate.
    PerClient,
    /// `total`: the rate of all clients together.
    Total,
}

/// A token bucket: `tokens` requests may be made now; it refills at the class's rate.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at_ms: u64,
}

impl Bucket {
    fn full(capacity: u32, now_ms: u64) -> Self {
        Self {
            tokens: f64::from(capacity.max(1)),
            at_ms: now_ms,
        }
    }

    /// Takes one request's token, or says in how many seconds one will be there.
    fn take(&mut self, per_minute: u32, capacity: u32, now_ms: u64) -> Result<(), u64> {
        let per_ms = f64::from(per_minute) / 60_000.0;
        let elapsed = now_ms.saturating_sub(self.at_ms) as f64;
        self.tokens = (self.tokens + elapsed * per_ms).min(f64::from(capacity.max(1)));
        self.at_ms = self.at_ms.max(now_ms);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            return Ok(());
        }
        let wait_ms = (1.0 - self.tokens) / per_ms;
        Err(((wait_ms / 1000.0).ceil() as u64).max(1))
    }
}

/// No slot (the end of the recency list).
const NIL: u32 = u32::MAX;

/// One remembered client, linked into its shard's recency list.
#[derive(Debug, Clone, Copy)]
struct Slot {
    key: ClientKey,
    bucket: Bucket,
    /// More recently seen neighbour.
    newer: u32,
    /// Less recently seen neighbour.
    older: u32,
}

/// Up to `capacity` clients, most recently seen first. The slots live in one vector allocated
/// at creation and the map is created with room for all of them, so neither grows.
#[derive(Debug)]
struct Shard {
    index: HashMap<ClientKey, u32>,
    slots: Vec<Slot>,
    newest: u32,
    oldest: u32,
    capacity: usize,
}

impl Shard {
    fn new(capacity: usize) -> Self {
        Self {
            index: HashMap::with_capacity(capacity),
            slots: Vec::with_capacity(capacity),
            newest: NIL,
            oldest: NIL,
            capacity,
        }
    }

    fn slot(&mut self, i: u32) -> Option<&mut Slot> {
        self.slots.get_mut(i as usize)
    }

    fn unlink(&mut self, i: u32) {
        let Some(s) = self.slot(i) else { return };
        let (newer, older) = (s.newer, s.older);
        match self.slot(newer) {
            Some(n) => n.older = older,
            None => self.newest = older,
        }
        match self.slot(older) {
            Some(o) => o.newer = newer,
            None => self.oldest = newer,
        }
    }

    fn push_newest(&mut self, i: u32) {
        let old_newest = self.newest;
        if let Some(s) = self.slot(i) {
            s.newer = NIL;
            s.older = old_newest;
        }
        match self.slot(old_newest) {
            Some(n) => n.newer = i,
            None => self.oldest = i,
        }
        self.newest = i;
    }

    /// The bucket of `key`, made the most recently seen; a new client gets a full bucket, in
    /// a new slot while there is room, else in the slot of the least recently seen client.
    fn bucket(&mut self, key: ClientKey, capacity: u32, now_ms: u64) -> Option<&mut Bucket> {
        let i = match self.index.get(&key) {
            Some(&i) => {
                self.unlink(i);
                i
            }
            None => {
                let fresh = Slot {
                    key,
                    bucket: Bucket::full(capacity, now_ms),
                    newer: NIL,
                    older: NIL,
                };
                let i = if self.slots.len() < self.capacity {
                    self.slots.push(fresh);
                    u32::try_from(self.slots.len() - 1).ok()?
                } else {
                    let i = self.oldest;
                    self.unlink(i);
                    let s = self.slot(i)?;
                    let forgotten = s.key;
                    *s = fresh;
                    self.index.remove(&forgotten);
                    i
                };
                self.index.insert(key, i);
                i
            }
        };
        self.push_newest(i);
        self.slot(i).map(|s| &mut s.bucket)
    }
}

/// The limits of a set of endpoint classes (indexes into `rates`).
#[derive(Debug)]
pub struct Limiter {
    shards: Box<[Mutex<Shard>]>,
    rates: Vec<RateLimit>,
    totals: Box<[Mutex<Bucket>]>,
}

impl Limiter {
    /// A limiter remembering at most `clients` clients (at least one per shard), for the
    /// classes whose rates `rates` lists in order.
    pub fn new(clients: usize, rates: Vec<RateLimit>) -> Self {
        let per_shard = clients.div_ceil(SHARDS).max(1);
        Self {
            shards: (0..SHARDS)
                .map(|_| Mutex::new(Shard::new(per_shard)))
                .collect(),
            totals: rates
                .iter()
                .map(|r| Mutex::new(Bucket::full(r.total, 0)))
                .collect(),
            rates,
        }
    }

    /// Clients remembered at most.
    pub fn capacity(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().map_or(0, |s| s.capacity))
            .sum()
    }

    /// Clients remembered now.
    pub fn clients(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().map_or(0, |s| s.slots.len()))
            .sum()
    }

    /// Counts one request of class `class` from `ip` at `now_ms`: `Ok` when it may go on,
    /// else the bound it hit. The client's bound is checked first, so a client over its own
    /// rate does not spend the total that others share. Without a client address only the
    /// total applies.
    pub fn check(&self, class: u8, ip: Option<IpAddr>, now_ms: u64) -> Result<(), Refused> {
        let Some(rate) = self.rates.get(usize::from(class)) else {
            return Ok(());
        };
        if let Some(ip) = ip.filter(|_| rate.per_client > 0) {
            let key = ClientKey::new(class, ip);
            let shard = &self.shards[shard_of(key)];
            let mut shard = shard.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(b) = shard.bucket(key, rate.burst, now_ms) {
                b.take(rate.per_client, rate.burst, now_ms)
                    .map_err(|retry_after| Refused {
                        bound: Bound::PerClient,
                        retry_after,
                    })?;
            }
        }
        if rate.total > 0
            && let Some(total) = self.totals.get(usize::from(class))
        {
            let mut total = total.lock().unwrap_or_else(|p| p.into_inner());
            total
                .take(rate.total, rate.total, now_ms)
                .map_err(|retry_after| Refused {
                    bound: Bound::Total,
                    retry_after,
                })?;
        }
        Ok(())
    }
}

/// The shard of `key`: a hash of all its bits, so neighbouring addresses spread.
fn shard_of(key: ClientKey) -> usize {
    let x = key.0 ^ (key.0 >> 64);
    let x = (x as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (x >> 60) as usize % SHARDS
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::net::{Ipv4Addr, Ipv6Addr};

    use super::*;

    fn rate(per_client: u32, burst: u32, total: u32) -> RateLimit {
        RateLimit {
            per_client,
            burst,
            total,
        }
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn a_million_distinct_clients_keep_the_table_at_its_capacity() {
        let limiter = Limiter::new(4096, vec![rate(60, 1, 0)]);
        assert_eq!(limiter.capacity(), 4096);
        for n in 0..1_000_000u32 {
            limiter
                .check(0, Some(IpAddr::V4(Ipv4Addr::from(n))), u64::from(n))
                .unwrap();
        }
        assert_eq!(limiter.clients(), 4096);
        // Every shard is full and none allocated past its capacity.
        for s in &limiter.shards {
            let s = s.lock().unwrap();
            assert_eq!(s.slots.len(), s.capacity);
            assert_eq!(s.slots.capacity(), s.capacity);
            assert_eq!(s.index.len(), s.capacity);
        }
    }

    #[test]
    fn the_least_recently_seen_client_is_forgotten_first() {
        // One client per shard: whoever is seen last stays.
        let limiter = Limiter::new(1, vec![rate(1, 1, 0)]);
        let a = ip("192.0.2.1");
        limiter.check(0, Some(a), 0).unwrap();
        assert!(limiter.check(0, Some(a), 0).is_err(), "a spent its burst");
        // Other clients, until one lands in a's shard and takes its slot.
        let mut n = 0u32;
        let a_shard = shard_of(ClientKey::new(0, a));
        loop {
            n += 1;
            let other = IpAddr::V4(Ipv4Addr::from(0x0A00_0000 + n));
            limiter.check(0, Some(other), 0).unwrap();
            if shard_of(ClientKey::new(0, other)) == a_shard {
                break;
            }
        }
        limiter
            .check(0, Some(a), 0)
            .expect("a was forgotten: a full bucket again");
    }

    #[test]
    fn ipv6_clients_count_by_their_slash_64() {
        let limiter = Limiter::new(1024, vec![rate(1, 2, 0)]);
        limiter.check(0, Some(ip("2001:db8:1:2::1")), 0).unwrap();
        limiter
            .check(0, Some(ip("2001:db8:1:2:ffff::9")), 0)
            .unwrap();
        let third = limiter.check(0, Some(ip("2001:db8:1:2:abcd::7")), 0);
        assert_eq!(third.unwrap_err().bound, Bound::PerClient, "one /64");
        limiter.check(0, Some(ip("2001:db8:1:3::1")), 0).unwrap();
        // A mapped IPv4 address is that IPv4 client, not the ::/64.
        assert_eq!(
            ClientKey::new(0, ip("::ffff:192.0.2.1")),
            ClientKey::new(0, ip("192.0.2.1"))
        );
        assert_ne!(
            ClientKey::new(0, IpAddr::V6(Ipv6Addr::UNSPECIFIED)),
            ClientKey::new(0, IpAddr::V4(Ipv4Addr::UNSPECIFIED))
        );
        // Classes are counted apart.
        assert_ne!(
            ClientKey::new(0, ip("192.0.2.1")),
            ClientKey::new(1, ip("192.0.2.1"))
        );
    }

    #[test]
    fn buckets_refill_at_the_configured_rate() {
        // 6 per minute = one every 10 s, 3 at once.
        let limiter = Limiter::new(64, vec![rate(6, 3, 0)]);
        let a = ip("198.51.100.7");
        for _ in 0..3 {
            limiter.check(0, Some(a), 1_000).unwrap();
        }
        let refused = limiter.check(0, Some(a), 1_000).unwrap_err();
        assert_eq!(refused.bound, Bound::PerClient);
        assert_eq!(refused.retry_after, 10);
        assert_eq!(limiter.check(0, Some(a), 7_000).unwrap_err().retry_after, 4);
        limiter.check(0, Some(a), 11_000).unwrap();
        assert!(limiter.check(0, Some(a), 11_000).is_err());
        // A long pause refills up to the burst, not beyond.
        for _ in 0..3 {
            limiter.check(0, Some(a), 3_600_000).unwrap();
        }
        assert!(limiter.check(0, Some(a), 3_600_000).is_err());
    }

    #[test]
    fn the_total_bounds_all_clients_together_and_zero_means_unbounded() {
        let limiter = Limiter::new(64, vec![rate(0, 0, 2), rate(60, 1, 0)]);
        limiter.check(0, Some(ip("192.0.2.1")), 0).unwrap();
        limiter.check(0, Some(ip("192.0.2.2")), 0).unwrap();
        let r = limiter.check(0, Some(ip("192.0.2.3")), 0).unwrap_err();
        assert_eq!((r.bound, r.retry_after), (Bound::Total, 30));
        // Class 1 has no total: many clients, one request each, all pass.
        for n in 0..1000u32 {
            limiter
                .check(1, Some(IpAddr::V4(Ipv4Addr::from(n))), 0)
                .unwrap();
        }
        // An unknown class is not limited.
        limiter.check(9, Some(ip("192.0.2.1")), 0).unwrap();
    }

    #[test]
    fn a_client_over_its_own_rate_does_not_spend_the_total() {
        let limiter = Limiter::new(64, vec![rate(1, 1, 2)]);
        let a = ip("192.0.2.1");
        limiter.check(0, Some(a), 0).unwrap();
        for _ in 0..10 {
            assert_eq!(
                limiter.check(0, Some(a), 0).unwrap_err().bound,
                Bound::PerClient
            );
        }
        limiter.check(0, Some(ip("192.0.2.2")), 0).unwrap();
    }

    #[test]
    fn without_an_address_only_the_total_applies() {
        let limiter = Limiter::new(64, vec![rate(1, 1, 3)]);
        for _ in 0..3 {
            limiter.check(0, None, 0).unwrap();
        }
        assert_eq!(limiter.check(0, None, 0).unwrap_err().bound, Bound::Total);
        assert_eq!(limiter.clients(), 0);
    }
}
