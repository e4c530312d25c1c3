//! Planner tests: whole rollovers simulated on a fake clock.

#![allow(clippy::unwrap_used)]

use super::*;

const L: i64 = 3_600; // EC lifetime
const DAY: i64 = 86_400;

fn policy() -> RotationSettings {
    RotationSettings {
        enabled: true,
        interval: 10 * DAY,
        overlap: 2 * 3_600,
        key_announcement_lead_time: DAY,
        key_announcement_lead_time_ec_multiplier: 0.0,
    }
}

/// Keys plus when each was generated (= first published).
struct Sim {
    keys: Vec<PlanKey>,
    born: Vec<i64>,
}

impl Sim {
    fn new(nbf: i64, exp: Option<i64>) -> Self {
        Self {
            keys: vec![PlanKey {
                kid: "k0".into(),
                nbf,
                exp,
                revoked: false,
            }],
            born: vec![nbf],
        }
    }

    fn apply(&mut self, p: &Plan, now: i64) {
        for a in &p.actions {
            match a {
                Action::Generate { nbf, exp } => {
                    let kid = format!("k{}", self.keys.len());
                    self.keys.push(PlanKey {
                        kid,
                        nbf: *nbf,
                        exp: *exp,
                        revoked: false,
                    });
                    self.born.push(now);
                }
                Action::SetExp { kid, exp } => {
                    self.keys.iter_mut().find(|k| &k.kid == kid).unwrap().exp = Some(*exp);
                }
            }
        }
    }

    fn signer(&self, now: i64) -> &str {
        let mut active: Vec<&PlanKey> = self
            .keys
            .iter()
            .filter(|k| k.valid_at(now) && k.nbf <= now)
            .collect();
        active.sort_by_key(|k| order(k));
        &active.last().unwrap().kid
    }
}

#[test]
fn full_rollovers_announce_switch_and_expire_on_schedule() {
    let s = policy();
    let t0 = 1_000_000;
    let mut sim = Sim::new(t0, None);
    let mut now = t0;
    let mut switches = Vec::new();
    let mut last_signer = sim.signer(now).to_string();
    for _ in 0..40 {
        let p = plan(&sim.keys, &s, L, now);
        sim.apply(&p, now);
        let signer = sim.signer(now).to_string();
        if signer != last_signer {
            switches.push((now, last_signer.clone(), signer.clone()));
            last_signer = signer;
        }
        // Planning twice at one instant changes nothing more.
        assert!(plan(&sim.keys, &s, L, now).actions.is_empty(), "at {now}");
        now = p.next.unwrap();
    }
    assert!(switches.len() >= 3, "{switches:?}");
    for (at, old, new) in &switches {
        let n = sim.keys.iter().position(|k| &k.kid == new).unwrap();
        let new_key = &sim.keys[n];
        // It signs from its nbf, which is at least the lead time after it was published.
        assert_eq!(new_key.nbf, *at);
        assert!(new_key.nbf - sim.born[n] >= DAY, "{new} announced too late");
        // The old key keeps verifying for exactly the overlap, then expires.
        let old_key = sim.keys.iter().find(|k| &k.kid == old).unwrap();
        assert_eq!(old_key.exp, Some(at + s.overlap));
    }
    // Steady state: a key signs for interval − overlap.
    let (a, _, _) = switches[1];
    let (b, _, _) = switches[2];
    assert_eq!(b - a, s.interval - s.overlap);
}

#[test]
fn first_key_without_exp_gets_one_and_its_successor_is_planned() {
    let s = policy();
    let p = plan(
        &[PlanKey {
            kid: "a".into(),
            nbf: 0,
            exp: None,
            revoked: false,
        }],
        &s,
        L,
        0,
    );
    assert_eq!(
        p.actions,
        vec![Action::SetExp {
            kid: "a".into(),
            exp: s.interval + s.overlap
        }]
    );
    // Next check: when the successor must be announced.
    assert_eq!(p.next, Some(s.interval - DAY));
}

#[test]
fn an_old_key_gets_a_successor_announced_a_lead_time_ahead() {
    let s = policy();
    let now = 100 * DAY;
    let p = plan(
        &[PlanKey {
            kid: "a".into(),
            nbf: 0,
            exp: None,
            revoked: false,
        }],
        &s,
        L,
        now,
    );
    assert_eq!(
        p.actions,
        vec![
            Action::SetExp {
                kid: "a".into(),
                exp: now + DAY + s.overlap
            },
            Action::Generate {
                nbf: now + DAY,
                exp: Some(now + DAY + s.interval)
            },
        ]
    );
}

#[test]
fn a_late_planner_delays_the_switch_rather_than_shortening_the_announcement() {
    let s = policy();
    let retire = 10 * DAY;
    let keys = [PlanKey {
        kid: "a".into(),
        nbf: 0,
        exp: Some(retire + s.overlap),
        revoked: false,
    }];
    let now = retire - 3_600; // the announcement was due a day earlier
    let p = plan(&keys, &s, L, now);
    assert_eq!(
        p.actions,
        vec![
            Action::Generate {
                nbf: now + DAY,
                exp: Some(now + DAY + s.interval)
            },
            Action::SetExp {
                kid: "a".into(),
                exp: now + DAY + s.overlap
            },
        ]
    );
}

#[test]
fn disabled_rotation_generates_nothing_but_still_reports_transitions() {
    let s = RotationSettings {
        enabled: false,
        ..policy()
    };
    let keys = [
        PlanKey {
            kid: "old".into(),
            nbf: 0,
            exp: Some(500),
            revoked: false,
        },
        PlanKey {
            kid: "new".into(),
            nbf: 400,
            exp: None,
            revoked: false,
        },
    ];
    let p = plan(&keys, &s, L, 100);
    // The old key would outlive its successor by more than the overlap: no, 500 < 400 + overlap.
    assert!(p.actions.is_empty());
    assert_eq!(p.next, Some(400));
    assert_eq!(plan(&keys, &s, L, 400).next, Some(500));
}

#[test]
fn neighbours_are_normalised_to_successor_nbf_plus_overlap() {
    let s = RotationSettings {
        enabled: false,
        ..policy()
    };
    let keys = [
        PlanKey {
            kid: "cur".into(),
            nbf: 0,
            exp: None,
            revoked: false,
        },
        PlanKey {
            kid: "next".into(),
            nbf: 1_000,
            exp: None,
            revoked: false,
        },
        PlanKey {
            kid: "gone".into(),
            nbf: 0,
            exp: None,
            revoked: true,
        },
    ];
    let p = plan(&keys, &s, L, 10);
    assert_eq!(
        p.actions,
        vec![Action::SetExp {
            kid: "cur".into(),
            exp: 1_000 + s.overlap
        }]
    );
    // A gap (key expiring before its successor starts) is closed too.
    let keys = [
        PlanKey {
            kid: "cur".into(),
            nbf: 0,
            exp: Some(500),
            revoked: false,
        },
        PlanKey {
            kid: "next".into(),
            nbf: 1_000,
            exp: None,
            revoked: false,
        },
    ];
    assert_eq!(
        plan(&keys, &s, L, 10).actions,
        vec![Action::SetExp {
            kid: "cur".into(),
            exp: 1_000 + s.overlap
        }]
    );
}

#[test]
fn next_transition_ignores_revoked_and_past_instants() {
    let keys = [
        PlanKey {
            kid: "a".into(),
            nbf: 0,
            exp: Some(50),
            revoked: false,
        },
        PlanKey {
            kid: "b".into(),
            nbf: 0,
            exp: Some(20),
            revoked: true,
        },
        PlanKey {
            kid: "c".into(),
            nbf: 30,
            exp: None,
            revoked: false,
        },
    ];
    assert_eq!(next_transition(&keys, 10), Some(30));
    assert_eq!(next_transition(&keys, 30), Some(50));
    assert_eq!(next_transition(&keys, 50), None);
}
