//! What a Durable Streams request asks, as the request metrics' `kind` label names it.

use axum::extract::Request;
use axum::http::{HeaderMap, Method};
use percent_encoding::percent_decode_str;

/// The kind of a request to the streams router.
pub(super) fn classify(request: &Request) -> &'static str {
    kind(request.method(), request.uri().query(), request.headers())
}

/// What a request asks, as the `kind` label names it (one of
/// [`REQUEST_KINDS`](super::metrics::REQUEST_KINDS)).
fn kind(method: &Method, query: Option<&str>, headers: &HeaderMap) -> &'static str {
    match *method {
        Method::GET => match live(query).as_deref() {
            None => "catch_up",
            Some("long-poll") => "long_poll",
            Some("sse") => "sse",
            Some(_) => "other",
        },
        Method::HEAD => "head",
        Method::POST => "append",
        Method::PUT if headers.contains_key("stream-forked-from") => "fork",
        Method::PUT => "create",
        Method::DELETE => "delete",
        Method::OPTIONS => "options",
        _ => "other",
    }
}

/// The query's `live` parameter, decoded as the router decodes it (the last one wins).
fn live(query: Option<&str>) -> Option<String> {
    let decode = |s: &str| {
        let s = s.replace('+', " ");
        percent_decode_str(&s).decode_utf8_lossy().into_owned()
    };
    query?.split('&').rev().find_map(|pair| {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        (decode(name) == "live").then(|| decode(value))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_request_has_its_kind() {
        let mut fork = HeaderMap::new();
        fork.insert("stream-forked-from", "/streams/a/b".parse().unwrap());
        let none = HeaderMap::new();
        for (method, query, headers, expected) in [
            (Method::GET, None, &none, "catch_up"),
            (Method::GET, Some("offset=-1"), &none, "catch_up"),
            (Method::GET, Some("offset=-1&live=sse"), &none, "sse"),
            (
                Method::GET,
                Some("live=long-poll&offset=1"),
                &none,
                "long_poll",
            ),
            (Method::GET, Some("live=long%2Dpoll"), &none, "long_poll"),
            (Method::GET, Some("live=sse&live=nope"), &none, "other"),
            (Method::GET, Some("live"), &none, "other"),
            (Method::GET, Some("alive=sse"), &none, "catch_up"),
            (Method::HEAD, Some("live=sse"), &none, "head"),
            (Method::POST, None, &none, "append"),
            (Method::PUT, None, &none, "create"),
            (Method::PUT, None, &fork, "fork"),
            (Method::DELETE, None, &none, "delete"),
            (Method::OPTIONS, None, &none, "options"),
            (Method::PATCH, None, &none, "other"),
        ] {
            assert_eq!(
                kind(&method, query, headers),
                expected,
                "{method} {query:?}"
            );
            // Every kind is one the metrics name.
            assert!(crate::live::metrics::REQUEST_KINDS.contains(&expected));
        }
    }
}
