//! What each hosted entity's alerts need, read at scrape time from its control plane and its
//! refreshers: when its keys expire, when its next key transition is due, and which of its
//! refreshes fail.
//!
//! Series of the default entity carry no `entity` label and a hosted entity's carry its
//! number, as the request metrics do (`pharos_dataplane::stats::metrics`), so one query
//! covers both. Trust anchors are labelled by identifier (an operator configures a handful);
//! subordinates only ever as a count, since a registry may hold a million of them.
//!
//! The refreshers and the key task run on the leader only, so their figures are exported by
//! the leader only: a follower still holds what it saw in its last term, which would raise or
//! hide alerts that are not its to raise.

use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{
    DescriptorEncoder, EncodeLabel as _, EncodeLabelSet, EncodeMetric as _, LabelSetEncoder,
    MetricEncoder,
};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use serde_json::Value;

use pharos_controlplane::control_plane::ControlPlane;
use pharos_controlplane::hosting::Hosting;
use pharos_controlplane::refresh::Failures;
use pharos_shared::hosted::EntityNo;

use crate::entity::Launcher;

/// Where the per-entity figures are read.
#[derive(Debug)]
pub struct Entities {
    /// Every hosted entity's control plane.
    pub hosting: Arc<Hosting>,
    /// The default entity's refresh failures.
    pub failures: Arc<Failures>,
    /// The other entities' refresh failures.
    pub launcher: Arc<Launcher>,
}

/// The `entity` label: absent for the default entity.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct Entity(Option<i64>);

impl Entity {
    fn of(n: EntityNo) -> Self {
        Self((!n.is_default()).then(|| n.get()))
    }

    fn encode_into(&self, encoder: &mut LabelSetEncoder) -> std::fmt::Result {
        match self.0 {
            Some(n) => ("entity", n).encode(encoder.encode_label()),
            None => Ok(()),
        }
    }
}

impl EncodeLabelSet for Entity {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> std::fmt::Result {
        self.encode_into(encoder)
    }
}

/// An entity and one of its trust anchors.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct Anchor<'a> {
    entity: Entity,
    trust_anchor: &'a str,
}

impl EncodeLabelSet for Anchor<'_> {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> std::fmt::Result {
        self.entity.encode_into(encoder)?;
        ("trust_anchor", self.trust_anchor).encode(encoder.encode_label())
    }
}

/// An entity and a kind of refresh.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct Refresh {
    entity: Entity,
    kind: &'static str,
}

impl EncodeLabelSet for Refresh {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> std::fmt::Result {
        self.entity.encode_into(encoder)?;
        ("kind", self.kind).encode(encoder.encode_label())
    }
}

/// What one entity's key set says about expiry, at scrape time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct KeyExpiry {
    /// `exp` of the key signing now, when it has one.
    signing: Option<i64>,
    /// The latest `exp` of all published keys; `None` when one never expires. Past it the
    /// entity has no valid key at all.
    published: Option<i64>,
}

/// The expiry figures of `cp`'s published keys.
fn key_expiry(cp: &ControlPlane) -> KeyExpiry {
    let snap = cp.snapshot();
    let keys = &snap.keys;
    let kid = keys.signer.kid();
    let signing = keys
        .published
        .iter()
        .find(|k| k.get("kid").and_then(Value::as_str) == Some(kid))
        .and_then(|k| k.get("exp"))
        .and_then(Value::as_i64);
    KeyExpiry {
        signing,
        published: keys.latest_expiry(),
    }
}

impl Entities {
    /// Every hosted entity's control plane and refresh failures, the default one first.
    fn all(&self) -> Vec<(EntityNo, Arc<ControlPlane>, Option<Arc<Failures>>)> {
        let mut hosted = self.launcher.failures();
        self.hosting
            .numbers()
            .into_iter()
            .filter_map(|n| {
                let cp = self.hosting.get(n)?;
                let failures = if n.is_default() {
                    Some(self.failures.clone())
                } else {
                    hosted
                        .iter()
                        .position(|(m, _)| *m == n)
                        .map(|i| hosted.swap_remove(i).1)
                };
                Some((n, cp, failures))
            })
            .collect()
    }
}

/// Reads one count of an entity's refresh failures.
type ReadCount = fn(&Failures) -> u64;

/// One sample of `entity`: the default entity's has no labels at all (not even `{}`).
fn entity_gauge(family: &mut MetricEncoder, entity: &Entity, v: i64) -> std::fmt::Result {
    match entity.0 {
        None => family.encode_gauge(&v),
        Some(_) => family.encode_family(entity)?.encode_gauge(&v),
    }
}

impl Collector for Entities {
    fn encode(&self, mut enc: DescriptorEncoder) -> std::fmt::Result {
        let all = self.all();
        let expiry: Vec<_> = all
            .iter()
            .map(|(n, cp, _)| (Entity::of(*n), key_expiry(cp)))
            .collect();
        let mut family = enc.encode_descriptor(
            "pharos_signing_key_expiry_timestamp_seconds",
            "exp of the key signing now (Entity Configuration, statements, trust marks), Unix seconds; no sample when it never expires",
            None,
            MetricType::Gauge,
        )?;
        for (entity, e) in &expiry {
            if let Some(t) = e.signing {
                entity_gauge(&mut family, entity, t)?;
            }
        }
        let mut family = enc.encode_descriptor(
            "pharos_published_keys_expiry_timestamp_seconds",
            "Latest exp of all published keys, Unix seconds: past it no key of the entity is valid; no sample when one never expires",
            None,
            MetricType::Gauge,
        )?;
        for (entity, e) in &expiry {
            if let Some(t) = e.published {
                entity_gauge(&mut family, entity, t)?;
            }
        }
        // Leader-only figures (see the module documentation).
        let leading = self
            .hosting
            .get(EntityNo::DEFAULT)
            .is_some_and(|cp| cp.leadership.is_leader());
        let mut family = enc.encode_descriptor(
            "pharos_key_rotation_next_timestamp_seconds",
            "Next key transition (announce, activate, retire) the key task planned at its last successful run, Unix seconds; past it, rotation is overdue (leader only)",
            None,
            MetricType::Gauge,
        )?;
        for (n, cp, _) in all.iter().filter(|_| leading) {
            if let Some(t) = cp.next_key_transition() {
                entity_gauge(&mut family, &Entity::of(*n), t)?;
            }
        }
        let mut family = enc.encode_descriptor(
            "pharos_trust_anchor_refresh_consecutive_failures",
            "Failed key refreshes of a polled trust anchor since its last success (leader only)",
            None,
            MetricType::Gauge,
        )?;
        for (n, _, failures) in all.iter().filter(|_| leading) {
            for (id, count) in failures.iter().flat_map(|f| f.anchors()) {
                let labels = Anchor {
                    entity: Entity::of(*n),
                    trust_anchor: &id,
                };
                ConstGauge::new(i64::from(count)).encode(family.encode_family(&labels)?)?;
            }
        }
        let subordinates: [(&str, &str, ReadCount); 2] = [
            (
                "pharos_subordinates_refresh_failing",
                "Polled subordinates whose last key refresh failed (leader only)",
                |f| f.subordinates_failing.load(Relaxed),
            ),
            (
                "pharos_subordinates_polled",
                "Subordinates whose keys are polled (enable_jwks_update; leader only)",
                |f| f.subordinates_polled.load(Relaxed),
            ),
        ];
        for (name, help, read) in subordinates {
            let mut family = enc.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for (n, _, failures) in all.iter().filter(|_| leading) {
                if let Some(f) = failures {
                    let count = i64::try_from(read(f)).unwrap_or(i64::MAX);
                    entity_gauge(&mut family, &Entity::of(*n), count)?;
                }
            }
        }
        let mut family = enc.encode_descriptor(
            "pharos_refresh_failures",
            "Failed refreshes since start, by kind",
            None,
            MetricType::Counter,
        )?;
        for (n, _, failures) in &all {
            let Some(f) = failures else { continue };
            for (kind, count) in [
                ("anchor_keys", f.anchor_keys.load(Relaxed)),
                ("subordinate_keys", f.subordinate_keys.load(Relaxed)),
                ("held_marks", f.held_marks.load(Relaxed)),
            ] {
                let labels = Refresh {
                    entity: Entity::of(*n),
                    kind,
                };
                ConstCounter::new(count).encode(family.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}
