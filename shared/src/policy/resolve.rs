//! Chain-level metadata resolution (§6.1.4), the operator inventory used when publishing
//! `metadata_policy_crit`, and the preview behind `pharos policy resolve`.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::admit::implements;
use super::apply::{apply_metadata_policy, apply_metadata_policy_traced, apply_named_param};
use super::constraints::{Constraints, filter_entity_types};
use super::merge::{check_metadata_policy, merge_metadata_policy, merge_param_policy};
use super::sets::{invalid_metadata, invalid_policy};
use super::trace::{FilterStep, MergeStep, OverlayStep, PolicyTrace};
use crate::Result;

/// What one Subordinate Statement of a chain contributes to metadata resolution. Borrowed so
/// that callers can resolve straight from decoded statements without cloning.
#[derive(Clone, Copy, Debug, Default)]
pub struct ChainStatementPolicy<'a> {
    /// The statement's `metadata_policy` claim, if any.
    pub metadata_policy: Option<&'a Value>,
    /// The statement's `metadata_policy_crit` claim, if any.
    pub metadata_policy_crit: Option<&'a [String]>,
    /// The statement's `metadata` claim; only the Immediate Superior's is used (§6.1.4.2).
    pub metadata: Option<&'a Value>,
    /// The statement's `constraints`; its `allowed_entity_types` is applied before the policy
    /// (§6.2.3). Path length and naming are chain checks, done by the chain validator.
    pub constraints: Option<&'a Constraints>,
}

/// Resolve the chain subject's metadata (§6.1.4). `statements` run from the Trust Anchor's
/// statement down to the one from the subject's Immediate Superior. Steps: collect critical
/// operators; validate and merge every policy; overlay the Immediate Superior's `metadata` on
/// the leaf's (only for Entity Types the leaf has); drop Entity Types not allowed by any
/// statement's constraints; apply the merged policy.
pub fn resolve_metadata(
    statements: &[ChainStatementPolicy<'_>],
    leaf_metadata: &Value,
) -> Result<Value> {
    resolve_metadata_traced(statements, leaf_metadata, None)
}

/// [`resolve_metadata`], recording every step in `trace` when one is given (the chain
/// explainer). The steps are recorded as they run, so on an error the trace ends at the step
/// that failed; the result is the same as without a trace.
pub fn resolve_metadata_traced(
    statements: &[ChainStatementPolicy<'_>],
    leaf_metadata: &Value,
    mut trace: Option<&mut PolicyTrace>,
) -> Result<Value> {
    let crit: Vec<String> = statements
        .iter()
        .filter_map(|s| s.metadata_policy_crit)
        .flatten()
        .cloned()
        .collect();
    let mut merged: Option<Value> = None;
    for (i, s) in statements.iter().enumerate() {
        let Some(policy) = s.metadata_policy.filter(|p| !p.is_null()) else {
            continue;
        };
        let step = check_metadata_policy(policy, &crit).and_then(|()| match &merged {
            None => Ok(policy.clone()),
            Some(current) => merge_metadata_policy(current, policy),
        });
        if let Some(t) = trace.as_deref_mut() {
            t.merges.push(MergeStep {
                statement: i,
                policy: policy.clone(),
                combined: step.as_ref().ok().cloned(),
            });
        }
        merged = Some(step?);
    }
    if let Some(t) = trace.as_deref_mut() {
        t.subject_metadata = leaf_metadata.clone();
    }
    let mut metadata = leaf_metadata
        .as_object()
        .ok_or_else(|| invalid_metadata("leaf metadata must be a JSON object"))?
        .clone();
    if let Some(overlay) = statements.last().and_then(|s| s.metadata) {
        overlay_metadata(&mut metadata, overlay)?;
        if let Some(t) = trace.as_deref_mut() {
            t.superior_metadata = Some(OverlayStep {
                claim: overlay.clone(),
                after: Value::Object(metadata.clone()),
            });
        }
    }
    let mut metadata = Value::Object(metadata);
    for (i, s) in statements.iter().enumerate() {
        let Some(c) = s.constraints else { continue };
        let filtered = filter_entity_types(c, &metadata);
        if let (Some(t), Some(allowed)) = (trace.as_deref_mut(), &c.allowed_entity_types) {
            let kept = |k: &String| filtered.get(k).is_some();
            let removed = metadata.as_object().into_iter().flat_map(|m| m.keys());
            t.entity_type_filters.push(FilterStep {
                statement: i,
                allowed: allowed.clone(),
                removed: removed.filter(|k| !kept(k)).cloned().collect(),
            });
        }
        metadata = filtered;
    }
    let Some(t) = trace else {
        return match merged {
            Some(policy) => apply_metadata_policy(&policy, &metadata),
            None => Ok(metadata),
        };
    };
    t.before_policy = metadata.clone();
    let out = match merged {
        Some(policy) => apply_metadata_policy_traced(&policy, &metadata, Some(&mut t.operators)),
        None => Ok(metadata),
    };
    t.metadata = out.as_ref().ok().cloned();
    out
}

/// Replace or add the superior's parameters, only for Entity Types the leaf declares.
fn overlay_metadata(metadata: &mut Map<String, Value>, overlay: &Value) -> Result<()> {
    let overlay = overlay
        .as_object()
        .ok_or_else(|| invalid_metadata("superior metadata must be a JSON object"))?;
    for (entity_type, params) in overlay {
        let Some(target) = metadata.get_mut(entity_type) else {
            continue;
        };
        let (Some(target), Some(params)) = (target.as_object_mut(), params.as_object()) else {
            return Err(invalid_metadata(format!(
                "metadata.{entity_type} must be an object"
            )));
        };
        for (k, v) in params {
            target.insert(k.clone(), v.clone());
        }
    }
    Ok(())
}

/// Names of the operators used anywhere in a `metadata_policy`, so that a publisher can list in
/// `metadata_policy_crit` only the critical operators a statement actually uses.
pub fn used_operators(policy: &Value) -> BTreeSet<String> {
    policy
        .as_object()
        .into_iter()
        .flat_map(|types| types.values())
        .filter_map(Value::as_object)
        .flat_map(|params| params.values())
        .filter_map(Value::as_object)
        .flat_map(|ops| ops.keys().cloned())
        .collect()
}

/// Whether a preview policy is written at parameter level (`{param: {op: value}}`) rather than
/// as a full `metadata_policy`: some second-level key is an operator Pharos implements, or some
/// second-level value is not an object (operator values often are not).
fn is_claim_level(policy: &Map<String, Value>) -> bool {
    policy
        .values()
        .filter_map(Value::as_object)
        .flatten()
        .any(|(k, v)| implements(k) || !v.is_object())
        || policy.values().any(|v| !v.is_object())
}

/// Merge parameter-level policies, parameter by parameter.
fn merge_claim_level(acc: &mut Map<String, Value>, next: &Map<String, Value>) -> Result<()> {
    for (param, ops) in next {
        let ops = ops
            .as_object()
            .ok_or_else(|| invalid_policy(format!("policy for {param} must be an object")))?;
        let merged = match acc.get(param).and_then(Value::as_object) {
            Some(current) => merge_param_policy(current, ops)?,
            None => merge_param_policy(&Map::new(), ops)?,
        };
        acc.insert(param.clone(), Value::Object(merged));
    }
    Ok(())
}

/// Preview for the CLI `pharos policy resolve`. Input `{"policies": [superior, …, immediate],
/// "metadata": {…}}`; the policies are either all parameter-level for one Entity Type (then
/// `metadata` is that type's parameters) or all full `metadata_policy` objects (then `metadata`
/// is full metadata). Returns `{"merged_policy": …, "metadata": …}`; errors are
/// `InvalidPolicy` for bad input or policies and `InvalidMetadata` when the metadata fails.
pub fn preview(input: &Value) -> Result<Value> {
    let policies = input
        .get("policies")
        .and_then(Value::as_array)
        .ok_or_else(|| invalid_policy("preview input needs a \"policies\" array"))?;
    let metadata = input.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let mut objects = Vec::with_capacity(policies.len());
    for p in policies {
        objects.push(
            p.as_object()
                .ok_or_else(|| invalid_policy("each policy must be a JSON object"))?,
        );
    }
    let non_empty: Vec<_> = objects.iter().filter(|p| !p.is_empty()).collect();
    let claim_level = non_empty.iter().filter(|p| is_claim_level(p)).count();
    if claim_level > 0 && claim_level < non_empty.len() {
        return Err(invalid_policy(
            "preview policies mix parameter-level and full metadata_policy objects",
        ));
    }
    if claim_level > 0 {
        let mut merged = Map::new();
        for p in &objects {
            merge_claim_level(&mut merged, p)?;
        }
        let md = metadata
            .as_object()
            .ok_or_else(|| invalid_metadata("metadata must be a JSON object"))?;
        let mut out = md.clone();
        for (param, ops) in &merged {
            let ops = ops
                .as_object()
                .ok_or_else(|| invalid_policy("bad merged policy"))?;
            match apply_named_param(param, ops, md.get(param))? {
                Some(v) => out.insert(param.clone(), v),
                None => out.remove(param),
            };
        }
        return Ok(json!({"merged_policy": merged, "metadata": out}));
    }
    let mut merged = Value::Object(Map::new());
    for p in policies {
        merged = merge_metadata_policy(&merged, p)?;
    }
    let resolved = apply_metadata_policy(&merged, &metadata)?;
    Ok(json!({"merged_policy": merged, "metadata": resolved}))
}
