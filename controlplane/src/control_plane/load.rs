//! Building the snapshot from the database: all of it at start, and each section (or one
//! subordinate) again when a write touched it. The only place that turns rows into snapshot
//! values.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use pharos_shared::claims::AdditionalClaim;
use pharos_shared::collection::{Collection, Collections};
use pharos_shared::config::Settings;
use pharos_shared::endpoint::{EndpointConfig, EndpointType};
use pharos_shared::snapshot::{
    EcSettings, EndpointEntry, Registry, Snapshot, TrustAnchor, TrustAnchors,
};
use pharos_shared::subordinate::{GeneralSettings, StoredJwks, Subordinate, Subordinates};
use pharos_shared::trust_mark_issuer::{Renewal, TrustMarks};
use serde_json::Value;

use crate::db::claims::{self, ClaimRow, Scope};
use crate::db::subordinates::SubordinateRow;
use crate::db::{self, Db, settings};
use crate::error::Result;
use crate::keys::{self, kms::Kms};

/// The first snapshot (generation 1) as stored at `now`.
pub async fn snapshot(
    db: &Db,
    settings: &Settings,
    kms: &Kms,
    versions: &AtomicU64,
    now: i64,
    previous: Option<&Snapshot>,
) -> Result<Snapshot> {
    let started = pharos_shared::time::Stopwatch::start();
    let snapshot = Snapshot {
        ready: Default::default(),
        generation: 1,
        entity_id: settings.entity_id.as_str().into(),
        registry: Arc::new(registry(db, now).await?),
        entity_configuration: Arc::new(entity_configuration(db).await?),
        trust_anchors: Arc::new(trust_anchors(db, settings).await?),
        keys: Arc::new(keys::load_keyset(db, kms, now).await?),
        subordinates: Arc::new(
            subordinates(db, versions, previous.map(|s| &*s.subordinates)).await?,
        ),
        trust_marks: Arc::new(trust_marks(db, settings, versions).await?),
        collections: Arc::new(collections(db).await?),
        statements_generation: 1,
    };
    // Operators of large registries watch this (start-up, a replica's full reload); the
    // benchmark harness reads it too.
    tracing::info!(
        subordinates = snapshot.subordinates.len(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "snapshot built from the database"
    );
    Ok(snapshot)
}

/// Every subordinate and the general settings. Rows become records as they stream in (a
/// million subordinates are never held twice), and each record keeps its key set as the
/// stored text. With `previous` (a full reload of a running snapshot) the result is
/// `previous` brought in line with the rows ([`Subordinates::reconcile`]): a record equal in
/// everything stored is the current one, shared, with its version; only the changed records
/// and the paths to them are new, so a replica's rebuild does not hold a second registry.
pub async fn subordinates(
    db: &Db,
    versions: &AtomicU64,
    previous: Option<&Subordinates>,
) -> Result<Subordinates> {
    let general = general(db).await?;
    let mut claims = claims::by_subordinate(db).await?;
    let version = || versions.fetch_add(1, Ordering::SeqCst) + 1;
    let Some(old) = previous else {
        let mut build = Subordinates::build(Arc::new(general), version());
        db::subordinates::for_each(db, |r| {
            let built = stored_record(r, &mut claims, |t| build.type_name(t));
            build.insert(Arc::new(Subordinate {
                version: version(),
                ..built
            }));
        })
        .await?;
        let mut subs = build.finish();
        db::subordinates::for_each_tombstone(db, |entity_id, t| subs.bury(&entity_id, t)).await?;
        return Ok(subs);
    };
    let mut r = old.reconcile();
    db::subordinates::for_each(db, |row| {
        let built = stored_record(row, &mut claims, |t| r.type_name(t));
        let s = match r.current(&built.entity_id) {
            Some(current) if current.same_stored(&built) => current.clone(),
            _ => Arc::new(Subordinate {
                version: version(),
                ..built
            }),
        };
        r.row(s);
    })
    .await?;
    let mut tombstones = Vec::new();
    db::subordinates::for_each_tombstone(db, |entity_id, t| tombstones.push((entity_id, t)))
        .await?;
    Ok(r.finish(general, version, tombstones))
}

/// The record of a streamed row (version 0: the caller stamps it), with its claims taken from
/// `claims` and its entity type names from `type_name`.
fn stored_record(
    r: db::subordinates::SnapshotRow,
    claims: &mut std::collections::HashMap<i64, Vec<ClaimRow>>,
    type_name: impl Fn(&str) -> Arc<str>,
) -> Subordinate {
    let doc = |text: Option<String>| {
        text.and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .map(Box::new)
    };
    let mut types: Vec<_> = r
        .registered_entity_types
        .iter()
        .map(|t| type_name(t))
        .collect();
    types.sort_unstable();
    // Most registries hold no per-subordinate claims: no hashing of a million ids then.
    let claims = if claims.is_empty() {
        Vec::new()
    } else {
        claims.remove(&r.id).unwrap_or_default()
    };
    Subordinate {
        id: r.id,
        status: db::subordinates::stored_status(&r.entity_id, &r.status),
        entity_id: r.entity_id,
        registered_entity_types: types.into(),
        jwks: StoredJwks::from_text(r.jwks),
        metadata: doc(r.metadata),
        metadata_policy: doc(r.metadata_policy),
        constraints: doc(r.constraints),
        additional_claims: claims.into_iter().map(claim).collect(),
        registered: r.created_at,
        updated: r.updated_at,
        version: 0,
        statement: Default::default(),
    }
}

/// The snapshot form of a subordinate row, to go into `registry` (whose entity type names it
/// shares).
pub fn subordinate(r: SubordinateRow, version: u64, registry: &Subordinates) -> Subordinate {
    Subordinate {
        id: r.id,
        status: r.status,
        entity_id: r.entity_id.into(),
        registered_entity_types: r
            .registered_entity_types
            .iter()
            .map(|t| registry.type_name(t))
            .collect(),
        jwks: StoredJwks::new(&r.jwks.unwrap_or_default()),
        metadata: r.metadata.map(Box::new),
        metadata_policy: r.metadata_policy.map(Box::new),
        constraints: r.constraints.map(Box::new),
        additional_claims: r.additional_claims.into_iter().map(claim).collect(),
        registered: r.created_at,
        updated: r.updated_at,
        version,
        statement: Default::default(),
    }
}

fn claim(c: ClaimRow) -> AdditionalClaim {
    AdditionalClaim {
        claim: c.claim,
        value: c.value,
        crit: c.crit,
    }
}

/// The general settings as stored (unset values stay `None`: they are not defaults to copy).
pub async fn general(db: &Db) -> Result<GeneralSettings> {
    let get = |name: &'static str| settings::get(db, settings::SUBORDINATE, name);
    let lifetime = get("lifetime").await?.and_then(|v| v.as_i64());
    let crit = match get("metadata_policy_crit").await? {
        Some(Value::Array(a)) => a
            .into_iter()
            .filter_map(|v| v.as_str().map(String::from))
            .collect(),
        _ => Vec::new(),
    };
    Ok(GeneralSettings {
        lifetime,
        metadata: get("metadata").await?.filter(|v| !v.is_null()),
        metadata_policy: get("metadata_policy").await?.filter(|v| !v.is_null()),
        metadata_policy_crit: crit,
        constraints: get("constraints").await?.filter(|v| !v.is_null()),
        additional_claims: claims::list(db, Scope::SubordinateGeneral)
            .await?
            .into_iter()
            .map(claim)
            .collect(),
        changed_at: get("changed_at")
            .await?
            .and_then(|v| v.as_i64())
            .unwrap_or(0),
    })
}

/// The endpoint registry as stored.
pub async fn registry(db: &Db, now: i64) -> Result<Registry> {
    let rows = db::endpoints::list(db).await?;
    let mut entries = Vec::with_capacity(rows.len());
    for r in rows {
        let Some(kind) = EndpointType::parse(&r.kind) else {
            tracing::warn!(kind = %r.kind, "skipping endpoint of unknown type");
            continue;
        };
        let config = match EndpointConfig::parse(kind, &r.config) {
            Ok(c) => c,
            Err(e) => {
                // Stored configs were validated on write; an invalid one means the database
                // was edited by hand. Serve nothing rather than something half-configured.
                tracing::error!(kind = %kind, error = %e, "skipping endpoint with invalid config");
                continue;
            }
        };
        entries.push(EndpointEntry {
            kind,
            path: r.path,
            url: r.url,
            auth_enabled: r.auth_enabled,
            auth_trust_anchors: r.auth_trust_anchors,
            config,
        });
    }
    let legacy = db::endpoints::legacy_paths(db, now)
        .await?
        .into_iter()
        .filter_map(|(p, k, e)| EndpointType::parse(&k).map(|k| (p, k, e)))
        .collect();
    Ok(Registry::new(entries, legacy))
}

/// The Entity Configuration inputs as stored.
pub async fn entity_configuration(db: &Db) -> Result<EcSettings> {
    let lifetime = settings::get(db, settings::EC, "lifetime")
        .await?
        .and_then(|v| v.as_i64())
        .unwrap_or(EcSettings::default().lifetime);
    let metadata = match settings::get(db, settings::EC, "metadata").await? {
        Some(Value::Object(m)) => m,
        _ => Default::default(),
    };
    let authority_hints = db::entity_config::hints(db)
        .await?
        .into_iter()
        .map(|h| h.entity_id)
        .collect();
    let additional_claims = claims::list(db, Scope::EntityConfiguration)
        .await?
        .into_iter()
        .map(claim)
        .collect();
    Ok(EcSettings {
        lifetime,
        metadata,
        authority_hints,
        additional_claims,
    })
}

/// The trust anchor repository as stored, with the settings that decide, together with each
/// record's override, how chains to an anchor treat draft-era shapes.
pub async fn trust_anchors(db: &Db, settings: &Settings) -> Result<TrustAnchors> {
    let rows = db::trust_anchors::list(db).await?;
    Ok(TrustAnchors {
        profile: settings.federation.profile,
        anchor_ec_constraints: settings.federation.anchor_ec_constraints,
        by_id: rows
            .into_iter()
            .map(|r| {
                let ta = TrustAnchor {
                    entity_id: r.entity_id.clone(),
                    jwks: r.jwks,
                    enable_jwks_update: r.enable_jwks_update,
                    key_poll_interval: r.key_poll_interval,
                    anchor_ec_constraints: r.anchor_ec_constraints,
                    trust_mark_issuer_self_signed: r.trust_mark_issuer_self_signed,
                    trust_mark_status: r.trust_mark_status,
                };
                (r.entity_id, Arc::new(ta))
            })
            .collect(),
    })
}

/// The Trust Mark Issuer's section as stored, specs and subjects stamped with fresh versions.
pub async fn trust_marks(db: &Db, settings: &Settings, versions: &AtomicU64) -> Result<TrustMarks> {
    let mut tm = db::trust_marks::load(db, versions).await?;
    tm.legacy_id = settings.federation.trust_mark_legacy_id;
    tm.renewal = Renewal(settings.federation.trust_mark_renew_after_percent);
    Ok(tm)
}

/// The periodic entity collector's stored collections, by Trust Anchor.
pub async fn collections(db: &Db) -> Result<Collections> {
    let by_anchor = db::collections::load_all(db)
        .await?
        .into_iter()
        .map(|c| (c.trust_anchor.clone(), Arc::new(c)))
        .collect();
    Ok(Collections { by_anchor })
}

/// One Trust Anchor's stored collection (`None`: none is stored).
pub async fn collection(db: &Db, trust_anchor: &str) -> Result<Option<Collection>> {
    db::collections::load_one(db, trust_anchor).await
}
