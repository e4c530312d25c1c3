//! Whole-process load tests, in a test binary of their own: cargo runs test binaries one after
//! another, so these measure Pharos alone, not Pharos competing with the integration tests.

mod command_flood;
mod support;
