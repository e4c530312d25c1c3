//! The immutable view of federation state that the data plane serves from.
//!
//! The control plane is the only writer: it commits a change to the database, builds a new
//! `Snapshot` that differs from the previous one only in the sections the change touched (every
//! section is an `Arc`, so unchanged sections are shared, never copied), and publishes it through
//! one `ArcSwap`. The data plane loads the current snapshot once per request. `generation` grows
//! with every publication and is the key that invalidates signed-response caches.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::chain::{AnchorSpec, TrustMarkStatusCheck};
use crate::claims::AdditionalClaim;
use crate::endpoint::{EndpointConfig, EndpointType};
use crate::interop::{AnchorEcConstraints, Interop, Profile};
use crate::jose::{Jwk, Jwks, Signer};
use crate::subordinate::Subordinates;

mod handle;
mod ready;
pub use handle::{Signed, SnapshotPublisher, SnapshotReader};
pub use ready::{Ready, ReadyView};

/// Everything the data plane needs to answer a request, frozen at one instant. Laid out in
/// the order written, from a cache line's start (`repr(C, align(64))`): a warm fetch reads
/// the ready view, the statements' generation and the subordinates, in the first two lines.
#[derive(Debug, Clone)]
#[repr(C, align(64))]
pub struct Snapshot {
    /// What a warm fetch reads, derived from the sections below on first use (leave it
    /// `Default`: see [`Ready`]).
    pub ready: Ready,
    /// Generation of the last change to what every signed statement depends on (our keys, the
    /// endpoint registry): a statement signed before it is stale. Together with a
    /// subordinate's version and the general settings' version it keys cached statements.
    pub statements_generation: u64,
    /// Every subordinate and the general statement settings.
    pub subordinates: Arc<Subordinates>,
    /// Increases with each published snapshot.
    pub generation: u64,
    /// Our own entity identifier.
    pub entity_id: Arc<str>,
    /// Federation endpoints by path and type.
    pub registry: Arc<Registry>,
    /// Inputs of our Entity Configuration.
    pub entity_configuration: Arc<EcSettings>,
    /// The trust anchor repository.
    pub trust_anchors: Arc<TrustAnchors>,
    /// Our signing key and published keys.
    pub keys: Arc<KeySet>,
    /// Trust mark types, issuance specs, subjects, issued instances and the marks we hold.
    pub trust_marks: Arc<crate::trust_mark_issuer::TrustMarks>,
    /// The periodic entity collector's last collection per Trust Anchor.
    pub collections: Arc<crate::collection::Collections>,
}

/// One federation endpoint as served.
#[derive(Debug, Clone)]
pub struct EndpointEntry {
    /// The endpoint type.
    pub kind: EndpointType,
    /// Served path; `None` = disabled.
    pub path: Option<String>,
    /// Published URL override.
    pub url: Option<String>,
    /// Whether `private_key_jwt` client authentication is required.
    pub auth_enabled: bool,
    /// Trust anchors whose federations may authenticate here.
    pub auth_trust_anchors: Vec<String>,
    /// Parsed type-specific configuration.
    pub config: EndpointConfig,
}

impl EndpointEntry {
    /// The URL published in our metadata, if the endpoint is enabled.
    pub fn published_url(&self, entity_id: &str) -> Option<String> {
        let path = self.path.as_deref().filter(|p| !p.is_empty())?;
        Some(match &self.url {
            Some(u) if !u.is_empty() => u.clone(),
            _ => format!("{}{}", entity_id.trim_end_matches('/'), path),
        })
    }
}

/// A path that was moved away from but is still served until `expires_at`, so that clients
/// holding our previous Entity Configuration keep working for one of its lifetimes.
#[derive(Debug, Clone)]
pub struct LegacyPath {
    /// The endpoint the path used to belong to.
    pub entry: Arc<EndpointEntry>,
    /// Unix seconds after which the path is no longer served.
    pub expires_at: i64,
}

/// The endpoint registry: the catch-all dispatcher's lookup table.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    /// Every configured endpoint, enabled or not.
    pub by_type: BTreeMap<EndpointType, Arc<EndpointEntry>>,
    /// Enabled endpoints by exact path.
    pub by_path: HashMap<String, Arc<EndpointEntry>>,
    /// Old paths still served for a while.
    pub legacy: HashMap<String, LegacyPath>,
}

impl Registry {
    /// Builds the lookup tables from the endpoint rows and the legacy paths.
    pub fn new(entries: Vec<EndpointEntry>, legacy: Vec<(String, EndpointType, i64)>) -> Self {
        let mut by_type = BTreeMap::new();
        let mut by_path = HashMap::new();
        for e in entries {
            let e = Arc::new(e);
            if let Some(p) = e.path.as_deref().filter(|p| !p.is_empty()) {
                by_path.insert(p.to_string(), e.clone());
            }
            by_type.insert(e.kind, e);
        }
        let legacy = legacy
            .into_iter()
            .filter(|(path, _, _)| !by_path.contains_key(path))
            .map(|(path, kind, expires_at)| {
                // A legacy path keeps answering with the endpoint's current settings when the
                // type still exists, otherwise with that type's defaults.
                let entry = by_type.get(&kind).cloned().unwrap_or_else(|| {
                    Arc::new(EndpointEntry {
                        kind,
                        path: None,
                        url: None,
                        auth_enabled: false,
                        auth_trust_anchors: Vec::new(),
                        config: EndpointConfig::parse(kind, &Value::Null)
                            .unwrap_or(EndpointConfig::Other(Map::new())),
                    })
                });
                (path, LegacyPath { entry, expires_at })
            })
            .collect();
        Self {
            by_type,
            by_path,
            legacy,
        }
    }

    /// The endpoint serving `path` at time `now`, if any.
    pub fn lookup(&self, path: &str, now: i64) -> Option<&Arc<EndpointEntry>> {
        self.by_path.get(path).or_else(|| {
            self.legacy
                .get(path)
                .filter(|l| l.expires_at > now)
                .map(|l| &l.entry)
        })
    }

    /// Whether any enabled endpoint requires client authentication.
    pub fn any_auth_enabled(&self) -> bool {
        self.by_path
            .values()
            .any(|e| e.auth_enabled && e.kind.supports_client_auth())
    }
}

/// Inputs of our Entity Configuration that live in the database.
#[derive(Debug, Clone, PartialEq)]
pub struct EcSettings {
    /// Lifetime of the Entity Configuration, seconds.
    pub lifetime: i64,
    /// Stored metadata (entity type → claims).
    pub metadata: Map<String, Value>,
    /// Our superiors.
    pub authority_hints: Vec<String>,
    /// Extra top-level claims.
    pub additional_claims: Vec<AdditionalClaim>,
}

impl Default for EcSettings {
    fn default() -> Self {
        Self {
            lifetime: 86_400,
            metadata: Map::new(),
            authority_hints: Vec::new(),
            additional_claims: Vec::new(),
        }
    }
}

/// A trust anchor in the repository.
#[derive(Debug, Clone, PartialEq)]
pub struct TrustAnchor {
    /// Its entity identifier.
    pub entity_id: String,
    /// Its keys (absent until the first poll seeds them).
    pub jwks: Option<Jwks>,
    /// Whether its keys are polled.
    pub enable_jwks_update: bool,
    /// Polling interval, seconds (0 = derive from its configuration's `exp`).
    pub key_poll_interval: i64,
    /// This anchor's override of `federation.anchor_ec_constraints` (`None`: the setting).
    pub anchor_ec_constraints: Option<AnchorEcConstraints>,
    /// Trust Mark Issuers this anchor lists may be trusted on their self-signed Entity
    /// Configuration when they have no trust chain to it (off by default).
    pub trust_mark_issuer_self_signed: bool,
    /// Whether resolvers ask the status of Trust Marks returned for chains to this anchor.
    pub trust_mark_status: TrustMarkStatusCheck,
}

/// The trust anchor repository: every anchor and its keys, read live by every usage, and the
/// settings that decide how chains to any anchor treat draft-era shapes.
#[derive(Debug, Clone, Default)]
pub struct TrustAnchors {
    /// Anchors by entity identifier.
    pub by_id: HashMap<String, Arc<TrustAnchor>>,
    /// `federation.profile`.
    pub profile: Profile,
    /// `federation.anchor_ec_constraints`.
    pub anchor_ec_constraints: AnchorEcConstraints,
}

impl TrustAnchors {
    /// The leniencies for chains to `entity_id`: the settings, with the anchor's own override
    /// when the repository holds it (an anchor named only in a request has none).
    pub fn interop(&self, entity_id: &str) -> Interop {
        let own = self
            .by_id
            .get(entity_id)
            .and_then(|a| a.anchor_ec_constraints);
        Interop::for_anchor(self.profile, self.anchor_ec_constraints, own)
    }

    /// An anchor with its keys pinned when the repository holds them (otherwise its keys will
    /// come from its own Entity Configuration) and the draft-era leniencies in force for it
    /// (`federation.profile`, `federation.anchor_ec_constraints` and the record's override).
    ///
    /// The one place an [`AnchorSpec`] is built: every chain validator (resolve, the proactive
    /// resolver, client authentication, enrollment's `trust_path` checker, entity collection)
    /// takes its anchors from here, so the rules apply wherever a chain is validated.
    pub fn spec(&self, entity_id: &str) -> AnchorSpec {
        let stored = self.by_id.get(entity_id);
        AnchorSpec {
            entity_id: entity_id.to_owned(),
            jwks: stored.and_then(|a| a.jwks.clone()),
            interop: self.interop(entity_id),
            trust_mark_issuer_self_signed: stored.is_some_and(|a| a.trust_mark_issuer_self_signed),
            trust_mark_status: stored.map_or_else(Default::default, |a| a.trust_mark_status),
        }
    }
}

/// Our keys as the data plane sees them.
#[derive(Debug, Clone)]
pub struct KeySet {
    /// The key that signs everything right now.
    pub signer: Arc<dyn Signer>,
    /// Valid (not expired, not revoked) public keys, including announced future keys.
    pub published: Vec<Jwk>,
    /// Expired and revoked keys (each with `exp`, and `revoked` when revoked), served by the
    /// historical keys endpoint so that signatures made before a rollover stay verifiable.
    pub historical: Vec<Jwk>,
}

impl KeySet {
    /// The published keys as a JWK Set.
    pub fn jwks(&self) -> Jwks {
        Jwks {
            keys: self.published.clone(),
        }
    }

    /// The next instant after `now` at which a published key starts signing (`nbf`) or stops
    /// being valid (`exp`): what we publish or sign with changes then, so no answer may be
    /// cached past it.
    pub fn next_change(&self, now: i64) -> Option<i64> {
        self.published
            .iter()
            .flat_map(|k| [k.get("nbf"), k.get("exp")])
            .filter_map(|v| v.and_then(Value::as_i64))
            .filter(|t| *t > now)
            .min()
    }

    /// Latest `exp` among published keys, or `None` when some key never expires.
    pub fn latest_expiry(&self) -> Option<i64> {
        let mut latest: Option<i64> = None;
        for k in &self.published {
            match k.get("exp").and_then(Value::as_i64) {
                Some(e) if e > 0 => latest = Some(latest.map_or(e, |l| l.max(e))),
                _ => return None,
            }
        }
        latest
    }
}
