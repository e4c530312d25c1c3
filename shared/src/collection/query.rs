//! An entity collection request: its parameters ([`CollectionQuery::parse`]), which Entities
//! it selects and in which page ([`select`]), and how much of each it shows.
//!
//! Paging: the Entities are ordered by entity identifier; `from` (draft 01) is the entity
//! identifier the page starts at, as a previous answer's `next` gave it. Draft 00's
//! `from_entity_id` is accepted as an alias, and then the answer also carries
//! `next_entity_id`. A `from` that names no Entity among those the filters select is
//! `page_not_found`: the collection changed under the client, or the pointer is made up.
//!
//! A parsed request is normalised (the values of each repeated parameter sorted and distinct,
//! which changes nothing it selects or shows: every one of them is a set), so that requests
//! differing only in parameter order, repetition or unknown parameters are one cache key. A
//! repeated parameter takes at most [`MAX_PARAMETER_VALUES`](crate::endpoint::MAX_PARAMETER_VALUES) values.

use serde_json::{Map, Value};

use super::extract::{UI_CLAIMS, split_tag};
use super::{Collection, EntityInfo};
use crate::endpoint::bound_values;

/// The Entity Info members a request may ask for (`entity_claims`).
pub const ENTITY_CLAIMS: &[&str] = &["entity_id", "entity_types", "ui_infos", "trust_marks"];

/// Why a request is refused (each maps to the draft's error code).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueryError {
    /// `unsupported_parameter` (400): paging parameters while paging is off.
    UnsupportedParameter(String),
    /// `unsupported_claim` (400): an unknown `entity_claims` or `ui_claims` value.
    UnsupportedClaim(String),
    /// `invalid_request` (400): a malformed or repeated parameter.
    InvalidRequest(String),
    /// `page_not_found` (404): `from` names no selected Entity.
    PageNotFound(String),
}

/// A parsed request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct CollectionQuery {
    /// `trust_anchor` (`None`: the responder's own entity identifier).
    pub trust_anchor: Option<String>,
    /// `entity_type`: an Entity matches when it has any of them.
    pub entity_types: Vec<String>,
    /// `trust_mark_type`: an Entity matches when it has a verified mark of every one.
    pub trust_mark_types: Vec<String>,
    /// `query`, lower-cased: a substring of a display or organization name, in any language.
    pub query: Option<String>,
    /// `entity_claims` (`None`: all).
    pub entity_claims: Option<Vec<String>>,
    /// `ui_claims` (`None`: all).
    pub ui_claims: Option<Vec<String>>,
    /// `language_tag`: language ranges (RFC 4647 basic filtering); empty = every language.
    pub language_tags: Vec<String>,
    /// `limit`.
    pub limit: Option<usize>,
    /// `from` or `from_entity_id`.
    pub from: Option<String>,
    /// Whether the pointer came as draft 00's `from_entity_id`.
    pub legacy_pointer: bool,
}

impl CollectionQuery {
    /// Reads the request's parameters; `paging` = whether the endpoint pages
    /// (`pagination_limit` > 0). Unknown parameters are ignored.
    pub fn parse(params: &[(String, String)], paging: bool) -> Result<Self, QueryError> {
        let mut q = Self::default();
        let mut entity_claims: Vec<String> = Vec::new();
        let mut ui_claims: Vec<String> = Vec::new();
        let mut seen: Vec<(&str, usize)> = Vec::new();
        for (k, v) in params {
            if REPEATABLE.contains(&k.as_str()) {
                let count = match seen.iter_mut().find(|(name, _)| *name == k.as_str()) {
                    Some((_, n)) => {
                        *n += 1;
                        *n
                    }
                    None => {
                        seen.push((k.as_str(), 1));
                        1
                    }
                };
                bound_values(k, count).map_err(QueryError::InvalidRequest)?;
            }
            match k.as_str() {
                "trust_anchor" => single(&mut q.trust_anchor, k, v)?,
                "entity_type" => q.entity_types.push(v.clone()),
                "trust_mark_type" => q.trust_mark_types.push(v.clone()),
                "query" => single(&mut q.query, k, &v.to_lowercase())?,
                "entity_claims" => {
                    if !ENTITY_CLAIMS.contains(&v.as_str()) {
                        return Err(QueryError::UnsupportedClaim(format!(
                            "entity_claims {v:?} is not supported (supported: {})",
                            ENTITY_CLAIMS.join(", ")
                        )));
                    }
                    entity_claims.push(v.clone());
                }
                "ui_claims" => {
                    if !UI_CLAIMS.contains(&v.as_str()) {
                        return Err(QueryError::UnsupportedClaim(format!(
                            "ui_claims {v:?} is not supported (supported: {})",
                            UI_CLAIMS.join(", ")
                        )));
                    }
                    ui_claims.push(v.clone());
                }
                "language_tag" => {
                    if v.is_empty() {
                        return Err(QueryError::InvalidRequest("empty language_tag".into()));
                    }
                    q.language_tags.push(v.to_ascii_lowercase());
                }
                "limit" | "from" | "from_entity_id" if !paging => {
                    return Err(QueryError::UnsupportedParameter(format!(
                        "{k}: this endpoint does not page its results"
                    )));
                }
                "limit" => {
                    let n = v.parse::<usize>().ok().filter(|n| *n > 0).ok_or_else(|| {
                        QueryError::InvalidRequest("limit must be a positive integer".into())
                    })?;
                    if q.limit.replace(n).is_some() {
                        return Err(QueryError::InvalidRequest(
                            "limit must not be repeated".into(),
                        ));
                    }
                }
                "from" | "from_entity_id" => {
                    single(&mut q.from, "from", v)?;
                    q.legacy_pointer = k == "from_entity_id";
                }
                _ => {}
            }
        }
        q.entity_claims = (!entity_claims.is_empty()).then_some(entity_claims);
        q.ui_claims = (!ui_claims.is_empty()).then_some(ui_claims);
        for set in [
            Some(&mut q.entity_types),
            Some(&mut q.trust_mark_types),
            Some(&mut q.language_tags),
            q.entity_claims.as_mut(),
            q.ui_claims.as_mut(),
        ]
        .into_iter()
        .flatten()
        {
            set.sort_unstable();
            set.dedup();
        }
        Ok(q)
    }

    /// Whether `e` passes the filters.
    pub fn matches(&self, e: &EntityInfo) -> bool {
        if !self.entity_types.is_empty()
            && !self.entity_types.iter().any(|t| e.entity_types.contains(t))
        {
            return false;
        }
        if !self
            .trust_mark_types
            .iter()
            .all(|t| e.trust_marks.iter().any(|m| &m.trust_mark_type == t))
        {
            return false;
        }
        match &self.query {
            Some(q) if !q.is_empty() => names_contain(e, q),
            _ => true,
        }
    }

    fn wants(&self, claim: &str) -> bool {
        self.entity_claims
            .as_ref()
            .is_none_or(|c| c.iter().any(|x| x == claim))
    }

    /// The Entity Info as this request shows it: the asked-for members, UI infos of the
    /// asked-for Entity Types (and `federation_entity`), claims and languages trimmed.
    pub fn render(&self, e: &EntityInfo) -> Value {
        let mut out = Map::new();
        out.insert("entity_id".into(), Value::String(e.entity_id.clone()));
        if self.wants("entity_types") {
            out.insert("entity_types".into(), e.entity_types.clone().into());
        }
        if self.wants("ui_infos") {
            let mut infos = Map::new();
            for (kind, ui) in &e.ui_infos {
                let shown = self.entity_types.is_empty()
                    || kind == "federation_entity"
                    || self.entity_types.iter().any(|t| t == kind);
                let Value::Object(ui) = ui else { continue };
                if !shown {
                    continue;
                }
                let trimmed: Map<String, Value> = ui
                    .iter()
                    .filter(|(name, _)| self.keeps_ui_claim(name))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                if !trimmed.is_empty() {
                    infos.insert(kind.clone(), Value::Object(trimmed));
                }
            }
            if !infos.is_empty() {
                out.insert("ui_infos".into(), Value::Object(infos));
            }
        }
        if self.wants("trust_marks") && !e.trust_marks.is_empty() {
            let marks = e
                .trust_marks
                .iter()
                .map(|m| {
                    serde_json::json!({"trust_mark_type": m.trust_mark_type, "trust_mark": m.trust_mark})
                })
                .collect::<Vec<_>>();
            out.insert("trust_marks".into(), Value::Array(marks));
        }
        Value::Object(out)
    }

    fn keeps_ui_claim(&self, name: &str) -> bool {
        let (base, tag) = split_tag(name);
        if let Some(wanted) = &self.ui_claims
            && !wanted.iter().any(|w| w == base)
        {
            return false;
        }
        match tag {
            None => true,
            Some(tag) => {
                self.language_tags.is_empty()
                    || self.language_tags.iter().any(|r| language_matches(r, tag))
            }
        }
    }
}

/// The parameters whose values are a set (each bounded by [`MAX_PARAMETER_VALUES`](crate::endpoint::MAX_PARAMETER_VALUES)).
const REPEATABLE: [&str; 5] = [
    "entity_type",
    "trust_mark_type",
    "entity_claims",
    "ui_claims",
    "language_tag",
];

fn single(slot: &mut Option<String>, name: &str, value: &str) -> Result<(), QueryError> {
    if slot.is_some() {
        return Err(QueryError::InvalidRequest(format!(
            "{name} must not be repeated"
        )));
    }
    *slot = Some(value.to_owned());
    Ok(())
}

/// RFC 4647 basic filtering: `range` matches `tag` when equal to it or a prefix of it ending
/// at a subtag boundary; `*` matches every tag. Case-insensitive; `range` is lower-case.
pub fn language_matches(range: &str, tag: &str) -> bool {
    if range == "*" {
        return true;
    }
    let tag = tag.to_ascii_lowercase();
    tag == range
        || (tag.len() > range.len()
            && tag.starts_with(range)
            && tag.as_bytes().get(range.len()) == Some(&b'-'))
}

/// Whether a display or organization name of any Entity Type, in any language, contains `q`
/// (lower-case), ignoring case.
fn names_contain(e: &EntityInfo, q: &str) -> bool {
    e.ui_infos.values().filter_map(Value::as_object).any(|ui| {
        ui.iter().any(|(name, v)| {
            let (base, _) = split_tag(name);
            (base == "display_name" || base == "organization_name")
                && v.as_str().is_some_and(|s| s.to_lowercase().contains(q))
        })
    })
}

/// One answer: the page's Entities as shown, and where the next page starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    /// The Entity Infos of this page, ordered by entity identifier.
    pub entities: Vec<Value>,
    /// The entity identifier the next page starts at, when there is one.
    pub next: Option<String>,
}

/// The Entities of `c` that `q` selects, as one page of at most `pagination_limit` (when
/// paging is on; `None` = every selected Entity at once).
pub fn select(
    c: &Collection,
    q: &CollectionQuery,
    pagination_limit: Option<usize>,
) -> Result<Page, QueryError> {
    let selected: Vec<&EntityInfo> = c
        .entities
        .iter()
        .map(AsRef::as_ref)
        .filter(|e| q.matches(e))
        .collect();
    let Some(max) = pagination_limit.filter(|m| *m > 0) else {
        return Ok(Page {
            entities: selected.iter().map(|e| q.render(e)).collect(),
            next: None,
        });
    };
    let size = q.limit.map_or(max, |l| l.min(max));
    let start = match &q.from {
        None => 0,
        Some(from) => selected
            .binary_search_by(|e| e.entity_id.as_str().cmp(from.as_str()))
            .map_err(|_| {
                QueryError::PageNotFound(format!("no page starts at {from:?} (any more)"))
            })?,
    };
    let end = start.saturating_add(size).min(selected.len());
    let slice = selected.get(start..end).unwrap_or_default();
    Ok(Page {
        entities: slice.iter().map(|e| q.render(e)).collect(),
        next: selected.get(end).map(|e| e.entity_id.clone()),
    })
}
