//! Settings written as one comma-separated text (`GET,POST`, `https://a.example, https://b.example`),
//! as lighthouse's configuration and the `SVC_` variables spell them. Split once, when the
//! configuration is read, so that every reader sees the same items.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The items of a comma-separated setting, trimmed, empty ones dropped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommaList(Vec<String>);

impl CommaList {
    /// The items, in the order written.
    pub fn items(&self) -> &[String] {
        &self.0
    }

    /// The list is exactly `*` (the CORS wildcard).
    pub fn is_star(&self) -> bool {
        matches!(self.0.as_slice(), [only] if only == "*")
    }
}

impl From<&str> for CommaList {
    fn from(text: &str) -> Self {
        Self(
            text.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect(),
        )
    }
}

impl fmt::Display for CommaList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.join(","))
    }
}

impl Serialize for CommaList {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for CommaList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(|text| Self::from(text.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_are_trimmed_and_empty_ones_dropped() {
        let l = CommaList::from(" https://a.example, ,https://b.example ,");
        assert_eq!(l.items(), ["https://a.example", "https://b.example"]);
        assert_eq!(l.to_string(), "https://a.example,https://b.example");
        assert!(CommaList::from(" * ").is_star());
        assert!(!CommaList::from("*,GET").is_star());
        assert!(CommaList::from("").items().is_empty());
    }
}
