//! Pharos shared crate: the domain types, configuration, JOSE, and the pure federation logic
//! that both planes use.
//!
//! Nothing in here performs I/O on its own initiative or reads the clock: time is always a
//! parameter (`now`, Unix seconds), so that every rule can be tested with a fixed clock.

// Unit tests measure real time and sleep on purpose (clippy.toml bans both elsewhere).
#![cfg_attr(test, allow(clippy::disallowed_methods))]

pub mod chain;
pub mod checks;
pub mod claims;
pub mod client_ip;
pub mod collection;
pub mod config;
pub mod endpoint;
pub mod entity_configuration;
pub mod error;
pub mod extended_listing;
pub mod federation_map;
pub mod hosted;
pub mod http_cache;
pub mod inline_path;
pub mod interop;
pub mod jose;
pub mod key_update;
pub mod media_types;
pub mod metadata_types;
pub mod policy;
pub mod rate_limit;
pub mod refresh;
pub mod snapshot;
pub mod spans;
pub mod subordinate;
pub mod subordinate_events;
pub mod subordinate_statement;
pub mod suggest;
pub mod superior_keys;
pub mod time;
pub mod trust_mark;
pub mod trust_mark_holder;
pub mod trust_mark_issuer;
pub mod trust_mark_issuer_keys;

pub use error::{Error, Result};
