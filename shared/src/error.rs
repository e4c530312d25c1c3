//! The one error type of the shared crate.
//!
//! Variants are grouped by what the caller does with them: configuration problems stop the
//! process, JOSE problems reject an input, policy problems map onto the federation error codes
//! `invalid_policy` / `invalid_metadata`.

/// Everything that can go wrong in the pure parts of Pharos.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The configuration could not be loaded; each entry is one problem, reported together.
    #[error("invalid configuration:\n  - {}", .0.join("\n  - "))]
    Config(Vec<String>),
    /// A key could not be generated, parsed or used.
    #[error("key error: {0}")]
    Key(String),
    /// A JWS/JWT could not be produced, parsed or verified.
    #[error("jws error: {0}")]
    Jws(String),
    /// A metadata policy is malformed or cannot be merged (`invalid_policy`).
    #[error("invalid_policy: {0}")]
    InvalidPolicy(String),
    /// Metadata violates a policy (`invalid_metadata`).
    #[error("invalid_metadata: {0}")]
    InvalidMetadata(String),
    /// No valid Trust Chain exists between a subject and the requested Trust Anchors
    /// (`invalid_trust_chain`); the message summarises why each candidate failed.
    #[error("invalid_trust_chain: {0}")]
    InvalidTrustChain(String),
    /// A requested Trust Anchor is unknown or unusable (`invalid_trust_anchor`).
    #[error("invalid_trust_anchor: {0}")]
    InvalidTrustAnchor(String),
    /// A statement could not be fetched from another federation entity (network, HTTP status,
    /// wrong content type); reported by `chain::Fetcher` implementations.
    #[error("fetch failed: {0}")]
    Fetch(String),
}

/// Result alias for the shared crate.
pub type Result<T> = std::result::Result<T, Error>;
