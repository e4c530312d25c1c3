//! The `pharos` binary's library: the composition root and the operator tools.
//!
//! [`app`] builds one running Pharos from its settings: it connects the control plane
//! (`pharos-controlplane`, the writer) and the data plane (`pharos-dataplane`, the public
//! port) through the command channel and the snapshot handle, and serves both over the
//! listeners of [`http`]. The operator tools speak to a running Pharos over HTTP or to files
//! only: the Admin API client ([`cli_admin`]) and the chain [`explain`]er, the interactive [`setup`] and the legacy
//! configuration migration ([`config2db`]).

// Unit tests measure real time and sleep on purpose (clippy.toml bans both elsewhere).
#![cfg_attr(test, allow(clippy::disallowed_methods))]

pub mod app;
pub mod cli_admin;
pub mod config2db;
pub mod entity;
pub mod explain;
pub mod http;
pub mod logging;
pub mod metrics;
pub mod open_anchors;
pub mod preflight;
pub mod setup;
pub mod startup;
pub mod traces;
