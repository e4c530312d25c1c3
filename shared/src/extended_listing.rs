//! The extended subordinate listing: "OpenID Federation Extended Subordinate Listing 1.0",
//! Implementer's Draft 1 (draft 03, July 2026). The request's parameters, the opaque `from` /
//! `next` cursor and the selection of one page from a snapshot's registry; the endpoint
//! (`pharos-dataplane`, `endpoints/extended_list.rs`) adds the signed statements and serialises.
//!
//! Two orders, each consistent across pages as §3.1.1 requires:
//! - without a time filter, active subordinates in entity-identifier order (the list
//!   endpoint's order); the cursor is the identifier a page starts at;
//! - with `updated_after` or `updated_before`, entries in the order of the time they last
//!   changed, then identifier: the registry's time index, so that "what changed since my last
//!   look" reads a range instead of a million records. A subordinate that changes while a
//!   client pages moves behind its cursor and shows again on a later page (§3.1: "changes in
//!   pages yet to be fetched will be reflected").
//!
//! Time-filtered answers also report subordinates that stopped being served in the window
//! (deleted: the registry's tombstones; blocked or inactive: their record) as `{"id",
//! "registered", "revoked"}`. Draft 00 defined `revoked`; ID1 dropped it and allows
//! deployment-defined claims (§3.3: "Deployments MAY define and use additional claims"), and a
//! client following changes cannot learn of a removal otherwise.
//!
//! Every page examines at most [`SCAN_BUDGET`] index entries: a filter that matches little
//! returns a short page with a `next` cursor instead of walking a million records for one
//! request.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::endpoint::{boolean_parameter, bound_values};
use crate::subordinate::{Subordinate, SubordinateStatus, Subordinates, TimeKey};

/// Index entries one page may examine (see the module documentation).
pub const SCAN_BUDGET: usize = 50_000;

/// The claim that asks for the signed Subordinate Statement (§3.3, Table 4).
pub const SUBORDINATE_STATEMENT: &str = "subordinate_statement";

/// The claim that asks for the valid trust marks this entity issued to the subordinate.
pub const TRUST_MARKS: &str = "trust_marks";

/// Why a request is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueryError {
    /// `400 invalid_request`: a malformed value, named.
    Invalid(String),
    /// `404 page_not_found`: a `from` this server did not make (§3.2, Table 1).
    PageNotFound(String),
}

/// Where a page starts: right after the last entry the previous page examined. A page starts
/// at the first entry after its cursor (the draft's "inclusive" start is that entry), so an
/// entry added after the previous page's last one is on the next page, and a deleted one
/// does not invalidate a cursor.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Cursor {
    /// Identifier order: after this identifier.
    Id(String),
    /// Time order: after (time, identifier).
    Time(i64, String),
}

impl Cursor {
    /// The opaque form handed out as `next` (base64url of a tagged text).
    pub fn encode(&self) -> String {
        let text = match self {
            Self::Id(id) => format!("i\n{id}"),
            Self::Time(t, id) => format!("t\n{t}\n{id}"),
        };
        URL_SAFE_NO_PAD.encode(text)
    }

    /// Reads a `from` value; anything this server did not make is `page_not_found`.
    pub fn decode(from: &str) -> Result<Self, QueryError> {
        let unknown = || QueryError::PageNotFound(format!("no page starts at from={from:?}"));
        let bytes = URL_SAFE_NO_PAD.decode(from).map_err(|_| unknown())?;
        let text = String::from_utf8(bytes).map_err(|_| unknown())?;
        let mut parts = text.splitn(3, '\n');
        match (parts.next(), parts.next(), parts.next()) {
            (Some("i"), Some(id), None) => Ok(Self::Id(id.to_owned())),
            (Some("t"), Some(t), Some(id)) => {
                let t = t.parse().map_err(|_| unknown())?;
                Ok(Self::Time(t, id.to_owned()))
            }
            _ => Err(unknown()),
        }
    }
}

/// A parsed request, normalised (repeated values sorted and deduplicated) so that equivalent
/// requests are one cache key.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ListingQuery {
    /// `entity_type` (any of).
    pub entity_types: Vec<String>,
    /// `intermediate=true`.
    pub intermediate: bool,
    /// `trust_marked=true`.
    pub trust_marked: bool,
    /// `trust_mark_type`, repeatable: any of (§3.2, Table 2).
    pub trust_mark_types: Vec<String>,
    /// `from`.
    pub from: Option<Cursor>,
    /// `limit`.
    pub limit: Option<usize>,
    /// `updated_after` (inclusive).
    pub updated_after: Option<i64>,
    /// `updated_before` (inclusive).
    pub updated_before: Option<i64>,
    /// `audit_timestamps`.
    pub audit_timestamps: Option<bool>,
    /// `claims` (comma-separated, or repeated); `None` when absent or empty.
    pub claims: Option<Vec<String>>,
}

fn flag(name: &str, v: &str) -> Result<bool, QueryError> {
    boolean_parameter(name, v).map_err(QueryError::Invalid)
}

fn time(name: &str, v: &str) -> Result<i64, QueryError> {
    v.parse::<i64>().ok().filter(|t| *t >= 0).ok_or_else(|| {
        QueryError::Invalid(format!(
            "parameter '{name}' must be a NumericDate (seconds since the epoch)"
        ))
    })
}

fn once<T>(slot: &mut Option<T>, name: &str, value: T) -> Result<(), QueryError> {
    if slot.replace(value).is_some() {
        return Err(QueryError::Invalid(format!(
            "parameter '{name}' given more than once"
        )));
    }
    Ok(())
}

impl ListingQuery {
    /// Parses the request's parameters (unknown ones are ignored, as Federation §8 says).
    pub fn parse<'a>(
        params: impl IntoIterator<Item = (Cow<'a, str>, Cow<'a, str>)>,
    ) -> Result<Self, QueryError> {
        let mut q = Self::default();
        let (mut types, mut marks, mut claims) = (0, 0, 0);
        let bounded = |name: &str, n: usize| bound_values(name, n).map_err(QueryError::Invalid);
        for (k, v) in params {
            match &*k {
                "entity_type" => {
                    types += 1;
                    bounded(&k, types)?;
                    if !v.is_empty() {
                        q.entity_types.push(v.into_owned());
                    }
                }
                "trust_mark_type" => {
                    marks += 1;
                    bounded(&k, marks)?;
                    if !v.is_empty() {
                        q.trust_mark_types.push(v.into_owned());
                    }
                }
                "intermediate" => q.intermediate = flag(&k, &v)?,
                "trust_marked" => q.trust_marked = flag(&k, &v)?,
                "from" => once(&mut q.from, "from", Cursor::decode(&v)?)?,
                "limit" => {
                    let n = v.parse::<usize>().ok().filter(|n| *n > 0).ok_or_else(|| {
                        QueryError::Invalid("parameter 'limit' must be a positive integer".into())
                    })?;
                    once(&mut q.limit, "limit", n)?;
                }
                "updated_after" => once(&mut q.updated_after, &k, time(&k, &v)?)?,
                "updated_before" => once(&mut q.updated_before, &k, time(&k, &v)?)?,
                "audit_timestamps" => once(&mut q.audit_timestamps, &k, flag(&k, &v)?)?,
                "claims" => {
                    for c in v.split(',').map(str::trim).filter(|c| !c.is_empty()) {
                        claims += 1;
                        bounded("claims", claims)?;
                        q.claims.get_or_insert_with(Vec::new).push(c.to_owned());
                    }
                }
                _ => {}
            }
        }
        for v in [&mut q.entity_types, &mut q.trust_mark_types] {
            v.sort_unstable();
            v.dedup();
        }
        if let Some(c) = q.claims.as_mut() {
            c.sort_unstable();
            c.dedup();
        }
        if let (Some(a), Some(b)) = (q.updated_after, q.updated_before)
            && a > b
        {
            return Err(QueryError::Invalid(
                "updated_after is later than updated_before".into(),
            ));
        }
        match (&q.from, q.time_filtered()) {
            (Some(Cursor::Id(_)), true) | (Some(Cursor::Time(..)), false) => {
                return Err(QueryError::PageNotFound(
                    "this 'from' was made for a request with different time filters".into(),
                ));
            }
            _ => {}
        }
        Ok(q)
    }

    /// Whether a time filter is given (the time order applies).
    pub fn time_filtered(&self) -> bool {
        self.updated_after.is_some() || self.updated_before.is_some()
    }

    /// Whether entries carry `registered` and `updated`: when asked (`audit_timestamps`),
    /// and by default with a time filter (§3.2: "it is RECOMMENDED that the `registered` and
    /// `updated` parameters be included").
    pub fn timestamps(&self) -> bool {
        self.audit_timestamps.unwrap_or(self.time_filtered())
    }

    /// Whether entries carry the signed statement: asked for in `claims`, or by default
    /// (no `claims`: §5, Figures 5 and 8, and draft 00's rule).
    pub fn wants_statement(&self) -> bool {
        self.claims
            .as_ref()
            .is_none_or(|c| c.iter().any(|c| c == SUBORDINATE_STATEMENT))
    }

    /// Whether entries carry the trust marks issued here to them.
    pub fn wants_trust_marks(&self) -> bool {
        self.claims
            .as_ref()
            .is_some_and(|c| c.iter().any(|c| c == TRUST_MARKS))
    }

    /// The other requested claims: top-level claims of the Subordinate Statement. The
    /// entry's own members (Table 4: `id`, `registered`, `updated`) are not among them:
    /// `claims` names "additional claims beyond those defined in this table".
    pub fn statement_claims(&self) -> impl Iterator<Item = &str> {
        const OWN: [&str; 5] = [
            SUBORDINATE_STATEMENT,
            TRUST_MARKS,
            "id",
            "registered",
            "updated",
        ];
        self.claims
            .iter()
            .flatten()
            .map(String::as_str)
            .filter(|c| !OWN.contains(c))
    }

    /// Whether a trust mark filter is given.
    pub fn by_trust_marks(&self) -> bool {
        self.trust_marked || !self.trust_mark_types.is_empty()
    }
}

/// One entry of a page (shared with the snapshot: a page may be built on the blocking pool).
#[derive(Debug, Clone)]
pub enum Entry {
    /// An active subordinate, with the time its statement last changed.
    Listed(Arc<Subordinate>, i64),
    /// A subordinate no longer served (deleted, blocked or inactive) since `revoked`.
    Departed {
        /// Its identifier.
        id: Arc<str>,
        /// When it was registered.
        registered: i64,
        /// When it stopped being served.
        revoked: i64,
    },
}

impl Entry {
    /// The entry's Entity Identifier.
    pub fn id(&self) -> &str {
        match self {
            Self::Listed(s, _) => &s.entity_id,
            Self::Departed { id, .. } => id,
        }
    }

    /// The cursor of the page after this entry, in the order of `q`.
    pub fn cursor(&self, q: &ListingQuery) -> Cursor {
        let id = self.id().to_owned();
        match self {
            _ if !q.time_filtered() => Cursor::Id(id),
            Self::Listed(s, _) => Cursor::Time(s.updated, id),
            Self::Departed { revoked, .. } => Cursor::Time(*revoked, id),
        }
    }
}

/// A selected page: its entries and where the next one starts.
#[derive(Debug)]
pub struct Page {
    /// The entries, in the request's order.
    pub entries: Vec<Entry>,
    /// Where the next page starts, when more may follow.
    pub next: Option<Cursor>,
}

/// What a page is selected from.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    /// The registry.
    pub subordinates: &'a Subordinates,
    /// With a trust mark filter: the subjects holding a valid mark of a requested type (of
    /// any type issued here for `trust_marked`).
    pub holders: Option<&'a HashSet<Arc<str>>>,
}

impl<'a> Source<'a> {
    /// Whether active `s` passes the content filters of `q`.
    fn admits(&self, q: &ListingQuery, s: &Subordinate) -> bool {
        s.has_any_type(&q.entity_types)
            && (!q.intermediate || s.is_intermediate(&self.subordinates.general))
            && self
                .holders
                .is_none_or(|h| !q.by_trust_marks() || h.contains(&*s.entity_id))
    }

    /// The page `q` asks for, of at most `limit` entries.
    pub fn page(&self, q: &ListingQuery, limit: usize) -> Page {
        if q.time_filtered() {
            self.by_time(q, limit)
        } else {
            self.by_id(q, limit)
        }
    }

    fn by_id(&self, q: &ListingQuery, limit: usize) -> Page {
        let from = match &q.from {
            Some(Cursor::Id(id)) => id.as_str(),
            _ => "",
        };
        let subs = self.subordinates;
        let candidates: Box<dyn Iterator<Item = &'a Arc<Subordinate>> + 'a> =
            if q.entity_types.is_empty() {
                Box::new(subs.all_from(from))
            } else {
                let ids = subs.active_ids_with_any_type_from(&q.entity_types, from);
                Box::new(ids.filter_map(move |id| subs.get(id)))
            };
        let mut entries = Vec::new();
        let mut last: Option<&Arc<str>> = None;
        for (examined, s) in candidates.skip_while(|s| &*s.entity_id == from).enumerate() {
            if examined >= SCAN_BUDGET || entries.len() == limit {
                return Page {
                    entries,
                    next: last.map(|id| Cursor::Id(id.to_string())),
                };
            }
            last = Some(&s.entity_id);
            if s.status == SubordinateStatus::Active && self.admits(q, s) {
                let updated = s.updated_since(&subs.general);
                entries.push(Entry::Listed(s.clone(), updated));
            }
        }
        Page {
            entries,
            next: None,
        }
    }

    fn by_time(&self, q: &ListingQuery, limit: usize) -> Page {
        let subs = self.subordinates;
        let (after, before) = (
            q.updated_after.unwrap_or(i64::MIN),
            q.updated_before.unwrap_or(i64::MAX),
        );
        let general = subs.general.changed_at;
        // Active records changed before the general settings count as changed with them: when
        // that change is in the window, they are in it whatever their own time.
        let start = if (after..=before).contains(&general) {
            i64::MIN
        } else {
            after
        };
        let start: TimeKey = match &q.from {
            Some(Cursor::Time(t, id)) if (*t, id.as_str()) > (start, "") => {
                (*t, Arc::from(id.as_str()))
            }
            _ => (start, Arc::from("")),
        };
        let mut entries = Vec::new();
        let mut last: Option<&TimeKey> = None;
        let after_start = subs
            .changed_from(&start, before)
            .skip_while(|k| q.from.is_some() && **k == start);
        for (examined, key) in after_start.enumerate() {
            if examined >= SCAN_BUDGET || entries.len() == limit {
                return Page {
                    entries,
                    next: last.map(|(t, id)| Cursor::Time(*t, id.to_string())),
                };
            }
            last = Some(key);
            let (t, id) = key;
            let entry = match subs.get(id) {
                Some(s) if s.status == SubordinateStatus::Active => {
                    let updated = (*t).max(general);
                    ((after..=before).contains(&updated) && self.admits(q, s))
                        .then_some(Entry::Listed(s.clone(), updated))
                }
                Some(s) => ((after..=before).contains(t)).then_some(Entry::Departed {
                    id: s.entity_id.clone(),
                    registered: s.registered,
                    revoked: *t,
                }),
                None => subs.tombstone(id).and_then(|tomb| {
                    (after..=before).contains(t).then_some(Entry::Departed {
                        id: id.clone(),
                        registered: tomb.registered,
                        revoked: *t,
                    })
                }),
            };
            entries.extend(entry);
        }
        Page {
            entries,
            next: None,
        }
    }
}

#[cfg(test)]
#[path = "extended_listing_tests.rs"]
mod tests;
