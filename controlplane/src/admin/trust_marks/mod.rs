//! `/trust-marks`: the Trust Mark Issuer's administration, with lighthouse's paths and bodies
//! (types with their owner and issuers, global owners and issuers, issuance specs, subjects
//! per spec and their history).
//!
//! Every write goes through `Write`, reloads the snapshot's `TrustMarks` section (the data
//! plane issues, checks and lists from it; the Entity Configuration publishes
//! `trust_mark_issuers` / `trust_mark_owners` from it) and records a `trust_mark_events` row
//! with the actor for each type it changes. A global owner or issuer edit that touches no type
//! has no type to file an event under; the audit log line of every admin write records it.
//! Path segments name rows by numeric id or natural key (type, entity identifier, URL-encoded).

pub mod history;
pub mod inputs;
pub mod issuers;
pub mod owners;
pub mod records;
pub mod spec_input;
pub mod specs;
pub mod subject_claims;
pub mod subjects;
pub mod type_links;
pub mod types;

use std::sync::Arc;

use axum::extract::State;

use crate::admin::error::{ApiError, ApiResult};
use crate::control_plane::{ControlPlane, Write};
use crate::db::trust_mark_parties::{self as parties, IssuerRow, Key, OwnerRow};
use crate::db::trust_mark_specs::{self as specs_repo, SpecRow};
use crate::db::trust_mark_subjects::{self as subjects_repo, SubjectRow};
use crate::db::trust_mark_types::{self as types_repo, TypeRow};

type Cp = State<Arc<ControlPlane>>;

/// The `/trust-marks` routes: one line per file.
pub fn routes() -> crate::admin::Routes {
    crate::admin::Routes::new()
        .merge(types::routes())
        .merge(type_links::routes())
        .merge(owners::routes())
        .merge(issuers::routes())
        .merge(specs::routes())
        .merge(subjects::routes())
        .merge(subject_claims::routes())
        .merge(history::routes())
}

/// The type addressed by a path segment.
pub async fn find_type(cp: &ControlPlane, key: &str) -> ApiResult<TypeRow> {
    types_repo::get(&cp.db, Key::parse(key))
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("unknown trust mark type {key:?}")))
}

/// The global owner addressed by a path segment.
pub async fn find_owner(cp: &ControlPlane, key: &str) -> ApiResult<OwnerRow> {
    parties::owner(&cp.db, Key::parse(key))
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("unknown trust mark owner {key:?}")))
}

/// The global issuer addressed by a path segment.
pub async fn find_issuer(cp: &ControlPlane, key: &str) -> ApiResult<IssuerRow> {
    parties::issuer(&cp.db, Key::parse(key))
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("unknown trust mark issuer {key:?}")))
}

/// The issuance spec addressed by a path segment (id or URL-encoded `trust_mark_type`).
pub async fn find_spec(cp: &ControlPlane, key: &str) -> ApiResult<SpecRow> {
    specs_repo::get(&cp.db, Key::parse(key))
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("unknown issuance spec {key:?}")))
}

/// The subject of `spec` addressed by a path segment (id or URL-encoded entity identifier).
pub async fn find_subject(cp: &ControlPlane, spec: &SpecRow, key: &str) -> ApiResult<SubjectRow> {
    subjects_repo::get(&cp.db, spec.id, Key::parse(key))
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("unknown subject {key:?}")))
}

/// A type named in a body (`types` of an owner or issuer): a missing one is a bad request,
/// not a missing resource.
pub async fn named_type(cp: &ControlPlane, v: &serde_json::Value) -> ApiResult<TypeRow> {
    find_type(cp, &type_key(v)?).await.map_err(|e| match e {
        ApiError::NotFound(m) => ApiError::BadRequest(m),
        e => e,
    })
}

/// The distinct types named in a body, in order (see [`named_type`]).
pub async fn named_types(cp: &ControlPlane, vs: &[serde_json::Value]) -> ApiResult<Vec<TypeRow>> {
    let mut out: Vec<TypeRow> = Vec::new();
    for v in vs {
        let t = named_type(cp, v).await?;
        if !out.iter().any(|o| o.id == t.id) {
            out.push(t);
        }
    }
    Ok(out)
}

/// Records `kind` in the history of each of `types` (a change to an owner or issuer concerns
/// every type it is linked to).
pub async fn record_in_types(
    w: &mut Write<'_>,
    types: &[TypeRow],
    kind: &str,
    msg: &str,
) -> ApiResult<()> {
    for t in types {
        w.trust_mark_event(&t.trust_mark_type, None, None, kind, Some(msg.to_string()))
            .await?;
    }
    Ok(())
}

/// A type referred to in a body: its numeric id or its identifier (lighthouse sends either).
pub fn type_key(v: &serde_json::Value) -> ApiResult<String> {
    match v {
        serde_json::Value::Number(n) if n.is_i64() => Ok(n.to_string()),
        serde_json::Value::String(s) if !s.trim().is_empty() => Ok(s.trim().to_string()),
        other => Err(ApiError::BadRequest(format!(
            "expected a trust mark type id or identifier, got {other}"
        ))),
    }
}
