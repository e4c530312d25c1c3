//! Additional claims through the Admin API: the one input type, its validation (the rule is
//! [`pharos_shared::claims::check`]) and the edits every scope shares. The routes live with
//! their resource (`entity_configuration/claims.rs`, `subordinates/claims.rs`,
//! `subordinates/general_claims.rs`) because each answers in the shape lighthouse uses there;
//! what they store, how they check it and which status they answer is decided here.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::admin::error::{ApiError, ApiResult};
use crate::control_plane::{ControlPlane, Write};
use crate::db::claims::{self as repo, ClaimRow, Scope};

/// Body of an additional claim.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct ClaimInput {
    /// Claim name.
    pub claim: Option<String>,
    /// Claim value (any JSON).
    #[schema(value_type = Object)]
    pub value: Value,
    /// List the claim in `crit`.
    #[serde(default)]
    pub crit: bool,
}

impl ClaimInput {
    /// The claim name, checked against the one rule (400 when refused).
    pub fn name(&self) -> ApiResult<String> {
        pharos_shared::claims::check(self.claim.as_deref(), self.crit)
            .map_err(|e| ApiError::BadRequest(e.to_string()))
    }
}

/// One general additional claim as shown (`{id, claim, value, crit}`, lighthouse's shape).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct GeneralClaim {
    /// Row id: stable for as long as the claim exists.
    pub id: i64,
    /// Claim name.
    pub claim: String,
    /// Claim value.
    #[schema(value_type = Object)]
    pub value: Value,
    /// Listed in `crit`.
    #[serde(default)]
    pub crit: bool,
}

impl From<ClaimRow> for GeneralClaim {
    fn from(r: ClaimRow) -> Self {
        Self {
            id: r.id,
            claim: r.claim,
            value: r.value,
            crit: r.crit,
        }
    }
}

/// The claims of a scope other than one subordinate's (those come with its row).
pub async fn rows(cp: &ControlPlane, scope: Scope) -> ApiResult<Vec<ClaimRow>> {
    Ok(repo::list(&cp.db, scope).await?)
}

/// The claim addressed by `key`: its row id or its name.
pub fn find<'a>(rows: &'a [ClaimRow], key: &str) -> ApiResult<&'a ClaimRow> {
    rows.iter()
        .find(|c| c.id.to_string() == key || c.claim == key)
        .ok_or_else(|| ApiError::NotFound(format!("unknown additional claim {key:?}")))
}

/// The claim with row id `id` (after a write, to show it as stored).
pub fn by_id(rows: &[ClaimRow], id: i64) -> ApiResult<&ClaimRow> {
    rows.iter()
        .find(|c| c.id == id)
        .ok_or_else(|| ApiError::Internal(format!("claim {id} vanished after its write")))
}

/// Checks a replacement list before the writer lock is taken: every claim valid (400), no
/// name twice (409).
pub fn check_list(list: &[ClaimInput]) -> ApiResult<()> {
    let mut names = HashSet::new();
    for c in list {
        let n = c.name()?;
        if !names.insert(n.clone()) {
            return Err(ApiError::Conflict(format!("claim {n:?} given twice")));
        }
    }
    Ok(())
}

/// Replaces every claim of `scope` by `list` (checked with [`check_list`]).
pub async fn replace(
    cp: &ControlPlane,
    w: &mut Write<'_>,
    scope: Scope,
    list: &[ClaimInput],
) -> ApiResult<()> {
    let now = cp.now();
    let tx = w.tx().await?;
    repo::delete(&cp.db, tx, scope, None).await?;
    for c in list {
        repo::insert(&cp.db, tx, scope, &c.name()?, &c.value, c.crit, now).await?;
    }
    Ok(())
}

/// Adds claim `c` to `scope`, whose claims are `existing`; a name in use is a conflict.
/// Returns the new row id.
pub async fn add(
    cp: &ControlPlane,
    w: &mut Write<'_>,
    scope: Scope,
    existing: &[ClaimRow],
    c: &ClaimInput,
) -> ApiResult<i64> {
    let name = c.name()?;
    if existing.iter().any(|x| x.claim == name) {
        return Err(ApiError::Conflict(format!("claim {name:?} already exists")));
    }
    let tx = w.tx().await?;
    Ok(repo::insert(&cp.db, tx, scope, &name, &c.value, c.crit, cp.now()).await?)
}

/// Changes the claim `key` of `scope` (name defaults to the current one); a name used by
/// another claim is a conflict. Returns the row id and the (new) name.
pub async fn update(
    cp: &ControlPlane,
    w: &mut Write<'_>,
    scope: Scope,
    existing: &[ClaimRow],
    key: &str,
    mut c: ClaimInput,
) -> ApiResult<(i64, String)> {
    let old = find(existing, key)?;
    c.claim = c.claim.or_else(|| Some(old.claim.clone()));
    let name = c.name()?;
    if name != old.claim && existing.iter().any(|x| x.claim == name) {
        return Err(ApiError::Conflict(format!("claim {name:?} already exists")));
    }
    let tx = w.tx().await?;
    repo::update(&cp.db, tx, scope, old.id, &name, &c.value, c.crit, cp.now()).await?;
    Ok((old.id, name))
}

/// Removes the claim `key` of `scope`; returns its name.
pub async fn remove(
    cp: &ControlPlane,
    w: &mut Write<'_>,
    scope: Scope,
    existing: &[ClaimRow],
    key: &str,
) -> ApiResult<String> {
    let old = find(existing, key)?;
    let tx = w.tx().await?;
    repo::delete(&cp.db, tx, scope, Some(old.id)).await?;
    Ok(old.claim.clone())
}
