//! The registry of subordinates in a snapshot: two persistent maps of the records (identifier
//! order for the list endpoint, a hash index for fetch), the active ones by entity type, the
//! records and tombstones by the time they last changed (the extended listing's time filters),
//! the general settings, and the entity type names the records share.

use std::collections::HashSet;
use std::ops::Bound;
use std::sync::{Arc, Mutex, PoisonError};

use super::{GeneralSettings, Subordinate, SubordinateStatus};

/// The entity type names of one registry and the copies made from it: every record registered
/// with a type holds the same allocation. Names come from administrators and enrollment
/// (validated, at most 255 bytes), so the set stays as small as the set of types in use; a
/// full rebuild of the registry starts a new one.
#[derive(Debug, Default)]
struct TypeNames(Mutex<HashSet<Arc<str>>>);

/// A deleted subordinate: when it was registered and when it was deleted. Kept (in the
/// database and the snapshot) so that a client following changes with the extended listing's
/// time filters learns that it is gone (`revoked`); re-registering the identifier removes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tombstone {
    /// When it was registered, seconds since the epoch.
    pub registered: i64,
    /// When it was deleted.
    pub revoked: i64,
}

/// A position in time order: the time an entry last changed, then its identifier.
pub type TimeKey = (i64, Arc<str>);

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
    /// Deleted subordinates by identifier.
    tombstones: imbl::OrdMap<Arc<str>, Tombstone>,
    /// Every record that is or was served (all but pending ones) by its `updated` time, and
    /// every tombstone by its `revoked` time: a time filter reads a range of this instead of
    /// walking every record.
    by_time: imbl::OrdSet<TimeKey>,
    /// General settings.
    pub general: Arc<GeneralSettings>,
    /// Changes with every change to the general settings; part of the statement cache key.
    pub general_version: u64,
    names: Arc<TypeNames>,
}

/// A shared handle on a registry's identifier index (see [`Subordinates::index`]).
#[derive(Debug, Clone, Default)]
pub struct Index(HashIndex);

impl Index {
    /// The subordinate with this entity identifier, if any.
    pub fn get(&self, entity_id: &str) -> Option<&Arc<Subordinate>> {
        self.0.get(entity_id)
    }
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

    /// An empty registry under `general` to be filled record by record ([`Build`]), as the
    /// start-up read streams the stored rows in; [`Self::with`] makes a changed copy.
    pub fn build(general: Arc<GeneralSettings>, general_version: u64) -> Build {
        Build::new(Self::new([], general, general_version))
    }

    fn put(&mut self, s: Arc<Subordinate>) {
        self.index.insert(s.entity_id.clone(), s.clone());
        self.unbury(&s.entity_id);
        self.put_ordered(s);
    }

    /// Adds `s` to every map but the hash index (which holds the same identifiers), replacing
    /// the record with its identifier.
    fn put_ordered(&mut self, s: Arc<Subordinate>) {
        if let Some(old) = self.sorted.insert(s.entity_id.clone(), s.clone()) {
            self.forget(&old);
        }
        self.index_types(&s, true);
        self.index_time(&s, true);
    }

    /// Takes the record `old` out of the per-type sets and the time index.
    fn forget(&mut self, old: &Subordinate) {
        self.index_types(old, false);
        self.index_time(old, false);
    }

    fn remove(&mut self, entity_id: &str) {
        if let Some(old) = self.index.remove(entity_id) {
            self.forget(&old);
        }
        self.sorted.remove(entity_id);
    }

    fn unbury(&mut self, entity_id: &str) {
        if let Some(t) = self.tombstones.remove(entity_id) {
            self.by_time.remove(&(t.revoked, Arc::from(entity_id)));
        }
    }

    /// Adds `s` to (or takes it out of) the time index; pending records were never served and
    /// are not in it.
    fn index_time(&mut self, s: &Subordinate, add: bool) {
        if s.status == SubordinateStatus::Pending {
            return;
        }
        let key = (s.updated, s.entity_id.clone());
        if add {
            self.by_time.insert(key);
        } else {
            self.by_time.remove(&key);
        }
    }

    /// Records that `entity_id` was deleted (`tombstone`), replacing its record if there is
    /// one; O(log n).
    pub fn bury(&mut self, entity_id: &str, tombstone: Tombstone) {
        self.remove(entity_id);
        self.unbury(entity_id);
        let id: Arc<str> = entity_id.into();
        self.by_time.insert((tombstone.revoked, id.clone()));
        self.tombstones.insert(id, tombstone);
    }

    /// The tombstone of `entity_id`, if it was deleted and not registered again.
    pub fn tombstone(&self, entity_id: &str) -> Option<&Tombstone> {
        self.tombstones.get(entity_id)
    }

    /// Records in identifier order from `from` (inclusive), whatever their status.
    pub fn all_from<'a>(
        &'a self,
        from: &str,
    ) -> impl Iterator<Item = &'a Arc<Subordinate>> + use<'a> {
        self.sorted
            .range::<_, str>((Bound::Included(from), Bound::Unbounded))
            .map(|(_, s)| s)
    }

    /// Records and tombstones that changed at `from.0` or later, in time order from `from`
    /// (inclusive), up to time `until` (inclusive).
    pub fn changed_from<'a>(
        &'a self,
        from: &TimeKey,
        until: i64,
    ) -> impl Iterator<Item = &'a TimeKey> + use<'a> {
        self.by_time
            .range((Bound::Included(from.clone()), Bound::Unbounded))
            .take_while(move |(t, _)| *t <= until)
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
        self.active_ids_with_any_type_from(types, "").collect()
    }

    /// [`Self::active_ids_with_any_type`] from identifier `from` (inclusive) on, lazily: a
    /// page reads as many as it keeps.
    pub fn active_ids_with_any_type_from<'a>(
        &'a self,
        types: &[String],
        from: &str,
    ) -> impl Iterator<Item = &'a Arc<str>> + use<'a> {
        let mut sets: Vec<_> = types
            .iter()
            .filter_map(|t| self.by_type.get(t.as_str()))
            .map(|ids| {
                ids.range::<_, str>((Bound::Included(from), Bound::Unbounded))
                    .peekable()
            })
            .collect();
        std::iter::from_fn(move || {
            let id = sets.iter_mut().filter_map(|it| it.peek().copied()).min()?;
            for it in &mut sets {
                if it.peek().copied() == Some(id) {
                    it.next();
                }
            }
            Some(id)
        })
    }

    /// The shared name of entity type `name` (see [`TypeNames`]).
    pub fn type_name(&self, name: &str) -> Arc<str> {
        let mut names = self.names.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = names.get(name) {
            return n.clone();
        }
        let n: Arc<str> = name.into();
        names.insert(n.clone());
        n
    }

    /// The subordinate with this entity identifier, if any.
    pub fn get(&self, entity_id: &str) -> Option<&Arc<Subordinate>> {
        self.index.get(entity_id)
    }

    /// A handle on the identifier index, to be kept where a lookup should start (a
    /// snapshot's ready view): it shares the index, and answers as [`Self::get`] does.
    pub fn index(&self) -> Index {
        Index(self.index.clone())
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

    /// Starts bringing a copy of this registry in line with a complete reading of the
    /// database (a replica's full reload), record by record, so that what did not change stays
    /// shared with `self`: the maps are copied along the paths of what changed only
    /// (O(changes × log n)), not rebuilt. See [`Reconcile`].
    pub fn reconcile(&self) -> Reconcile<'_> {
        Reconcile {
            old: self,
            next: self.clone(),
            kept: HashSet::with_capacity(self.len()),
        }
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

/// Records waiting to go into the hash index of a [`Build`]: handed over in chunks, a
/// channel operation per chunk rather than per record.
const INDEX_CHUNK: usize = 4096;

/// The hash index of a registry, being built.
type HashIndex = imbl::HashMap<Arc<str>, Arc<Subordinate>>;

/// A registry being filled with the stored records at start-up ([`Subordinates::build`]).
///
/// The hash index is built on a thread of its own while the caller builds the ordered maps:
/// at a million records its inserts, each a cache miss on a random node, were a third of the
/// snapshot builder's time, and the builder is what a start-up waits for. Where the thread
/// cannot be started the index is built in line.
pub struct Build {
    next: Subordinates,
    index: Option<IndexThread>,
}

/// The thread building a [`Build`]'s hash index, and the records not yet sent to it.
struct IndexThread {
    pending: Vec<Arc<Subordinate>>,
    tx: std::sync::mpsc::Sender<Vec<Arc<Subordinate>>>,
    thread: std::thread::JoinHandle<HashIndex>,
}

impl Build {
    fn new(next: Subordinates) -> Self {
        let (tx, rx) = std::sync::mpsc::channel::<Vec<Arc<Subordinate>>>();
        let thread = std::thread::Builder::new()
            .name("registry-index".into())
            .spawn(move || {
                let mut index = HashIndex::default();
                for chunk in rx {
                    for s in chunk {
                        index.insert(s.entity_id.clone(), s);
                    }
                }
                index
            });
        let index = thread.ok().map(|thread| IndexThread {
            pending: Vec::with_capacity(INDEX_CHUNK),
            tx,
            thread,
        });
        Self { next, index }
    }

    /// Adds `s`; a later record with the same entity identifier replaces an earlier one.
    pub fn insert(&mut self, s: Arc<Subordinate>) {
        let Some(index) = &mut self.index else {
            return self.next.put(s);
        };
        index.pending.push(s.clone());
        if index.pending.len() == INDEX_CHUNK {
            let chunk = std::mem::replace(&mut index.pending, Vec::with_capacity(INDEX_CHUNK));
            if let Err(unsent) = index.tx.send(chunk) {
                // The thread is gone (it panicked): the index is rebuilt in line at the end.
                index.pending = unsent.0;
            }
        }
        self.next.put_ordered(s);
    }

    /// The shared name of entity type `name` ([`Subordinates::type_name`]).
    pub fn type_name(&self, name: &str) -> Arc<str> {
        self.next.type_name(name)
    }

    /// The registry of every record inserted.
    pub fn finish(self) -> Subordinates {
        let mut next = self.next;
        let Some(IndexThread {
            pending,
            tx,
            thread,
        }) = self.index
        else {
            return next;
        };
        let sent = tx.send(pending).is_ok();
        drop(tx);
        next.index = match thread.join() {
            Ok(index) if sent => index,
            // The thread failed: the ordered map holds every record (the last of each
            // identifier), so the index is made from it.
            _ => next
                .sorted
                .iter()
                .map(|(id, s)| (id.clone(), s.clone()))
                .collect(),
        };
        next
    }
}

/// A registry being brought in line with the database ([`Subordinates::reconcile`]): every
/// stored record is handed to [`Reconcile::row`] — the current record itself when nothing
/// stored changed, else the new one — then [`Reconcile::finish`] drops what no row named.
pub struct Reconcile<'a> {
    old: &'a Subordinates,
    next: Subordinates,
    /// The current records a row kept, by address (a few bytes each, not a second registry).
    kept: HashSet<usize>,
}

impl Reconcile<'_> {
    /// The record the registry holds now for `entity_id`.
    pub fn current(&self, entity_id: &str) -> Option<&Arc<Subordinate>> {
        self.old.get(entity_id)
    }

    /// The shared name of entity type `name`.
    pub fn type_name(&self, name: &str) -> Arc<str> {
        self.old.type_name(name)
    }

    /// A stored record: the current one (kept, shared) or a new or changed one (put).
    pub fn row(&mut self, s: Arc<Subordinate>) {
        match self.old.index.get(&s.entity_id) {
            Some(old) if Arc::ptr_eq(old, &s) => {
                self.kept.insert(Arc::as_ptr(old) as usize);
            }
            _ => self.next.put(s),
        }
    }

    /// The reconciled registry: records no row named are dropped, the tombstones become
    /// `tombstones`, and `general` replaces the general settings (with a version from
    /// `general_version` unless they are equal to the current ones).
    pub fn finish(
        mut self,
        general: GeneralSettings,
        general_version: impl FnOnce() -> u64,
        tombstones: Vec<(String, Tombstone)>,
    ) -> Subordinates {
        let next = &mut self.next;
        if *next.general != general {
            next.general = Arc::new(general);
            next.general_version = general_version();
        }
        for (id, old) in &self.old.sorted {
            let replaced = next.index.get(id).is_some_and(|now| !Arc::ptr_eq(now, old));
            if !replaced && !self.kept.contains(&(Arc::as_ptr(old) as usize)) {
                next.remove(id);
            }
        }
        let stored: HashSet<&str> = tombstones.iter().map(|(id, _)| id.as_str()).collect();
        let gone: Vec<Arc<str>> = next
            .tombstones
            .keys()
            .filter(|id| !stored.contains(&***id))
            .cloned()
            .collect();
        for id in gone {
            next.unbury(&id);
        }
        for (id, t) in tombstones {
            if next.tombstones.get(id.as_str()) != Some(&t) {
                next.bury(&id, t);
            }
        }
        self.next
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::subordinate::tests::sub;
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
    fn a_reconciled_registry_shares_what_did_not_change() {
        let t = |r: i64| Tombstone {
            registered: 1,
            revoked: r,
        };
        let mut old = Subordinates::new(
            [
                sub("https://a", &["openid_provider"], None),
                sub("https://b", &[], None),
                sub("https://c", &["openid_provider"], None),
            ],
            Arc::default(),
            1,
        );
        old.bury("https://gone", t(5));
        old.bury("https://forgotten", t(6));
        let mut r = old.reconcile();
        let a = r.current("https://a").unwrap().clone();
        r.row(a);
        r.row(sub("https://b", &["openid_relying_party"], None));
        r.row(sub("https://d", &[], None));
        let next = r.finish(
            GeneralSettings::default(),
            || 2,
            vec![("https://gone".into(), t(5)), ("https://new".into(), t(7))],
        );
        assert!(Arc::ptr_eq(
            old.get("https://a").unwrap(),
            next.get("https://a").unwrap()
        ));
        assert_eq!(
            next.all().map(|s| &*s.entity_id).collect::<Vec<_>>(),
            ["https://a", "https://b", "https://d"]
        );
        assert!(
            next.get("https://c").is_none() && old.get("https://c").is_some(),
            "the old registry is untouched"
        );
        assert!(
            next.has_entity_type("openid_relying_party") && next.has_entity_type("openid_provider")
        );
        assert_eq!(
            next.general_version, 1,
            "equal general settings keep their version"
        );
        assert_eq!(next.tombstone("https://gone"), Some(&t(5)));
        assert_eq!(next.tombstone("https://new"), Some(&t(7)));
        assert!(next.tombstone("https://forgotten").is_none());
        // The same registry built from scratch answers the same.
        let fresh = Subordinates::new(next.all().cloned(), Arc::default(), 1);
        assert_eq!(
            fresh.active_ids_with_any_type(&["openid_provider".into()]),
            next.active_ids_with_any_type(&["openid_provider".into()])
        );
    }

    #[test]
    fn a_build_answers_as_a_registry_made_at_once() {
        // More records than one chunk for the index thread, and one identifier twice: the
        // later record replaces the earlier in every map.
        let n = INDEX_CHUNK * 2 + 7;
        let id = |i: usize| format!("https://e{i:05}");
        let kind = |i: usize| {
            if i.is_multiple_of(2) {
                "openid_provider"
            } else {
                "openid_relying_party"
            }
        };
        let mut records: Vec<_> = (0..n).map(|i| sub(&id(i), &[kind(i)], None)).collect();
        records.push(sub(&id(4), &["federation_entity"], None));
        let mut build = Subordinates::build(Arc::default(), 1);
        for s in &records {
            build.insert(s.clone());
        }
        let built = build.finish();
        let made = Subordinates::new(records.iter().cloned(), Arc::default(), 1);
        assert_eq!(built.len(), n);
        for i in [0, 4, INDEX_CHUNK, n - 1] {
            let (b, m) = (built.get(&id(i)).unwrap(), made.get(&id(i)).unwrap());
            assert!(Arc::ptr_eq(b, m), "{}", id(i));
        }
        assert_eq!(
            built.get(&id(4)).unwrap().registered_entity_types[0].as_ref(),
            "federation_entity"
        );
        for t in [
            "openid_provider",
            "openid_relying_party",
            "federation_entity",
        ] {
            assert_eq!(
                built.active_ids_with_any_type(&[t.into()]),
                made.active_ids_with_any_type(&[t.into()]),
                "{t}"
            );
        }
        assert_eq!(
            built.changed_from(&(0, "".into()), 0).count(),
            made.changed_from(&(0, "".into()), 0).count()
        );
        assert!(
            built
                .all()
                .map(|s| &s.entity_id)
                .eq(made.all().map(|s| &s.entity_id))
        );
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
}
