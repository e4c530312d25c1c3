//! The Trust Mark Issuer's state as the snapshot holds it, and its pure rules: who is entitled
//! to a mark, what an issued mark says, and what the status endpoint answers about one.
//!
//! The control plane loads [`TrustMarks`] from the database (`trust_mark_*` tables, see the
//! migration `0006_trust_marks`); the data plane issues, checks and lists from it without a
//! database. Issuing records the new instance through a command, and the snapshot gains it.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::jose::Jwks;
use crate::subordinate::SubordinateStatus;

/// JWT `typ` (and media type) of a trust mark status response (§8.4.2).
pub const STATUS_RESPONSE_TYP: &str = "trust-mark-status-response+jwt";

/// Claims an issuance spec or a subject may not set: the issuer decides them.
pub const PROTECTED_CLAIMS: [&str; 9] = [
    "iss",
    "sub",
    "iat",
    "exp",
    "jti",
    "trust_mark_type",
    "id",
    "delegation",
    "trust_mark_id",
];

/// Status of a subject of an issuance spec: the subordinate words, with their meaning here.
/// `active` = entitled; `pending` = requested, waiting for an administrator; `blocked` =
/// refused (every issued instance revoked); `inactive` = not entitled (likewise revoked).
pub type SubjectStatus = SubordinateStatus;

/// Everything the Trust Mark Issuer (and holder) part of the data plane reads.
#[derive(Debug, Clone, Default)]
pub struct TrustMarks {
    /// Trust mark types this entity knows, with their owner and issuers (published as
    /// `trust_mark_owners` / `trust_mark_issuers` in our Entity Configuration).
    pub types: BTreeMap<String, TrustMarkType>,
    /// Issuance specs by `trust_mark_type`: the types we issue. Persistent maps (here and
    /// below): recording one issued instance copies the section, which must not copy every
    /// subject.
    pub specs: imbl::HashMap<String, Arc<IssuanceSpec>>,
    /// Subjects by (`trust_mark_type`, entity identifier).
    pub subjects: imbl::HashMap<(String, String), Arc<Subject>>,
    /// Every instance we issued, by `jti` (expired ones until the prune job removes them).
    pub issued: imbl::HashMap<Arc<str>, Arc<IssuedMark>>,
    /// The newest instance kept with its signed form, by (`trust_mark_type`, subject): the
    /// one the trust_mark endpoint hands out again (see [`TrustMarks::reusable`]).
    pub latest: imbl::HashMap<(String, String), Arc<str>>,
    /// The marks we hold ourselves, published in our Entity Configuration's `trust_marks`.
    pub published: Vec<PublishedMark>,
    /// `federation.trust_mark_legacy_id`: `trust_marks` entries (in our Entity Configuration
    /// and in resolve responses) and marks we issue also carry the type as `id`, which clients
    /// of drafts before `trust_mark_type` require (e.g. `@openid-federation/core` 0.2 rejects a
    /// configuration whose entries lack it).
    pub legacy_id: bool,
    /// `federation.trust_mark_renew_after_percent`: when a held mark is replaced by a new one.
    pub renewal: Renewal,
}

/// When an issued mark is renewed instead of handed out again: once this percentage of its
/// lifetime (`iat` to `exp`) has passed, so a client is always handed a mark with at least
/// the rest of its lifetime to go. A mark without `exp` is renewed only when what it says,
/// our signing key or its standing changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Renewal(pub u32);

impl Default for Renewal {
    fn default() -> Self {
        Self(50)
    }
}

impl Renewal {
    /// The first instant at which a mark issued at `issued_at`, expiring at `expires_at`, is
    /// no longer handed out again (`None`: not by time). A spec's `cache_ttl` (> 0) caps it.
    pub fn renew_at(self, issued_at: i64, expires_at: Option<i64>, cache_ttl: i64) -> Option<i64> {
        let percent = i64::from(self.0.clamp(1, 100));
        let by_life = expires_at.map(|e| {
            let life = e.saturating_sub(issued_at).max(0);
            issued_at.saturating_add(life.saturating_mul(percent) / 100)
        });
        let by_ttl = (cache_ttl > 0).then(|| issued_at.saturating_add(cache_ttl));
        match (by_life, by_ttl) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// A `trust_marks` entry: `{trust_mark_type, trust_mark}`, plus `id` with `legacy_id`.
pub fn entry(trust_mark_type: &str, trust_mark: &str, legacy_id: bool) -> Value {
    let mut e = json!({"trust_mark_type": trust_mark_type, "trust_mark": trust_mark});
    if legacy_id {
        e["id"] = json!(trust_mark_type);
    }
    e
}

/// One trust mark type: its owner (delegation) and the issuers recognised for it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TrustMarkType {
    /// The owner, when issuers issue on its behalf.
    pub owner: Option<Owner>,
    /// Entity identifiers of the recognised issuers (empty = any issuer, when published).
    pub issuers: Vec<String>,
}

/// A trust mark type's owner.
#[derive(Debug, Clone, PartialEq)]
pub struct Owner {
    /// The owner's entity identifier.
    pub entity_id: String,
    /// The keys its delegations are signed with.
    pub jwks: Jwks,
}

/// How a spec decides who is entitled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EligibilityMode {
    /// Only subjects stored `active`.
    #[default]
    DbOnly,
    /// Only the checker.
    CheckOnly,
    /// Stored `active`, else the checker.
    DbOrCheck,
    /// Stored `active` and the checker.
    DbAndCheck,
}

impl EligibilityMode {
    /// Parses the configuration word (`db_only`, `check_only`, `db_or_check`, `db_and_check`;
    /// lighthouse's `custom` is `check_only`).
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "db_only" | "" => Self::DbOnly,
            "check_only" | "custom" => Self::CheckOnly,
            "db_or_check" => Self::DbOrCheck,
            "db_and_check" => Self::DbAndCheck,
            _ => return None,
        })
    }

    /// The configuration word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::DbOnly => "db_only",
            Self::CheckOnly => "check_only",
            Self::DbOrCheck => "db_or_check",
            Self::DbAndCheck => "db_and_check",
        }
    }
}

/// What we issue for one trust mark type.
#[derive(Debug, Clone, PartialEq)]
pub struct IssuanceSpec {
    /// Database id.
    pub id: i64,
    /// The type.
    pub trust_mark_type: String,
    /// Seconds each mark is valid; `None` = the mark has no `exp`.
    pub lifetime: Option<i64>,
    /// `ref` claim.
    pub ref_uri: Option<String>,
    /// `logo_uri` claim.
    pub logo_uri: Option<String>,
    /// The owner's delegation JWT, carried as `delegation`.
    pub delegation_jwt: Option<String>,
    /// Extra claims of every mark of this type (a subject's own extra claims win).
    pub additional_claims: Map<String, Value>,
    /// Eligibility mode.
    pub eligibility: EligibilityMode,
    /// The checker configuration (`{"type", "config"}`), when the mode uses one.
    pub checker: Option<Value>,
    /// Seconds a checker's verdict is reused (0 = every time).
    pub check_cache_ttl: i64,
    /// Seconds an issued JWT is handed out again at most (0 = until its renewal point, see
    /// [`Renewal`]); never past a revocation.
    pub cache_ttl: i64,
    /// Changes whenever the spec is stored again (cache keys).
    pub version: u64,
}

/// One entity's standing for one spec.
#[derive(Debug, Clone, PartialEq)]
pub struct Subject {
    /// Database id.
    pub id: i64,
    /// Entity identifier.
    pub entity_id: String,
    /// Standing.
    pub status: SubjectStatus,
    /// Extra claims of this subject's marks (over the spec's).
    pub additional_claims: Map<String, Value>,
    /// Changes whenever the subject is stored again (cache keys).
    pub version: u64,
}

/// One issued instance, as the status and listing endpoints need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuedMark {
    /// `jti`.
    pub jti: String,
    /// `trust_mark_type`.
    pub trust_mark_type: String,
    /// `sub`.
    pub subject: String,
    /// `iat`.
    pub issued_at: i64,
    /// `exp`, when the mark has one.
    pub expires_at: Option<i64>,
    /// When it was revoked, if it was.
    pub revoked_at: Option<i64>,
    /// The mark as handed out (absent for instances recorded before marks were reused).
    pub signed: Option<Arc<SignedMark>>,
}

/// An issued mark as signed: its bytes, and what is compared to decide whether a new mark
/// would say the same.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedMark {
    /// The compact JWS handed out.
    pub token: Arc<str>,
    /// The `kid` it was signed with.
    pub kid: Option<String>,
    /// Its claims but `jti`, `iat` and `exp` (see [`content`]).
    pub content: Map<String, Value>,
}

impl SignedMark {
    /// Reads a mark we signed (`None` for anything that is not a JWS).
    pub fn parse(token: &str) -> Option<Self> {
        let d = crate::jose::decode_unverified(token).ok()?;
        Some(Self {
            token: Arc::from(token),
            kid: d
                .header
                .get("kid")
                .and_then(Value::as_str)
                .map(String::from),
            content: content(&d.claims),
        })
    }
}

impl SignedMark {
    /// Whether a mark with `claims` would say what this one says (see [`content`]).
    pub fn says(&self, claims: &Map<String, Value>) -> bool {
        let mut n = 0;
        for (k, v) in claims
            .iter()
            .filter(|(k, _)| !INSTANCE_CLAIMS.contains(&k.as_str()))
        {
            if self.content.get(k) != Some(v) {
                return false;
            }
            n += 1;
        }
        n == self.content.len()
    }
}

/// The claims that make a mark one instance rather than another.
const INSTANCE_CLAIMS: [&str; 3] = ["jti", "iat", "exp"];

/// What a mark says apart from the instance it is (`jti`) and when it was made (`iat`,
/// `exp`): two marks with equal content are interchangeable for their holder.
pub fn content(claims: &Map<String, Value>) -> Map<String, Value> {
    let mut c = claims.clone();
    for k in INSTANCE_CLAIMS {
        c.remove(k);
    }
    c
}

/// A trust mark we hold, as published in our Entity Configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct PublishedMark {
    /// `trust_mark_type`.
    pub trust_mark_type: String,
    /// The compact JWT.
    pub trust_mark: String,
    /// Its `exp` (our Entity Configuration never outlives it).
    pub exp: Option<i64>,
}

/// The status endpoint's answer about an instance we issued (§8.4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkStatus {
    /// Valid.
    Active,
    /// Past its `exp`.
    Expired,
    /// Revoked (its subject was blocked, made inactive or removed).
    Revoked,
}

impl MarkStatus {
    /// The `status` claim.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Expired => "expired",
            Self::Revoked => "revoked",
        }
    }
}

impl IssuedMark {
    /// The first instant after `now` at which [`Self::status`] changes by the clock alone
    /// (`i64::MAX`: never).
    pub fn next_change(&self, now: i64) -> i64 {
        [self.expires_at, self.revoked_at]
            .into_iter()
            .flatten()
            .filter(|t| *t > now)
            .min()
            .unwrap_or(i64::MAX)
    }

    /// Its status at `now`: revocation wins over expiry.
    pub fn status(&self, now: i64) -> MarkStatus {
        if self.revoked_at.is_some_and(|r| r <= now) {
            MarkStatus::Revoked
        } else if self.expires_at.is_some_and(|e| e <= now) {
            MarkStatus::Expired
        } else {
            MarkStatus::Active
        }
    }
}

/// Whether a subject may obtain a mark, judged from the stored standing alone (the
/// checker-based modes add the checker's verdict on top; see [`EligibilityMode`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Stored `active`.
    Entitled,
    /// Requested, waiting for an administrator.
    Pending,
    /// Refused.
    Blocked,
    /// Unknown or `inactive`.
    NotEntitled,
}

impl EligibilityMode {
    /// Whether the stored `standing` admits a mark that the data plane decided to issue
    /// (`checked`: the spec's checker passed it). Decided again on the stored row inside the
    /// write that records the mark, so a subject blocked meanwhile never gets one.
    pub fn admits(self, standing: Standing, checked: bool) -> bool {
        let stored = standing == Standing::Entitled;
        match self {
            _ if standing == Standing::Blocked => false,
            Self::DbOnly => stored,
            Self::CheckOnly => checked,
            Self::DbOrCheck => stored || checked,
            Self::DbAndCheck => stored && checked,
        }
    }
}

/// The stored standing of `subject` (absent = unknown).
pub fn standing(subject: Option<&Subject>) -> Standing {
    standing_of(subject.map(|s| s.status))
}

/// The standing of a subject stored with `status` (absent = unknown).
pub fn standing_of(status: Option<SubjectStatus>) -> Standing {
    match status {
        Some(SubordinateStatus::Active) => Standing::Entitled,
        Some(SubordinateStatus::Pending) => Standing::Pending,
        Some(SubordinateStatus::Blocked) => Standing::Blocked,
        Some(SubordinateStatus::Inactive) | None => Standing::NotEntitled,
    }
}

/// The claims of a new trust mark of `spec` for `sub`, issued by `iss` at `now` with `jti`.
/// Spec extra claims are overlaid by the subject's; protected claims are never taken from
/// either. With `legacy_id` the type is also carried as `id`, for clients of drafts before
/// `trust_mark_type` existed.
pub fn mark_claims(
    iss: &str,
    spec: &IssuanceSpec,
    subject_claims: Option<&Map<String, Value>>,
    sub: &str,
    jti: &str,
    now: i64,
    legacy_id: bool,
) -> Map<String, Value> {
    let mut claims = Map::new();
    let extras = spec
        .additional_claims
        .iter()
        .chain(subject_claims.into_iter().flatten());
    for (k, v) in extras {
        if !PROTECTED_CLAIMS.contains(&k.as_str()) {
            claims.insert(k.clone(), v.clone());
        }
    }
    claims.insert("iss".into(), json!(iss));
    claims.insert("sub".into(), json!(sub));
    claims.insert("trust_mark_type".into(), json!(spec.trust_mark_type));
    if legacy_id {
        claims.insert("id".into(), json!(spec.trust_mark_type));
    }
    claims.insert("iat".into(), json!(now));
    if let Some(l) = spec.lifetime.filter(|l| *l > 0) {
        claims.insert("exp".into(), json!(now.saturating_add(l)));
    }
    if let Some(r) = &spec.ref_uri {
        claims.insert("ref".into(), json!(r));
    }
    if let Some(l) = &spec.logo_uri {
        claims.insert("logo_uri".into(), json!(l));
    }
    if let Some(d) = &spec.delegation_jwt {
        claims.insert("delegation".into(), json!(d));
    }
    claims.insert("jti".into(), json!(jti));
    claims
}

impl TrustMarks {
    /// Whether `token`, a trust mark found in someone's Entity Configuration, is one we
    /// (`entity_id`) issued and have revoked by `now`: a resolver here must not vouch for it
    /// while its subject still publishes it (the holder drops it only at its next status
    /// check). A mark of another issuer, or one we have no record of, is not judged here.
    pub fn revoked_here(&self, entity_id: &str, token: &str, now: i64) -> bool {
        if self.issued.is_empty() {
            return false;
        }
        let Ok(d) = crate::jose::decode_unverified(token) else {
            return false;
        };
        if d.claims.get("iss").and_then(Value::as_str) != Some(entity_id) {
            return false;
        }
        d.claims
            .get("jti")
            .and_then(Value::as_str)
            .and_then(|jti| self.issued.get(jti))
            .is_some_and(|m| m.status(now) == MarkStatus::Revoked)
    }
    /// Adds (or replaces) an issued instance, keeping [`TrustMarks::latest`] on the newest
    /// signed one of its type and subject.
    pub fn put_issued(&mut self, mark: Arc<IssuedMark>) {
        let jti: Arc<str> = Arc::from(mark.jti.as_str());
        let key = (mark.trust_mark_type.clone(), mark.subject.clone());
        if mark.signed.is_some() {
            let newer = match self.latest.get(&key).and_then(|j| self.issued.get(j)) {
                Some(held) => (held.issued_at, &*held.jti) <= (mark.issued_at, &*mark.jti),
                None => true,
            };
            if newer {
                self.latest.insert(key, jti.clone());
            }
        }
        self.issued.insert(jti, mark);
    }

    /// Removes an issued instance (pruned or deleted), and its place in `latest`.
    pub fn remove_issued(&mut self, jti: &str) {
        if let Some(m) = self.issued.remove(jti) {
            let key = (m.trust_mark_type.clone(), m.subject.clone());
            if self.latest.get(&key).is_some_and(|j| &**j == jti) {
                self.latest.remove(&key);
            }
        }
    }

    /// The held mark of `trust_mark_type` for `sub` that may be handed out again instead of
    /// signing `fresh` (the claims a new mark would have) with key `kid` at `now`: the newest
    /// instance, active, before its renewal point ([`Renewal`], capped by `cache_ttl`), signed
    /// with `kid` and with the same content as `fresh`.
    pub fn reusable(
        &self,
        trust_mark_type: &str,
        sub: &str,
        fresh: &Map<String, Value>,
        kid: &str,
        cache_ttl: i64,
        now: i64,
    ) -> Option<&Arc<IssuedMark>> {
        let key = (trust_mark_type.to_owned(), sub.to_owned());
        let held = self.issued.get(self.latest.get(&key)?)?;
        let signed = held.signed.as_ref()?;
        let renew_at = self
            .renewal
            .renew_at(held.issued_at, held.expires_at, cache_ttl);
        let usable = held.status(now) == MarkStatus::Active
            && renew_at.is_none_or(|r| now < r)
            && signed.kid.as_deref() == Some(kid)
            && signed.says(fresh);
        usable.then_some(held)
    }

    /// Entities holding a valid (unrevoked, unexpired) mark of `trust_mark_type` issued here,
    /// sorted and distinct; with `sub`, only that entity (§8.5).
    pub fn holders(&self, trust_mark_type: &str, sub: Option<&str>, now: i64) -> Vec<String> {
        let (all, _) = self.valid_holders(Some(trust_mark_type), now);
        all.into_iter()
            .filter(|h| sub.is_none_or(|s| *h == s))
            .map(str::to_owned)
            .collect()
    }

    /// Entities holding a valid mark issued here (of `trust_mark_type`, or of any type), sorted
    /// and distinct, and the first instant after `now` at which the clock alone may change the
    /// answer (a counted mark's `exp` or scheduled revocation; `i64::MAX` when none): until
    /// then, the answer may be kept for this snapshot. One pass over every issued mark, so the
    /// data plane keeps the answer instead of scanning per request.
    pub fn valid_holders(&self, trust_mark_type: Option<&str>, now: i64) -> (Vec<&str>, i64) {
        let mut until = i64::MAX;
        let mut out: Vec<&str> = self
            .issued
            .values()
            .filter(|m| trust_mark_type.is_none_or(|t| m.trust_mark_type == t))
            .filter(|m| m.status(now) == MarkStatus::Active)
            .map(|m| {
                until = until.min(m.next_change(now));
                m.subject.as_str()
            })
            .collect();
        out.sort_unstable();
        out.dedup();
        (out, until)
    }

    /// `trust_mark_issuers` of our Entity Configuration: types with at least one issuer.
    pub fn issuers_claim(&self) -> Option<Value> {
        let m: Map<String, Value> = self
            .types
            .iter()
            .filter(|(_, t)| !t.issuers.is_empty())
            .map(|(k, t)| (k.clone(), json!(t.issuers)))
            .collect();
        (!m.is_empty()).then_some(Value::Object(m))
    }

    /// `trust_mark_owners` of our Entity Configuration: types with an owner.
    pub fn owners_claim(&self) -> Option<Value> {
        let m: Map<String, Value> = self
            .types
            .iter()
            .filter_map(|(k, t)| {
                let o = t.owner.as_ref()?;
                Some((k.clone(), json!({"sub": o.entity_id, "jwks": o.jwks})))
            })
            .collect();
        (!m.is_empty()).then_some(Value::Object(m))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "trust_mark_issuer_tests.rs"]
mod tests;
