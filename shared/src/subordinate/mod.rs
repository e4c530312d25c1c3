//! Subordinates as the data plane sees them: one immutable record per subordinate
//! ([`Subordinate`]), held in a persistent registry ([`Subordinates`], `registry.rs`) so that a
//! change to one of 100,000 subordinates costs O(log n) and shares everything else with the
//! previous snapshot. The signed statement about a record is a cache beside it
//! (`statement_cache.rs`), not part of its value.
//!
//! The general (all-subordinates) statement settings travel next to the map; per-subordinate
//! values override them at statement time and are never merged into them.

mod registry;
mod statement_cache;

use std::sync::Arc;

use serde_json::Value;

use crate::claims::AdditionalClaim;
use crate::jose::Jwks;

pub use registry::{Build, Index, Subordinates, TimeKey, Tombstone};
pub use statement_cache::{SignedStatement, StatementBudget, StatementSlot};

/// Lifetime of subordinate statements when nothing else is configured, seconds.
pub const DEFAULT_STATEMENT_LIFETIME: i64 = 600_000;

/// Where a subordinate stands; only `active` subordinates are served by fetch and list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SubordinateStatus {
    /// Statements are issued and the entity is listed.
    Active,
    /// Waiting for an administrator (enrollment request).
    Pending,
    /// Refused by an administrator.
    Blocked,
    /// Temporarily switched off.
    Inactive,
}

impl SubordinateStatus {
    /// Every status, in the reference service's numeric order.
    pub const ALL: [Self; 4] = [Self::Active, Self::Blocked, Self::Pending, Self::Inactive];

    /// The word used in the Admin API and the database.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Pending => "pending",
            Self::Blocked => "blocked",
            Self::Inactive => "inactive",
        }
    }

    /// Parses a status word, case-insensitively; the reference service's legacy numeric codes
    /// (0 active, 1 blocked, 2 pending, 3 inactive) are accepted too so old scripts keep working.
    pub fn parse(s: &str) -> Option<Self> {
        let s = s.trim().trim_matches('"');
        if let Ok(n) = s.parse::<usize>() {
            return Self::ALL.get(n).copied();
        }
        Self::ALL
            .into_iter()
            .find(|st| st.as_str().eq_ignore_ascii_case(s))
    }
}

impl std::fmt::Display for SubordinateStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One subordinate, frozen at one version.
#[derive(Debug, Clone, PartialEq)]
pub struct Subordinate {
    /// Database id.
    pub id: i64,
    /// Its entity identifier (the map key).
    pub entity_id: Arc<str>,
    /// Whether it is served.
    pub status: SubordinateStatus,
    /// Entity types it was registered with (the list endpoint's `entity_type` filter). The few
    /// distinct names are shared between records (see [`Subordinates::type_name`]): a million copies of
    /// `"openid_relying_party"` were 40 MB.
    pub registered_entity_types: Box<[Arc<str>]>,
    /// Every stored key, expired ones included (filtering happens at issuance).
    pub jwks: StoredJwks,
    /// Metadata override; `None` = use the general value. (Boxed, as the other overrides:
    /// most subordinates have none, and an inline `Value` costs 80 bytes in each of 100,000
    /// records.)
    pub metadata: Option<Box<Value>>,
    /// Metadata policy override; `None` = use the general value.
    pub metadata_policy: Option<Box<Value>>,
    /// Constraints override; `None` = use the general value.
    pub constraints: Option<Box<Value>>,
    /// Additional claims; empty = use the general ones.
    pub additional_claims: Vec<AdditionalClaim>,
    /// When it was registered (`created_at`), seconds since the epoch.
    pub registered: i64,
    /// When anything that goes into its statement or its listing last changed (`updated_at`,
    /// moved by every write that touches it), seconds since the epoch.
    pub updated: i64,
    /// Changes with every write to this subordinate.
    pub version: u64,
    /// The signed statement about this version, once the fetch endpoint has made one.
    pub statement: StatementSlot,
}

impl Subordinate {
    /// Whether `other` holds the same stored state: everything read from the database, not
    /// the version nor the signed statement held. A full reload keeps the record it already
    /// has when nothing stored changed, so a replica rebuilding its snapshot does not hold two
    /// copies of a million records at once.
    pub fn same_stored(&self, other: &Subordinate) -> bool {
        self.id == other.id
            && self.entity_id == other.entity_id
            && self.status == other.status
            && self.registered_entity_types == other.registered_entity_types
            && self.jwks == other.jwks
            && self.metadata == other.metadata
            && self.metadata_policy == other.metadata_policy
            && self.constraints == other.constraints
            && self.additional_claims == other.additional_claims
            && self.registered == other.registered
            && self.updated == other.updated
    }
}

/// A subordinate's key set as the snapshot holds it: its JSON text. Parsed, one EC key is
/// about a kilobyte of maps and strings, as text about 150 bytes; the set is read only when a
/// statement is signed (rare next to serving the signed one), so 100,000 subordinates keep the
/// compact form and pay a parse of a few microseconds at signing time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StoredJwks(Box<str>);

impl StoredJwks {
    /// The compact form of `jwks`.
    pub fn new(jwks: &Jwks) -> Self {
        Self(serde_json::to_string(jwks).unwrap_or_default().into())
    }

    /// The stored text of a key set as read from the database, kept as it is (a million at
    /// start-up: neither copied nor scanned). Every stored set was parsed when it was written,
    /// and [`Self::jwks`] reads text that is not a key set as the empty set, as an unreadable
    /// stored set always was read.
    pub fn from_text(text: Option<String>) -> Self {
        Self(text.unwrap_or_default().into_boxed_str())
    }

    /// The key set (empty if the text were ever unreadable, which `new` never produces).
    pub fn jwks(&self) -> Jwks {
        serde_json::from_str(&self.0).unwrap_or_default()
    }
}

impl From<Jwks> for StoredJwks {
    fn from(jwks: Jwks) -> Self {
        Self::new(&jwks)
    }
}

impl Subordinate {
    /// Whether the subordinate is itself a federation authority (has subordinates of its own):
    /// registered with `federation_entity` and its effective metadata publishes a
    /// `federation_list_endpoint` or `federation_fetch_endpoint`. Used by `intermediate=true`.
    pub fn is_intermediate(&self, general: &GeneralSettings) -> bool {
        if !self
            .registered_entity_types
            .iter()
            .any(|t| &**t == "federation_entity")
        {
            return false;
        }
        let metadata = self.metadata.as_deref().or(general.metadata.as_ref());
        let fe = metadata.and_then(|m| m.get("federation_entity"));
        ["federation_list_endpoint", "federation_fetch_endpoint"]
            .iter()
            .any(|k| fe.and_then(|f| f.get(*k)).is_some())
    }

    /// When its statement last changed: its own last update, or the general settings' last
    /// change if that came later.
    pub fn updated_since(&self, general: &GeneralSettings) -> i64 {
        self.updated.max(general.changed_at)
    }

    /// Whether it has any of `types` registered (an empty filter matches everything).
    pub fn has_any_type(&self, types: &[String]) -> bool {
        types.is_empty()
            || types
                .iter()
                .any(|t| self.registered_entity_types.iter().any(|r| **r == **t))
    }
}

/// The general statement settings (`subordinate_statement` scope), applied to every subordinate
/// that has no override of its own.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GeneralSettings {
    /// Statement lifetime set through the Admin API, seconds; `None` = endpoint config decides.
    pub lifetime: Option<i64>,
    /// General metadata (no admin route writes it; kept for data migrated from lighthouse).
    pub metadata: Option<Value>,
    /// General metadata policy.
    pub metadata_policy: Option<Value>,
    /// Non-standard operators that are critical when used.
    pub metadata_policy_crit: Vec<String>,
    /// General constraints.
    pub constraints: Option<Value>,
    /// General additional claims.
    pub additional_claims: Vec<AdditionalClaim>,
    /// When any of the above last changed (0: never): every statement changed then, so no
    /// subordinate was updated earlier than this (see [`Subordinate::updated_since`]).
    pub changed_at: i64,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    pub(crate) fn sub(id: &str, types: &[&str], metadata: Option<Value>) -> Arc<Subordinate> {
        Arc::new(Subordinate {
            id: 1,
            entity_id: id.into(),
            status: SubordinateStatus::Active,
            registered_entity_types: types.iter().map(|t| Arc::from(*t)).collect(),
            jwks: StoredJwks::default(),
            metadata: metadata.map(Box::new),
            metadata_policy: None,
            constraints: None,
            additional_claims: vec![],
            registered: 0,
            updated: 0,
            version: 1,
            statement: StatementSlot::default(),
        })
    }
    #[test]
    fn stored_key_sets_give_back_every_member_in_order() {
        let set: Jwks = serde_json::from_value(json!({"keys": [
            {"kty": "EC", "crv": "P-256", "kid": "a", "x": "x1", "y": "y1", "exp": 5},
            {"kty": "OKP", "kid": "b", "unknown": {"kept": true}}
        ]}))
        .unwrap();
        let stored = StoredJwks::new(&set);
        assert_eq!(stored.jwks(), set);
        assert_eq!(
            serde_json::to_string(&stored.jwks()).unwrap(),
            serde_json::to_string(&set).unwrap()
        );
        assert_eq!(StoredJwks::default().jwks(), Jwks::default());
        for unreadable in [None, Some("{\"keys\": 5}"), Some("not json")] {
            let text = unreadable.map(str::to_owned);
            assert_eq!(StoredJwks::from_text(text).jwks(), Jwks::default());
        }
    }

    #[test]
    fn status_words_and_legacy_numbers() {
        assert_eq!(
            SubordinateStatus::parse("Active"),
            Some(SubordinateStatus::Active)
        );
        assert_eq!(
            SubordinateStatus::parse("1"),
            Some(SubordinateStatus::Blocked)
        );
        assert_eq!(
            SubordinateStatus::parse("2"),
            Some(SubordinateStatus::Pending)
        );
        assert_eq!(SubordinateStatus::parse("deleted"), None);
        assert_eq!(SubordinateStatus::parse("4"), None);
    }

    #[test]
    fn intermediate_needs_federation_entity_type_and_an_authority_endpoint() {
        let general = GeneralSettings::default();
        let fe = json!({"federation_entity": {"federation_list_endpoint": "https://i/list"}});
        assert!(
            sub("https://i", &["federation_entity"], Some(fe.clone())).is_intermediate(&general)
        );
        assert!(!sub("https://i", &["openid_provider"], Some(fe)).is_intermediate(&general));
        assert!(!sub("https://i", &["federation_entity"], None).is_intermediate(&general));
    }
}
