//! HTTP caching of federation answers, so that a CDN or a reverse proxy in front of several
//! replicas can serve them: a strong entity tag computed once per signed body, and how long
//! the body stays fresh.
//!
//! Freshness is never chosen by configuration: an answer is fresh until the instant the data
//! plane would sign a new one (its "refresh" instant, which is before the statement's `exp`,
//! and no later than the next change of our keys or of the subject's keys). A cache that keeps
//! it exactly that long never serves a statement past its `exp` nor one signed with a key that
//! no longer signs.

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use http::HeaderValue;
use sha2::{Digest, Sha256};

/// A body ready to be served from cache: the bytes, their entity tag and the instant until
/// which a cache may serve them without asking again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tagged {
    /// The strong entity tag (quoted, [`ETAG_LEN`] bytes), then the body, in one buffer.
    tag_then_body: Bytes,
    /// Unix seconds after which the body is stale.
    pub fresh_until: i64,
}

/// The owner of a [`Tagged::held_by`] answer's bytes.
struct HeldBy<O> {
    owner: Arc<O>,
    held: fn(&O) -> &[u8],
}

impl<O> AsRef<[u8]> for HeldBy<O> {
    fn as_ref(&self) -> &[u8] {
        (self.held)(&self.owner)
    }
}

/// The length of every entity tag [`etag`] makes: a quote, 22 base64url characters, a quote.
pub const ETAG_LEN: usize = 24;

impl Tagged {
    /// Tags `body` (hashing it once) as fresh until `fresh_until`.
    ///
    /// The tag and the body are kept in one buffer, the tag first, and only that buffer is
    /// held: an answer takes both from it, as two slices sharing one reference count. A
    /// `Tagged` is then one `Bytes` and its freshness (40 bytes, where a body and a header
    /// value beside it were 80). With a thousand hosted entities and a random one per request
    /// each line of an answer's is a likely miss (BENCHMARKS.md, "Hosted entities"), and the
    /// tag, read for the `ETag` header, is on the body's first line, which the kernel copies
    /// next. The body is copied once, when tagged.
    pub fn new(body: Bytes, fresh_until: i64) -> Self {
        let tag = etag(&body);
        debug_assert_eq!(tag.len(), ETAG_LEN);
        let mut joined = Vec::with_capacity(tag.len() + body.len());
        joined.extend_from_slice(&tag);
        joined.extend_from_slice(&body);
        Self {
            tag_then_body: Bytes::from(joined),
            fresh_until,
        }
    }

    /// An answer of the tag and body `held` finds in `owner` (fresh until `fresh_until`), held
    /// through `owner`'s reference count. An owner that keeps the bytes in itself has its
    /// count, its tag and its body's start on one line, which a request for a random one of
    /// many entities reads anyway (see [`crate::snapshot::SnapshotReader`]); a buffer of its
    /// own would have been two more lines. The answer made here costs one small allocation,
    /// on the request's own thread.
    pub fn held_by<O: Send + Sync + 'static>(
        owner: Arc<O>,
        held: fn(&O) -> &[u8],
        fresh_until: i64,
    ) -> Self {
        Self {
            tag_then_body: Bytes::from_owner(HeldBy { owner, held }),
            fresh_until,
        }
    }

    /// The tag, then the body, as kept (for an owner that keeps them in itself, see
    /// [`Self::held_by`]).
    pub fn held(&self) -> &[u8] {
        &self.tag_then_body
    }

    /// The response body.
    pub fn body(&self) -> Bytes {
        self.tag_then_body
            .slice(ETAG_LEN.min(self.tag_then_body.len())..)
    }

    /// The entity tag's bytes, quoted (as [`etag`] made them).
    pub fn etag_bytes(&self) -> &[u8] {
        self.tag_then_body
            .get(..ETAG_LEN)
            .unwrap_or(&self.tag_then_body)
    }

    /// The bytes held: the tag and the body.
    pub fn held_len(&self) -> usize {
        self.tag_then_body.len()
    }

    /// The body and the `ETag` header value, taken apart without copying either.
    pub fn into_parts(self) -> (Bytes, HeaderValue) {
        let mut tag = self.tag_then_body;
        let body = tag.split_off(ETAG_LEN.min(tag.len()));
        // Quoted base64url, as `etag` makes it: always a valid header value (the empty
        // fallback, which matches no `If-None-Match`, is never taken).
        let tag =
            HeaderValue::from_maybe_shared(tag).unwrap_or_else(|_| HeaderValue::from_static(""));
        (body, tag)
    }

    /// Seconds a cache may keep the body at `now` (never negative).
    pub fn max_age(&self, now: i64) -> u64 {
        u64::try_from(self.fresh_until.saturating_sub(now)).unwrap_or(0)
    }
}

/// The strong entity tag of `body`: 128 bits of its SHA-256, base64url, in quotes. The same
/// bytes always get the same tag, on every replica, so a CDN revalidating against another
/// replica still gets its `304`.
pub fn etag(body: &[u8]) -> Bytes {
    let digest = Sha256::digest(body);
    let mut tag = String::with_capacity(24);
    tag.push('"');
    URL_SAFE_NO_PAD.encode_string(&digest[..16], &mut tag);
    tag.push('"');
    Bytes::from(tag)
}

/// Whether an `If-None-Match` header value matches `etag` (RFC 9110 §13.1.2: `*`, or a list
/// of entity tags compared weakly, so `W/"x"` matches `"x"`). A malformed value matches
/// nothing, which only costs the client a full answer.
pub fn none_match(header: &[u8], etag: &[u8]) -> bool {
    let Ok(header) = std::str::from_utf8(header) else {
        return false;
    };
    let header = header.trim();
    if header == "*" {
        return true;
    }
    header
        .split(',')
        .map(str::trim)
        .map(|t| t.strip_prefix("W/").unwrap_or(t))
        .any(|t| t.as_bytes() == etag)
}

/// Whether an `If-Match` header value holds for a resource whose current strong tag is
/// `current` (`None`: the resource does not exist). RFC 9110 §13.1.1: `*` holds when the
/// resource exists; otherwise one of the listed tags must equal the current one by the strong
/// comparison, so a weak tag (`W/"x"`) never holds. A malformed value holds for nothing: the
/// write is refused (412), never made on a guess.
pub fn if_match(header: &[u8], current: Option<&[u8]>) -> bool {
    let Some(current) = current else {
        return false;
    };
    let Ok(header) = std::str::from_utf8(header) else {
        return false;
    };
    let header = header.trim();
    if header == "*" {
        return true;
    }
    header
        .split(',')
        .map(str::trim)
        .filter(|t| !t.starts_with("W/"))
        .any(|t| t.as_bytes() == current)
}

/// The `Cache-Control` value of an answer fresh for `max_age` seconds: shared caches may keep
/// it (federation answers are public, signed documents).
pub fn cache_control(max_age: u64) -> String {
    format!("public, max-age={max_age}")
}

/// Slots of the per-thread table of `Cache-Control` header values (a power of two).
const CACHE_CONTROL_SLOTS: usize = 1024;

thread_local! {
    /// `Cache-Control` header values by `max_age`, direct-mapped (`max_age` modulo the size).
    static CACHE_CONTROL: std::cell::RefCell<Vec<Option<(u64, HeaderValue)>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// [`cache_control`] as a header value. The value depends only on `max_age`, which changes once
/// a second and is shared by every answer signed in the same second, so the values are kept
/// per thread by `max_age` and an answer clones one instead of formatting and validating a new
/// string (~550 instructions of a cached answer of ~25,000). The table holds at most
/// [`CACHE_CONTROL_SLOTS`] values per thread.
pub fn cache_control_header(max_age: u64) -> HeaderValue {
    let make = || {
        HeaderValue::from_maybe_shared(Bytes::from(cache_control(max_age)))
            .unwrap_or_else(|_| HeaderValue::from_static("no-store"))
    };
    CACHE_CONTROL
        .try_with(|table| {
            let mut table = table.borrow_mut();
            if table.is_empty() {
                table.resize(CACHE_CONTROL_SLOTS, None);
            }
            // Lossless: the modulus is below `usize::MAX`.
            let i = usize::try_from(max_age % CACHE_CONTROL_SLOTS as u64).unwrap_or(0);
            match table.get_mut(i) {
                Some(Some((age, v))) if *age == max_age => v.clone(),
                Some(slot) => {
                    let v = make();
                    *slot = Some((max_age, v.clone()));
                    v
                }
                None => make(),
            }
        })
        .unwrap_or_else(|_| make())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An answer held through its owner serves the owner's bytes and tag, and keeps the owner
    /// (not a count of the buffer's) until it is dropped.
    #[test]
    fn an_answer_held_by_its_owner_is_the_owners_and_keeps_it() {
        struct Kept(Tagged);
        let owner = Arc::new(Kept(Tagged::new(Bytes::from_static(b"a.b.c"), 42)));
        let held = Tagged::held_by(Arc::clone(&owner), |k: &Kept| k.0.held(), 42);
        assert_eq!(held, owner.0);
        assert_eq!(Arc::strong_count(&owner), 2);
        let (body, tag) = held.into_parts();
        assert_eq!(&body[..], b"a.b.c");
        assert_eq!(tag.as_bytes(), owner.0.etag_bytes());
        assert_eq!(Arc::strong_count(&owner), 2, "the parts hold it still");
        drop((body, tag));
        assert_eq!(Arc::strong_count(&owner), 1);
    }

    #[test]
    fn etag_is_strong_quoted_and_depends_on_every_byte() {
        let a = etag(b"header.payload.signature");
        assert_eq!(a.len(), 24);
        assert!(a.starts_with(b"\"") && a.ends_with(b"\""));
        assert_eq!(a, etag(b"header.payload.signature"), "stable");
        assert_ne!(a, etag(b"header.payload.signaturf"));
        assert!(!a.starts_with(b"W/"));
    }

    #[test]
    fn if_none_match_rules() {
        let tag = etag(b"x");
        let t = std::str::from_utf8(&tag).unwrap();
        assert!(none_match(t.as_bytes(), &tag));
        assert!(none_match(format!("W/{t}").as_bytes(), &tag), "weak");
        assert!(none_match(format!("\"other\", {t}").as_bytes(), &tag));
        assert!(none_match(b" * ", &tag));
        assert!(!none_match(b"\"other\"", &tag));
        assert!(
            !none_match(t.trim_matches('"').as_bytes(), &tag),
            "unquoted"
        );
        assert!(!none_match(b"", &tag));
        assert!(!none_match(&[0xff, 0xfe], &tag));
    }

    #[test]
    fn a_tagged_body_is_the_body_and_its_tag_is_the_bodys() {
        let t = Tagged::new(Bytes::from_static(b"header.payload.signature"), 1);
        assert_eq!(t.body(), &b"header.payload.signature"[..]);
        let tag = etag(b"header.payload.signature");
        assert_eq!(t.etag_bytes(), &tag[..]);
        assert_eq!(t.held_len(), 48);
        let (body, header) = t.clone().into_parts();
        assert_eq!(
            (&body[..], header.as_bytes()),
            (&b"header.payload.signature"[..], &tag[..])
        );
        let empty = Tagged::new(Bytes::new(), 1);
        assert!(empty.body().is_empty());
        assert_eq!(empty.into_parts().1.as_bytes(), &etag(b"")[..]);
    }

    #[test]
    fn max_age_counts_down_to_zero() {
        let t = Tagged::new(Bytes::from_static(b"b"), 1_000);
        assert_eq!(t.max_age(400), 600);
        assert_eq!(t.max_age(1_000), 0);
        assert_eq!(t.max_age(5_000), 0, "never negative");
        assert_eq!(cache_control(600), "public, max-age=600");
    }

    #[test]
    fn if_match_compares_strongly_and_star_needs_an_existing_resource() {
        let tag = etag(b"{}");
        let t = std::str::from_utf8(&tag).unwrap_or_default().to_string();
        assert!(if_match(t.as_bytes(), Some(&tag)));
        assert!(if_match(format!("\"other\", {t}").as_bytes(), Some(&tag)));
        assert!(
            !if_match(format!("W/{t}").as_bytes(), Some(&tag)),
            "weak never matches"
        );
        assert!(!if_match(b"\"other\"", Some(&tag)));
        assert!(!if_match(t.as_bytes(), None), "no resource, no match");
        assert!(if_match(b" * ", Some(&tag)));
        assert!(!if_match(b"*", None));
        assert!(!if_match(b"\xff", Some(&tag)));
        assert!(!if_match(b"", Some(&tag)));
    }

    #[test]
    fn cache_control_header_values_are_the_formatted_ones() {
        for age in [0, 1, 600, 600 + CACHE_CONTROL_SLOTS as u64, 600, 28_800] {
            assert_eq!(cache_control_header(age), cache_control(age).as_str());
        }
    }
}
