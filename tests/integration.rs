//! Whole-process tests: real Pharos instances on loopback, real databases, real HTTP.
//!
//! One test binary (one link) with a module per area.

mod support;

mod admin_input;
mod cli;
mod entity_configuration;
mod registry;
mod restart;
