#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::field_reassign_with_default,
    // Tests measure real time and sleep on purpose.
    clippy::disallowed_methods,
    missing_docs
)]

//! Whole-process tests: real Pharos instances on loopback, real databases, real HTTP.
//!
//! One test binary (one link) with a module per area.

mod support;

mod admin_auth;
mod admin_input;
mod admin_secure;
mod admin_validation;
mod backup_restore;
mod claims;
mod cli;
mod cli_admin;
mod client_auth;
mod client_auth_more;
mod cluster;
mod collection;
mod collection_periodic;
mod collection_spid;
mod config2db;
mod console;
mod cors;
mod db_busy;
mod db_outage;
mod deploy;
mod deploy_nginx;
mod disk_full;
mod docs_commands;
mod enroll;
mod enroll_checks;
mod enroll_refusals;
mod enroll_request;
mod entity_configuration;
mod etags;
mod explain;
mod extended_list;
mod federation;
mod federation_map;
mod fetch_list;
mod group_commit;
mod hosted_entities;
mod hostile_keys;
mod hostile_peers;
mod http_cache;
mod interop;
mod interop_spid;
mod jwks_refresh;
mod keys;
mod keys_admin;
mod kill9_writes;
mod large_registry;
mod list;
mod logging;
mod ml_dsa;
mod monitoring;
mod openapi;
mod pkcs11;
mod rate_limits;
mod registry;
mod resolve;
mod restart;
mod setup;
mod sigterm_writes;
mod startup;
mod stats;
mod stats_cli;
mod stats_client;
mod stats_jobs;
mod subordinate_docs;
mod subordinate_events;
mod subordinate_settings;
mod subordinates;
mod superior_keys;
mod tls;
mod traces;
mod trust_marks_admin;
mod trust_marks_bounded;
mod trust_marks_checkers;
mod trust_marks_delegated;
mod trust_marks_endpoints;
mod trust_marks_federation;
mod trust_marks_held;
mod trust_marks_held_refused;
mod upgrade;
mod wire_formats;
