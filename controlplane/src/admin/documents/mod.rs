//! The document engine: the JSON documents of statements (metadata, metadata policy,
//! constraints), edited as a whole or member by member, for one subordinate (its override), for
//! all of them (the general setting), or for our Entity Configuration (its metadata). Every
//! route that edits such a document goes through here (`ops.rs` is the per-request layer), so
//! the three places answer alike except where lighthouse answers differently; those
//! differences are [`Target`] methods, documented on the routes that have them.
//!
//! Reads show the value in effect (override, else general). Granular writes on a subordinate
//! start from its own override, or from an empty document when it has none: they never copy
//! the general value in (lighthouse 0.22 does, freezing it). `POST` on the whole document is
//! the explicit way to start an override from a copy of the general value.

use pharos_shared::metadata_types::{check_entity_type, check_metadata};
use pharos_shared::policy::{Constraints, WriteRules, check_policy_to_store};
use serde_json::{Map, Value};

pub mod ops;
mod path;

pub use path::{remove_path, set_path};

use crate::admin::error::{ApiError, ApiResult};
use crate::admin::resource::find;
use crate::control_plane::{ControlPlane, Section, Write};
use crate::db::settings;
use crate::db::subordinates::{self as repo, DocColumn, SubordinateRow};

/// Which document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Doc {
    /// `metadata`.
    Metadata,
    /// `metadata_policy`.
    Policy,
    /// `constraints`.
    Constraints,
}

impl Doc {
    fn column(self) -> DocColumn {
        match self {
            Self::Metadata => DocColumn::Metadata,
            Self::Policy => DocColumn::MetadataPolicy,
            Self::Constraints => DocColumn::Constraints,
        }
    }

    fn setting(self) -> &'static str {
        match self {
            Self::Metadata => "metadata",
            Self::Policy => "metadata_policy",
            Self::Constraints => "constraints",
        }
    }

    fn event(self, deleted: bool) -> &'static str {
        match (self, deleted) {
            (Self::Metadata, false) => "metadata_updated",
            (Self::Metadata, true) => "metadata_deleted",
            (Self::Policy, false) => "policy_updated",
            (Self::Policy, true) => "policy_deleted",
            (Self::Constraints, false) => "constraints_updated",
            (Self::Constraints, true) => "constraints_deleted",
        }
    }
}

/// Whose document, as a route addresses it.
#[derive(Debug, Clone, Copy)]
pub enum Owner<'a> {
    /// The subordinate `{subordinateID}`.
    Sub(&'a str),
    /// Every subordinate (the general setting).
    General,
    /// Our Entity Configuration.
    EntityConfiguration,
}

/// Subordinate routes address a subordinate by an optional `{subordinateID}`.
impl<'a> From<Option<&'a str>> for Owner<'a> {
    fn from(id: Option<&'a str>) -> Self {
        id.map_or(Self::General, Self::Sub)
    }
}

/// Whose document, resolved.
#[derive(Debug, Clone)]
pub enum Target {
    /// A subordinate's override.
    Sub(Box<SubordinateRow>),
    /// The general setting.
    General,
    /// Our Entity Configuration (metadata only).
    EntityConfiguration,
}

impl Target {
    /// Whether a write that creates a member answers `201` (subordinate and general routes) or
    /// `200` like any other write (Entity Configuration routes, as lighthouse does).
    pub fn reports_created(&self) -> bool {
        !matches!(self, Self::EntityConfiguration)
    }

    /// Whether removing the last member of an object also removes the object (subordinate and
    /// general documents). The Entity Configuration keeps the emptied entity type, as its
    /// routes always have: deleting a metadata claim never unpublishes the entity type.
    fn prunes_empty_parents(&self) -> bool {
        !matches!(self, Self::EntityConfiguration)
    }

    /// Where a non-subordinate target's documents are stored in `settings`.
    fn settings_scope(&self) -> &'static str {
        match self {
            Self::EntityConfiguration => settings::EC,
            _ => settings::SUBORDINATE,
        }
    }
}

/// The target an [`Owner`] addresses (404 for an unknown subordinate).
pub async fn target<'a>(cp: &ControlPlane, owner: impl Into<Owner<'a>>) -> ApiResult<Target> {
    Ok(match owner.into() {
        Owner::Sub(id) => Target::Sub(Box::new(find(cp, id).await?)),
        Owner::General => Target::General,
        Owner::EntityConfiguration => Target::EntityConfiguration,
    })
}

async fn general(cp: &ControlPlane, doc: Doc) -> ApiResult<Option<Value>> {
    Ok(settings::get(&cp.db, settings::SUBORDINATE, doc.setting())
        .await?
        .filter(|v| !v.is_null()))
}

/// The stored document of the target itself (no fallback).
pub async fn own(cp: &ControlPlane, t: &Target, doc: Doc) -> ApiResult<Option<Value>> {
    match t {
        Target::Sub(r) => Ok(match doc {
            Doc::Metadata => r.metadata.clone(),
            Doc::Policy => r.metadata_policy.clone(),
            Doc::Constraints => r.constraints.clone(),
        }),
        Target::General => general(cp, doc).await,
        Target::EntityConfiguration => Ok(settings::get(&cp.db, settings::EC, doc.setting())
            .await?
            .filter(|v| !v.is_null())),
    }
}

/// The document in effect for the target.
pub async fn effective(cp: &ControlPlane, t: &Target, doc: Doc) -> ApiResult<Option<Value>> {
    match own(cp, t, doc).await? {
        Some(v) => Ok(Some(v)),
        None if matches!(t, Target::Sub(_)) => general(cp, doc).await,
        None => Ok(None),
    }
}

/// The general document, for copying into an override (`POST` on the whole document).
pub async fn general_copy(cp: &ControlPlane, doc: Doc) -> ApiResult<Value> {
    Ok(general(cp, doc)
        .await?
        .unwrap_or_else(|| Value::Object(Map::new())))
}

/// Checks a whole document before it is stored, with the critical operators of the general
/// settings and what `federation.accept` allows.
pub async fn validate(cp: &ControlPlane, doc: Doc, v: &Value) -> ApiResult<()> {
    let snap = cp.snapshot();
    let accept = &cp.settings.federation.accept;
    let rules = WriteRules {
        crit: &snap.subordinates.general.metadata_policy_crit,
        entity_types: &accept.entity_types,
        operators: &accept.policy_operators,
    };
    check(doc, v, &rules)
}

/// Checks a whole document: metadata against the parameter types of its entity types
/// (`pharos_shared::metadata_types`), a policy as the resolver would and with the write-time
/// rules (`pharos_shared::policy::check_policy_to_store`), constraints by their form and
/// entity types. The message names the member at fault.
pub fn check(doc: Doc, v: &Value, rules: &WriteRules<'_>) -> ApiResult<()> {
    let Value::Object(m) = v else {
        return Err(ApiError::BadRequest(format!(
            "{} must be a JSON object",
            doc.setting()
        )));
    };
    match doc {
        Doc::Metadata => check_metadata(m, rules.entity_types).map_err(ApiError::BadRequest)?,
        Doc::Policy => check_policy_to_store(v, rules).map_err(ApiError::BadRequest)?,
        Doc::Constraints => {
            let c = Constraints::from_json(v)
                .map_err(|e| ApiError::BadRequest(format!("invalid constraints: {e}")))?;
            for t in c.allowed_entity_types.iter().flatten() {
                check_entity_type(t, rules.entity_types).map_err(|e| {
                    ApiError::BadRequest(format!("constraints.allowed_entity_types: {e}"))
                })?;
            }
        }
    }
    Ok(())
}

/// Stores (or, with `None`, removes) the target's document, with its event (`*_deleted` when
/// `deleted`, else `*_updated`), and publishes.
pub async fn save(
    cp: &ControlPlane,
    mut w: Write<'_>,
    t: &Target,
    doc: Doc,
    value: Option<Value>,
    deleted: bool,
) -> ApiResult<()> {
    if let Some(v) = &value {
        validate(cp, doc, v).await?;
    }
    let tx = w.tx().await?;
    match t {
        Target::Sub(r) => {
            repo::set_doc(&cp.db, tx, r.id, doc.column(), &value, cp.now()).await?;
            let kind = doc.event(deleted);
            w.subordinate_event(r.id, r.status, kind, Some(kind.replace('_', " ")))
                .await?;
        }
        Target::General | Target::EntityConfiguration => {
            let scope = t.settings_scope();
            match &value {
                Some(v) => settings::set(&cp.db, tx, scope, doc.setting(), v).await?,
                None => settings::unset(&cp.db, tx, scope, doc.setting()).await?,
            }
        }
    }
    match t {
        Target::Sub(r) => w.touch_subordinate(&r.entity_id),
        Target::General => w.touch(Section::SubordinateGeneral),
        Target::EntityConfiguration => w.touch(Section::EntityConfiguration),
    }
    Ok(w.commit().await?)
}

/// The member at `path` of the document in effect; 404 when absent.
pub async fn get_at(cp: &ControlPlane, t: &Target, doc: Doc, path: &[&str]) -> ApiResult<Value> {
    let v = effective(cp, t, doc).await?;
    let mut cur = v.as_ref();
    for p in path {
        cur = cur.and_then(|c| c.get(*p));
    }
    cur.cloned()
        .ok_or_else(|| ApiError::NotFound(format!("no {} at {}", doc.setting(), path.join("/"))))
}

/// The stored document of the target itself, read in the write's transaction: the
/// transaction began with the Admin API write lock (`precondition::on_begin`), so this is the
/// current document on every replica and stays so until the commit. Every read-modify-write
/// of a document starts here, never from a read made before the lock.
pub async fn own_in(
    cp: &ControlPlane,
    w: &mut Write<'_>,
    t: &Target,
    doc: Doc,
) -> ApiResult<Option<Value>> {
    let tx = w.tx().await?;
    let v = match t {
        Target::Sub(r) => repo::doc_in(&cp.db, tx, r.id, doc.column()).await?,
        Target::General | Target::EntityConfiguration => {
            settings::get_in(&cp.db, tx, t.settings_scope(), doc.setting()).await?
        }
    };
    Ok(v.filter(|v| !v.is_null()))
}

/// The target's own document as an object to edit (empty when it has none), read in the
/// write's transaction ([`own_in`]).
async fn base(
    cp: &ControlPlane,
    w: &mut Write<'_>,
    t: &Target,
    doc: Doc,
) -> ApiResult<Map<String, Value>> {
    Ok(match own_in(cp, w, t, doc).await? {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    })
}

/// Sets the member at `path` (non-empty) to `value`; returns whether it is new.
pub async fn put_at(
    cp: &ControlPlane,
    t: &Target,
    doc: Doc,
    path: &[&str],
    value: Value,
    mut w: Write<'_>,
) -> ApiResult<bool> {
    let mut root = base(cp, &mut w, t, doc).await?;
    let created = set_path(&mut root, path, value)?;
    save(cp, w, t, doc, Some(Value::Object(root)), false).await?;
    Ok(created)
}

/// Merges the members of `add` into the object at `path`; returns (was new, merged object).
pub async fn merge_at(
    cp: &ControlPlane,
    t: &Target,
    doc: Doc,
    path: &[&str],
    add: Value,
    mut w: Write<'_>,
) -> ApiResult<(bool, Value)> {
    let Value::Object(add) = add else {
        return Err(ApiError::BadRequest("body must be a JSON object".into()));
    };
    let mut root = base(cp, &mut w, t, doc).await?;
    let existing = path
        .iter()
        .try_fold(Value::Object(root.clone()), |acc, p| acc.get(*p).cloned());
    let created = existing.is_none();
    let mut merged = match existing {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    merged.extend(add);
    set_path(&mut root, path, Value::Object(merged.clone()))?;
    save(cp, w, t, doc, Some(Value::Object(root)), false).await?;
    Ok((created, Value::Object(merged)))
}

/// Removes the member at `path` (the whole override when `path` is empty); 404 when absent.
pub async fn delete_at(
    cp: &ControlPlane,
    t: &Target,
    doc: Doc,
    path: &[&str],
    mut w: Write<'_>,
) -> ApiResult<()> {
    if path.is_empty() {
        if own_in(cp, &mut w, t, doc).await?.is_none() {
            return Err(ApiError::NotFound(format!("no {} is set", doc.setting())));
        }
        return save(cp, w, t, doc, None, true).await;
    }
    let mut root = base(cp, &mut w, t, doc).await?;
    if !remove_path(&mut root, path, t.prunes_empty_parents()) {
        return Err(ApiError::NotFound(format!(
            "no {} at {}",
            doc.setting(),
            path.join("/")
        )));
    }
    save(cp, w, t, doc, Some(Value::Object(root)), true).await
}
