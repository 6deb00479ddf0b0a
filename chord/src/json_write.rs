//! JSON text written fast, below everything that writes it (the wire's encoder and path
//! table, the tracker's ops, the diff's size estimates): strings with serde_json's escaping,
//! with a quick test of whether a string needs any, and unsigned integers in decimal. Each
//! writes exactly the bytes serde_json would.

/// Writes `s` as a JSON string with serde_json's escaping (plain text is copied as is).
#[inline]
pub(crate) fn write_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    if !plain(bytes) {
        return write_escaped(out, s);
    }
    if bytes.len() <= SMALL {
        return write_small(out, b"\"", bytes, b"\"");
    }
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    out.extend_from_slice(bytes);
    out.push(b'"');
}

/// `,"s"]`: a string as an op's last argument (an append's text), with serde_json's escaping.
/// (Always inline: a streamed token is written here at every step.)
#[inline(always)]
pub(crate) fn write_last_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    if bytes.len() <= SMALL && plain(bytes) {
        return write_small(out, b",\"", bytes, b"\"]");
    }
    out.push(b',');
    write_str(out, s);
    out.push(b']');
}

/// The longest string [`write_small`] writes.
const SMALL: usize = 16;

/// Writes `open`, `bytes` (plain, at most [`SMALL`]) and `close` (each of at most two bytes):
/// assembled in a fixed-size buffer, the string as two overlapping copies of a fixed size,
/// and copied with one copy of a known length, then the vector is cut back to what was meant.
/// A loop, or a copy of `bytes.len()`, would call `memcpy` for the few bytes of a streamed
/// token or a member's name in a path.
#[inline(always)]
fn write_small(out: &mut Vec<u8>, open: &[u8], bytes: &[u8], close: &[u8]) {
    let (o, n) = (open.len(), bytes.len());
    debug_assert!(n <= SMALL && o <= 2 && close.len() <= 2);
    let mut buf = [0u8; SMALL + 4];
    buf[..o].copy_from_slice(open);
    if n >= 8 {
        buf[o..o + 8].copy_from_slice(&bytes[..8]);
        buf[o + n - 8..o + n].copy_from_slice(&bytes[n - 8..]);
    } else if n >= 4 {
        buf[o..o + 4].copy_from_slice(&bytes[..4]);
        buf[o + n - 4..o + n].copy_from_slice(&bytes[n - 4..]);
    } else if n > 0 {
        buf[o] = bytes[0];
        buf[o + n / 2] = bytes[n / 2];
        buf[o + n - 1] = bytes[n - 1];
    }
    buf[o + n..o + n + close.len()].copy_from_slice(close);
    let end = out.len() + o + n + close.len();
    out.extend_from_slice(&buf);
    out.truncate(end);
}

/// Whether a JSON string holds every byte of `bytes` as it is: none is a control character,
/// `"` or `\`. Read eight bytes at a time (from four bytes on; a string
/// shorter than eight as one word of two overlapping loads).
#[inline(always)]
pub(crate) fn plain(bytes: &[u8]) -> bool {
    let n = bytes.len();
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or([0; 8]));
    let half = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap_or([0; 4]));
    if n >= 8 {
        let mut at = 0;
        while at + 8 <= n {
            if special(word(at)) {
                return false;
            }
            at += 8;
        }
        at == n || !special(word(n - 8))
    } else if n >= 4 {
        !special(u64::from(half(0)) | u64::from(half(n - 4)) << 32)
    } else {
        // (Below a half word, a byte at a time is cheaper than assembling one.)
        !bytes.iter().any(|&b| needs_escape(b))
    }
}

/// Whether JSON escapes byte `b` in a string: a control character, `"` or `\\`.
#[inline]
pub(crate) fn needs_escape(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

/// Whether one of the eight bytes of `w` is below 0x20, `"` or `\` (exact: the classic
/// "has a byte less than" and "has a zero byte" tests, which answer any-byte questions
/// without false positives).
#[inline(always)]
fn special(w: u64) -> bool {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGH: u64 = ONES * 0x80;
    let zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let below = w.wrapping_sub(ONES * 0x20) & !w & HIGH;
    (below | zero(w ^ (ONES * u64::from(b'"'))) | zero(w ^ (ONES * u64::from(b'\\')))) != 0
}

/// A string that needs escapes, as serde_json escapes it.
fn write_escaped(out: &mut Vec<u8>, s: &str) {
    // Writing into a `Vec` cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

/// Writes an unsigned integer in decimal.
#[inline]
pub(crate) fn write_uint(out: &mut Vec<u8>, n: u64) {
    match n {
        0..10 => out.push(b'0' + n as u8),
        10..100 => {
            out.push(b'0' + (n / 10) as u8);
            out.push(b'0' + (n % 10) as u8);
        }
        _ => out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes()),
    }
}

/// The decimal digits of 0..100, two each.
const PAIRS: &[u8; 200] = b"\
    0001020304050607080910111213141516171819\
    2021222324252627282930313233343536373839\
    4041424344454647484950515253545556575859\
    6061626364656667686970717273747576777879\
    8081828384858687888990919293949596979899";

/// Writes `open`, an unsigned integer in decimal and `close` (each of at most two bytes):
/// the digits assembled in a fixed-size buffer and copied with one copy of a known length,
/// then the vector cut back to what was meant (a scalar's `s`, at every write of a counter,
/// would otherwise call `memcpy` for a few digits).
#[inline(always)]
pub(crate) fn write_uint_between(out: &mut Vec<u8>, open: &[u8], n: u64, close: &[u8]) {
    // (u64::MAX has 20 digits.)
    let mut buf = [0u8; 2 + 20 + 2];
    let (o, c) = (open.len(), close.len());
    debug_assert!(o <= 2 && c <= 2);
    let digits = n.checked_ilog10().unwrap_or(0) as usize + 1;
    buf[..o].copy_from_slice(open);
    // Two digits at a time from the last, as itoa does.
    let mut rest = n;
    let mut at = o + digits;
    while rest >= 100 {
        let pair = (rest % 100) as usize * 2;
        rest /= 100;
        at -= 2;
        buf[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if rest >= 10 {
        let pair = rest as usize * 2;
        buf[at - 2..at].copy_from_slice(&PAIRS[pair..pair + 2]);
    } else {
        buf[at - 1] = b'0' + rest as u8;
    }
    buf[o + digits..o + digits + c].copy_from_slice(close);
    let end = out.len() + o + digits + c;
    out.extend_from_slice(&buf);
    out.truncate(end);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_between_brackets_are_written_in_decimal() {
        let mut values = vec![0, 1, 9, 10, 99, 100, 12_345, u64::MAX - 1, u64::MAX];
        values.extend((0..20).map(|p| 10u64.pow(p)));
        values.extend((1..20).map(|p| 10u64.pow(p) - 1));
        for n in values {
            for (open, close) in [(&b","[..], &b"]"[..]), (b",-", b"]"), (b"", b"")] {
                let mut out = b"[x".to_vec();
                write_uint_between(&mut out, open, n, close);
                let want = format!(
                    "[x{}{n}{}",
                    std::str::from_utf8(open).unwrap(),
                    std::str::from_utf8(close).unwrap()
                );
                assert_eq!(std::str::from_utf8(&out).unwrap(), want, "{n}");
            }
        }
    }

    #[test]
    fn strings_are_written_as_serde_json_writes_them() {
        // Every length around the fixed-size path's bounds, plain, escaped and non-ASCII.
        let fill = ["a", "\"", "\\", "\n", "\u{1}", "é", "😀", "\u{7f}"];
        for piece in fill {
            for n in 0..=20usize {
                for at in [0, n / 2, n.saturating_sub(1)] {
                    let s: String = (0..n).map(|i| if i == at { piece } else { "x" }).collect();
                    let want = format!(",{}]", serde_json::to_string(&s).unwrap());
                    let mut out = b"[".to_vec();
                    write_last_str(&mut out, &s);
                    assert_eq!(std::str::from_utf8(&out[1..]).unwrap(), want, "{s:?}");
                    let mut out = Vec::new();
                    write_str(&mut out, &s);
                    assert_eq!(out, serde_json::to_vec(&s).unwrap(), "{s:?}");
                }
            }
        }
    }

    #[test]
    fn every_byte_at_every_place_is_judged_plain_as_json_says() {
        // What JSON's grammar lets a string hold unescaped (RFC 8259, section 7).
        let unescaped = |b: u8| b >= 0x20 && b != b'"' && b != b'\\';
        for n in 0..=40usize {
            for at in 0..n {
                for b in 0..=255u8 {
                    let mut bytes = vec![b'x'; n];
                    bytes[at] = b;
                    assert_eq!(plain(&bytes), unescaped(b), "byte {b:#04x} at {at} of {n}");
                    // Beside bytes that are plain but have the high bit set.
                    let mut high = vec![0xe9; n];
                    high[at] = b;
                    assert_eq!(plain(&high), unescaped(b), "{b:#04x} at {at} of {n}, high");
                }
            }
            assert!(plain(&vec![b' '; n]), "{n} spaces");
        }
    }
}
