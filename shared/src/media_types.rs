//! The JWT `typ` and HTTP media type of entity statements, in a module of their own: the chain
//! validator, trust marks and key updates check it, and the Entity Configuration builder signs
//! with it, without any of them importing the others.

/// Media type and JWT `typ` of entity statements.
pub const ENTITY_STATEMENT_TYP: &str = "entity-statement+jwt";

/// The HTTP media type of entity statements (`application/` + [`ENTITY_STATEMENT_TYP`]).
pub const ENTITY_STATEMENT_MEDIA_TYPE: &str = "application/entity-statement+jwt";
