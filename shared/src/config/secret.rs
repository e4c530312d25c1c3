//! A configured secret (a database password, a PKCS#11 PIN, a sealing key): a type that
//! cannot be printed by accident. `Debug` shows `***` for a non-empty value and there is no
//! `Display`, so a `{:?}` of the settings in a log line or a panic message leaks nothing; the
//! value is read only through [`Secret::expose`], at the one place that hands it on.
//!
//! It serialises as the plain text, because loading merges the file and the environment into
//! the serialised defaults; `Settings::redacted` hides it for `pharos check-config`.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A secret setting's value (empty: not set).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// The value, for the one caller that hands it to the database driver or the token.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether no secret is set.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_empty() { "\"\"" } else { "\"***\"" })
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Self(value.to_owned())
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Self(value)
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_value() {
        let s = Secret::from("hunter2");
        assert_eq!(format!("{s:?}"), "\"***\"");
        assert_eq!(format!("{:?}", Secret::default()), "\"\"");
        assert_eq!(s.expose(), "hunter2");
        assert_eq!(serde_json::to_value(&s).unwrap(), "hunter2");
    }
}
