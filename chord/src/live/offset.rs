//! [`Offset`]: a position in a stream, as the Durable Streams protocol hands it out.

use std::fmt;

/// A position in an address's log: the seq of the last record a reader has (0 before the
/// first). Reading from an offset returns the records after it.
///
/// On the wire it is 16 lowercase hexadecimal digits (`000000000000002a`): fixed width, so
/// a byte-wise comparison orders offsets as the log does, and never one of the protocol's
/// sentinels (`-1`, `now`). Clients treat it as opaque.
///
/// ```
/// use chord::streams::Offset;
/// let o = Offset::from_seq(42);
/// assert_eq!(o.to_string(), "000000000000002a");
/// assert_eq!("000000000000002a".parse::<Offset>(), Ok(o));
/// assert!(Offset::from_seq(9).to_string() < Offset::from_seq(10).to_string());
/// assert!("2a".parse::<Offset>().is_err());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Offset(u64);

/// The width of an offset token, in characters.
const WIDTH: usize = 16;

impl Offset {
    /// Before every record.
    pub const START: Offset = Offset(0);

    /// The offset just after the record `seq`.
    pub fn from_seq(seq: u64) -> Offset {
        Offset(seq)
    }

    /// The seq of the last record before this offset (0: none).
    pub fn seq(self) -> u64 {
        self.0
    }
}

impl fmt::Display for Offset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

/// Why a string is not an [`Offset`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "malformed offset {text:?}: expected {WIDTH} lowercase hexadecimal digits (with `.base` \
     after them for a base), `-1` or `now`"
)]
pub struct BadOffset {
    /// The text refused (shortened to 64 bytes).
    pub text: String,
}

impl std::str::FromStr for Offset {
    type Err = BadOffset;

    fn from_str(s: &str) -> Result<Offset, BadOffset> {
        let ok = s.len() == WIDTH && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if !ok {
            let mut end = s.len().min(64);
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            return Err(BadOffset {
                text: s[..end].to_owned(),
            });
        }
        u64::from_str_radix(s, 16)
            .map(Offset)
            .map_err(|_| BadOffset { text: s.to_owned() })
    }
}

/// What a request's `offset` parameter asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Start {
    /// `-1` or no offset: the oldest record kept (a base batch).
    Beginning,
    /// `now`: the tail, skipping everything there is.
    Now,
    /// An offset the server handed out.
    At(Offset),
    /// [`LATEST_BASE`]: the latest base, for a reader with no value (what a `HEAD`'s
    /// `Chord-Base-Offset` names, without asking first).
    Latest,
    /// An offset followed by [`BASE_SUFFIX`]: the records after it, for a reader with no
    /// value, so a checkpoint right after it is read too (see [`BaseOffset`]).
    Base(Offset),
}

/// chord's own offset sentinel beside the protocol's `-1` and `now`: the latest base batch.
/// A reader with no value starts there without a `HEAD` first, so that every joiner asks
/// for the same URL and a cache can answer them all (real offsets are hex digits, so it
/// names none of them).
pub(crate) const LATEST_BASE: &str = "base";

/// What follows an offset in the token of a base batch: [`BaseOffset`].
pub(crate) const BASE_SUFFIX: &str = ".base";

/// Where a reader with no value starts: the offset before a base batch, and, when that base
/// is a checkpoint (which readers resuming from an offset never receive), a suffix asking for
/// it: `0000000000000009.base`. It sorts after the offset before the base and before the
/// base's own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BaseOffset {
    /// The offset before the base.
    pub(crate) before: u64,
    /// Whether the base is a checkpoint.
    pub(crate) checkpoint: bool,
}

impl fmt::Display for BaseOffset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", Offset::from_seq(self.before))?;
        if self.checkpoint {
            f.write_str(BASE_SUFFIX)?;
        }
        Ok(())
    }
}

impl Start {
    pub(crate) fn parse(param: Option<&str>) -> Result<Start, BadOffset> {
        match param {
            None | Some("-1") => Ok(Start::Beginning),
            Some("now") => Ok(Start::Now),
            Some(LATEST_BASE) => Ok(Start::Latest),
            Some(s) => match s.strip_suffix(BASE_SUFFIX) {
                Some(offset) => offset.parse().map(Start::Base).map_err(|_| BadOffset {
                    text: s.chars().take(64).collect(),
                }),
                None => s.parse().map(Start::At),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn tokens_sort_as_positions(a: u64, b: u64) {
            let (ta, tb) = (Offset::from_seq(a).to_string(), Offset::from_seq(b).to_string());
            prop_assert_eq!(ta.cmp(&tb), a.cmp(&b));
            prop_assert_eq!(ta.parse::<Offset>(), Ok(Offset::from_seq(a)));
            prop_assert!(!ta.contains([',', '&', '=', '?', '/']));
            // A base's token sorts after the offset before it and before the next one.
            let base = BaseOffset { before: a, checkpoint: true }.to_string();
            prop_assert!(ta < base);
            if let Some(next) = a.checked_add(1) {
                prop_assert!(base < Offset::from_seq(next).to_string());
            }
            prop_assert_eq!(Start::parse(Some(&base)), Ok(Start::Base(Offset::from_seq(a))));
            prop_assert!(!base.contains([',', '&', '=', '?', '/']));
        }
    }

    #[test]
    fn sentinels_and_garbage() {
        assert_eq!(Start::parse(None), Ok(Start::Beginning));
        assert_eq!(Start::parse(Some("-1")), Ok(Start::Beginning));
        assert_eq!(Start::parse(Some("now")), Ok(Start::Now));
        assert_eq!(Start::parse(Some("base")), Ok(Start::Latest));
        assert_eq!(
            Start::parse(Some("000000000000002a.base")),
            Ok(Start::Base(Offset::from_seq(42)))
        );
        for bad in [
            "",
            ".base",
            "2a.base",
            "000000000000002a.bas",
            "000000000000002a.base.base",
            "-2",
            "000000000000002A",
            "0000000000000002a",
            "zzzzzzzzzzzzzzzz",
            "é",
        ] {
            assert!(Start::parse(Some(bad)).is_err(), "{bad}");
        }
    }
}
