//! Parameters of a federation request, from its query string or its form body: one parser
//! (`application/x-www-form-urlencoded`: percent-decoding, `+` as space) for every endpoint,
//! so that they all read a parameter the same way.

use std::borrow::Cow;

/// The name-value pairs of `encoded`, in order, repeated names kept (the endpoints decide
/// what a repetition means), borrowed from `encoded` where nothing was decoded: for a path
/// that reads each parameter once (the list's filters, on every list request).
pub(crate) fn borrowed(encoded: &[u8]) -> impl Iterator<Item = (Cow<'_, str>, Cow<'_, str>)> {
    form_urlencoded::parse(encoded)
}

/// [`borrowed`], owned and collected.
pub(crate) fn pairs(encoded: &[u8]) -> Vec<(String, String)> {
    borrowed(encoded)
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// The value of the first `name` in `encoded`.
pub(crate) fn first(encoded: &[u8], name: &str) -> Option<String> {
    borrowed(encoded)
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}
