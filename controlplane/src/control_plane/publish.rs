//! Reload-and-publish: the one place a new snapshot is made. Private to `control_plane`, reached only
//! through [`super::Write::commit`] and the reconciler, both under the writer lock.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use pharos_shared::refresh::Backoff;
use pharos_shared::snapshot::Snapshot;
use pharos_shared::trust_mark_issuer::TrustMarks;
use tokio_util::sync::CancellationToken;

use super::{ControlPlane, load};
use crate::db::subordinates::SubKey;
use crate::error::Result;
use crate::keys;

/// Parts of the snapshot that a change can touch.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum Section {
    /// Endpoint registry (endpoints, auth trust anchors, legacy paths).
    Registry,
    /// Entity Configuration inputs.
    EntityConfiguration,
    /// Trust anchor repository.
    TrustAnchors,
    /// Our keys (republished only when what is signed with or published changed).
    Keys,
    /// The general subordinate statement settings (one subordinate's change is
    /// [`Changes::subordinate`], which does not reload the other 99,999).
    SubordinateGeneral,
    /// Trust mark types, issuance specs, subjects and the marks we hold (one newly issued
    /// instance is [`Changes::issued_mark`], one subject [`Changes::mark_subject`]: neither
    /// reloads the others, nor gives every spec a new version).
    TrustMarks,
}

/// What a write touched: whole sections and single subordinates (by entity identifier).
/// Serialisable: other replicas receive it (see `control_plane/cluster.rs`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Changes {
    #[serde(default, rename = "s", skip_serializing_if = "BTreeSet::is_empty")]
    sections: BTreeSet<Section>,
    #[serde(default, rename = "sub", skip_serializing_if = "BTreeSet::is_empty")]
    subordinates: BTreeSet<String>,
    #[serde(default, rename = "tm", skip_serializing_if = "BTreeSet::is_empty")]
    issued_marks: BTreeSet<String>,
    #[serde(default, rename = "col", skip_serializing_if = "BTreeSet::is_empty")]
    collections: BTreeSet<String>,
    #[serde(default, rename = "tms", skip_serializing_if = "BTreeSet::is_empty")]
    mark_subjects: BTreeSet<(String, String)>,
    /// The hosted entities of the deployment changed (one created or deleted): other
    /// replicas start or stop serving it. Nothing of a snapshot depends on it.
    #[serde(default, rename = "ent", skip_serializing_if = "std::ops::Not::not")]
    entities: bool,
}

impl Changes {
    /// Adds a section.
    pub fn section(&mut self, s: Section) {
        self.sections.insert(s);
    }

    /// Adds one subordinate.
    pub fn subordinate(&mut self, entity_id: &str) {
        self.subordinates.insert(entity_id.to_owned());
    }

    /// Adds one issued trust mark instance (by `jti`).
    pub fn issued_mark(&mut self, jti: &str) {
        self.issued_marks.insert(jti.to_owned());
    }

    /// Adds one subject of an issuance spec (by type and entity identifier).
    pub fn mark_subject(&mut self, trust_mark_type: &str, entity_id: &str) {
        self.mark_subjects
            .insert((trust_mark_type.to_owned(), entity_id.to_owned()));
    }

    /// Notes that a hosted entity was created or deleted.
    pub fn hosted_entities(&mut self) {
        self.entities = true;
    }

    /// Whether a hosted entity was created or deleted.
    pub fn touches_hosted_entities(&self) -> bool {
        self.entities
    }

    /// Adds one Trust Anchor's entity collection.
    pub fn collection(&mut self, trust_anchor: &str) {
        self.collections.insert(trust_anchor.to_owned());
    }

    /// Whether section `s` was touched.
    pub(super) fn touches(&self, s: Section) -> bool {
        self.sections.contains(&s)
    }

    /// The subordinates touched one by one.
    pub(super) fn touched_subordinates(&self) -> impl Iterator<Item = &str> {
        self.subordinates.iter().map(String::as_str)
    }

    /// Nothing touched.
    pub fn is_empty(&self) -> bool {
        self.sections.is_empty()
            && self.subordinates.is_empty()
            && self.issued_marks.is_empty()
            && self.collections.is_empty()
            && self.mark_subjects.is_empty()
            && !self.entities
    }

    /// Adds everything `other` touched.
    pub(super) fn absorb(&mut self, other: Changes) {
        self.sections.extend(other.sections);
        self.subordinates.extend(other.subordinates);
        self.issued_marks.extend(other.issued_marks);
        self.collections.extend(other.collections);
        self.mark_subjects.extend(other.mark_subjects);
        self.entities |= other.entities;
    }
}

/// Longest wait between two reconciliation attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

impl ControlPlane {
    /// Publishes `changes` together with whatever earlier publishes left dirty. Call with the
    /// writer lock held, after the commit. Never fails: what cannot be reloaded now stays dirty
    /// and the reconciler is woken.
    pub(super) async fn publish(&self, changes: Changes) {
        let mut all = self.take_dirty();
        all.absorb(changes);
        if all.is_empty() {
            return;
        }
        if let Err(e) = self.reload(&all).await {
            tracing::error!(error = %e, ?all, "committed change not yet published; retrying");
            if let Ok(mut d) = self.dirty.lock() {
                d.absorb(all);
            }
            self.dirty_events.notify_one();
        }
    }

    fn take_dirty(&self) -> Changes {
        self.dirty
            .lock()
            .map(|mut d| std::mem::take(&mut *d))
            .unwrap_or_default()
    }

    /// Whether every committed change has been published.
    pub fn is_published(&self) -> bool {
        self.dirty.lock().map(|d| d.is_empty()).unwrap_or(false)
    }

    /// Builds the next snapshot from the current one and the database rows behind `c`, and
    /// stores it; on any error nothing is stored.
    async fn reload(&self, c: &Changes) -> Result<()> {
        #[cfg(test)]
        if self
            .failing_reloads
            .fetch_update(
                std::sync::atomic::Ordering::SeqCst,
                std::sync::atomic::Ordering::SeqCst,
                |n| n.checked_sub(1),
            )
            .is_ok()
        {
            return Err(crate::error::Error::Internal(
                "injected reload failure".into(),
            ));
        }
        let now = self.now();
        let cur = self.snapshot.load_full();
        let mut next = Snapshot::clone(&cur);
        let mut changed = false;
        let mut signing_inputs = false;
        for s in &c.sections {
            // Keys that did not change are the one section left as it is.
            changed |= *s != Section::Keys;
            match s {
                Section::Registry => {
                    next.registry = Arc::new(load::registry(&self.db, now).await?);
                    signing_inputs = true;
                }
                Section::EntityConfiguration => {
                    next.entity_configuration =
                        Arc::new(load::entity_configuration(&self.db).await?)
                }
                Section::TrustAnchors => {
                    next.trust_anchors =
                        Arc::new(load::trust_anchors(&self.db, &self.settings).await?)
                }
                Section::Keys => {
                    let keys = keys::load_keyset(&self.db, &self.kms, now).await?;
                    let same = cur.keys.signer.kid() == keys.signer.kid()
                        && cur.keys.published == keys.published
                        && cur.keys.historical == keys.historical;
                    // A generation bump re-signs every cached response: only for a real change.
                    if !same {
                        next.keys = Arc::new(keys);
                        signing_inputs = true;
                        changed = true;
                    }
                }
                Section::TrustMarks => {
                    next.trust_marks =
                        Arc::new(load::trust_marks(&self.db, &self.settings, &self.versions).await?)
                }
                Section::SubordinateGeneral => {
                    let mut subs =
                        pharos_shared::subordinate::Subordinates::clone(&next.subordinates);
                    subs.general = Arc::new(load::general(&self.db).await?);
                    subs.general_version = self.next_version();
                    next.subordinates = Arc::new(subs);
                }
            }
        }
        for id in &c.subordinates {
            changed = true;
            let row = crate::db::subordinates::get(&self.db, SubKey::EntityId(id)).await?;
            next.subordinates = Arc::new(match row {
                Some(r) => {
                    let sub = load::subordinate(r, self.next_version(), &next.subordinates);
                    next.subordinates.with(id, Some(Arc::new(sub)))
                }
                None => {
                    let mut subs = next.subordinates.with(id, None);
                    if let Some(t) = crate::db::subordinates::tombstone(&self.db, id).await? {
                        subs.bury(id, t);
                    }
                    subs
                }
            });
        }
        let one_by_one = !c.issued_marks.is_empty() || !c.mark_subjects.is_empty();
        if one_by_one && !c.sections.contains(&Section::TrustMarks) {
            changed = true;
            let mut tm = TrustMarks::clone(&next.trust_marks);
            for (tm_type, entity_id) in &c.mark_subjects {
                let key = (tm_type.clone(), entity_id.clone());
                let version = self.next_version();
                match crate::db::trust_marks::subject_one(&self.db, tm_type, entity_id, version)
                    .await?
                {
                    Some(s) => tm.subjects.insert(key, Arc::new(s)),
                    None => tm.subjects.remove(&key),
                };
            }
            for jti in &c.issued_marks {
                match crate::db::trust_marks::issued_one(&self.db, jti).await? {
                    Some(m) => tm.put_issued(Arc::new(m)),
                    None => tm.remove_issued(jti),
                }
            }
            next.trust_marks = Arc::new(tm);
        }
        if !c.collections.is_empty() {
            changed = true;
            let mut all = pharos_shared::collection::Collections::clone(&next.collections);
            for anchor in &c.collections {
                match load::collection(&self.db, anchor).await? {
                    Some(col) => all.by_anchor.insert(anchor.clone(), Arc::new(col)),
                    None => all.by_anchor.remove(anchor),
                };
            }
            next.collections = Arc::new(all);
        }
        if !changed {
            return Ok(());
        }
        next.generation = self.next_generation();
        if signing_inputs {
            next.statements_generation = next.generation;
        }
        self.snapshot.publish(Arc::new(next));
        self.published_at
            .store(self.clock.now(), std::sync::atomic::Ordering::Relaxed);
        if !c.subordinates.is_empty()
            && let Ok(mut changed) = self.changed_subordinates.lock()
        {
            changed.extend(c.subordinates.iter().cloned());
        }
        if !c.subordinates.is_empty() || c.sections.contains(&Section::TrustAnchors) {
            self.refresh_events.notify_one();
        }
        if c.sections.contains(&Section::Registry) {
            self.registry_events.send_modify(|n| *n += 1);
        }
        Ok(())
    }

    /// Replaces the snapshot with one built from the database as a whole (a replica that
    /// may have missed announcements). The registry is the running one brought in line with
    /// every row (what did not change stays shared), so a million subordinates are not held
    /// twice while it runs. Call with the writer lock held. Every cached signature
    /// is renewed (the statements generation moves), and the jobs that follow changes are told
    /// everything may have changed.
    pub(super) async fn reload_all(&self) -> Result<()> {
        let now = self.now();
        let cur = self.snapshot.load_full();
        let mut next = load::snapshot(
            &self.db,
            &self.settings,
            &self.kms,
            &self.versions,
            now,
            Some(&cur),
        )
        .await?;
        drop(cur);
        next.generation = self.next_generation();
        next.statements_generation = next.generation;
        self.snapshot.publish(Arc::new(next));
        self.published_at
            .store(self.clock.now(), std::sync::atomic::Ordering::Relaxed);
        self.full_builds
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // Not a list of every identifier: with a million subordinates the key refresher would
        // read each one back; it re-reads the polled ones in one query instead.
        self.resync_all_subordinates
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.refresh_events.notify_one();
        self.key_events.notify_one();
        self.registry_events.send_modify(|n| *n += 1);
        Ok(())
    }

    /// Retries dirty sections with backoff (1 s doubling to 30 s) until they are published;
    /// any write's publish also takes them along.
    pub fn spawn_reconciler(
        self: &Arc<Self>,
        stop: CancellationToken,
    ) -> tokio::task::JoinHandle<()> {
        let cp = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = cp.dirty_events.notified() => {}
                    _ = stop.cancelled() => break,
                }
                let mut backoff = Backoff::between(Duration::from_secs(1), MAX_BACKOFF);
                while !cp.is_published() {
                    tokio::select! {
                        _ = tokio::time::sleep(backoff.fail()) => {}
                        _ = stop.cancelled() => return,
                    }
                    cp.reconcile().await;
                }
            }
        })
    }

    /// One reconciliation attempt: publishes what is dirty, under the writer lock.
    pub async fn reconcile(&self) {
        let _lock = self.write.lock().await;
        self.publish(Changes::default()).await;
    }
}
