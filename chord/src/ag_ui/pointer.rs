//! chord paths as JSON Pointers (RFC 6901), the paths of JSON Patch operations.

use json_patch::jsonptr::{PointerBuf, Token};

use crate::path::Seg;

/// The pointer to `path`: each key escaped (`~` as `~0`, `/` as `~1`), each index in
/// decimal. The root is the empty pointer `""`.
pub(super) fn pointer(path: &[Seg]) -> PointerBuf {
    PointerBuf::from_tokens(path.iter().map(token))
}

/// The pointer to element `index` of the array at `path`.
pub(super) fn element(path: &[Seg], index: usize) -> PointerBuf {
    let mut p = pointer(path);
    p.push_back(index);
    p
}

/// The pointer one past the end of the array at `path` (`/-`): where an `add` pushes.
pub(super) fn end(path: &[Seg]) -> PointerBuf {
    let mut p = pointer(path);
    p.push_back("-");
    p
}

/// One segment as a reference token. An index on an object names the member spelled with
/// its digits, which is what the same decimal token names there too.
fn token(seg: &Seg) -> Token<'_> {
    match seg {
        Seg::Key(k) => Token::new(k.as_ref()),
        Seg::Index(i) => Token::from(*i),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path;

    #[test]
    fn keys_are_escaped_and_indices_decimal() {
        assert_eq!(pointer(&[]).as_str(), "");
        assert_eq!(pointer(&path!["a/b", "m~n", 3]).as_str(), "/a~1b/m~0n/3");
        assert_eq!(pointer(&path!["", "~1"]).as_str(), "//~01");
        assert_eq!(element(&path!["xs"], 12).as_str(), "/xs/12");
        assert_eq!(end(&path!["xs"]).as_str(), "/xs/-");
        assert_eq!(end(&[]).as_str(), "/-");
    }
}
