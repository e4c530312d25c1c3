//! Parameters of a federation request, from its query string or its form body: one parser
//! (`application/x-www-form-urlencoded`, RFC 3986 percent-decoding, `+` as space) for every
//! endpoint, so that they all read a parameter the same way.

/// The name-value pairs of `encoded`, in order, repeated names kept (the endpoints decide
/// what a repetition means).
pub(crate) fn pairs(encoded: &[u8]) -> Vec<(String, String)> {
    form_urlencoded::parse(encoded).into_owned().collect()
}

/// The value of the first `name` in `encoded`.
pub(crate) fn first(encoded: &[u8], name: &str) -> Option<String> {
    form_urlencoded::parse(encoded)
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}
