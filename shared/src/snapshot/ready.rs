//! What a warm fetch reads of a snapshot, derived once per snapshot and kept inline in it.
//!
//! A cached fetch needs to know that the request's path is the fetch endpoint's (open to
//! anonymous GETs) and whether the subject may be our own identifier. Answering that from the
//! registry's path map and the identifier's bytes cost about six dependent cache misses per
//! request once a thousand hosted entities each have their own registry and a random one is
//! asked (the map's struct, its control bytes, its bucket, the key's bytes, the entry, the
//! identifier's bytes), and the subordinates' own struct was one more. Derived here, the
//! answers and a handle on the identifier index sit in the snapshot's first two cache lines,
//! which the request reads anyway (BENCHMARKS.md, "Hosted entities").
//!
//! The view is made on first use, and a clone of the snapshot starts without one, since a
//! clone is made to be changed. It holds the sections it was derived from and is used only
//! while the snapshot still holds the same ones, so a snapshot changed after its view was made
//! is answered the long way, never wrongly.

use std::sync::{Arc, OnceLock};

use super::{Registry, Snapshot};
use crate::endpoint::EndpointType;
use crate::inline_path::InlinePath;
use crate::subordinate::{Index, Subordinate, Subordinates};

/// The snapshot's ready view, made on first use (see the module docs).
#[derive(Default)]
pub struct Ready(OnceLock<ReadyView>);

impl Clone for Ready {
    /// Empty: a clone is made to be changed, and derives its own view once published.
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl std::fmt::Debug for Ready {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Ready")
            .field(&self.0.get().is_some())
            .finish()
    }
}

/// What a warm fetch needs to know of one snapshot.
#[derive(Debug)]
pub struct ReadyView {
    /// The identifier, registry and subordinates it was derived from (held, so that another
    /// section cannot take the same address while the view lives).
    from: Sections,
    /// The path at which the fetch endpoint answers anonymous GETs (none, or too long to keep
    /// inline: the registry answers then).
    fetch_path: InlinePath,
    /// Whether our own identifier is among the subordinates (in any state): only then must a
    /// fetch's subject be compared with it before its record is served.
    own_id_listed: bool,
    /// The subordinates' identifier index and general settings' version, as the
    /// subordinates hold them (here, the registry's own struct is not read per request).
    index: Index,
    general_version: u64,
}

impl ReadyView {
    fn of(snap: &Snapshot) -> Self {
        let registry = &snap.registry;
        let fetch_path = registry
            .by_type
            .get(&EndpointType::Fetch)
            .filter(|e| !e.auth_enabled)
            .and_then(|e| {
                let path = e.path.as_deref().filter(|p| !p.is_empty())?;
                // The path must lead to this entry (as `Registry::lookup` would find it).
                registry
                    .by_path
                    .get(path)
                    .filter(|found| Arc::ptr_eq(found, e))
                    .and_then(|_| InlinePath::new(path))
            })
            .unwrap_or_default();
        Self {
            from: Sections::of(snap),
            fetch_path,
            own_id_listed: snap.subordinates.get(&snap.entity_id).is_some(),
            index: snap.subordinates.index(),
            general_version: snap.subordinates.general_version,
        }
    }

    /// Whether `path` is where the fetch endpoint answers anonymous GETs. `false` also when
    /// the view cannot tell (a path too long to keep): the registry answers then.
    pub fn is_anonymous_fetch(&self, path: &str) -> bool {
        self.fetch_path.is(path)
    }

    /// Whether a fetch's subject must be compared with our own identifier: only when that
    /// identifier is a subordinate's too (otherwise a subject found among the subordinates
    /// cannot be it).
    pub fn own_id_listed(&self) -> bool {
        self.own_id_listed
    }

    /// The subordinate with this entity identifier, if any (as
    /// [`crate::subordinate::Subordinates::get`]).
    pub fn subordinate(&self, entity_id: &str) -> Option<&Arc<Subordinate>> {
        self.index.get(entity_id)
    }

    /// The general settings' version (as the subordinates hold it).
    pub fn general_version(&self) -> u64 {
        self.general_version
    }
}

/// The sections a view is derived from.
#[derive(Debug)]
struct Sections {
    entity_id: Arc<str>,
    registry: Arc<Registry>,
    subordinates: Arc<Subordinates>,
}

impl Sections {
    fn of(snap: &Snapshot) -> Self {
        Self {
            entity_id: snap.entity_id.clone(),
            registry: snap.registry.clone(),
            subordinates: snap.subordinates.clone(),
        }
    }

    /// Whether `snap` still holds these very sections.
    fn held_by(&self, snap: &Snapshot) -> bool {
        Arc::ptr_eq(&self.entity_id, &snap.entity_id)
            && Arc::ptr_eq(&self.registry, &snap.registry)
            && Arc::ptr_eq(&self.subordinates, &snap.subordinates)
    }
}

impl Snapshot {
    /// The ready view of this snapshot, made now if it is not yet; `None` if this snapshot
    /// was changed after its view was made.
    pub fn ready(&self) -> Option<&ReadyView> {
        let view = self.ready.0.get_or_init(|| ReadyView::of(self));
        view.from.held_by(self).then_some(view)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::unwrap_used)] // a failing unwrap is a failing test

    use std::sync::Arc;

    use super::*;
    use crate::endpoint::{EndpointConfig, FetchConfig};
    use crate::jose::{Algorithm, Signer as _, SigningKey};
    use crate::snapshot::{EndpointEntry, KeySet, Registry};
    use crate::subordinate::tests::sub;
    use crate::subordinate::{GeneralSettings, Subordinates};

    const US: &str = "https://ta.example";

    fn fetch_at(path: &str, auth_enabled: bool) -> EndpointEntry {
        EndpointEntry {
            kind: EndpointType::Fetch,
            path: Some(path.into()),
            url: None,
            auth_enabled,
            auth_trust_anchors: vec![],
            config: EndpointConfig::Fetch(FetchConfig::default()),
        }
    }

    /// A snapshot with these endpoints and subordinates (of identifier `US`).
    pub(crate) fn snap(entries: Vec<EndpointEntry>, subordinates: &[&str]) -> Snapshot {
        let key = SigningKey::generate(Algorithm::ES256, 2048).unwrap();
        let records = subordinates.iter().map(|s| sub(s, &[], None));
        Snapshot {
            ready: Default::default(),
            statements_generation: 1,
            subordinates: Arc::new(Subordinates::new(
                records,
                Arc::new(GeneralSettings::default()),
                0,
            )),
            generation: 1,
            entity_id: US.into(),
            registry: Arc::new(Registry::new(entries, vec![])),
            entity_configuration: Arc::default(),
            trust_anchors: Arc::default(),
            keys: Arc::new(KeySet {
                published: vec![key.public_jwk().clone()],
                signer: Arc::new(key),
                historical: vec![],
            }),
            trust_marks: Default::default(),
            collections: Default::default(),
        }
    }

    #[test]
    fn the_view_knows_the_anonymous_fetch_path_exactly() {
        let s = snap(vec![fetch_at("/fetch", false)], &["https://leaf.example"]);
        let v = s.ready().unwrap();
        assert!(v.is_anonymous_fetch("/fetch"));
        for other in ["/fetc", "/fetch/", "/fetchx", "/FETCH", "/", ""] {
            assert!(!v.is_anonymous_fetch(other), "{other:?}");
        }
        assert!(!v.own_id_listed());

        let authenticated = snap(vec![fetch_at("/fetch", true)], &[]);
        assert!(!authenticated.ready().unwrap().is_anonymous_fetch("/fetch"));
        let none = snap(vec![], &[]);
        assert!(!none.ready().unwrap().is_anonymous_fetch("/fetch"));
        // Longer than kept inline: the registry answers for it.
        let long = "/a-fetch-path-longer-than-kept";
        assert!(long.len() > crate::inline_path::INLINE_PATH);
        let s = snap(vec![fetch_at(long, false)], &[]);
        assert!(!s.ready().unwrap().is_anonymous_fetch(long));
        assert!(s.registry.lookup(long, 0).is_some());
    }

    #[test]
    fn the_view_knows_whether_our_own_identifier_is_listed() {
        let s = snap(vec![fetch_at("/fetch", false)], &[US]);
        assert!(s.ready().unwrap().own_id_listed());
    }

    #[test]
    fn a_changed_snapshot_never_answers_from_an_old_view() {
        let s = snap(vec![fetch_at("/fetch", false)], &[]);
        assert!(s.ready().unwrap().is_anonymous_fetch("/fetch"));
        // A clone, changed: its own view.
        let mut next = s.clone();
        next.registry = Arc::new(Registry::new(vec![fetch_at("/f2", false)], vec![]));
        let v = next.ready().unwrap();
        assert!(v.is_anonymous_fetch("/f2") && !v.is_anonymous_fetch("/fetch"));
        // Changed in place after its view was made: no view, the long way.
        let mut s = s;
        s.registry = Arc::new(Registry::new(vec![], vec![]));
        assert!(s.ready().is_none());
        s.entity_id = "https://leaf.example".into();
        assert!(s.ready().is_none());
    }
}
