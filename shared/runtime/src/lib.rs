//! What the two planes share that needs the async runtime or HTTP, below both of them: the
//! command protocol (the only way the data plane asks for a change of state), the outbound
//! federation fetcher, signing off the async workers, single-flight, trust mark `jti`s, the
//! error body both surfaces answer with, the statistics ring and the resolver's caches as the
//! Admin API sees them.
//!
//! Arrows run one way: the binary → the control plane and the data plane → this crate →
//! `pharos-shared` (pure domain logic, no I/O). Neither plane imports the other.

// Unit tests measure real time and sleep on purpose (clippy.toml bans both elsewhere).
#![cfg_attr(test, allow(clippy::disallowed_methods))]

pub mod command;
pub mod error_body;
pub mod jti;
pub mod outbound;
pub mod resolver_caches;
pub mod signing;
pub mod single_flight;
pub mod stats_ring;
pub mod telemetry;
