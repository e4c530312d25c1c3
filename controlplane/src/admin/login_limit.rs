//! Limits on failed Admin API logins: a growing delay per (client, user name), and a cap per
//! client across all names.
//!
//! Without a limit a client can try passwords as fast as argon2 verifies them, and every wrong
//! guess costs a verification that real logins then queue behind. A limit per client alone
//! (the first design) let anyone behind the same proxy or NAT lock every operator out by
//! failing ten times (issue 32). So:
//!
//! - **Per (client, user name)**: the first [`FREE_FAILURES`] failures cost nothing more; each
//!   further one makes that pair wait before its next attempt, 1 s doubling up to
//!   [`MAX_DELAY`]. An attempt while it waits is answered 429 with `Retry-After` before any
//!   password is checked (so guesses cost nothing), and the right password after the wait logs
//!   in and clears the pair. Guessing one user's password is slowed to about one try a minute;
//!   the user is never locked out, and other users of the same client are not affected.
//! - **Per client**: [`CLIENT_MAX_FAILURES`] failures within [`CLIENT_WINDOW`], over all user
//!   names, stop the client (429) until the window that began with its first failure ends.
//!   This is what bounds spraying many names; a successful login does not clear it.
//!
//! Time is a parameter (`now`, Unix seconds from the control plane's clock), so tests drive it.

use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use moka::sync::Cache;

/// Failures of one (client, user name) that cost no delay.
pub const FREE_FAILURES: u32 = 3;
/// Longest wait between two attempts of one (client, user name).
pub const MAX_DELAY: i64 = 60;
/// Failed logins a client may make, over all user names, per window.
pub const CLIENT_MAX_FAILURES: u32 = 100;
/// The client window, counted from its first failure.
pub const CLIENT_WINDOW: i64 = 600;
/// Entries tracked at most in each map (the least used are forgotten first).
const ENTRIES: u64 = 100_000;
/// Bytes of a user name kept in a key: longer names share their first bytes' entry, so a
/// client cannot grow memory with long names.
const NAME_BYTES: usize = 256;
/// An idle entry is forgotten after this long: the longest wait has then passed.
const IDLE: std::time::Duration = std::time::Duration::from_secs(3600);

/// Failures counted from `since`.
#[derive(Debug, Clone, Copy)]
struct Count {
    since: i64,
    failures: u32,
}

/// Failed logins by (client, user name) and by client.
#[derive(Debug, Clone)]
pub struct FailedLogins {
    users: Cache<(IpAddr, String), Arc<Mutex<Count>>>,
    clients: Cache<IpAddr, Arc<Mutex<Count>>>,
}

impl Default for FailedLogins {
    fn default() -> Self {
        Self {
            users: Cache::builder()
                .max_capacity(ENTRIES)
                .time_to_idle(IDLE)
                .build(),
            clients: Cache::builder()
                .max_capacity(ENTRIES)
                .time_to_idle(IDLE)
                .build(),
        }
    }
}

/// The wait after `failures` consecutive failures of one (client, user name), in seconds.
pub fn delay(failures: u32) -> i64 {
    let over = failures.saturating_sub(FREE_FAILURES);
    if over == 0 {
        return 0;
    }
    1i64.checked_shl(over - 1)
        .filter(|d| *d <= MAX_DELAY)
        .unwrap_or(MAX_DELAY)
}

fn key(client: IpAddr, user: &str) -> (IpAddr, String) {
    let mut end = user.len().min(NAME_BYTES);
    while !user.is_char_boundary(end) {
        end -= 1;
    }
    (client, user[..end].to_owned())
}

fn read(c: &Arc<Mutex<Count>>) -> Count {
    match c.lock() {
        Ok(g) => *g,
        Err(p) => *p.into_inner(),
    }
}

impl FailedLogins {
    /// Seconds `client` must wait before `user` may try again at `now`, when it must.
    pub fn retry_after(&self, client: IpAddr, user: &str, now: i64) -> Option<u64> {
        let mut wait = 0i64;
        if let Some(c) = self.clients.get(&client).map(|c| read(&c)) {
            let ends = c.since.saturating_add(CLIENT_WINDOW);
            if c.failures >= CLIENT_MAX_FAILURES && now < ends {
                wait = ends - now;
            }
        }
        if let Some(u) = self.users.get(&key(client, user)).map(|u| read(&u)) {
            let next = u.since.saturating_add(delay(u.failures));
            wait = wait.max(next - now);
        }
        (wait > 0).then(|| u64::try_from(wait).unwrap_or(1))
    }

    /// Counts a failed login of `user` from `client` at `now`.
    pub fn record(&self, client: IpAddr, user: &str, now: i64) {
        let fresh = || {
            Arc::new(Mutex::new(Count {
                since: now,
                failures: 0,
            }))
        };
        let bump = |c: Arc<Mutex<Count>>, restart_after: Option<i64>| {
            let mut g = match c.lock() {
                Ok(g) => g,
                Err(p) => p.into_inner(),
            };
            if restart_after.is_some_and(|w| now >= g.since.saturating_add(w)) {
                *g = Count {
                    since: now,
                    failures: 0,
                };
            }
            g.failures = g.failures.saturating_add(1);
            // A user's delay runs from its latest failure.
            if restart_after.is_none() {
                g.since = now;
            }
        };
        bump(self.clients.get_with(client, fresh), Some(CLIENT_WINDOW));
        bump(self.users.get_with(key(client, user), fresh), None);
    }

    /// Forgets the failures of `user` from `client` (it logged in); the client's count stays.
    pub fn clear(&self, client: IpAddr, user: &str) {
        self.users.invalidate(&key(client, user));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: i64 = 1_700_000_000;

    #[test]
    fn the_delay_grows_from_nothing_to_a_minute() {
        let d: Vec<i64> = (0..12).map(delay).collect();
        assert_eq!(d, [0, 0, 0, 0, 1, 2, 4, 8, 16, 32, 60, 60]);
        assert_eq!(delay(u32::MAX), MAX_DELAY);
    }

    #[test]
    fn one_users_failures_delay_that_user_only_and_never_lock_it_out() {
        let limit = FailedLogins::default();
        let (a, b): (IpAddr, IpAddr) = ([192, 0, 2, 1].into(), [192, 0, 2, 2].into());
        for _ in 0..FREE_FAILURES {
            assert_eq!(limit.retry_after(a, "alice", T), None);
            limit.record(a, "alice", T);
        }
        assert_eq!(limit.retry_after(a, "alice", T), None);
        limit.record(a, "alice", T);
        assert_eq!(limit.retry_after(a, "alice", T), Some(1));
        // Another user of the same client, and the same user from another client: no wait.
        assert_eq!(limit.retry_after(a, "bob", T), None);
        assert_eq!(limit.retry_after(b, "alice", T), None);
        // The wait ends; the next failure doubles it.
        assert_eq!(limit.retry_after(a, "alice", T + 1), None);
        limit.record(a, "alice", T + 1);
        assert_eq!(limit.retry_after(a, "alice", T + 1), Some(2));
        assert_eq!(limit.retry_after(a, "alice", T + 3), None);
        // A success clears the user, not the client's count.
        limit.clear(a, "alice");
        assert_eq!(limit.retry_after(a, "alice", T + 3), None);
    }

    #[test]
    fn spraying_names_stops_the_client_for_its_window() {
        let limit = FailedLogins::default();
        let a: IpAddr = [192, 0, 2, 1].into();
        for i in 0..CLIENT_MAX_FAILURES {
            assert_eq!(limit.retry_after(a, "anyone", T), None, "{i}");
            limit.record(a, &format!("user{i}"), T);
        }
        assert_eq!(
            limit.retry_after(a, "anyone", T + 10),
            Some(u64::try_from(CLIENT_WINDOW - 10).unwrap_or(0))
        );
        assert_eq!(limit.retry_after(a, "anyone", T + CLIENT_WINDOW), None);
        // A failure after the window starts a new one.
        limit.record(a, "user0", T + CLIENT_WINDOW);
        assert_eq!(limit.retry_after(a, "anyone", T + CLIENT_WINDOW), None);
    }

    #[test]
    fn long_names_share_one_bounded_key() {
        let long = "é".repeat(300);
        let (_, k) = key([192, 0, 2, 1].into(), &long);
        assert!(k.len() <= NAME_BYTES && long.starts_with(&k));
    }
}
