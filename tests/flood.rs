#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::field_reassign_with_default,
    // Tests measure real time and sleep on purpose.
    clippy::disallowed_methods,
    missing_docs
)]

//! Whole-process load tests, in a test binary of their own: cargo runs test binaries one after
//! another, so these measure Pharos alone, not Pharos competing with the integration tests.

mod command_flood;
mod support;
