//! The rotation planner: a pure function from (our keys, policy, EC lifetime, now) to the
//! changes that keep the rollover schedule, so that whole rollovers are tested on a fake clock.
//!
//! The schedule rests on one invariant: a key's `nbf` is the instant it starts signing, and a
//! key that has a successor expires `overlap` after that successor's `nbf`. The signer at any
//! instant is the active key with the latest `nbf`, so every signer switches at the same moment.
//! A successor is generated `lead time` before the current key's planned retirement
//! (`exp − overlap`) and is therefore published at least that long before it signs.

use super::rotation::{RotationSettings, lead_time};

/// What the planner needs to know about one of our (federation) keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanKey {
    /// Key id.
    pub kid: String,
    /// First instant the key may sign.
    pub nbf: i64,
    /// Expiry, if set.
    pub exp: Option<i64>,
    /// Revoked keys are out of the schedule for good.
    pub revoked: bool,
}

impl PlanKey {
    fn valid_at(&self, now: i64) -> bool {
        !self.revoked && self.exp.is_none_or(|e| e > now)
    }
}

/// One change to apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Generate a key (with the algorithm for new keys) valid from `nbf` to `exp`.
    Generate {
        /// First signing instant.
        nbf: i64,
        /// Expiry.
        exp: Option<i64>,
    },
    /// Set a key's expiry.
    SetExp {
        /// Key id.
        kid: String,
        /// New expiry.
        exp: i64,
    },
}

/// The planner's answer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Plan {
    /// Changes to apply now, in order.
    pub actions: Vec<Action>,
    /// Next instant at which something changes (a key starts signing or expires, or a
    /// successor is due); the control plane republishes and plans again then.
    pub next: Option<i64>,
}

/// Orders keys by the instant they take over; ties (same second) go to the longer-lived key,
/// which is the newer one after an immediate rotation.
fn order(k: &PlanKey) -> (i64, i64) {
    (k.nbf, k.exp.unwrap_or(i64::MAX))
}

/// Plans the changes due at `now`.
pub fn plan(keys: &[PlanKey], s: &RotationSettings, ec_lifetime: i64, now: i64) -> Plan {
    let mut valid: Vec<PlanKey> = keys.iter().filter(|k| k.valid_at(now)).cloned().collect();
    valid.sort_by_key(order);
    let mut actions = Vec::new();
    let set_exp = |k: &mut PlanKey, exp: i64, actions: &mut Vec<Action>| {
        k.exp = Some(exp);
        actions.push(Action::SetExp {
            kid: k.kid.clone(),
            exp,
        });
    };

    // Keep the invariant between neighbours: no gap, and no key outliving its successor's
    // start by more than the overlap.
    for i in 1..valid.len() {
        let succ_nbf = valid[i].nbf;
        let desired = succ_nbf + s.overlap;
        let k = &mut valid[i - 1];
        if k.exp.is_none_or(|e| e > desired || e < succ_nbf) {
            set_exp(k, desired, &mut actions);
        }
    }

    let mut due = None;
    if s.enabled {
        let lead = lead_time(s, ec_lifetime).secs;
        match valid.last_mut() {
            None => {
                actions.push(Action::Generate {
                    nbf: now,
                    exp: Some(now + s.interval),
                });
                valid.push(PlanKey {
                    kid: String::new(),
                    nbf: now,
                    exp: Some(now + s.interval),
                    revoked: false,
                });
            }
            Some(last) if last.nbf > now => {
                // A successor is already announced; give it a lifetime if it has none.
                if last.exp.is_none() {
                    let exp = last.nbf + s.interval;
                    set_exp(last, exp, &mut actions);
                }
            }
            Some(current) => {
                if current.exp.is_none() {
                    let retire = (current.nbf + s.interval).max(now + lead);
                    set_exp(current, retire + s.overlap, &mut actions);
                }
                let retire = current.exp.unwrap_or(now) - s.overlap;
                if now >= retire - lead {
                    // Late (or lead > remaining life): keep the announcement period and let the
                    // current key sign a little longer instead.
                    let nbf = retire.max(now + lead);
                    actions.push(Action::Generate {
                        nbf,
                        exp: Some(nbf + s.interval),
                    });
                    if nbf != retire {
                        set_exp(current, nbf + s.overlap, &mut actions);
                    }
                    valid.push(PlanKey {
                        kid: String::new(),
                        nbf,
                        exp: Some(nbf + s.interval),
                        revoked: false,
                    });
                } else {
                    due = Some(retire - lead);
                }
            }
        }
    }

    let transitions = valid
        .iter()
        .flat_map(|k| [Some(k.nbf), k.exp])
        .flatten()
        .filter(|t| *t > now);
    let next = transitions.chain(due).min();
    Plan { actions, next }
}

/// The next instant after `now` at which any key (ours or API-managed) starts or stops being
/// valid or active: the snapshot must be republished then.
pub fn next_transition(keys: &[PlanKey], now: i64) -> Option<i64> {
    keys.iter()
        .filter(|k| !k.revoked)
        .flat_map(|k| [Some(k.nbf), k.exp])
        .flatten()
        .filter(|t| *t > now)
        .min()
}

#[cfg(test)]
#[path = "planner_tests.rs"]
mod tests;
