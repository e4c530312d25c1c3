//! Commands refused as busy, by kind, for `/metrics`: counted where the refusal reaches its
//! caller ([`super::Commands::call`]), whichever side refused (the channel was full, or the
//! kind's share of the control plane was taken). Both answer 503 at once, so without this
//! count an operator sees only 503s on some endpoints, not that the control plane turned
//! work away. Kinds are a fixed list: the label set stays bounded.

use std::sync::atomic::{AtomicU64, Ordering};

use super::{Command, EnrollMode};

/// What a command asks for, as `/metrics` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// [`Command::JwksUpdateTrigger`].
    JwksUpdateTrigger,
    /// [`Command::JwksUpdate`].
    JwksUpdate,
    /// [`Command::RecordJti`].
    RecordJti,
    /// [`Command::RecordIssuedTrustMark`].
    RecordIssuedTrustMark,
    /// [`Command::RequestTrustMark`].
    RequestTrustMark,
    /// [`Command::CheckEligibility`].
    CheckEligibility,
    /// [`Command::Enroll`] from the enroll endpoint.
    Enroll,
    /// [`Command::Enroll`] from the enroll_request endpoint.
    EnrollRequest,
    /// [`Command::CollectEntities`].
    CollectEntities,
    /// [`Command::SubordinateHistory`].
    SubordinateHistory,
}

impl Kind {
    /// Every kind, in the order of their counters.
    pub const ALL: [Kind; 10] = [
        Kind::JwksUpdateTrigger,
        Kind::JwksUpdate,
        Kind::RecordJti,
        Kind::RecordIssuedTrustMark,
        Kind::RequestTrustMark,
        Kind::CheckEligibility,
        Kind::Enroll,
        Kind::EnrollRequest,
        Kind::CollectEntities,
        Kind::SubordinateHistory,
    ];

    /// The `command` label.
    pub fn name(self) -> &'static str {
        match self {
            Kind::JwksUpdateTrigger => "jwks_update_trigger",
            Kind::JwksUpdate => "jwks_update",
            Kind::RecordJti => "record_jti",
            Kind::RecordIssuedTrustMark => "record_issued_trust_mark",
            Kind::RequestTrustMark => "trust_mark_request",
            Kind::CheckEligibility => "check_eligibility",
            Kind::Enroll => "enroll",
            Kind::EnrollRequest => "enroll_request",
            Kind::CollectEntities => "collect_entities",
            Kind::SubordinateHistory => "subordinate_history",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl Command {
    /// What this command asks for.
    pub fn kind(&self) -> Kind {
        match self {
            Command::JwksUpdateTrigger { .. } => Kind::JwksUpdateTrigger,
            Command::JwksUpdate { .. } => Kind::JwksUpdate,
            Command::RecordJti { .. } => Kind::RecordJti,
            Command::RecordIssuedTrustMark { .. } => Kind::RecordIssuedTrustMark,
            Command::RequestTrustMark { .. } => Kind::RequestTrustMark,
            Command::CheckEligibility { .. } => Kind::CheckEligibility,
            Command::Enroll { enrollment, .. } => match enrollment.mode {
                EnrollMode::Enroll => Kind::Enroll,
                EnrollMode::Request => Kind::EnrollRequest,
            },
            Command::CollectEntities { .. } => Kind::CollectEntities,
            Command::SubordinateHistory { .. } => Kind::SubordinateHistory,
        }
    }
}

/// Busy refusals since start, by kind (shared by the channels of one process's entities).
#[derive(Debug, Default)]
pub struct Refusals {
    by_kind: [AtomicU64; Kind::ALL.len()],
}

impl Refusals {
    /// Counts one refusal of `kind`.
    pub fn count(&self, kind: Kind) {
        self.by_kind[kind.index()].fetch_add(1, Ordering::Relaxed);
    }

    /// Refusals of `kind` since start.
    pub fn get(&self, kind: Kind) -> u64 {
        self.by_kind[kind.index()].load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_own_counter_and_name() {
        let r = Refusals::default();
        for (i, k) in Kind::ALL.into_iter().enumerate() {
            assert_eq!(k.index(), i, "ALL is in declaration order");
            for _ in 0..=i {
                r.count(k);
            }
        }
        let names: std::collections::HashSet<_> = Kind::ALL.map(Kind::name).into();
        assert_eq!(names.len(), Kind::ALL.len());
        for (i, k) in Kind::ALL.into_iter().enumerate() {
            assert_eq!(r.get(k), i as u64 + 1);
        }
    }
}
