//! One walk of a federation, from its Trust Anchor down through subordinate listings.
//!
//! Breadth first: the anchor's listing, then the listing of every listed Entity that
//! publishes a `federation_list_endpoint`, each Entity fetched once (the visited set makes
//! authority loops and duplicates harmless). Every fetch runs under the outbound rules and a
//! timeout; at most [`Limits::parallel`] at once.
//!
//! A listed Entity is collected only when its lister vouches for it: the lister's
//! Subordinate Statement about it (from the lister's `federation_fetch_endpoint`) verifies
//! with the lister's keys (the anchor's, pinned when the repository holds them; an
//! Intermediate's from the statement its own superior made about it), and the Entity's
//! Entity Configuration verifies with the keys of that statement. An Entity that lists
//! strangers in its own configuration does not bring them in: nobody signed for them, and
//! they are never fetched.
//!
//! Each walk is bounded ([`Limits`]): a deadline, a total of bytes fetched, a number of
//! fetches and of Entities. The first bound reached stops the walk from starting fetches;
//! what it has verified so far is its result, and [`Walked::stopped`] names the bound (the
//! callers log it). Entities that fail, and listings that hang or are not a JSON array, are
//! logged and skipped; the rest of the walk goes on.
//!
//! Trust Marks are kept only when they verify against the Trust Anchor's Entity
//! Configuration (its `trust_mark_issuers`/`trust_mark_owners`) with the issuer's keys,
//! established through a trust chain to the same anchor, under the anchor's interoperation
//! rules.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::stream::{self, StreamExt};
use pharos_shared::chain::AnchorSpec;
use pharos_shared::collection::extract::entity_info;
use pharos_shared::collection::{CollectedMark, EntityInfo};
use pharos_shared::config::FederationSettings;
use pharos_shared::endpoint::EntityCollectionConfig;
use pharos_shared::entity_configuration::ENTITY_STATEMENT_TYP;
use pharos_shared::jose::{self, Jwks};
use pharos_shared::trust_mark;
use pharos_shared::trust_mark_issuer_keys::{self, IssuerKeys};
use serde_json::{Map, Value};
use tokio::time::Instant;

use super::Source;

/// Bounds of one walk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Most Entities collected.
    pub max_entities: usize,
    /// Most documents fetched (configurations, statements, listings).
    pub max_fetches: usize,
    /// Most bytes fetched, all documents together.
    pub max_bytes: u64,
    /// Time the whole walk may take.
    pub deadline: Duration,
    /// Fetches at once.
    pub parallel: usize,
    /// Time allowed per fetch.
    pub fetch_timeout: Duration,
}

/// Fetches at once within one walk.
pub const PARALLEL_FETCHES: usize = 32;

impl Limits {
    /// The bounds of the `entity_collection` endpoint `c` (see
    /// [`EntityCollectionConfig::walk_bounds`]) for fetches made under `federation.*` (its
    /// `http_timeout` per fetch). Each Entity costs two fetches (the lister's statement and
    /// its configuration), each listing and Trust Mark issuer one.
    pub fn new(f: &FederationSettings, c: &EntityCollectionConfig) -> Self {
        let (deadline, max_bytes, max_entities) = c.walk_bounds();
        Self {
            max_entities,
            max_fetches: max_entities.saturating_mul(4),
            max_bytes,
            deadline,
            parallel: PARALLEL_FETCHES,
            fetch_timeout: f.http_timeout.get(),
        }
    }
}

/// The bound that stopped a walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// [`Limits::deadline`].
    Deadline,
    /// [`Limits::max_bytes`].
    Bytes,
    /// [`Limits::max_fetches`].
    Fetches,
    /// [`Limits::max_entities`].
    Entities,
}

impl std::fmt::Display for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Deadline => "walk_timeout_seconds",
            Self::Bytes => "walk_max_bytes",
            Self::Fetches => "the fetch bound",
            Self::Entities => "walk_max_entities",
        })
    }
}

/// What a walk found.
#[derive(Debug, Default)]
pub struct Walked {
    /// The Entities (unsorted; the anchor is not among them).
    pub entities: Vec<EntityInfo>,
    /// Members and listings that were skipped (each logged).
    pub skipped: usize,
    /// The bound that stopped the walk early, if one did: the Entities are those verified
    /// until then.
    pub stopped: Option<Bound>,
    /// Bytes fetched.
    pub bytes: u64,
}

/// What a walk spends, shared by its parallel fetches.
struct Spend<'a> {
    limits: &'a Limits,
    ends: Instant,
    fetches: AtomicUsize,
    bytes: AtomicU64,
    stopped: Mutex<Option<Bound>>,
}

/// Why a fetch was not made: a bound was reached (counted once, not logged per member).
const BOUND_REACHED: &str = "the walk's bound was reached";

impl<'a> Spend<'a> {
    fn new(limits: &'a Limits) -> Self {
        Self {
            limits,
            ends: Instant::now() + limits.deadline,
            fetches: AtomicUsize::new(0),
            bytes: AtomicU64::new(0),
            stopped: Mutex::new(None),
        }
    }

    fn stop(&self, b: Bound) {
        if let Ok(mut s) = self.stopped.lock() {
            s.get_or_insert(b);
        }
    }

    fn stopped(&self) -> Option<Bound> {
        self.stopped.lock().ok().and_then(|s| *s)
    }

    /// Takes one fetch; its time allowance (the fetch timeout, or less near the deadline).
    fn take(&self) -> Result<Duration, String> {
        if self.stopped().is_some() {
            return Err(BOUND_REACHED.into());
        }
        let left = self.ends.saturating_duration_since(Instant::now());
        let bound = if left.is_zero() {
            Some(Bound::Deadline)
        } else if self.bytes.load(Ordering::Relaxed) >= self.limits.max_bytes {
            Some(Bound::Bytes)
        } else if self.fetches.fetch_add(1, Ordering::Relaxed) >= self.limits.max_fetches {
            Some(Bound::Fetches)
        } else {
            None
        };
        match bound {
            Some(b) => {
                self.stop(b);
                Err(BOUND_REACHED.into())
            }
            None => Ok(self.limits.fetch_timeout.min(left)),
        }
    }

    /// One document through `f`, within the bounds; its bytes are counted.
    async fn fetch(
        &self,
        f: impl std::future::Future<Output = pharos_shared::Result<String>>,
    ) -> Result<String, String> {
        let t = self.take()?;
        let body = match tokio::time::timeout(t, f).await {
            Ok(r) => r.map_err(|e| e.to_string())?,
            Err(_) if Instant::now() >= self.ends => {
                self.stop(Bound::Deadline);
                return Err(BOUND_REACHED.into());
            }
            Err(_) => return Err(format!("no answer within {t:?}")),
        };
        let total = self.bytes.fetch_add(body.len() as u64, Ordering::Relaxed) + body.len() as u64;
        if total > self.limits.max_bytes {
            self.stop(Bound::Bytes);
        }
        Ok(body)
    }
}

/// An Entity whose listing is walked: where it lists, where it vouches, and its keys (the
/// ones its own superior vouched for; the anchor's pinned or own).
#[derive(Clone)]
struct Lister {
    entity_id: String,
    list: String,
    fetch: Option<String>,
    keys: Jwks,
}

/// An Entity fetched, before its Trust Marks are checked.
struct Found {
    info: EntityInfo,
    lister: Option<Lister>,
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
    let spend = Spend::new(limits);
    let (anchor_claims, anchor_keys) = anchor_configuration(src, anchor, &spend, now).await?;
    let draft = anchor.interop.draft_shapes;
    let mut visited: HashSet<String> = HashSet::from([ta.to_owned()]);
    let vouching = anchor.jwks.clone().unwrap_or_else(|| anchor_keys.clone());
    let mut lists: VecDeque<Lister> = lister(ta, &anchor_claims, vouching).into_iter().collect();
    let mut found: Vec<Found> = Vec::new();
    let mut walked = Walked::default();
    while let Some(by) = lists.pop_front() {
        if spend.stopped().is_some() {
            break;
        }
        let ids = match listing(src, &by.list, &spend).await {
            Ok(ids) => ids,
            Err(e) if e == BOUND_REACHED => break,
            Err(e) => {
                tracing::warn!(trust_anchor = %ta, listing = %by.list, error = %e, "entity collection: listing skipped");
                walked.skipped += 1;
                continue;
            }
        };
        let room = limits.max_entities.saturating_sub(found.len());
        let mut fresh: Vec<String> = ids
            .into_iter()
            .filter(|id| visited.insert(id.clone()))
            .collect();
        let capped = fresh.len() > room;
        fresh.truncate(room);
        let (ac, by, sp) = (&anchor_claims, &by, &spend);
        let results: Vec<_> = stream::iter(fresh)
            .map(|id| async move {
                let r = member(src, &id, by, ac, sp, now, draft).await;
                (id, r)
            })
            .buffer_unordered(limits.parallel.max(1))
            .collect()
            .await;
        for (id, r) in results {
            match r {
                Ok(f) => {
                    if let Some(l) = &f.lister {
                        lists.push_back(l.clone());
                    }
                    found.push(f);
                }
                Err(e) if e == BOUND_REACHED => {}
                Err(e) => {
                    tracing::warn!(trust_anchor = %ta, entity_id = %id, lister = %by.entity_id, error = %e, "entity collection: member skipped");
                    walked.skipped += 1;
                }
            }
        }
        if capped {
            spend.stop(Bound::Entities);
        }
    }
    let keys = issuer_keys(src, anchor, &anchor_claims, &found, &spend, now).await;
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
    walked.stopped = spend.stopped();
    walked.bytes = spend.bytes.load(Ordering::Relaxed);
    if let Some(b) = walked.stopped {
        tracing::warn!(trust_anchor = %ta, bound = %b, entities = walked.entities.len(), bytes = walked.bytes,
            "entity collection stopped at {b}; the collection holds the Entities verified until then");
    }
    Ok(walked)
}

/// The anchor's EC claims and keys: self-signed, current, and signed with a pinned key when
/// the repository holds the anchor's keys.
async fn anchor_configuration<S: Source>(
    src: &S,
    anchor: &AnchorSpec,
    spend: &Spend<'_>,
    now: i64,
) -> Result<(Map<String, Value>, Jwks), String> {
    let ta = anchor.entity_id.as_str();
    let jws = spend.fetch(src.entity_configuration(ta)).await?;
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

/// A `federation_entity` metadata member of `claims`, as a string.
fn federation_entity<'c>(claims: &'c Map<String, Value>, name: &str) -> Option<&'c str> {
    claims
        .get("metadata")?
        .get("federation_entity")?
        .get(name)?
        .as_str()
}

/// `entity_id` as a lister, when its configuration publishes a listing; `keys` are the keys
/// its subordinate statements must verify with.
fn lister(entity_id: &str, claims: &Map<String, Value>, keys: Jwks) -> Option<Lister> {
    Some(Lister {
        entity_id: entity_id.to_owned(),
        list: federation_entity(claims, "federation_list_endpoint")?.to_owned(),
        fetch: federation_entity(claims, "federation_fetch_endpoint").map(str::to_owned),
        keys,
    })
}

async fn listing<S: Source>(src: &S, url: &str, spend: &Spend<'_>) -> Result<Vec<String>, String> {
    let body = spend.fetch(src.list(url)).await?;
    let v: Vec<Value> =
        serde_json::from_str(&body).map_err(|e| format!("not a JSON array: {e}"))?;
    Ok(v.into_iter()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect())
}

/// The keys `by` vouches for `id` with: its Subordinate Statement about `id` verifies with
/// `by`'s keys, is an entity statement issued by `by` about `id`, is current, and carries a
/// `jwks`.
fn vouched(jws: &str, by: &Lister, id: &str, now: i64) -> Result<Jwks, String> {
    let d = jose::verify(jws, &by.keys)
        .map_err(|e| format!("{}'s statement about it does not verify: {e}", by.entity_id))?;
    jose::check_typ(&d, ENTITY_STATEMENT_TYP).map_err(|e| e.to_string())?;
    let c = &d.claims;
    let text = |n: &str| c.get(n).and_then(Value::as_str);
    if text("iss") != Some(by.entity_id.as_str()) || text("sub") != Some(id) {
        return Err(format!(
            "{}'s statement is not about it (iss/sub)",
            by.entity_id
        ));
    }
    let num = |n: &str| c.get(n).and_then(Value::as_i64);
    if num("exp").is_none_or(|exp| exp <= now) {
        return Err(format!("{}'s statement about it has expired", by.entity_id));
    }
    if num("iat").is_none_or(|iat| iat > now + pharos_shared::chain::CLOCK_SKEW) {
        return Err(format!(
            "{}'s statement about it is not yet issued",
            by.entity_id
        ));
    }
    c.get("jwks")
        .cloned()
        .and_then(|v| serde_json::from_value::<Jwks>(v).ok())
        .filter(|k| !k.keys.is_empty())
        .ok_or_else(|| format!("{}'s statement about it has no jwks", by.entity_id))
}

async fn member<S: Source>(
    src: &S,
    id: &str,
    by: &Lister,
    anchor_claims: &Map<String, Value>,
    spend: &Spend<'_>,
    now: i64,
    draft: bool,
) -> Result<Found, String> {
    // The superior's word first: a stranger nobody vouches for is never fetched.
    let endpoint = by.fetch.as_deref().ok_or_else(|| {
        format!(
            "{} lists it but publishes no federation_fetch_endpoint to vouch for it",
            by.entity_id
        )
    })?;
    let url = pharos_runtime::outbound::fetch_url(endpoint, id).map_err(|e| e.to_string())?;
    let statement = spend.fetch(src.statement(&url)).await?;
    let vouched_keys = vouched(&statement, by, id, now)?;
    let jws = spend.fetch(src.entity_configuration(id)).await?;
    trust_mark::self_signed_keys(&jws, id, now).map_err(|e| e.to_string())?;
    jose::verify(&jws, &vouched_keys).map_err(|e| {
        format!(
            "its Entity Configuration is not signed with a key {} vouches for: {e}",
            by.entity_id
        )
    })?;
    let claims = jose::decode_unverified(&jws)
        .map_err(|e| e.to_string())?
        .claims;
    let marks = trust_mark::candidates(&claims, anchor_claims, draft)
        .into_iter()
        .map(|(entry, issuer)| (entry.clone(), issuer))
        .collect();
    Ok(Found {
        info: EntityInfo {
            superior: Some(by.entity_id.clone()),
            ..entity_info(id, &claims, Vec::new())
        },
        lister: lister(id, &claims, vouched_keys),
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
    spend: &Spend<'_>,
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
    // A chain is a few fetches, each under the fetcher's own timeout; this bounds the whole,
    // and no chain starts once the walk has reached a bound or its deadline.
    let per_chain = spend.limits.fetch_timeout.saturating_mul(4);
    let fetched: Vec<_> = stream::iter(wanted)
        .map(|issuer| async move {
            let left = spend.ends.saturating_duration_since(Instant::now());
            let r = if spend.stopped().is_some() || left.is_zero() {
                Err(BOUND_REACHED.to_owned())
            } else {
                let t = per_chain.min(left);
                let chain =
                    trust_mark_issuer_keys::issuer_keys(src, anchor, anchor_claims, &issuer, now);
                match tokio::time::timeout(t, chain).await {
                    Ok(r) => r.map_err(|e| e.to_string()),
                    Err(_) => Err(format!("no chain within {t:?}")),
                }
            };
            (issuer, r)
        })
        .buffer_unordered(spend.limits.parallel.max(1))
        .collect()
        .await;
    let mut keys = HashMap::new();
    for (issuer, r) in fetched {
        match r {
            Ok(k) => {
                keys.insert(issuer, k);
            }
            Err(e) if e == BOUND_REACHED => {}
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
