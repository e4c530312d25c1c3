//! What the policy engine reports when asked to show its work (the chain explainer, issue 40).
//!
//! The engine fills these records while it runs ([`super::resolve_metadata_traced`],
//! [`super::apply_metadata_policy_traced`]), so every value here is the engine's own, not a
//! second computation that could drift from it. Nothing is recorded (and nothing is cloned)
//! when no trace is asked for.

use serde::Serialize;
use serde_json::Value;

/// Metadata resolution (§6.1.4), step by step.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PolicyTrace {
    /// Each statement's policy and the combined policy after merging it, from the Trust
    /// Anchor's statement down to the Immediate Superior's (§6.1.4.1).
    pub merges: Vec<MergeStep>,
    /// The subject's own metadata, as its Entity Configuration has it.
    pub subject_metadata: Value,
    /// The Immediate Superior's `metadata` claim and the metadata after it replaced or added
    /// parameters (before any policy, §6.1.4.2); `None` when the statement has none.
    pub superior_metadata: Option<OverlayStep>,
    /// Entity Types removed by `allowed_entity_types` constraints (§6.2.3).
    pub entity_type_filters: Vec<FilterStep>,
    /// The metadata the merged policy is applied to.
    pub before_policy: Value,
    /// Each operator of the merged policy, in application order, with the parameter's value
    /// before and after it.
    pub operators: Vec<OperatorStep>,
    /// The resolved metadata (absent when resolution failed).
    pub metadata: Option<Value>,
}

/// One statement's policy merged into those above it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MergeStep {
    /// The index of the statement in the list given to the engine.
    pub statement: usize,
    /// That statement's `metadata_policy`.
    pub policy: Value,
    /// The combined policy after it (absent when the merge failed).
    pub combined: Option<Value>,
}

/// The Immediate Superior's `metadata` claim applied to the subject's metadata.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OverlayStep {
    /// The claim.
    pub claim: Value,
    /// The metadata after it.
    pub after: Value,
}

/// An `allowed_entity_types` constraint applied.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FilterStep {
    /// The index of the statement in the list given to the engine.
    pub statement: usize,
    /// The allowed Entity Types (`federation_entity` is always kept).
    pub allowed: Vec<String>,
    /// The Entity Types it removed.
    pub removed: Vec<String>,
}

/// One operator applied to one metadata parameter (§6.1.4.2).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OperatorStep {
    /// The Entity Type.
    pub entity_type: String,
    /// The parameter.
    pub parameter: String,
    /// The operator.
    pub operator: String,
    /// The operator's value in the merged policy.
    pub operand: Value,
    /// The parameter before the operator (`None`: absent).
    pub before: Option<Value>,
    /// The parameter after it (`None`: absent).
    pub after: Option<Value>,
    /// Why the operator refused the value, when it did (resolution stops there).
    pub error: Option<String>,
}

/// One operator's effect on a parameter, before the parameter's name is known.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct OpStep {
    pub operator: String,
    pub operand: Value,
    pub before: Option<Value>,
    pub after: Option<Value>,
    pub error: Option<String>,
}
