//! Lead-time resolution: one test per rule of the service interface, and the policy checks.

#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::sync::{Arc, Mutex};

use super::*;

const L: i64 = 86_400;

fn with(lead: i64, mult: f64) -> RotationSettings {
    RotationSettings {
        key_announcement_lead_time: lead,
        key_announcement_lead_time_ec_multiplier: mult,
        ..RotationSettings::default()
    }
}

#[test]
fn rule_1_multiplier_times_ec_lifetime_wins() {
    // The fixed value is ignored while the multiplier is positive.
    let lt = lead_time(&with(999_999, 2.5), L);
    assert_eq!(
        lt,
        LeadTime {
            secs: 216_000,
            floored: false
        }
    );
}

#[test]
fn rule_2_fixed_value_when_no_multiplier() {
    let lt = lead_time(&with(3 * L, 0.0), L);
    assert_eq!(
        lt,
        LeadTime {
            secs: 3 * L,
            floored: false
        }
    );
}

#[test]
fn rule_3_default_is_max_of_five_lifetimes_and_a_day() {
    assert_eq!(lead_time(&with(0, 0.0), L).secs, 5 * L);
    // A short lifetime: five of them are less than a day, so a day it is.
    assert_eq!(lead_time(&with(0, 0.0), 600).secs, 86_400);
}

#[test]
fn rule_4_never_below_one_ec_lifetime() {
    assert_eq!(
        lead_time(&with(60, 0.0), L),
        LeadTime {
            secs: L,
            floored: true
        }
    );
    assert_eq!(
        lead_time(&with(0, 0.5), L),
        LeadTime {
            secs: L,
            floored: true
        }
    );
    // Exactly one lifetime is allowed as configured.
    assert_eq!(
        lead_time(&with(0, 1.0), L),
        LeadTime {
            secs: L,
            floored: false
        }
    );
}

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn logged(f: impl FnOnce() -> i64) -> (i64, String) {
    let out = Captured::default();
    let writer = out.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let v = tracing::subscriber::with_default(subscriber, f);
    let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
    (v, text)
}

#[test]
fn the_floor_logs_a_warning_and_the_other_rules_do_not() {
    let (secs, log) = logged(|| resolve_lead_time(&with(60, 0.0), L));
    assert_eq!(secs, L);
    assert!(log.contains("WARN"), "{log}");
    assert!(
        log.contains("shorter than one entity configuration lifetime"),
        "{log}"
    );
    let (secs, log) = logged(|| resolve_lead_time(&with(2 * L, 0.0), L));
    assert_eq!(secs, 2 * L);
    assert!(log.is_empty(), "{log}");
}

#[test]
fn policy_validation() {
    assert!(RotationSettings::default().validate().is_ok());
    let bad = [
        RotationSettings {
            interval: 0,
            ..Default::default()
        },
        RotationSettings {
            overlap: -1,
            ..Default::default()
        },
        RotationSettings {
            interval: 10,
            overlap: 10,
            ..Default::default()
        },
        RotationSettings {
            key_announcement_lead_time_ec_multiplier: -1.0,
            ..Default::default()
        },
        RotationSettings {
            key_announcement_lead_time_ec_multiplier: f64::NAN,
            ..Default::default()
        },
    ];
    for b in bad {
        assert!(b.validate().is_err(), "{b:?}");
    }
}
