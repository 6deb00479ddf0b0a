//! Stream names in URL paths: one percent-encoded segment each, checked, and the address a
//! `Stream-Forked-From` path names.

use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

use super::MAX_NAME;
use crate::store::Address;

/// What a name keeps unescaped in a path segment: RFC 3986's unreserved characters.
/// Everything else is escaped, `/` and `+` included, so a name is always one segment.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

pub(super) fn percent_encode(s: &str) -> String {
    utf8_percent_encode(s, SEGMENT).to_string()
}

pub(super) fn check_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() || name.len() > MAX_NAME {
        return Err("a namespace or key must be 1 to 1024 bytes\n");
    }
    if name.chars().any(char::is_control) {
        return Err("a namespace or key must not hold control characters\n");
    }
    Ok(())
}

/// The address a `Stream-Forked-From` path names: a sibling of the request's path (same
/// prefix, same namespace), or a path under [`ROUTE`]. `None`: neither.
pub(super) fn fork_source(request: &str, address: &Address, from: &str) -> Option<Address> {
    let from = from.trim();
    let dir = request.rsplit_once('/').map_or("", |(d, _)| d);
    if let Some(key) = from.strip_prefix(dir).and_then(|k| k.strip_prefix('/')) {
        if !key.is_empty() && !key.contains('/') {
            return Some(Address::new(
                address.namespace.clone(),
                percent_decode(key)?,
            ));
        }
    }
    let rest = from.strip_prefix("/streams/")?;
    let (namespace, key) = rest.split_once('/')?;
    if key.contains('/') {
        return None;
    }
    Some(Address::new(
        percent_decode(namespace)?,
        percent_decode(key)?,
    ))
}

/// Decodes one path segment as the router decodes a request's: `%XX` escapes, `+` a plain
/// plus (a space only in query strings). `None` for an escape that is not `%` and two
/// hexadecimal digits, or bytes that are not UTF-8: the request is answered 400.
fn percent_decode(s: &str) -> Option<String> {
    let escapes_ok = s.split('%').skip(1).all(|after| {
        after
            .as_bytes()
            .get(..2)
            .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
    });
    if !escapes_ok {
        return None;
    }
    percent_decode_str(s)
        .decode_utf8()
        .ok()
        .map(std::borrow::Cow::into_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_one_escaped_segment() {
        assert_eq!(percent_encode("a-b.c_d~e"), "a-b.c_d~e");
        assert_eq!(percent_encode("a/b c+d%"), "a%2Fb%20c%2Bd%25");
        assert_eq!(percent_encode("é"), "%C3%A9");
        for name in ["a/b c+d%", "é", "%2B", "+", "?&=#"] {
            assert_eq!(percent_decode(&percent_encode(name)).as_deref(), Some(name));
        }
    }

    #[test]
    fn a_segment_decodes_as_a_path_not_a_query() {
        assert_eq!(percent_decode("a+b").as_deref(), Some("a+b"));
        assert_eq!(percent_decode("a%2Bb").as_deref(), Some("a+b"));
        assert_eq!(percent_decode("a%2bb").as_deref(), Some("a+b"));
        assert_eq!(percent_decode("a%20b").as_deref(), Some("a b"));
        assert_eq!(percent_decode("%C3%A9").as_deref(), Some("é"));
        assert_eq!(percent_decode("").as_deref(), Some(""));
    }

    #[test]
    fn bad_escapes_and_non_utf8_are_refused() {
        for bad in [
            "%", "a%", "a%2", "%zz", "%2g", "%%41", "%FF", "%C3", "%C3%28",
        ] {
            assert_eq!(percent_decode(bad), None, "{bad}");
        }
    }

    #[test]
    fn fork_sources_are_siblings_or_under_the_route() {
        let here = Address::new("v1", "new");
        assert_eq!(
            fork_source("/v1/stream/new", &here, "/v1/stream/a%2Bb+c"),
            Some(Address::new("v1", "a+b+c"))
        );
        assert_eq!(
            fork_source("/v1/stream/new", &here, "/streams/ns%2F1/k%20"),
            Some(Address::new("ns/1", "k "))
        );
        assert_eq!(
            fork_source("/v1/stream/new", &here, "/v1/stream/a%zz"),
            None
        );
        assert_eq!(fork_source("/v1/stream/new", &here, "/v1/stream/%FF"), None);
        assert_eq!(fork_source("/v1/stream/new", &here, "/streams/a/b/c"), None);
        assert_eq!(fork_source("/v1/stream/new", &here, "/elsewhere/a"), None);
    }
}
