//! Offsets as a replica holds them: opaque tokens the server hands out, checked when they
//! arrive and percent-encoded when they go into a URL.
//!
//! The Durable Streams protocol leaves an offset's form to the server, within a grammar every
//! client can rely on: a non-empty string of visible ASCII (`!` to `~`) without `,`, `&`,
//! `=`, `?` or `/`. chord's server hands out 16 lowercase hexadecimal digits
//! (`streams::Offset`), and the JavaScript replica checks the same grammar (`validOffset` in
//! `js/src/sse.mjs`).

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

use super::Break;

/// What goes into a query string as it is: the unreserved characters of RFC 3986; every
/// other byte is percent-encoded, so no offset can end the parameter or the request line.
const QUERY: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The longest part of a refused offset quoted in its break.
const SHOWN: usize = 64;

/// Whether `text` is an offset by the protocol's grammar.
pub(super) fn valid(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|b| matches!(b, b'!'..=b'~') && !matches!(b, b',' | b'&' | b'=' | b'?' | b'/'))
}

/// `value` (where it came from: `what`) as an offset, or the [`Break::BadOffset`] saying why
/// it is not one.
pub(super) fn check(what: &str, value: Option<&serde_json::Value>) -> Result<String, Break> {
    let shown = match value {
        Some(serde_json::Value::String(text)) if valid(text) => return Ok(text.clone()),
        Some(serde_json::Value::String(text)) => {
            let mut end = text.len().min(SHOWN);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            format!("{:?}", &text[..end])
        }
        Some(serde_json::Value::Null) => "null".to_owned(),
        Some(serde_json::Value::Bool(_)) => "a boolean".to_owned(),
        Some(serde_json::Value::Number(_)) => "a number".to_owned(),
        Some(serde_json::Value::Array(_)) => "an array".to_owned(),
        Some(serde_json::Value::Object(_)) => "an object".to_owned(),
        None => "missing".to_owned(),
    };
    Err(Break::BadOffset(format!(
        "{what} is not an offset: {shown}"
    )))
}

/// `offset` as the value of a query parameter.
pub(super) fn query(offset: &str) -> impl std::fmt::Display + '_ {
    utf8_percent_encode(offset, QUERY)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_protocols_grammar() {
        for good in ["000000000000002a", "-1", "now", "0_1", "a~b!c"] {
            assert!(valid(good), "{good}");
        }
        for bad in [
            "", "a b", "a\r\nb", "a,b", "a&b", "a=b", "a?b", "a/b", "é", "\u{7f}",
        ] {
            assert!(!valid(bad), "{bad:?}");
        }
    }

    #[test]
    fn anything_else_is_a_bad_offset_that_restarts() {
        for bad in [json!("a b"), json!(7), json!(null), json!(["x"])] {
            let why = check("streamNextOffset", Some(&bad)).unwrap_err();
            assert!(matches!(why, Break::BadOffset(_)), "{why:?}");
            assert!(why.restarts(), "{why:?}");
        }
        let why = check("streamNextOffset", None).unwrap_err();
        assert_eq!(
            why.to_string(),
            "the server sent a bad offset: streamNextOffset is not an offset: missing"
        );
        assert_eq!(
            check("streamNextOffset", Some(&json!("0_1"))),
            Ok("0_1".to_owned())
        );
    }

    #[test]
    fn an_offset_in_a_query_keeps_only_unreserved_characters() {
        assert_eq!(query("000000000000002a").to_string(), "000000000000002a");
        assert_eq!(query("-1").to_string(), "-1");
        assert_eq!(query("a#b%c+d").to_string(), "a%23b%25c%2Bd");
        assert_eq!(query("a b\r\n").to_string(), "a%20b%0D%0A");
    }
}
