//! [`Target`]: where a replica connects and what it asks for, checked from its URL.

use hyper::header::HeaderValue;
use hyper::Uri;

use super::Error;

/// Where to connect and what to ask for.
#[derive(Debug)]
pub(super) struct Target {
    pub(super) host: String,
    pub(super) port: u16,
    pub(super) authority: HeaderValue,
    pub(super) path: String,
}

impl Target {
    /// Checks `url`: an absolute `http://` URL with a host.
    pub(super) fn parse(url: &str) -> Result<Target, Error> {
        let invalid = |reason: &str| Error::InvalidUrl {
            url: url.to_owned(),
            reason: reason.to_owned(),
        };
        let uri: Uri = url
            .parse()
            .map_err(|e: hyper::http::uri::InvalidUri| invalid(&e.to_string()))?;
        match uri.scheme_str() {
            Some("http") => {}
            Some(_) => return Err(invalid("only http:// is supported")),
            None => return Err(invalid("the URL must be absolute (http://host:port/path)")),
        }
        let authority = uri.authority().ok_or_else(|| invalid("no host"))?;
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        if host.is_empty() {
            return Err(invalid("no host"));
        }
        let path = uri
            .path_and_query()
            .map_or_else(|| "/".to_owned(), |p| p.as_str().to_owned());
        Ok(Target {
            host: host.to_owned(),
            port: authority.port_u16().unwrap_or(80),
            authority: HeaderValue::from_str(authority.as_str())
                .map_err(|_| invalid("the host is not a valid header value"))?,
            path,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked() {
        let t = Target::parse("http://127.0.0.1:8080/streams/lanes/main?x=1").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("127.0.0.1", 8080));
        assert_eq!(t.path, "/streams/lanes/main?x=1");
        let t = Target::parse("http://[::1]/s").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("::1", 80));
        for bad in [
            "https://example.com/",
            "/streams/a/b",
            "http:///x",
            "not a url",
        ] {
            assert!(
                matches!(Target::parse(bad), Err(Error::InvalidUrl { .. })),
                "{bad}"
            );
        }
    }
}
