//! Comparing the plan with the database ([`decide`], pure) and writing the difference in one
//! transaction ([`execute`]).
//!
//! `pharos config2db` is an offline tool: no control plane runs in its process, so there is no
//! snapshot to publish and `control_plane::Write` does not apply. It uses the same repositories
//! inside one transaction of its own (the named exception in `control_plane/tests.rs`): a
//! failure anywhere leaves the database as it was, unlike upstream's row-by-row migrator.

use serde_json::Value;

use super::plan::{Anchor, Endpoint, Plan};
use pharos_controlplane::db::Db;
use pharos_controlplane::db::endpoints::{self as ep_repo, EndpointRow, EndpointWrite};
use pharos_controlplane::db::trust_anchors::{self as ta_repo, TrustAnchorRow, TrustAnchorWrite};
use pharos_controlplane::error::Result;

/// What happens to one planned row.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// A new row.
    Create,
    /// An existing row is overwritten (`--force`); the fields that differ.
    Update(Vec<String>),
    /// The row exists with the same values.
    Same,
    /// The row exists with other values and is left alone (no `--force`).
    Differs(Vec<String>),
}

/// The decision for one planned row.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// `trust_anchors` or `endpoints`.
    pub section: &'static str,
    /// Entity identifier or endpoint type.
    pub subject: String,
    /// What happens.
    pub change: Change,
}

fn anchor_diff(a: &Anchor, row: &TrustAnchorRow) -> Vec<String> {
    let mut d = Vec::new();
    if a.jwks != row.jwks {
        d.push("jwks".to_string());
    }
    if a.enable_jwks_update != row.enable_jwks_update {
        d.push("enable_jwks_update".into());
    }
    if a.key_poll_interval != row.key_poll_interval {
        d.push("key_poll_interval".into());
    }
    d
}

/// `''`, null and `{}` are one thing: no settings.
fn config_eq(a: &Value, b: &Value) -> bool {
    let empty = |v: &Value| v.is_null() || v.as_object().is_some_and(|m| m.is_empty());
    a == b || (empty(a) && empty(b))
}

fn endpoint_diff(e: &Endpoint, row: &EndpointRow) -> Vec<String> {
    let mut d = Vec::new();
    if e.path != row.path {
        d.push("path".to_string());
    }
    if e.url != row.url {
        d.push("url".into());
    }
    if e.auth_enabled != row.auth_enabled {
        d.push("auth_enabled".into());
    }
    if !config_eq(&e.config, &row.config) {
        d.push("config".into());
    }
    let mut want = e.auth_trust_anchors.clone();
    let mut have = row.auth_trust_anchors.clone();
    want.sort();
    have.sort();
    if want != have {
        d.push("auth_trust_anchors".into());
    }
    d
}

fn change(diff: Vec<String>, force: bool) -> Change {
    match (diff.is_empty(), force) {
        (true, _) => Change::Same,
        (false, true) => Change::Update(diff),
        (false, false) => Change::Differs(diff),
    }
}

/// Decides every planned row against what the database holds; problems that would make the
/// write fail (an unknown auth anchor, a path held by another type) come back together.
pub fn decide(
    plan: &Plan,
    anchors: &[TrustAnchorRow],
    endpoints: &[EndpointRow],
    force: bool,
) -> std::result::Result<Vec<Decision>, Vec<String>> {
    let mut out = Vec::new();
    let mut problems = Vec::new();
    for a in &plan.anchors {
        let c = match anchors.iter().find(|r| r.entity_id == a.entity_id) {
            None => Change::Create,
            Some(row) => change(anchor_diff(a, row), force),
        };
        out.push(Decision {
            section: "trust_anchors",
            subject: a.entity_id.clone(),
            change: c,
        });
    }
    for e in &plan.endpoints {
        let missing: Vec<&str> = e
            .auth_trust_anchors
            .iter()
            .filter(|id| {
                !plan.anchors.iter().any(|a| &a.entity_id == *id)
                    && !anchors.iter().any(|r| &r.entity_id == *id)
            })
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            problems.push(format!(
                "endpoints.{}: trust anchor(s) not found: [{}] (migrate the trust_anchors section too)",
                e.yaml_key,
                missing.join(", ")
            ));
        }
        if let Some(p) = &e.path
            && let Some(other) = endpoints
                .iter()
                .find(|r| r.path.as_ref() == Some(p) && r.kind != e.kind)
        {
            problems.push(format!(
                "endpoints.{}: path {p:?} is already used by the {} endpoint in the database",
                e.yaml_key, other.kind
            ));
        }
        let c = match endpoints.iter().find(|r| r.kind == e.kind) {
            None => Change::Create,
            Some(row) => change(endpoint_diff(e, row), force),
        };
        out.push(Decision {
            section: "endpoints",
            subject: e.kind.clone(),
            change: c,
        });
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(problems)
    }
}

fn writes(c: &Change) -> bool {
    matches!(c, Change::Create | Change::Update(_))
}

/// Writes the created and updated rows in one transaction; nothing when there is nothing to
/// write. `decisions` come from [`decide`] on the same plan, in order.
pub async fn execute(db: &Db, plan: &Plan, decisions: &[Decision], now: i64) -> Result<usize> {
    let count = decisions.iter().filter(|d| writes(&d.change)).count();
    if count == 0 {
        return Ok(0);
    }
    let existing_anchors = ta_repo::list(db).await?;
    let existing_endpoints = ep_repo::list(db).await?;
    let mut tx = db.begin_offline_migration().await?;
    let (anchor_decisions, endpoint_decisions) = decisions.split_at(plan.anchors.len());
    for (a, d) in plan.anchors.iter().zip(anchor_decisions) {
        let mut w = TrustAnchorWrite {
            entity_id: a.entity_id.clone(),
            jwks: a.jwks.clone(),
            enable_jwks_update: a.enable_jwks_update,
            key_poll_interval: a.key_poll_interval,
            anchor_ec_constraints: None,
            trust_mark_issuer_self_signed: false,
            trust_mark_status: Default::default(),
        };
        match &d.change {
            Change::Create => ta_repo::insert(db, &mut tx, &w, now).await?,
            Change::Update(_) => {
                if let Some(row) = existing_anchors.iter().find(|r| r.entity_id == a.entity_id) {
                    // The override is not a legacy setting: keep what the operator chose.
                    w.anchor_ec_constraints = row.anchor_ec_constraints;
                    w.trust_mark_issuer_self_signed = row.trust_mark_issuer_self_signed;
                    w.trust_mark_status = row.trust_mark_status;
                    ta_repo::update(db, &mut tx, row.id, &w, now).await?;
                }
            }
            Change::Same | Change::Differs(_) => {}
        }
    }
    let ids = ta_repo::ids(db, &mut tx).await?;
    for (e, d) in plan.endpoints.iter().zip(endpoint_decisions) {
        let w = EndpointWrite {
            kind: e.kind.clone(),
            path: e.path.clone(),
            url: e.url.clone(),
            auth_enabled: e.auth_enabled,
            config: e.config.clone(),
        };
        let id = match &d.change {
            Change::Create => ep_repo::insert(db, &mut tx, &w, now).await?,
            Change::Update(_) => match existing_endpoints.iter().find(|r| r.kind == e.kind) {
                Some(row) => {
                    ep_repo::update(db, &mut tx, row.id, &w, now).await?;
                    row.id
                }
                None => continue,
            },
            Change::Same | Change::Differs(_) => continue,
        };
        let links: Vec<i64> = e
            .auth_trust_anchors
            .iter()
            .filter_map(|id| ids.get(id).copied())
            .collect();
        ep_repo::set_auth_trust_anchors(db, &mut tx, id, &links).await?;
    }
    tx.commit().await?;
    Ok(count)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn anchor(id: &str) -> Anchor {
        Anchor {
            entity_id: id.into(),
            jwks: None,
            enable_jwks_update: true,
            key_poll_interval: 0,
            source: "endpoints.auth.trust_anchors".into(),
        }
    }

    fn row(id: &str, enable: bool) -> TrustAnchorRow {
        TrustAnchorRow {
            id: 1,
            entity_id: id.into(),
            jwks: None,
            enable_jwks_update: enable,
            key_poll_interval: 0,
            anchor_ec_constraints: None,
            trust_mark_issuer_self_signed: false,
            trust_mark_status: Default::default(),
            created_at: 0,
            updated_at: 0,
        }
    }

    fn endpoint(kind: &str, path: &str, tas: &[&str]) -> Endpoint {
        Endpoint {
            kind: kind.into(),
            path: Some(path.into()),
            url: None,
            auth_enabled: !tas.is_empty(),
            config: json!({}),
            auth_trust_anchors: tas.iter().map(|s| s.to_string()).collect(),
            yaml_key: kind.into(),
        }
    }

    fn ep_row(kind: &str, path: &str) -> EndpointRow {
        EndpointRow {
            id: 7,
            kind: kind.into(),
            path: Some(path.into()),
            url: None,
            auth_enabled: false,
            config: json!({}),
            created_at: 0,
            updated_at: 0,
            auth_trust_anchors: vec![],
        }
    }

    #[test]
    fn existing_rows_are_same_differ_or_updated_with_force() {
        let plan = Plan {
            anchors: vec![
                anchor("https://a"),
                anchor("https://b"),
                anchor("https://c"),
            ],
            endpoints: vec![endpoint("fetch", "/fetch", &[])],
        };
        let rows = [row("https://a", true), row("https://b", false)];
        let eps = [ep_row("fetch", "/fetch")];
        let d = decide(&plan, &rows, &eps, false).unwrap();
        let changes: Vec<_> = d.iter().map(|d| d.change.clone()).collect();
        assert_eq!(
            changes,
            [
                Change::Same,
                Change::Differs(vec!["enable_jwks_update".into()]),
                Change::Create,
                Change::Same
            ]
        );
        let d = decide(&plan, &rows, &eps, true).unwrap();
        assert_eq!(
            d[1].change,
            Change::Update(vec!["enable_jwks_update".into()])
        );
    }

    #[test]
    fn unknown_anchors_and_taken_paths_are_refused_together() {
        let plan = Plan {
            anchors: vec![],
            endpoints: vec![endpoint("list", "/x", &["https://nowhere"])],
        };
        let e = decide(&plan, &[], &[ep_row("fetch", "/x")], false).unwrap_err();
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(e[0].contains("trust anchor(s) not found: [https://nowhere]"));
        assert!(e[1].contains("already used by the fetch endpoint"));
        assert!(decide(&plan, &[row("https://nowhere", true)], &[], false).is_ok());
    }
}
