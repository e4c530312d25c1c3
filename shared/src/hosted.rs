//! Hosted entities: one deployment serves several federation entities (a trust anchor, its
//! intermediates, a trust mark issuer, a test federation), each with its own keys, Entity
//! Configuration, endpoints, subordinates and statistics.
//!
//! An entity's state is stored under its number ([`EntityNo`], the `entities` row); the entity
//! configured in `entity_id` is [`EntityNo::DEFAULT`], so a single-entity deployment, and every
//! database made before entities were hosted, is entity 1 with nothing moved.

use std::fmt;

/// The number of a hosted entity: the `entities` row its state is stored under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EntityNo(i64);

impl EntityNo {
    /// The entity configured in `entity_id`: what the unprefixed Admin API paths and a
    /// single-entity deployment mean.
    pub const DEFAULT: Self = Self(1);

    /// A stored entity number. Numbers come from the database (or from a request path,
    /// checked against it before use), so any positive number is well-formed.
    pub fn new(n: i64) -> Option<Self> {
        (n > 0).then_some(Self(n))
    }

    /// The number, as the database stores it.
    pub fn get(self) -> i64 {
        self.0
    }

    /// Whether this is the entity configured in `entity_id`.
    pub fn is_default(self) -> bool {
        self == Self::DEFAULT
    }
}

impl fmt::Display for EntityNo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_positive() {
        assert_eq!(EntityNo::new(1), Some(EntityNo::DEFAULT));
        assert_eq!(EntityNo::new(0), None);
        assert_eq!(EntityNo::new(-3), None);
        assert_eq!(EntityNo::new(7).map(EntityNo::get), Some(7));
        assert!(EntityNo::DEFAULT.is_default());
    }
}
