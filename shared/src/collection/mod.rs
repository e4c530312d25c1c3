//! Entity collection (extension draft "OpenID Federation Entity Collection Endpoint 1.0",
//! draft 01): what the collector keeps of each Entity ([`extract`]) and how a request selects,
//! trims and pages it ([`query`]). Pure: the control plane walks the federation and stores
//! [`Collection`]s; the data plane answers from the snapshot's [`Collections`].
//!
//! The Trust Anchor itself is not an entry of its own collection: the draft's endpoint returns
//! the Entities subordinate (directly or indirectly) to it.

pub mod extract;
pub mod query;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A Trust Mark an Entity publishes that verified against the collection's Trust Anchor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollectedMark {
    /// `trust_mark_type`.
    pub trust_mark_type: String,
    /// The compact JWT as the Entity publishes it.
    pub trust_mark: String,
}

/// What the collector keeps of one Entity (the draft's Entity Info, untrimmed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EntityInfo {
    /// `entity_id`.
    pub entity_id: String,
    /// Every Entity Type its metadata names, sorted.
    pub entity_types: Vec<String>,
    /// Entity Type → UI claims (with their `#lang` variants).
    #[serde(default)]
    pub ui_infos: Map<String, Value>,
    /// Verified Trust Marks.
    #[serde(default)]
    pub trust_marks: Vec<CollectedMark>,
    /// The Entity whose listing (and Subordinate Statement) led the walk to it; `None` in
    /// collections stored before it was kept. Not part of the endpoint's Entity Info: the
    /// federation map draws the tree from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superior: Option<String>,
}

/// One Trust Anchor's collection: its Entities ordered by entity identifier.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Collection {
    /// The Trust Anchor walked from.
    pub trust_anchor: String,
    /// When the walk that produced it ended, Unix seconds.
    pub last_updated: i64,
    /// The Entities, sorted by `entity_id`, each once.
    pub entities: Vec<Arc<EntityInfo>>,
}

impl Collection {
    /// A collection of `entities`, sorted and de-duplicated by entity identifier (the first
    /// of duplicates is kept).
    pub fn new(
        trust_anchor: String,
        last_updated: i64,
        mut entities: Vec<Arc<EntityInfo>>,
    ) -> Self {
        entities.sort_by(|a, b| a.entity_id.cmp(&b.entity_id));
        entities.dedup_by(|a, b| a.entity_id == b.entity_id);
        Self {
            trust_anchor,
            last_updated,
            entities,
        }
    }
}

/// The stored collections of the periodic collector, by Trust Anchor (the snapshot section).
#[derive(Debug, Clone, Default)]
pub struct Collections {
    /// Collections by Trust Anchor entity identifier.
    pub by_anchor: HashMap<String, Arc<Collection>>,
}
