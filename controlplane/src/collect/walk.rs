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
//! under the anchor's interoperation rules.

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::Duration;

use futures_util::stream::{self, StreamExt};
use pharos_shared::chain::AnchorSpec;
use pharos_shared::collection::extract::entity_info;
use pharos_shared::collection::{CollectedMark, EntityInfo};
use pharos_shared::config::FederationSettings;
use pharos_shared::jose::{self, Jwks};
use pharos_shared::trust_mark;
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
    keys: Jwks,
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
    let (anchor_claims, anchor_keys) = anchor_configuration(src, anchor, limits, now).await?;
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
    let keys = issuer_keys(src, ta, &anchor_keys, &found, limits, now).await;
    walked.entities = found
        .into_iter()
        .map(|f| {
            let mut info = f.info;
            info.trust_marks =
                verified(&f.marks, &info.entity_id, &anchor_claims, &keys, now, draft);
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

/// The anchor's EC claims and keys: self-signed, current, and signed with a pinned key when
/// the repository holds the anchor's keys.
async fn anchor_configuration<S: Source>(
    src: &S,
    anchor: &AnchorSpec,
    limits: &Limits,
    now: i64,
) -> Result<(Map<String, Value>, Jwks), String> {
    let ta = anchor.entity_id.as_str();
    let jws = timed(limits.fetch_timeout, src.entity_configuration(ta)).await?;
    let keys = trust_mark::self_signed_keys(&jws, ta, now).map_err(|e| e.to_string())?;
    if let Some(pinned) = &anchor.jwks {
        jose::verify(&jws, pinned)
            .map_err(|e| format!("not signed with the trust anchor's known keys: {e}"))?;
    }
    let claims = jose::decode_unverified(&jws)
        .map_err(|e| e.to_string())?
        .claims;
    Ok((claims, keys))
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
    let keys = trust_mark::self_signed_keys(&jws, id, now).map_err(|e| e.to_string())?;
    let claims = jose::decode_unverified(&jws)
        .map_err(|e| e.to_string())?
        .claims;
    let marks = trust_mark::candidates(&claims, anchor_claims, draft)
        .into_iter()
        .map(|(entry, issuer)| (entry.clone(), issuer))
        .collect();
    Ok(Found {
        info: entity_info(id, &claims, Vec::new()),
        keys,
        list: list_endpoint(&claims),
        marks,
    })
}

/// The keys of every Trust Mark issuer named by a candidate mark: the anchor's and the
/// collected Entities' from their configurations, others fetched (once each, bounded).
async fn issuer_keys<S: Source>(
    src: &S,
    ta: &str,
    anchor_keys: &Jwks,
    found: &[Found],
    limits: &Limits,
    now: i64,
) -> HashMap<String, Jwks> {
    let mut keys: HashMap<String, Jwks> = HashMap::new();
    let wanted: HashSet<&str> = found
        .iter()
        .flat_map(|f| f.marks.iter().map(|(_, i)| i.as_str()))
        .collect();
    let own: HashMap<&str, &Jwks> = found
        .iter()
        .map(|f| (f.info.entity_id.as_str(), &f.keys))
        .collect();
    let mut missing = Vec::new();
    for issuer in wanted {
        if issuer == ta {
            keys.insert(issuer.to_owned(), anchor_keys.clone());
        } else if let Some(k) = own.get(issuer) {
            keys.insert(issuer.to_owned(), (*k).clone());
        } else {
            missing.push(issuer.to_owned());
        }
    }
    missing.truncate(limits.max_entities);
    let fetched: Vec<_> = stream::iter(missing)
        .map(|issuer| async move {
            let r = timed(limits.fetch_timeout, src.entity_configuration(&issuer))
                .await
                .and_then(|jws| {
                    trust_mark::self_signed_keys(&jws, &issuer, now).map_err(|e| e.to_string())
                });
            (issuer, r)
        })
        .buffer_unordered(limits.parallel.max(1))
        .collect()
        .await;
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
    anchor_claims: &Map<String, Value>,
    keys: &HashMap<String, Jwks>,
    now: i64,
    draft: bool,
) -> Vec<CollectedMark> {
    candidates
        .iter()
        .filter_map(|(entry, issuer)| {
            let k = keys.get(issuer)?;
            match trust_mark::verify(entry, subject, anchor_claims, k, now, draft) {
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
