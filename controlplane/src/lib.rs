//! Pharos control plane: the only writer of federation state.
//!
//! It owns the database (sqlx over SQLite, MySQL/MariaDB or PostgreSQL), the Admin API, and the
//! background work; it publishes immutable snapshots that the data plane serves from.

pub mod admin;
pub mod app;
pub mod backup;
pub mod checks;
pub mod cli_admin;
pub mod collect;
pub mod command_dispatch;
pub mod config2db;
pub mod console;
pub mod control_plane;
pub mod db;
pub mod error;
pub mod http;
pub mod keys;
pub mod leadership;
pub mod logging;
pub mod metrics;
pub mod open_anchors;
pub mod preflight;
pub mod private_files;
pub mod refresh;
pub mod setup;
pub mod startup;
pub mod stats;

pub use error::{Error, Result};
