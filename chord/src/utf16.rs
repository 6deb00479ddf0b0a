//! Counting in UTF-16 code units, the unit JavaScript strings use.

/// Length of `s` in UTF-16 code units, the unit of every character count in an op.
///
/// `O(len)`; ASCII-only text takes a fast path.
///
/// ```
/// assert_eq!(chord::utf16_len("a😀"), 3);
/// ```
pub fn utf16_len(s: &str) -> usize {
    if s.is_ascii() {
        return s.len();
    }
    s.chars().map(char::len_utf16).sum()
}

/// The byte offset in `s` after its first `units` UTF-16 code units, clamped to `s.len()`.
///
/// `Err(())` when the cut would fall between the two halves of a surrogate pair.
/// `O(units)`: only the prefix is walked.
pub(crate) fn byte_offset(s: &str, units: usize) -> Result<usize, ()> {
    let ascii_prefix = s.bytes().take(units).take_while(u8::is_ascii).count();
    if ascii_prefix == units || ascii_prefix == s.len() {
        return Ok(ascii_prefix);
    }
    let mut seen = ascii_prefix;
    for (at, c) in s[ascii_prefix..].char_indices() {
        if seen == units {
            return Ok(ascii_prefix + at);
        }
        seen += c.len_utf16();
        if seen > units {
            return Err(());
        }
    }
    Ok(s.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_units_not_bytes_or_chars() {
        assert_eq!(utf16_len(""), 0);
        assert_eq!(utf16_len("abc"), 3);
        assert_eq!(utf16_len("é"), 1); // 2 bytes, 1 unit
        assert_eq!(utf16_len("😀"), 2); // 4 bytes, 2 units
        assert_eq!(utf16_len("a😀é"), 4);
    }

    #[test]
    fn offsets_clamp_and_refuse_to_split_pairs() {
        assert_eq!(byte_offset("abcdef", 2), Ok(2));
        assert_eq!(byte_offset("abc", 10), Ok(3));
        assert_eq!(byte_offset("éa", 1), Ok(2));
        assert_eq!(byte_offset("😀b", 2), Ok(4));
        assert_eq!(byte_offset("😀b", 1), Err(()));
        assert_eq!(byte_offset("ab😀", 3), Err(()));
        assert_eq!(byte_offset("ab😀", 4), Ok(6));
        assert_eq!(byte_offset("ab😀", 0), Ok(0));
    }
}
