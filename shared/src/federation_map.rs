//! The federation map (issue 40): who is in the federation and under whom, for the console to
//! draw and operators to query. Pure: built from this entity's own subordinates (their status
//! and keys are ours to know) and the entity collector's last walk (everyone below the Trust
//! Anchor, each with the superior that listed it). Nothing is fetched to draw it.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::collection::Collection;
use crate::subordinate::{Subordinate, SubordinateStatus};

/// Keys expiring within this many seconds mark a subordinate "keys expiring" (two weeks: time
/// for its operator to publish the next key and for us to pick it up).
pub const EXPIRING_WITHIN: i64 = 14 * 24 * 3600;

/// Where a node's standing comes from: our own registry, or only the collector's walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Standing {
    /// The root of the map (the anchor walked from, or this entity).
    Root,
    /// Our subordinate, served.
    Active,
    /// Our subordinate, waiting for a decision.
    Pending,
    /// Our subordinate, refused.
    Blocked,
    /// Our subordinate, switched off.
    Inactive,
    /// Found by the collector below another superior.
    Collected,
}

impl From<SubordinateStatus> for Standing {
    fn from(s: SubordinateStatus) -> Self {
        match s {
            SubordinateStatus::Active => Self::Active,
            SubordinateStatus::Pending => Self::Pending,
            SubordinateStatus::Blocked => Self::Blocked,
            SubordinateStatus::Inactive => Self::Inactive,
        }
    }
}

/// One entity on the map.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Node {
    /// Its entity identifier.
    pub entity_id: String,
    /// The entity that lists it (`None` for the root, or when the walk did not say).
    pub superior: Option<String>,
    /// Entity types, sorted.
    pub entity_types: Vec<String>,
    /// Types of the verified trust marks it publishes, sorted.
    pub trust_marks: Vec<String>,
    /// Its standing.
    pub status: Standing,
    /// One of the keys we hold for it expires within [`EXPIRING_WITHIN`].
    pub keys_expiring: bool,
    /// How many nodes name it as their superior (in the whole map, before any truncation).
    pub subordinates: usize,
}

/// The map: nodes sorted by entity identifier, at most `limit` of them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FederationMap {
    /// The root's entity identifier.
    pub root: String,
    /// When the collection it includes was walked (Unix seconds), if it includes one.
    pub collected_at: Option<i64>,
    /// Nodes in the whole map.
    pub total: usize,
    /// Whether leaves were left out to stay within the limit (every superior is kept).
    pub truncated: bool,
    /// The nodes.
    pub nodes: Vec<Node>,
}

/// Builds the map rooted at `root` (this entity, or the collection's anchor) from our own
/// subordinates `own` (all statuses) and `collection`. A subordinate of ours that the walk
/// also found keeps our status and gains the walk's types and marks. At most `limit` nodes
/// are returned: every node with subordinates first (the shape of the federation), then
/// leaves in identifier order.
pub fn build<'a>(
    root: &str,
    own_superior: &str,
    own: impl Iterator<Item = &'a Subordinate>,
    collection: Option<&Collection>,
    now: i64,
    limit: usize,
) -> FederationMap {
    let mut nodes: BTreeMap<String, Node> = BTreeMap::new();
    nodes.insert(root.to_owned(), node(root, None, Standing::Root));
    for s in own {
        let mut n = node(&s.entity_id, Some(own_superior), s.status.into());
        n.entity_types = s
            .registered_entity_types
            .iter()
            .map(|t| t.to_string())
            .collect();
        n.entity_types.sort();
        n.keys_expiring = s.jwks.jwks().keys.iter().any(|k| {
            k.get("exp")
                .and_then(serde_json::Value::as_i64)
                .is_some_and(|exp| exp <= now + EXPIRING_WITHIN)
        });
        nodes.insert(n.entity_id.clone(), n);
    }
    if let Some(c) = collection {
        for e in &c.entities {
            let superior = e.superior.as_deref().unwrap_or(&c.trust_anchor);
            let n = nodes
                .entry(e.entity_id.clone())
                .or_insert_with(|| node(&e.entity_id, Some(superior), Standing::Collected));
            for t in &e.entity_types {
                if !n.entity_types.contains(t) {
                    n.entity_types.push(t.clone());
                }
            }
            n.entity_types.sort();
            n.trust_marks = e
                .trust_marks
                .iter()
                .map(|m| m.trust_mark_type.clone())
                .collect();
            n.trust_marks.sort();
            n.trust_marks.dedup();
        }
        // Our own entity, when the walk started above us, hangs under whoever listed it.
        if root != c.trust_anchor && !nodes.contains_key(&c.trust_anchor) {
            nodes.insert(
                c.trust_anchor.clone(),
                node(&c.trust_anchor, None, Standing::Root),
            );
        }
    }
    let mut counts: HashMap<String, usize> = HashMap::new();
    for n in nodes.values() {
        if let Some(s) = &n.superior {
            *counts.entry(s.clone()).or_default() += 1;
        }
    }
    let total = nodes.len();
    let mut all: Vec<Node> = nodes
        .into_values()
        .map(|mut n| {
            n.subordinates = counts.get(&n.entity_id).copied().unwrap_or(0);
            n
        })
        .collect();
    let truncated = total > limit;
    if truncated {
        // Superiors first (they give the shape), then leaves in identifier order; then back
        // into identifier order.
        all.sort_by_key(|n| {
            (
                n.subordinates == 0 && n.status != Standing::Root,
                n.entity_id.clone(),
            )
        });
        all.truncate(limit);
        all.sort_by(|a, b| a.entity_id.cmp(&b.entity_id));
    }
    FederationMap {
        root: root.to_owned(),
        collected_at: collection.map(|c| c.last_updated),
        total,
        truncated,
        nodes: all,
    }
}

fn node(entity_id: &str, superior: Option<&str>, status: Standing) -> Node {
    Node {
        entity_id: entity_id.to_owned(),
        superior: superior.map(str::to_owned),
        entity_types: Vec::new(),
        trust_marks: Vec::new(),
        status,
        keys_expiring: false,
        subordinates: 0,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::collection::{CollectedMark, EntityInfo};
    use crate::subordinate::StoredJwks;

    const TA: &str = "https://ta.example";

    fn sub(id: &str, status: SubordinateStatus, exp: Option<i64>) -> Subordinate {
        let mut key = serde_json::json!({"kty": "EC", "kid": "k"});
        if let Some(e) = exp {
            key["exp"] = e.into();
        }
        let jwks: crate::jose::Jwks =
            serde_json::from_value(serde_json::json!({"keys": [key]})).unwrap();
        Subordinate {
            id: 1,
            entity_id: id.into(),
            status,
            registered_entity_types: vec![Arc::from("openid_relying_party")].into_boxed_slice(),
            jwks: StoredJwks::new(&jwks),
            metadata: None,
            metadata_policy: None,
            constraints: None,
            additional_claims: Vec::new(),
            registered: 0,
            updated: 0,
            version: 0,
            statement: Default::default(),
        }
    }

    fn collected(
        id: &str,
        superior: Option<&str>,
        types: &[&str],
        marks: &[&str],
    ) -> Arc<EntityInfo> {
        Arc::new(EntityInfo {
            entity_id: id.into(),
            entity_types: types.iter().map(|t| t.to_string()).collect(),
            ui_infos: Default::default(),
            trust_marks: marks
                .iter()
                .map(|m| CollectedMark {
                    trust_mark_type: m.to_string(),
                    trust_mark: "x".into(),
                })
                .collect(),
            superior: superior.map(str::to_owned),
        })
    }

    fn by_id<'m>(m: &'m FederationMap, id: &str) -> &'m Node {
        m.nodes.iter().find(|n| n.entity_id == id).unwrap()
    }

    #[test]
    fn own_subordinates_and_the_walk_make_one_tree() {
        let own = [
            sub("https://ia.example", SubordinateStatus::Active, None),
            sub(
                "https://rp1.example",
                SubordinateStatus::Blocked,
                Some(1_000 + EXPIRING_WITHIN),
            ),
            sub(
                "https://rp2.example",
                SubordinateStatus::Pending,
                Some(1_000 + EXPIRING_WITHIN + 1),
            ),
        ];
        let c = Collection::new(
            TA.into(),
            900,
            vec![
                collected("https://ia.example", Some(TA), &["federation_entity"], &[]),
                collected(
                    "https://leaf.example",
                    Some("https://ia.example"),
                    &["openid_provider"],
                    &["https://tm/b", "https://tm/a"],
                ),
                collected("https://orphan.example", None, &[], &[]),
            ],
        );
        let m = build(TA, TA, own.iter(), Some(&c), 1_000, 100);
        assert_eq!(m.total, 6);
        assert!(!m.truncated);
        assert_eq!(m.collected_at, Some(900));
        let root = by_id(&m, TA);
        assert_eq!(
            (root.status, root.subordinates, root.superior.clone()),
            (Standing::Root, 4, None)
        );
        let ia = by_id(&m, "https://ia.example");
        assert_eq!(
            ia.status,
            Standing::Active,
            "our status wins over the walk's"
        );
        assert_eq!(
            ia.entity_types,
            ["federation_entity", "openid_relying_party"]
        );
        assert_eq!(ia.subordinates, 1);
        let leaf = by_id(&m, "https://leaf.example");
        assert_eq!(
            (leaf.status, leaf.superior.as_deref()),
            (Standing::Collected, Some("https://ia.example"))
        );
        assert_eq!(leaf.trust_marks, ["https://tm/a", "https://tm/b"]);
        assert_eq!(
            by_id(&m, "https://orphan.example").superior.as_deref(),
            Some(TA),
            "unnamed superior: the anchor"
        );
        assert!(by_id(&m, "https://rp1.example").keys_expiring);
        assert!(!by_id(&m, "https://rp2.example").keys_expiring);
        assert_eq!(by_id(&m, "https://rp1.example").status, Standing::Blocked);
    }

    #[test]
    fn a_limit_keeps_every_superior_and_says_it_cut() {
        let mut entities = vec![collected("https://ia.example", Some(TA), &[], &[])];
        for i in 0..50 {
            entities.push(collected(
                &format!("https://leaf{i:02}.example"),
                Some("https://ia.example"),
                &[],
                &[],
            ));
        }
        let c = Collection::new(TA.into(), 0, entities);
        let m = build(TA, TA, std::iter::empty(), Some(&c), 0, 10);
        assert_eq!((m.total, m.truncated, m.nodes.len()), (52, true, 10));
        assert!(m.nodes.iter().any(|n| n.entity_id == TA));
        assert!(m.nodes.iter().any(|n| n.entity_id == "https://ia.example"));
        assert_eq!(
            by_id(&m, "https://ia.example").subordinates,
            50,
            "counted before the cut"
        );
        let ids: Vec<_> = m.nodes.iter().map(|n| n.entity_id.clone()).collect();
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(ids, sorted);
    }
}
