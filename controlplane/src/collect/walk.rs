//! One walk of a federation, from its Trust Anchor down through subordinate listings.
//!
//! Breadth first: the anchor's listing, then the listing of every listed Entity that
//! publishes a `federation_list_endpoint`, each Entity fetched once (the visited set makes
//! authority loops and duplicates harmless). Every fetch runs under the outbound rules and a
//! timeout; at most [`Limits::parallel`] at once; the walk stops taking new Entities at
//! [`Limits::max_entities`] and new fetches at [`Limits::max_fetches`]. An Entity whose
//! Entity Configuration cannot be fetched or is not validly self-signed, and a listing that
//! hangs or is not a JSON array, are logged and skipped; the rest of the walk goes on.
//!
//! Trust Marks are kept only when they verify against the Trust Anchor's Entity
//! Configuration (its `trust_mark_issuers`/`trust_mark_owners`) with the issuer's keys,
//! established through a trust chain to the same anchor, under the anchor's interoperation
//! rules.

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::Duration;

use futures_util::stream::{self, StreamExt};
use pharos_shared::chain::AnchorSpec;
use pharos_shared::collection::extract::entity_info;
use pharos_shared::collection::{CollectedMark, EntityInfo};
use pharos_shared::config::FederationSettings;
use pharos_shared::jose;
use pharos_shared::trust_mark;
use pharos_shared::trust_mark_issuer_keys::{self, IssuerKeys};
use serde_json::{Map, Value};

use super::Source;

/// Bounds of one walk.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Most Entities collected.
    pub max_entities: usize,
    /// Most documents fetched (configurations and listings).
    pub max_fetches: usize,
    /// Fetches at once.
    pub parallel: usize,
    /// Time allowed per fetch.
    pub fetch_timeout: Duration,
}

/// Most Entities one collection holds.
pub const MAX_ENTITIES: usize = 100_000;
/// Fetches at once within one walk.
pub const PARALLEL_FETCHES: usize = 32;

impl Limits {
    /// The bounds for fetches made under `federation.*` (its `http_timeout` per fetch).
    pub fn from_settings(f: &FederationSettings) -> Self {
        Self {
            max_entities: MAX_ENTITIES,
            max_fetches: MAX_ENTITIES * 2,
            parallel: PARALLEL_FETCHES,
            fetch_timeout: f.http_timeout.get(),
        }
    }
}

/// What a walk found.
#[derive(Debug, Default)]
pub struct Walked {
    /// The Entities (unsorted; the anchor is not among them).
    pub entities: Vec<EntityInfo>,
    /// Members and listings that were skipped (each logged).
    pub skipped: usize,
}

/// An Entity fetched, before its Trust Marks are checked.
struct Found {
    info: EntityInfo,
    list: Option<String>,
    marks: Vec<(Value, String)>,
}

/// Walks the federation under `anchor`. Fails only when the anchor's own Entity
/// Configuration cannot be had or does not verify (with its pinned keys, when the repository
/// holds them).
pub async fn walk<S: Source>(
    src: &S,
    anchor: &AnchorSpec,
    limits: &Limits,
    now: i64,
) -> Result<Walked, String> {
    let ta = anchor.entity_id.as_str();
    let anchor_claims = anchor_configuration(src, anchor, limits, now).await?;
    let draft = anchor.interop.draft_shapes;
    let mut fetches = 1usize;
    let mut visited: HashSet<String> = HashSet::from([ta.to_owned()]);
    let mut lists: VecDeque<String> = list_endpoint(&anchor_claims).into_iter().collect();
    let mut found: Vec<Found> = Vec::new();
    let mut walked = Walked::default();
    while let Some(url) = lists.pop_front() {
        if fetches >= limits.max_fetches || found.len() >= limits.max_entities {
            tracing::warn!(trust_anchor = %ta, "entity collection stopped at its bounds ({} entities, {} fetches)", found.len(), fetches);
            break;
        }
        fetches += 1;
        let ids = match listing(src, &url, limits.fetch_timeout).await {
            Ok(ids) => ids,
            Err(e) => {
                tracing::warn!(trust_anchor = %ta, listing = %url, error = %e, "entity collection: listing skipped");
                walked.skipped += 1;
                continue;
            }
        };
        let room = limits
            .max_entities
            .saturating_sub(found.len())
            .min(limits.max_fetches.saturating_sub(fetches));
        let fresh: Vec<String> = ids
            .into_iter()
            .filter(|id| visited.insert(id.clone()))
            .take(room)
            .collect();
        fetches += fresh.len();
        let ac = &anchor_claims;
        let results: Vec<_> = stream::iter(fresh)
            .map(|id| async move {
                let r = member(src, &id, ac, limits.fetch_timeout, now, draft).await;
                (id, r)
            })
            .buffer_unordered(limits.parallel.max(1))
            .collect()
            .await;
        for (id, r) in results {
            match r {
                Ok(f) => {
                    if let Some(l) = &f.list {
                        lists.push_back(l.clone());
                    }
                    found.push(f);
                }
                Err(e) => {
                    tracing::warn!(trust_anchor = %ta, entity_id = %id, error = %e, "entity collection: member skipped");
                    walked.skipped += 1;
                }
            }
        }
    }
    let keys = issuer_keys(src, anchor, &anchor_claims, &found, limits, now).await;
    walked.entities = found
        .into_iter()
        .map(|f| {
            let mut info = f.info;
            info.trust_marks = verified(
                &f.marks,
                &info.entity_id,
                anchor,
                &anchor_claims,
                &keys,
                now,
            );
            info
        })
        .collect();
    Ok(walked)
}

async fn timed<T>(
    t: Duration,
    f: impl std::future::Future<Output = pharos_shared::Result<T>>,
) -> Result<T, String> {
    match tokio::time::timeout(t, f).await {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(_) => Err(format!("no answer within {t:?}")),
    }
}

/// The anchor's EC claims: self-signed, current, and signed with a pinned key when
/// the repository holds the anchor's keys.
async fn anchor_configuration<S: Source>(
    src: &S,
    anchor: &AnchorSpec,
    limits: &Limits,
    now: i64,
) -> Result<Map<String, Value>, String> {
    let ta = anchor.entity_id.as_str();
    let jws = timed(limits.fetch_timeout, src.entity_configuration(ta)).await?;
    trust_mark::self_signed_keys(&jws, ta, now).map_err(|e| e.to_string())?;
    if let Some(pinned) = &anchor.jwks {
        jose::verify(&jws, pinned)
            .map_err(|e| format!("not signed with the trust anchor's known keys: {e}"))?;
    }
    let claims = jose::decode_unverified(&jws)
        .map_err(|e| e.to_string())?
        .claims;
    Ok(claims)
}

fn list_endpoint(claims: &Map<String, Value>) -> Option<String> {
    claims
        .get("metadata")?
        .get("federation_entity")?
        .get("federation_list_endpoint")?
        .as_str()
        .map(str::to_owned)
}

async fn listing<S: Source>(src: &S, url: &str, t: Duration) -> Result<Vec<String>, String> {
    let body = timed(t, src.list(url)).await?;
    let v: Vec<Value> =
        serde_json::from_str(&body).map_err(|e| format!("not a JSON array: {e}"))?;
    Ok(v.into_iter()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect())
}

async fn member<S: Source>(
    src: &S,
    id: &str,
    anchor_claims: &Map<String, Value>,
    t: Duration,
    now: i64,
    draft: bool,
) -> Result<Found, String> {
    let jws = timed(t, src.entity_configuration(id)).await?;
    trust_mark::self_signed_keys(&jws, id, now).map_err(|e| e.to_string())?;
    let claims = jose::decode_unverified(&jws)
        .map_err(|e| e.to_string())?
        .claims;
    let marks = trust_mark::candidates(&claims, anchor_claims, draft)
        .into_iter()
        .map(|(entry, issuer)| (entry.clone(), issuer))
        .collect();
    Ok(Found {
        info: entity_info(id, &claims, Vec::new()),
        list: list_endpoint(&claims),
        marks,
    })
}

/// Most distinct Trust Mark Issuers one walk resolves: each costs a trust chain to the
/// anchor (up to [`pharos_shared::chain::MAX_FETCHES`] fetches). Marks of further issuers are
/// left out, with a warning.
pub const MAX_TRUST_MARK_ISSUERS: usize = 1_000;

/// The keys of every Trust Mark issuer named by a candidate mark, each established once
/// through a trust chain to the anchor ([`trust_mark_issuer_keys::issuer_keys`], the rule the
/// resolver and the checkers apply), a few at a time. An issuer without keys is logged.
async fn issuer_keys<S: Source>(
    src: &S,
    anchor: &AnchorSpec,
    anchor_claims: &Map<String, Value>,
    found: &[Found],
    limits: &Limits,
    now: i64,
) -> HashMap<String, IssuerKeys> {
    let ta = anchor.entity_id.as_str();
    let mut wanted: Vec<String> = found
        .iter()
        .flat_map(|f| f.marks.iter().map(|(_, i)| i.as_str()))
        .collect::<HashSet<&str>>()
        .into_iter()
        .map(str::to_owned)
        .collect();
    if wanted.len() > MAX_TRUST_MARK_ISSUERS {
        tracing::warn!(trust_anchor = %ta, issuers = wanted.len(), "entity collection: only the first {MAX_TRUST_MARK_ISSUERS} trust mark issuers are resolved");
        wanted.sort_unstable();
        wanted.truncate(MAX_TRUST_MARK_ISSUERS);
    }
    // A chain is a few fetches, each under the fetcher's own timeout; this bounds the whole.
    let deadline = limits.fetch_timeout.saturating_mul(4);
    let fetched: Vec<_> = stream::iter(wanted)
        .map(|issuer| async move {
            let r = timed(
                deadline,
                trust_mark_issuer_keys::issuer_keys(src, anchor, anchor_claims, &issuer, now),
            )
            .await;
            (issuer, r)
        })
        .buffer_unordered(limits.parallel.max(1))
        .collect()
        .await;
    let mut keys = HashMap::new();
    for (issuer, r) in fetched {
        match r {
            Ok(k) => {
                keys.insert(issuer, k);
            }
            Err(e) => {
                tracing::warn!(trust_anchor = %ta, %issuer, error = %e, "entity collection: trust mark issuer unusable")
            }
        }
    }
    keys
}

fn verified(
    candidates: &[(Value, String)],
    subject: &str,
    anchor: &AnchorSpec,
    anchor_claims: &Map<String, Value>,
    keys: &HashMap<String, IssuerKeys>,
    now: i64,
) -> Vec<CollectedMark> {
    candidates
        .iter()
        .filter_map(|(entry, issuer)| {
            let k = keys.get(issuer)?;
            match trust_mark_issuer_keys::verify_mark(entry, subject, anchor, anchor_claims, k, now)
            {
                Ok(m) => Some(CollectedMark {
                    trust_mark_type: m.trust_mark_type,
                    trust_mark: m.trust_mark,
                }),
                Err(e) => {
                    tracing::debug!(entity_id = %subject, error = %e, "entity collection: trust mark left out");
                    None
                }
            }
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
#[path = "walk_tests.rs"]
mod tests;
