//! Subordinates as the data plane sees them: one immutable record per subordinate, held in a
//! persistent ordered map so that a change to one of 100,000 subordinates costs O(log n) and
//! shares everything else with the previous snapshot.
//!
//! The general (all-subordinates) statement settings travel next to the map; per-subordinate
//! values override them at statement time and are never merged into them.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Weak};

use arc_swap::ArcSwapOption;
use serde_json::Value;

use crate::claims::AdditionalClaim;
use crate::jose::Jwks;

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

/// The shared name of entity type `name`: every record registered with a type holds the same
/// allocation. Names come from administrators and enrollment (validated, at most 255 bytes),
/// so the set stays as small as the set of types in use.
pub fn entity_type(name: &str) -> Arc<str> {
    static NAMES: std::sync::OnceLock<std::sync::Mutex<std::collections::HashSet<Arc<str>>>> =
        std::sync::OnceLock::new();
    let names = NAMES.get_or_init(Default::default);
    let mut names = match names.lock() {
        Ok(n) => n,
        Err(poisoned) => poisoned.into_inner(),
    };
    if let Some(n) = names.get(name) {
        return n.clone();
    }
    let n: Arc<str> = name.into();
    names.insert(n.clone());
    n
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
    /// distinct names are shared between records (see [`entity_type`]): a million copies of
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
    /// Changes with every write to this subordinate.
    pub version: u64,
    /// The signed statement about this version, once the fetch endpoint has made one.
    pub statement: StatementSlot,
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

    /// The stored text of a key set as read from the database, kept as it is when it has the
    /// shape of a JWK Set (a check that allocates nothing per key); anything else is read as
    /// the empty set, as an unreadable stored set always was.
    pub fn from_text(text: Option<&str>) -> Self {
        #[derive(serde::Deserialize)]
        struct Shape {
            #[allow(dead_code)]
            keys: Vec<serde::de::IgnoredAny>,
        }
        match text {
            Some(t) if serde_json::from_str::<Shape>(t).is_ok() => Self(t.into()),
            _ => Self::default(),
        }
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

/// A signed Subordinate Statement and what it was made from besides the subordinate itself.
#[derive(Debug)]
pub struct SignedStatement {
    /// The general settings' version it applied.
    pub general_version: u64,
    /// The generation of our keys and endpoint registry it was signed under.
    pub statements_generation: u64,
    /// The compact JWS, its entity tag, and when to sign a new one (before `exp`, or at the
    /// next change of the subordinate's or our keys): HTTP caches keep it until then.
    pub signed: crate::http_cache::Tagged,
}

/// The bytes of signed statements all [`StatementSlot`]s may hold together
/// (`cache.statements_max_bytes`). A statement is about a kilobyte: a million subordinates
/// would hold a gigabyte of them beside the registry itself.
///
/// When a new statement finds the budget full, held ones are evicted by CLOCK (second chance):
/// the records holding a statement wait in a ring in the order they were first kept; a hit
/// marks its slot referenced (see [`StatementSlot::get`]); the hand passes over the ring from
/// its front, moves a referenced record to the back with its mark cleared, and evicts the first
/// unmarked one, until the new statement fits. A subject asked for between two passes keeps its
/// statement; one asked for once goes first. The hand moves at most [`SWEEP`] steps for one
/// statement; if there is still no room then, the statement is served and not kept (the next
/// request for it signs again, some 26 µs with ES256).
///
/// The ring is behind a mutex taken only by [`Subordinate::keep_statement`], i.e. on the path
/// that has just signed: serving a held statement takes no lock. With no bound (0) there is no
/// ring at all.
pub struct StatementBudget {
    held: std::sync::atomic::AtomicUsize,
    max: usize,
    evicted: std::sync::atomic::AtomicU64,
    /// The records whose slots hold a statement (and, until the hand passes them, records
    /// replaced by a write or emptied since). `None` when unbounded.
    clock: Option<std::sync::Mutex<std::collections::VecDeque<Weak<Subordinate>>>>,
}

/// How far the hand moves at most to make room for one statement.
const SWEEP: usize = 64;

/// How many ring entries a statement kept without evicting passes over, dropping those of
/// records that are gone (replaced by a write) or hold nothing (an evicting statement's sweep
/// does that as it goes). This bounds the ring whether or not the budget ever fills: the ring
/// gains at most one entry per statement kept without evicting (one that evicts also removes
/// one), and the hand moves `TIDY` > 1 for it, so while the hand goes once round a ring of `n`
/// entries at most `n / TIDY` join and every entry that was dead when the round began leaves;
/// the ring stays within about `TIDY / (TIDY − 1)` times the number of records holding a
/// statement (which the budget bounds) plus `TIDY`. A dead entry keeps its record's own block
/// (about 150 bytes; not what the record pointed to) until the hand passes it.
const TIDY: usize = 4;

impl StatementBudget {
    /// A budget of `max_bytes` (0 = unbounded).
    pub fn new(max_bytes: u64) -> Arc<Self> {
        let max = match usize::try_from(max_bytes) {
            Ok(0) | Err(_) => usize::MAX,
            Ok(m) => m,
        };
        Arc::new(Self {
            held: Default::default(),
            max,
            evicted: Default::default(),
            clock: (max != usize::MAX).then(Default::default),
        })
    }

    /// Bytes held now.
    pub fn held(&self) -> usize {
        self.held.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Statements evicted to make room for others since start.
    pub fn evicted(&self) -> u64 {
        self.evicted.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Entries in the ring now (records holding a statement, and gone ones not yet passed).
    pub fn tracked(&self) -> usize {
        self.clock.as_ref().map_or(0, |c| lock(c).len())
    }

    fn charge(self: &Arc<Self>, bytes: usize) -> Option<Charge> {
        use std::sync::atomic::Ordering;
        self.held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |h| {
                h.checked_add(bytes).filter(|n| *n <= self.max)
            })
            .ok()?;
        Some(Charge {
            budget: self.clone(),
            bytes,
        })
    }
}

impl std::fmt::Debug for StatementBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatementBudget")
            .field("held", &self.held())
            .field("max", &self.max)
            .field("evicted", &self.evicted())
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Every change to the ring is a single push or pop: a panic elsewhere leaves it usable.
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// What the hand does with the entry at the front of the ring.
enum Step {
    /// The record is gone or holds nothing: the entry leaves the ring.
    Drop,
    /// The entry went to the back (its mark cleared, when evicting).
    Keep,
    /// The record's statement was evicted; the entry left the ring.
    Evicted,
}

fn step(ring: &mut std::collections::VecDeque<Weak<Subordinate>>, evict: bool) -> Option<Step> {
    use std::sync::atomic::Ordering::Relaxed;
    let entry = ring.pop_front()?;
    let Some(sub) = entry.upgrade() else {
        return Some(Step::Drop);
    };
    let slot = &sub.statement;
    if slot.held.load().is_none() {
        slot.queued.store(false, Relaxed);
        return Some(Step::Drop);
    }
    if !evict {
        ring.push_back(entry);
        return Some(Step::Keep);
    }
    if slot.referenced.swap(false, Relaxed) {
        ring.push_back(entry);
        return Some(Step::Keep);
    }
    slot.queued.store(false, Relaxed);
    // Gives the bytes back once no reader holds the statement any more (readers only clone
    // the tagged body out, so at once but for a concurrent hit).
    slot.held.store(None);
    Some(Step::Evicted)
}

/// Bytes of a [`StatementBudget`] in use by one held statement, given back when it goes.
#[derive(Debug)]
struct Charge {
    budget: Arc<StatementBudget>,
    bytes: usize,
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.budget
            .held
            .fetch_sub(self.bytes, std::sync::atomic::Ordering::AcqRel);
    }
}

/// Where the data plane keeps the signed statement about one subordinate version, beside the
/// record it was made from: a cached fetch is then the one map lookup that finds the
/// subordinate, and the statement goes away with the version it describes (a write replaces
/// the record, so a fresh slot comes with it). Lock-free to read; a statement made under other
/// general settings or keys is simply replaced. Filled by [`Subordinate::keep_statement`].
///
/// It is a cache, not part of the record's value: clones start empty and it never makes two
/// records unequal.
#[derive(Default)]
pub struct StatementSlot {
    held: ArcSwapOption<(SignedStatement, Charge)>,
    /// Served since the clock hand last passed (see [`StatementBudget`]).
    referenced: AtomicBool,
    /// In the budget's ring; changed only under its mutex.
    queued: AtomicBool,
}

impl StatementSlot {
    /// The statement if it was made under `general_version` and `statements_generation` and is not
    /// due for refreshing at `now`.
    pub fn get(
        &self,
        general_version: u64,
        statements_generation: u64,
        now: i64,
    ) -> Option<crate::http_cache::Tagged> {
        use std::sync::atomic::Ordering::Relaxed;
        let guard = self.held.load();
        let (s, _) = guard.as_deref()?;
        let fresh = s.general_version == general_version
            && s.statements_generation == statements_generation
            && now < s.signed.fresh_until;
        // Read before writing: a hot statement's line is written once per pass of the hand,
        // not on every hit.
        if fresh && !self.referenced.load(Relaxed) {
            self.referenced.store(true, Relaxed);
        }
        fresh.then(|| s.signed.clone())
    }
}

impl Subordinate {
    /// Keeps `statement` in this record's slot, replacing whatever was there, if `budget` has
    /// room for it beside what it holds (the replaced statement's bytes count until it is
    /// gone), evicting others if needed (see [`StatementBudget`]); whether it was kept.
    pub fn keep_statement(
        self: &Arc<Self>,
        statement: SignedStatement,
        budget: &Arc<StatementBudget>,
    ) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        // The body and tag, and the record, slot and reference counts around them.
        let bytes = statement.signed.body.len() + statement.signed.etag.len() + 160;
        let slot = &self.statement;
        let Some(clock) = &budget.clock else {
            let Some(charge) = budget.charge(bytes) else {
                return false;
            };
            slot.held.store(Some(Arc::new((statement, charge))));
            return true;
        };
        if bytes > budget.max {
            return false;
        }
        let mut ring = lock(clock);
        let charge = match budget.charge(bytes) {
            Some(charge) => {
                for _ in 0..TIDY {
                    if step(&mut ring, false).is_none() {
                        break;
                    }
                }
                charge
            }
            None => {
                let mut sweep = 0;
                loop {
                    match step(&mut ring, true) {
                        None => return false,
                        Some(Step::Evicted) => {
                            budget.evicted.fetch_add(1, Relaxed);
                        }
                        Some(Step::Drop | Step::Keep) => {}
                    }
                    // Room comes back from evictions, and from records dropped meanwhile.
                    if let Some(charge) = budget.charge(bytes) {
                        break charge;
                    }
                    sweep += 1;
                    if sweep == SWEEP {
                        return false;
                    }
                }
            }
        };
        slot.held.store(Some(Arc::new((statement, charge))));
        if slot.queued.swap(true, Relaxed) {
            // Signed again (refreshed, or new settings) while in the ring: asked for again.
            slot.referenced.store(true, Relaxed);
        } else {
            slot.referenced.store(false, Relaxed);
            ring.push_back(Arc::downgrade(self));
        }
        true
    }
}

impl Clone for StatementSlot {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl PartialEq for StatementSlot {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for StatementSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let cached = self.held.load().is_some();
        f.debug_struct("StatementSlot")
            .field("cached", &cached)
            .finish()
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
}

/// Every subordinate by entity identifier, plus the general settings.
///
/// Cloning is O(1) and an update O(log n): both maps are persistent (`imbl`) maps of `Arc`s.
/// The ordered map serves the list endpoint (identifier order); the hash index serves point
/// lookups (fetch), which in a B-tree of 100,000 string keys cost some twenty key comparisons,
/// each a cache miss on another key's bytes.
#[derive(Debug, Clone, Default)]
pub struct Subordinates {
    sorted: imbl::OrdMap<Arc<str>, Arc<Subordinate>>,
    index: imbl::HashMap<Arc<str>, Arc<Subordinate>>,
    /// Active subordinates by registered entity type, in identifier order: the list
    /// endpoint's `entity_type` filter reads these instead of walking every record.
    by_type: imbl::HashMap<Arc<str>, imbl::OrdSet<Arc<str>>>,
    /// General settings.
    pub general: Arc<GeneralSettings>,
    /// Changes with every change to the general settings; part of the statement cache key.
    pub general_version: u64,
}

impl Subordinates {
    /// The registry of `records` under the general settings `general` (version
    /// `general_version`); a later record with the same entity identifier replaces an earlier.
    pub fn new(
        records: impl IntoIterator<Item = Arc<Subordinate>>,
        general: Arc<GeneralSettings>,
        general_version: u64,
    ) -> Self {
        let mut next = Self {
            general,
            general_version,
            ..Self::default()
        };
        for s in records {
            next.put(s);
        }
        next
    }

    /// Adds `s` (replacing the record with its entity identifier); O(log n). For building a
    /// registry record by record; [`Self::with`] makes a changed copy.
    pub fn insert(&mut self, s: Arc<Subordinate>) {
        self.put(s);
    }

    fn put(&mut self, s: Arc<Subordinate>) {
        if let Some(old) = self.index.insert(s.entity_id.clone(), s.clone()) {
            self.index_types(&old, false);
        }
        self.index_types(&s, true);
        self.sorted.insert(s.entity_id.clone(), s);
    }

    fn remove(&mut self, entity_id: &str) {
        if let Some(old) = self.index.remove(entity_id) {
            self.index_types(&old, false);
        }
        self.sorted.remove(entity_id);
    }

    /// Adds `s` to (or takes it out of) the per-type sets; only active records are in them.
    fn index_types(&mut self, s: &Subordinate, add: bool) {
        if s.status != SubordinateStatus::Active {
            return;
        }
        for t in &s.registered_entity_types {
            match self.by_type.get_mut(&**t) {
                Some(ids) if add => {
                    ids.insert(s.entity_id.clone());
                }
                Some(ids) => {
                    ids.remove(&s.entity_id);
                    if ids.is_empty() {
                        self.by_type.remove(&**t);
                    }
                }
                None if add => {
                    self.by_type
                        .insert(t.clone(), imbl::OrdSet::unit(s.entity_id.clone()));
                }
                None => {}
            }
        }
    }

    /// Whether any active subordinate is registered with entity type `t`. Filters naming only
    /// types nobody active has match nothing, whatever else they ask.
    pub fn has_entity_type(&self, t: &str) -> bool {
        self.by_type.contains_key(t)
    }

    /// Identifiers of the active subordinates registered with any of `types`, in identifier
    /// order, without walking the records: a merge of the per-type sets.
    pub fn active_ids_with_any_type(&self, types: &[String]) -> Vec<&Arc<str>> {
        let mut sets: Vec<_> = types
            .iter()
            .filter_map(|t| self.by_type.get(t.as_str()))
            .map(|ids| ids.iter().peekable())
            .collect();
        let mut out = Vec::new();
        loop {
            let next = sets.iter_mut().filter_map(|it| it.peek().copied()).min();
            let Some(id) = next else {
                return out;
            };
            for it in &mut sets {
                if it.peek().copied() == Some(id) {
                    it.next();
                }
            }
            out.push(id);
        }
    }

    /// The subordinate with this entity identifier, if any.
    pub fn get(&self, entity_id: &str) -> Option<&Arc<Subordinate>> {
        self.index.get(entity_id)
    }

    /// How many subordinates there are, whatever their status.
    pub fn len(&self) -> usize {
        self.sorted.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }

    /// Every subordinate in entity-identifier order, whatever its status.
    pub fn all(&self) -> impl Iterator<Item = &Arc<Subordinate>> {
        self.sorted.values()
    }

    /// Active subordinates in entity-identifier order.
    pub fn active(&self) -> impl Iterator<Item = &Arc<Subordinate>> {
        self.all().filter(|s| s.status == SubordinateStatus::Active)
    }

    /// A copy with `entity_id` set to `sub` (or removed when `None`); O(log n).
    pub fn with(&self, entity_id: &str, sub: Option<Arc<Subordinate>>) -> Self {
        let mut next = self.clone();
        match sub {
            Some(s) => next.put(s),
            None => next.remove(entity_id),
        }
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sub(id: &str, types: &[&str], metadata: Option<Value>) -> Arc<Subordinate> {
        Arc::new(Subordinate {
            id: 1,
            entity_id: id.into(),
            status: SubordinateStatus::Active,
            registered_entity_types: types.iter().map(|t| entity_type(t)).collect(),
            jwks: StoredJwks::default(),
            metadata: metadata.map(Box::new),
            metadata_policy: None,
            constraints: None,
            additional_claims: vec![],
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
    }

    fn statement(body: &[u8]) -> SignedStatement {
        SignedStatement {
            general_version: 1,
            statements_generation: 1,
            signed: crate::http_cache::Tagged::new(bytes::Bytes::copy_from_slice(body), 100),
        }
    }

    /// What a statement with a body of `n` bytes is charged.
    fn charged(n: usize) -> usize {
        n + crate::http_cache::Tagged::new(bytes::Bytes::new(), 0)
            .etag
            .len()
            + 160
    }

    fn held(s: &Subordinate) -> bool {
        s.statement.get(1, 1, 0).is_some()
    }

    #[test]
    fn statement_slot_serves_only_what_matches() {
        let s = sub("https://a", &[], None);
        assert_eq!(s.statement.get(1, 1, 0), None);
        s.keep_statement(
            SignedStatement {
                general_version: 1,
                statements_generation: 2,
                signed: crate::http_cache::Tagged::new(bytes::Bytes::from_static(b"jws"), 100),
            },
            &StatementBudget::new(0),
        );
        assert_eq!(s.statement.get(1, 2, 99).unwrap().body, &b"jws"[..]);
        assert_eq!(s.statement.get(1, 2, 100), None, "due for refreshing");
        assert_eq!(s.statement.get(2, 2, 0), None, "other general settings");
        assert_eq!(s.statement.get(1, 3, 0), None, "other keys");
        assert_eq!(
            s.statement.clone().get(1, 2, 0),
            None,
            "a clone starts empty"
        );
    }

    #[test]
    fn the_budget_bounds_what_slots_hold_and_gets_bytes_back_when_they_go() {
        let one = charged(3);
        let budget = StatementBudget::new(u64::try_from(2 * one).unwrap());
        let (a, b, c) = (
            sub("https://a", &[], None),
            sub("https://b", &[], None),
            sub("https://c", &[], None),
        );
        assert!(a.keep_statement(statement(b"jws"), &budget));
        assert!(b.keep_statement(statement(b"jws"), &budget));
        assert_eq!(budget.held(), 2 * one);
        assert!(
            c.keep_statement(statement(b"jws"), &budget),
            "the oldest statement made room"
        );
        assert_eq!(budget.held(), 2 * one);
        assert_eq!(budget.evicted(), 1);
        assert!(!held(&a) && held(&b) && held(&c));
        drop(b);
        assert_eq!(budget.held(), one, "a dropped record gives its bytes back");
        assert!(
            !a.keep_statement(statement(&[b'x'; 4096]), &budget),
            "more than the whole budget: served, not kept"
        );
        assert!(held(&c), "and nothing was evicted for it");
        assert_eq!(budget.held(), one);
        drop(c);
        assert_eq!(budget.held(), 0);
        let d = sub("https://d", &[], None);
        assert!(d.keep_statement(statement(b"jws"), &budget));
        assert_eq!(budget.tracked(), 1, "the hand dropped the gone records");
    }

    #[test]
    fn a_subject_asked_for_between_evictions_keeps_its_statement() {
        let one = charged(3);
        let budget = StatementBudget::new(u64::try_from(4 * one).unwrap());
        let hot = sub("https://hot", &[], None);
        assert!(hot.keep_statement(statement(b"jws"), &budget));
        let cold: Vec<_> = (0..100)
            .map(|i| {
                let s = sub(&format!("https://cold/{i}"), &[], None);
                assert!(held(&hot), "hot evicted before cold {i}");
                assert!(s.keep_statement(statement(b"jws"), &budget));
                assert!(budget.held() <= 4 * one);
                s
            })
            .collect();
        assert!(held(&hot));
        assert_eq!(cold.iter().filter(|s| held(s)).count(), 3);
        assert!(
            cold[97..].iter().all(|s| held(s)),
            "the newest cold ones are held"
        );
        assert_eq!(budget.evicted(), 97);
        assert_eq!(budget.held(), 4 * one);
        // Left alone, the hot subject goes as the others.
        let late: Vec<_> = (0..4)
            .map(|i| {
                let s = sub(&format!("https://late/{i}"), &[], None);
                assert!(s.keep_statement(statement(b"jws"), &budget));
                s
            })
            .collect();
        assert!(!held(&hot), "not asked for since the hand last passed");
        drop((cold, late));
        assert_eq!(budget.held(), 0, "every byte came back");
    }

    #[test]
    fn the_budget_is_never_exceeded_and_accounts_for_every_byte() {
        let max = 40 * charged(600);
        let budget = StatementBudget::new(u64::try_from(max).unwrap());
        let subs: Vec<_> = (0..200)
            .map(|i| sub(&format!("https://s/{i}"), &[], None))
            .collect();
        let mut sizes = vec![0; subs.len()];
        // (hits, asks) of the five hot subjects and of the others.
        let (mut hot, mut cold) = ((0, 0), (0, 0));
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for round in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Half the requests are for five subjects, half for any of 200.
            let r = usize::try_from(x >> 8).unwrap();
            let i = if x.is_multiple_of(2) { r % 5 } else { r % 200 };
            let count = if i < 5 { &mut hot } else { &mut cold };
            count.1 += 1;
            if held(&subs[i]) {
                count.0 += 1;
            } else {
                let n = 100 + (r >> 12) % 1_000;
                if subs[i].keep_statement(statement(&b"x".repeat(n)), &budget) {
                    sizes[i] = charged(n);
                }
            }
            assert!(budget.held() <= max, "round {round}");
            let accounted: usize = (0..subs.len())
                .filter(|i| subs[*i].statement.held.load().is_some())
                .map(|i| sizes[i])
                .sum();
            assert_eq!(budget.held(), accounted, "round {round}");
            assert!(budget.tracked() <= 200, "round {round}");
        }
        let ratio = |(hits, asks): (u32, u32)| f64::from(hits) / f64::from(asks);
        assert!(ratio(hot) > 0.95, "hot hit ratio {}", ratio(hot));
        assert!(ratio(cold) < 0.3, "cold hit ratio {}", ratio(cold));
        drop(subs);
        assert_eq!(budget.held(), 0);
    }

    #[test]
    fn the_ring_stays_bounded_when_records_are_replaced_and_the_budget_never_fills() {
        let budget = StatementBudget::new(1 << 40);
        let live: Vec<_> = (0..100)
            .map(|i| {
                let s = sub(&format!("https://live/{i}"), &[], None);
                assert!(s.keep_statement(statement(b"jws"), &budget));
                s
            })
            .collect();
        for i in 0..10_000 {
            // A write replaces the record: the old one, and its statement, go.
            let s = sub(&format!("https://churn/{i}"), &[], None);
            assert!(s.keep_statement(statement(b"jws"), &budget));
            drop(s);
            // Held statements signed again (new settings) do not join twice.
            assert!(live[i % 100].keep_statement(statement(b"jws"), &budget));
            assert!(
                budget.tracked() <= 100 * TIDY / (TIDY - 1) + TIDY + 1,
                "{} entries after {i} replacements",
                budget.tracked()
            );
        }
        assert!(live.iter().all(|s| held(s)));
        assert_eq!(budget.evicted(), 0);
        assert_eq!(budget.held(), 100 * charged(3));
    }

    #[test]
    fn without_a_bound_nothing_is_tracked() {
        let unbounded = StatementBudget::new(0);
        let subs: Vec<_> = (0..1_000)
            .map(|i| {
                let s = sub(&format!("https://s/{i}"), &[], None);
                assert!(s.keep_statement(statement(b"jws"), &unbounded));
                s
            })
            .collect();
        assert_eq!(unbounded.tracked(), 0);
        assert_eq!(unbounded.evicted(), 0);
        assert_eq!(unbounded.held(), 1_000 * charged(3));
        drop(subs);
        assert_eq!(unbounded.held(), 0);
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
    fn updates_share_structure_and_leave_the_old_map_alone() {
        let a = Subordinates::default().with("https://a", Some(sub("https://a", &[], None)));
        let b = a.with("https://b", Some(sub("https://b", &[], None)));
        let c = b.with("https://a", None);
        assert_eq!(a.len(), 1);
        assert_eq!(b.len(), 2);
        assert_eq!(
            c.all().map(|s| &*s.entity_id).collect::<Vec<_>>(),
            ["https://b"]
        );
        assert!(c.get("https://a").is_none() && b.get("https://a").is_some());
        assert!(Arc::ptr_eq(
            b.get("https://b").unwrap(),
            c.get("https://b").unwrap()
        ));
    }

    #[test]
    fn entity_types_are_counted_through_updates() {
        let op = Subordinates::new(
            [sub("https://a", &["openid_provider"], None)],
            Arc::default(),
            1,
        );
        let both = op.with(
            "https://b",
            Some(sub("https://b", &["openid_provider"], None)),
        );
        assert!(both.has_entity_type("openid_provider"));
        // Replacing one record keeps the other's type; removing the last one forgets it.
        let one = both.with(
            "https://a",
            Some(sub("https://a", &["openid_relying_party"], None)),
        );
        assert!(
            one.has_entity_type("openid_provider") && one.has_entity_type("openid_relying_party")
        );
        let none = one.with("https://b", None);
        assert!(!none.has_entity_type("openid_provider"));
        assert!(
            op.has_entity_type("openid_provider"),
            "the old map is unchanged"
        );
        let ids = |s: &Subordinates, t: &[&str]| {
            let t: Vec<String> = t.iter().map(|t| t.to_string()).collect();
            s.active_ids_with_any_type(&t)
                .into_iter()
                .map(|id| id.to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(&both, &["openid_provider"]), ["https://a", "https://b"]);
        assert_eq!(
            ids(&one, &["openid_relying_party", "openid_provider", "nope"]),
            ["https://a", "https://b"],
            "any of the types, in identifier order, once each"
        );
        assert_eq!(ids(&one, &["openid_relying_party"]), ["https://a"]);
        // Only active subordinates are indexed.
        let mut inactive = (*sub("https://c", &["openid_provider"], None)).clone();
        inactive.status = SubordinateStatus::Inactive;
        let with_inactive = both.with("https://c", Some(Arc::new(inactive)));
        assert_eq!(
            ids(&with_inactive, &["openid_provider"]),
            ["https://a", "https://b"]
        );
        let reactivated = with_inactive.with(
            "https://c",
            Some(sub("https://c", &["openid_provider"], None)),
        );
        assert_eq!(
            ids(&reactivated, &["openid_provider"]),
            ["https://a", "https://b", "https://c"]
        );
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
