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

    fn of(method: Method, query: Option<&str>) -> &'static str {
        kind(&method, query, &HeaderMap::new())
    }

    #[test]
    fn each_request_has_its_kind() {
        assert_eq!(of(Method::GET, None), "catch_up");
        assert_eq!(of(Method::GET, Some("offset=-1")), "catch_up");
        assert_eq!(of(Method::GET, Some("offset=-1&live=sse")), "sse");
        assert_eq!(
            of(Method::GET, Some("live=long-poll&offset=1")),
            "long_poll"
        );
        assert_eq!(of(Method::GET, Some("live=long%2Dpoll")), "long_poll");
        assert_eq!(of(Method::GET, Some("live=sse&live=nope")), "other");
        assert_eq!(of(Method::GET, Some("live")), "other");
        assert_eq!(of(Method::GET, Some("alive=sse")), "catch_up");
        assert_eq!(of(Method::HEAD, Some("live=sse")), "head");
        assert_eq!(of(Method::POST, None), "append");
        assert_eq!(of(Method::PUT, None), "create");
        let mut fork = HeaderMap::new();
        fork.insert("stream-forked-from", "/streams/a/b".parse().unwrap());
        assert_eq!(kind(&Method::PUT, None, &fork), "fork");
        assert_eq!(of(Method::DELETE, None), "delete");
        assert_eq!(of(Method::OPTIONS, None), "options");
        assert_eq!(of(Method::PATCH, None), "other");
        for k in [
            "catch_up",
            "long_poll",
            "sse",
            "head",
            "append",
            "create",
            "fork",
            "delete",
            "options",
            "other",
        ] {
            assert!(crate::live::metrics::REQUEST_KINDS.contains(&k), "{k}");
        }
    }
}
