//! A short path kept in place, not behind a pointer.
//!
//! What is compared on every request of a random hosted entity is best read from the cache
//! line the request reads anyway: a `String` there would be one more dependent miss (its
//! bytes). Endpoint paths are short (`/fetch`, `/edu/fetch`), so the common ones fit; a longer
//! one is simply not kept, and whoever holds the path then looks it up the long way.

/// Longest path kept (with its length, 23 bytes).
pub const INLINE_PATH: usize = 22;

/// A path of at most [`INLINE_PATH`] bytes, held inline; the empty path holds none.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct InlinePath {
    len: u8,
    bytes: [u8; INLINE_PATH],
}

impl InlinePath {
    /// `path` kept inline; `None` when it is empty or too long to keep.
    pub fn new(path: &str) -> Option<Self> {
        if path.is_empty() || path.len() > INLINE_PATH {
            return None;
        }
        let mut bytes = [0; INLINE_PATH];
        bytes
            .get_mut(..path.len())?
            .copy_from_slice(path.as_bytes());
        Some(Self {
            len: u8::try_from(path.len()).ok()?,
            bytes,
        })
    }

    /// Whether this is a path, and `path` is it, byte for byte.
    pub fn is(&self, path: &str) -> bool {
        self.len != 0 && self.bytes.get(..usize::from(self.len)) == Some(path.as_bytes())
    }
}

impl std::fmt::Debug for InlinePath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = self.bytes.get(..usize::from(self.len)).unwrap_or_default();
        write!(f, "{:?}", String::from_utf8_lossy(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_kept_exactly_and_only_when_short() {
        let p = InlinePath::new("/fetch");
        assert!(p.is_some_and(|p| p.is("/fetch")));
        assert!(p.is_some_and(|p| !p.is("/fetc") && !p.is("/fetch/") && !p.is("")));
        let longest = "/".repeat(INLINE_PATH);
        assert!(InlinePath::new(&longest).is_some_and(|p| p.is(&longest)));
        assert!(InlinePath::new(&format!("{longest}/")).is_none());
        assert!(InlinePath::new("").is_none());
        // The empty default holds no path, not the empty one.
        assert!(!InlinePath::default().is(""));
    }
}
