//! The OpenID Federation metadata policy engine (§6.1) and constraints (§6.2).
//!
//! Pure functions over `serde_json::Value`: validating, merging and applying metadata policies,
//! resolving a chain subject's metadata, and the constraint checks. Policy errors are
//! [`crate::Error::InvalidPolicy`], non-compliant metadata is [`crate::Error::InvalidMetadata`].

mod admit;
mod apply;
mod constraints;
mod except;
#[cfg(test)]
mod except_tests;
mod merge;
mod operators;
#[cfg(test)]
mod prop_tests;
mod resolve;
mod sets;
#[cfg(test)]
mod tests;
mod trace;
#[cfg(test)]
mod trace_tests;
#[cfg(test)]
mod vector_tests;

pub use admit::{
    NON_STANDARD_OPERATORS, WriteRules, check_crit_operator, check_policy_to_store, implements,
};
pub use apply::{apply_metadata_policy, apply_metadata_policy_traced, apply_param_policy};
pub use constraints::{
    Constraints, NamingConstraints, check_max_path_length, check_naming, filter_entity_types,
};
pub use merge::{check_metadata_policy, merge_metadata_policy, merge_param_policy};
pub use operators::{STANDARD_OPERATORS, check_param_policy};
pub use resolve::{
    ChainStatementPolicy, preview, resolve_metadata, resolve_metadata_traced, used_operators,
};
pub use trace::{FilterStep, MergeStep, OperatorStep, OverlayStep, PolicyTrace};
