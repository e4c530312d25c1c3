//! Pharos control plane: the only writer of federation state.
//!
//! It owns the database (sqlx over SQLite, MySQL/MariaDB or PostgreSQL), the write path, the
//! Admin API and the background work (refreshers, statistics, collection); it publishes
//! immutable snapshots that the data plane serves from. It does not know the data plane: what
//! both use lies below in `pharos-runtime` and `pharos-shared`, and the `pharos` binary wires
//! the two together.

// Unit tests measure real time and sleep on purpose (clippy.toml bans both elsewhere).
#![cfg_attr(test, allow(clippy::disallowed_methods))]

pub mod admin;
pub mod checks;
pub mod collector;
pub mod command_dispatch;
pub mod console;
pub mod control_plane;
pub mod error;
pub mod hosting;
pub mod keys;
pub mod leadership;
pub mod new_subordinate;
pub mod private_files;
pub mod refresh;
pub mod stats;

pub use control_plane::db;
pub use db::backup;
pub use error::{Error, Result};
