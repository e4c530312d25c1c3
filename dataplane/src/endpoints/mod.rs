//! The federation endpoints that live in the endpoint registry, one module per type.

pub mod fetch;
pub mod historical_keys;
pub mod jwks_update;
pub mod list;
pub mod resolve;
