//! Metadata policy (filled in by the policy work).
