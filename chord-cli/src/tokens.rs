//! The bearer tokens of `chord serve`: read from a file, checked on each request.

use std::io;
use std::path::{Path, PathBuf};

use axum::http::{header, HeaderMap, Uri};
use percent_encoding::percent_decode_str;

/// Why a token file was refused: each names the flag and the file.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TokenError {
    /// The file could not be read.
    #[error("{flag} {}: {source}", path.display())]
    Unreadable {
        /// The flag that named it.
        flag: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The file holds no token.
    #[error(
        "{flag} {}: no token in it (one a line; blank lines and lines starting with # are \
         skipped)",
        path.display()
    )]
    NoToken {
        /// The flag that named it.
        flag: &'static str,
        /// The file.
        path: PathBuf,
    },
    /// A line of the file is not a token.
    #[error(
        "{flag} {}:{line}: not a token: a token is visible ASCII with no space (what an \
         Authorization header carries)",
        path.display()
    )]
    BadToken {
        /// The flag that named it.
        flag: &'static str,
        /// The file.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
    },
}

/// The tokens a request may carry; any one of them is accepted.
#[derive(Debug)]
pub(crate) struct Tokens {
    tokens: Vec<Vec<u8>>,
}

impl Tokens {
    /// Reads the tokens of `path`, named by `flag` in errors: one a line, surrounding
    /// whitespace trimmed; blank lines and lines starting with `#` are skipped. A token is
    /// visible ASCII with no space (what an `Authorization` header carries), so a file of
    /// another kind (a key pair, a binary) is refused rather than half read.
    pub(crate) fn read(flag: &'static str, path: &Path) -> Result<Tokens, TokenError> {
        let text = std::fs::read_to_string(path).map_err(|source| TokenError::Unreadable {
            flag,
            path: path.to_owned(),
            source,
        })?;
        let mut tokens = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if !line.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(TokenError::BadToken {
                    flag,
                    path: path.to_owned(),
                    line: n + 1,
                });
            }
            tokens.push(line.as_bytes().to_vec());
        }
        if tokens.is_empty() {
            return Err(TokenError::NoToken {
                flag,
                path: PathBuf::from(path),
            });
        }
        Ok(Tokens { tokens })
    }

    /// How many tokens there are.
    pub(crate) fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Whether the request carries one of the tokens: in `Authorization: Bearer <token>`, or,
    /// when `query` is given, in its `token` parameter (for an `EventSource`, which cannot
    /// set headers).
    pub(crate) fn allow(&self, headers: &HeaderMap, query: Option<&Uri>) -> bool {
        let bearer = headers
            .get_all(header::AUTHORIZATION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .filter_map(|v| {
                let (scheme, token) = v.trim().split_once(' ')?;
                scheme
                    .eq_ignore_ascii_case("bearer")
                    .then(|| token.trim().to_owned())
            });
        let in_query = query
            .and_then(Uri::query)
            .into_iter()
            .flat_map(|q| q.split('&'))
            .filter_map(|pair| pair.strip_prefix("token="))
            .map(|t| percent_decode_str(t).decode_utf8_lossy().into_owned());
        bearer
            .chain(in_query)
            .any(|given| self.known(given.as_bytes()))
    }

    /// Whether `given` is one of the tokens, compared in time that depends on the lengths
    /// only, not on where a guess first differs.
    fn known(&self, given: &[u8]) -> bool {
        self.tokens.iter().fold(false, |found, token| {
            let same = token.len() == given.len()
                && token
                    .iter()
                    .zip(given)
                    .fold(0u8, |diff, (a, b)| diff | (a ^ b))
                    == 0;
            found | same
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(text: &str) -> Result<Tokens, TokenError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens");
        std::fs::write(&path, text).unwrap();
        Tokens::read("--read-token-file", &path)
    }

    fn headers(authorization: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, authorization.parse().unwrap());
        h
    }

    #[test]
    fn a_request_is_allowed_with_a_token_of_the_file() {
        let t = tokens("# readers\n\n  s3cret  \nother\n").unwrap();
        assert_eq!(t.len(), 2);
        assert!(t.allow(&headers("Bearer s3cret"), None));
        assert!(t.allow(&headers("bearer other"), None));
        assert!(!t.allow(&headers("Bearer s3cre"), None));
        assert!(!t.allow(&headers("Basic s3cret"), None));
        assert!(!t.allow(&headers("Bearer # readers"), None));
        assert!(!t.allow(&HeaderMap::new(), None));
        let uri: Uri = "/streams/a/b?offset=-1&token=s3cret".parse().unwrap();
        assert!(t.allow(&HeaderMap::new(), Some(&uri)));
        assert!(!t.allow(&HeaderMap::new(), None), "no query looked at");
        let uri: Uri = "/streams/a/b?xtoken=s3cret".parse().unwrap();
        assert!(!t.allow(&HeaderMap::new(), Some(&uri)));
    }

    #[test]
    fn a_file_without_tokens_or_with_a_bad_one_is_refused() {
        let e = tokens("# nothing\n\n").unwrap_err().to_string();
        assert!(e.contains("no token"), "{e}");
        let e = tokens("good\nbad token\n").unwrap_err().to_string();
        assert!(e.contains(":2:"), "{e}");
        let e = Tokens::read("--read-token-file", Path::new("/nonexistent/tokens"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("/nonexistent/tokens"), "{e}");
    }
}
