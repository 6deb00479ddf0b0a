//! The string overlap detector: how much of the accepted string survives at the front of the
//! new one.
//!
//! Given the accepted `prev` and the final `next`, [`overlap`] finds the longest suffix of
//! `prev` that is a prefix of `next`. The tracker turns the answer into ops: all of `prev` is a
//! pure append (`a`), part of it is a rolling window (`t` then `a`), none of it is a `s`.
//!
//! # How
//!
//! 1. **Fast path.** `next.starts_with(prev)`: a pure append, the dominant case. One `memcmp`
//!    of `prev`, no search.
//! 2. **Probe.** Search for a head of `next` inside the last `scan` units of `prev`: first a
//!    long head (`probe` units), then a one-character head, so that an overlap shorter than the
//!    long head is still found (`"abcdefgh"` → `"defghxyz"` overlaps by 5, and a 64-unit head
//!    cannot occur in 8 characters). Each occurrence `i` is a *candidate*, verified by checking
//!    that `prev[i..]` is a prefix of `next`; candidates come in increasing `i`, so the first
//!    verified one is the longest overlap.
//! 3. **Budget.** Repetitive text (a build log, a run of one character) makes a head occur at
//!    thousands of positions, each costing a long comparison. One head verifies at most
//!    `max_candidates` candidates; past that it gives up and the answer is 0, which makes the
//!    caller emit a `s`: larger, never wrong.
//! 4. **Rescue** (chord only). Where the reference gives up on the long head, chord makes a
//!    bounded second attempt, described at [`overlap`], that succeeds on periodic text such as
//!    a build log that rolls by whole lines.
//!
//! Every answer is *exact or 0*: either the longest overlap that fits in the scan window, or 0.
//!
//! # Units
//!
//! The answer is in bytes, always a character boundary of both strings. The knobs keep the
//! reference's unit, UTF-16 code units, so that a configuration means the same in both
//! implementations (for ASCII, units and bytes coincide):
//!
//! - `scan` counts units back from the end of `prev`, exactly as the reference does; a
//!   character cut in half by the limit is left out of the window (in the reference its lone
//!   low surrogate can match nothing either).
//! - The long head is the first `probe` units of `next` rounded *up* to a whole character, and
//!   the short head is the first character. Where the reference's head would end in half of a
//!   surrogate pair, chord's includes the whole character: a more selective needle, whose
//!   candidates are a subset of the reference's.
//!
//! So chord returns the reference's answer, except where the reference's budget gives up
//! (returning 0) and chord's smaller candidate set or its rescue finds the overlap.

use std::ops::Range;

/// Bounds on the overlap probe. The defaults are the reference implementation's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OverlapConfig {
    /// How far back into `prev` the probe looks, in UTF-16 code units: the probe finds only
    /// overlaps of at most this many units, and its search costs at most this much. 0 disables
    /// the probe. A pure append needs no probe and is found whatever the window.
    pub(crate) scan: usize,
    /// Length of the long head of `next` searched first, in UTF-16 code units, rounded up to
    /// a whole character. 0 leaves only the one-character head.
    pub(crate) probe: usize,
    /// How many candidate positions one head verifies before giving up.
    pub(crate) max_candidates: usize,
}

impl Default for OverlapConfig {
    /// A 65,536-unit window, a 64-unit long head, 8 candidates per head.
    fn default() -> Self {
        OverlapConfig {
            scan: 1 << 16,
            probe: 64,
            max_candidates: 8,
        }
    }
}

/// The longest suffix of `prev` that is a prefix of `next`, in bytes; 0 when there is none,
/// when it does not fit in the scan window, or when the candidate budget runs out.
///
/// The result `n` always satisfies `prev[prev.len() - n..] == next[..n]`, and is a character
/// boundary of both strings.
///
/// When the long head's budget runs out, the reference returns 0. chord tries again for an
/// overlap at least as long as that head (a shorter one would save at most that many bytes
/// over a `s`), over the positions not yet ruled out: after the last failed candidate, and no
/// earlier than `prev.len() - next.len()`, since a longer suffix cannot be a prefix of `next`.
/// In repetitive text the failed candidates are the periodic alignments, and they all diverge
/// from `next` at the same place, the edge of the periodic stretch; with `m` the first byte
/// where the earliest of them diverged inside `next`:
///
/// 1. A head of the same length taken from `next` just around `m` cannot match at that
///    alignment; it finds any overlap that reaches past `m`, typically at its one true
///    alignment.
/// 2. If there is none, every overlap left ends by `m`: the long head is searched again from
///    `prev.len() - m`, skipping the periodic alignments that are too long.
///
/// (When no candidate diverged inside `next`, each being merely longer than it, only the
/// second search runs, from the first viable position.) Each search has a fresh budget, and
/// the first verified candidate is still the longest overlap, so the answer stays exact or 0.
/// The one-character head, which only looks for overlaps shorter than the long head, gives up
/// as the reference does.
///
/// Cost: the fast path is one comparison of `prev.len()` bytes. Otherwise at most four
/// substring searches over the window (`O(scan)` each) and at most `3 * max_candidates`
/// verifications, each a comparison of at most `next.len()` bytes, plus `O(scan)` to place
/// the window when `prev` is longer than it.
pub(crate) fn overlap(prev: &str, next: &str, cfg: &OverlapConfig) -> usize {
    overlap_at_least(prev, next, cfg, 0)
}

/// The most places [`may_overlap`] compares at before it leaves the answer to the search.
const FEW_PLACES: usize = 64;

/// Whether an overlap of at least `min` bytes (`min` > 0), or one that is all of `next`,
/// may exist: `false` only when none does. An overlap is no longer than `next`, so it starts at one of the places from
/// `prev.len() - next.len()` to `prev.len() - min`; when there are few of them (a short
/// `next`, the short text a `set` replaces an unrelated one with), each is compared,
/// starting with its first byte, and the search with its substring searcher's set-up is
/// left out when none matches. (Any byte offset is compared, character boundary or not: a
/// superset of the overlaps the search looks for.)
#[inline]
fn may_overlap(prev: &[u8], next: &[u8], min: usize) -> bool {
    // `next` whole at the end of `prev` (text dropped from the front, nothing appended):
    // worth sending whatever its length, as no text follows it.
    if prev.ends_with(next) {
        return true;
    }
    // (Shorter than `min` either: every overlap is shorter than `min`.)
    let (Some(last), true) = (prev.len().checked_sub(min), next.len() >= min) else {
        return false;
    };
    let first = prev.len().saturating_sub(next.len());
    if last - first >= FEW_PLACES {
        return true;
    }
    (first..=last).any(|i| prev[i] == next[0] && prev[i..] == next[..prev.len() - i])
}

/// [`overlap`] for a caller that has no use for an overlap shorter than `min` bytes (one that
/// a `s` beats): the same answer when that is at least `min`, and otherwise some answer below
/// `min` (0 or the overlap itself).
///
/// Overlaps shorter than the long head are looked for with the first `min` bytes of `next`
/// (rounded down to a character, at least one character, at most the long head) instead of
/// its first character: a more selective needle, with fewer candidates to verify, and none at
/// all when `min` reaches the long head. Its answers are those of the one-character head: every
/// overlap of `min` bytes or more begins with that needle, and the one-character head's
/// candidates before the answer are counted to give up exactly where its budget would.
pub(crate) fn overlap_at_least(prev: &str, next: &str, cfg: &OverlapConfig, min: usize) -> usize {
    if next.starts_with(prev) {
        return prev.len();
    }
    if min > 0 && !may_overlap(prev.as_bytes(), next.as_bytes(), min) {
        return 0;
    }
    let start = tail_start(prev, cfg.scan);
    if start == prev.len() || next.is_empty() {
        return 0;
    }
    let probe = Probe {
        prev,
        next,
        budget: cfg.max_candidates,
    };
    let long = head_len(next, cfg.probe);
    let short = head_len(next, 1);
    // With `probe` 0, or a one-character `next`, there is only the short head.
    if long > short {
        match probe.run(0..long, start) {
            Outcome::Found(i) => return prev.len() - i,
            Outcome::GaveUp { resume, diverged } => return probe.rescue(resume, diverged, long),
            Outcome::NotFound => {}
        }
    }
    // Only overlaps shorter than the long head are left (when there was one: a `next` of more
    // than one character, so each of them is followed by appended text).
    if long > short && min >= long {
        return 0;
    }
    let head = if long > short {
        floor_boundary(next, min).max(short)
    } else {
        short
    };
    if head == short {
        return match probe.run(0..short, start) {
            Outcome::Found(i) => prev.len() - i,
            Outcome::NotFound | Outcome::GaveUp { .. } => 0,
        };
    }
    match probe.run(0..head, start) {
        // The one-character head finds `i` too (its candidates before `i` are occurrences
        // of that character, which fail, since a longer overlap would also begin with the
        // longer head), and only if `i` is within its budget.
        Outcome::Found(i) => {
            // (The short head is one character, counted by `memchr`. A `&str` pattern here
            // would give the substring searcher a second caller, and its loop would no longer
            // be inlined into `str::find`'s.)
            let first = next.chars().next().unwrap_or_default();
            let earlier = prev[start..i]
                .matches(first)
                .take(cfg.max_candidates)
                .count();
            if earlier < cfg.max_candidates {
                prev.len() - i
            } else {
                0
            }
        }
        // (Past the longer head's budget, the one-character head's is spent as well.)
        Outcome::NotFound | Outcome::GaveUp { .. } => 0,
    }
}

/// What one head's search came to.
enum Outcome {
    /// The candidate at this byte offset of `prev` verified.
    Found(usize),
    /// Every occurrence was verified and failed.
    NotFound,
    /// The budget ran out.
    GaveUp {
        /// Every candidate before this offset of `prev` is ruled out.
        resume: usize,
        /// Where the earliest failed candidate that diverged inside `next` did so: the
        /// length of its common prefix with `next`.
        diverged: Option<usize>,
    },
}

struct Probe<'a> {
    prev: &'a str,
    next: &'a str,
    budget: usize,
}

impl Probe<'_> {
    /// Searches `prev` for `next[needle]`, where an occurrence at `p` makes `p - needle.start`
    /// a candidate, considering candidates from `from` on, in increasing order.
    fn run(&self, needle: Range<usize>, from: usize) -> Outcome {
        let (prev, next) = (self.prev, self.next);
        let offset = needle.start;
        let needle = &next[needle];
        let mut at = ceil_boundary(prev, from + offset);
        let mut tried = 0;
        let mut resume = from;
        let mut diverged = None;
        while let Some(found) = prev.get(at..).and_then(|rest| find(rest, needle)) {
            let p = at + found;
            let i = p - offset;
            if tried == self.budget {
                return Outcome::GaveUp { resume, diverged };
            }
            tried += 1;
            let common = common_prefix(&prev.as_bytes()[i..], next.as_bytes());
            if common == prev.len() - i {
                return Outcome::Found(i);
            }
            if diverged.is_none() && common < next.len() {
                diverged = Some(common);
            }
            resume = i + 1;
            at = ceil_boundary(prev, p + 1);
        }
        Outcome::NotFound
    }

    /// The rescue after the long head (`head` bytes) gave up: see [`overlap`].
    fn rescue(&self, resume: usize, diverged: Option<usize>, head: usize) -> usize {
        let (prev, next) = (self.prev, self.next);
        // A suffix longer than `next` cannot be a prefix of it.
        let from = resume.max(prev.len().saturating_sub(next.len()));
        let mut again_from = from;
        if let Some(m) = diverged {
            // A head that ends just after the diverging character, so it cannot match at the
            // failed alignment, and starts early enough to be selective: it finds any overlap
            // that reaches past `m`.
            let end = ceil_boundary(next, m + 1);
            let start = floor_boundary(next, end.saturating_sub(head).min(m));
            match self.run(start..end, from) {
                Outcome::Found(i) => return prev.len() - i,
                Outcome::GaveUp { .. } => return 0,
                // Every overlap left ends by `m`, so it starts at `prev.len() - m` or later.
                Outcome::NotFound => again_from = from.max(prev.len().saturating_sub(m)),
            }
        }
        match self.run(0..head, again_from) {
            Outcome::Found(i) => prev.len() - i,
            Outcome::NotFound | Outcome::GaveUp { .. } => 0,
        }
    }
}

/// The longest haystack [`find`] compares position by position: at most this many
/// comparisons of at most the needle's length.
const SHORT: usize = 128;

/// The first occurrence of `needle` in `hay`, as [`str::find`] finds it, without the cost of
/// building a substring searcher where that would exceed the search itself: a one-character
/// needle is found by `memchr`, and in a short haystack every position starting with the
/// needle's first byte is compared (UTF-8 is self-synchronizing, so a byte match of a whole
/// needle is a character boundary). Longer searches use `str::find`, linear in the worst case.
///
/// (The long search, the probe's usual one, is tested for first; the others are out of
/// line.)
#[inline(always)]
fn find(hay: &str, needle: &str) -> Option<usize> {
    // (More than four bytes is more than one character.)
    if hay.len() > SHORT && needle.len() > 4 {
        return hay.find(needle);
    }
    find_short(hay, needle)
}

/// [`find`] of a one-character needle, or in a short haystack.
#[inline(never)]
fn find_short(hay: &str, needle: &str) -> Option<usize> {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    let Some(&first) = n.first() else {
        return Some(0);
    };
    if n.len() > h.len() {
        return None;
    }
    let mut chars = needle.chars();
    if let (Some(c), None) = (chars.next(), chars.next()) {
        return hay.find(c);
    }
    if h.len() > SHORT {
        return hay.find(needle);
    }
    (0..=h.len() - n.len()).find(|&i| h[i] == first && &h[i..i + n.len()] == n)
}

/// Length of the common prefix of `a` and `b`, comparing in blocks (`memcmp`) first.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 256;
    let n = a.len().min(b.len());
    let mut at = 0;
    while at + BLOCK <= n && a[at..at + BLOCK] == b[at..at + BLOCK] {
        at += BLOCK;
    }
    at + a[at..n]
        .iter()
        .zip(&b[at..n])
        .take_while(|(x, y)| x == y)
        .count()
}

/// Byte offset where the last `units` UTF-16 code units of `s` begin, moved forward to a
/// character boundary so that the tail never holds more than `units` units.
///
/// `O(1)` when `s` has at most `units` bytes, `O(units)` otherwise.
fn tail_start(s: &str, units: usize) -> usize {
    // A character has at least as many bytes as UTF-16 units.
    if s.len() <= units {
        return 0;
    }
    let cut = s.len() - units;
    if s.as_bytes()[cut..].is_ascii() {
        return cut;
    }
    let mut seen = 0;
    for (at, c) in s.char_indices().rev() {
        seen += c.len_utf16();
        if seen > units {
            return at + c.len_utf8();
        }
    }
    0
}

/// Byte length of the first `units` UTF-16 code units of `s`, rounded up to a whole character.
///
/// `O(units)`.
fn head_len(s: &str, units: usize) -> usize {
    if s.len() <= units {
        return s.len();
    }
    if s.as_bytes()[..units].is_ascii() {
        return units;
    }
    let mut seen = 0;
    for (at, c) in s.char_indices() {
        if seen >= units {
            return at;
        }
        seen += c.len_utf16();
    }
    s.len()
}

/// The first character boundary of `s` at or after `at` (`s.len()` past the end).
fn ceil_boundary(s: &str, mut at: usize) -> usize {
    if at >= s.len() {
        return s.len();
    }
    while !s.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// The last character boundary of `s` at or before `at`.
fn floor_boundary(s: &str, mut at: usize) -> usize {
    if at >= s.len() {
        return s.len();
    }
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn with(scan: usize, probe: usize, max_candidates: usize) -> OverlapConfig {
        OverlapConfig {
            scan,
            probe,
            max_candidates,
        }
    }

    fn ov(prev: &str, next: &str) -> usize {
        overlap(prev, next, &OverlapConfig::default())
    }

    fn units(s: &str) -> usize {
        s.encode_utf16().count()
    }

    /// The longest overlap in bytes whose suffix fits in `scan` units; a pure append always
    /// counts whole, as the fast path finds it without a window.
    fn brute(prev: &str, next: &str, scan: usize) -> usize {
        if next.starts_with(prev) {
            return prev.len();
        }
        (1..=prev.len().min(next.len()))
            .rev()
            .find(|&n| {
                prev.is_char_boundary(prev.len() - n)
                    && next.as_bytes()[..n] == prev.as_bytes()[prev.len() - n..]
                    && units(&prev[prev.len() - n..]) <= scan
            })
            .unwrap_or(0)
    }

    /// The reference algorithm, in UTF-16 code units, behind the tracker's fast path: the
    /// window is the last `scan` units, the heads are the first `probe` units and the first
    /// unit of `next`, each with its own budget, and running out returns 0.
    fn model(prev: &str, next: &str, cfg: &OverlapConfig) -> usize {
        let a: Vec<u16> = prev.encode_utf16().collect();
        let b: Vec<u16> = next.encode_utf16().collect();
        if b.starts_with(&a) {
            return a.len();
        }
        let tail = &a[a.len().saturating_sub(cfg.scan)..];
        for len in [cfg.probe, 1] {
            let head = &b[..len.min(b.len())];
            if head.is_empty() {
                continue;
            }
            let mut tried = 0;
            let mut from = 0;
            while let Some(i) = (from..tail.len()).find(|&i| tail[i..].starts_with(head)) {
                tried += 1;
                if tried > cfg.max_candidates {
                    return 0;
                }
                if b.starts_with(&tail[i..]) {
                    return tail.len() - i;
                }
                from = i + 1;
            }
        }
        0
    }

    #[test]
    fn pure_append_is_the_fast_path_whatever_the_window() {
        assert_eq!(ov("abc", "abcdef"), 3);
        assert_eq!(ov("", "x"), 0);
        assert_eq!(ov("same", "same"), 4);
        assert_eq!(overlap("abc", "abcd", &with(0, 64, 8)), 3);
        assert_eq!(overlap("abc", "abcd", &with(1, 64, 0)), 3);
    }

    #[test]
    fn short_overlaps_need_the_one_character_head() {
        // A 64-unit head cannot occur in 8 characters.
        assert_eq!(ov("abcdefgh", "defghxyz"), 5);
        assert_eq!(ov("abcab", "ab"), 2);
        assert_eq!(ov("aXaXa", "aXaY"), 3);
        assert_eq!(ov("abc", "xyz"), 0);
        assert_eq!(ov("abc", ""), 0);
        // Only the short head, with `probe` 0.
        assert_eq!(overlap("abcdefgh", "defghxyz", &with(1 << 16, 0, 8)), 5);
    }

    #[test]
    fn the_window_bounds_the_answer_in_utf16_units() {
        assert_eq!(overlap("xxabc", "abcd", &with(3, 64, 8)), 3);
        assert_eq!(overlap("xxabc", "abcd", &with(2, 64, 8)), 0);
        assert_eq!(overlap("abcdef", "defghi", &with(0, 64, 8)), 0);
        // "é" is 2 bytes and 1 unit: a window of 1 unit holds it.
        assert_eq!(overlap("xé", "éy", &with(1, 64, 8)), 2);
        // "😀" is 4 bytes and 2 units: a window of 3 units holds one, not a half of another.
        let prev = "ab😀😀😀";
        assert_eq!(overlap(prev, "😀😀c", &with(3, 64, 8)), 4);
        assert_eq!(overlap(prev, "😀😀c", &with(4, 64, 8)), 8);
        assert_eq!(overlap(prev, "😀😀c", &with(1, 64, 8)), 0);
        assert_eq!(ov("日本語テキスト", "テキスト続き"), 12);
        assert_eq!(
            overlap("日本語テキスト", "テキスト続き", &with(5, 64, 8)),
            12
        );
    }

    #[test]
    fn the_long_head_is_64_units_rounded_up_to_a_whole_character() {
        assert_eq!(head_len(&"x".repeat(100), 64), 64);
        assert_eq!(head_len("short", 64), 5);
        // The 64th unit is the first half of an emoji: the head takes the whole emoji.
        let s = format!("{}😀yy", "x".repeat(63));
        assert_eq!(head_len(&s, 64), 67);
        assert_eq!(head_len("😀a", 1), 4);
        assert_eq!(head_len("éa", 1), 2);
        assert_eq!(tail_start("abc", 10), 0);
        assert_eq!(tail_start("abcdef", 2), 4);
        assert_eq!(tail_start("a😀", 1), 5);
        assert_eq!(tail_start("a😀", 2), 1);
    }

    #[test]
    fn the_budget_gives_up_where_the_reference_does() {
        // The 1-character head occurs 41 times before the answer (all but the last are too
        // long to be a prefix of `next`): 8 candidates do not reach it, 100 do.
        let prev = "ab".repeat(50);
        let next = format!("{}X", "ab".repeat(10));
        assert_eq!(ov(&prev, &next), 0);
        assert_eq!(overlap(&prev, &next, &with(1 << 16, 64, 100)), 20);
        // The answer is the eighth candidate: the last the budget allows.
        assert_eq!(ov(&"a".repeat(11), "aaaa"), 4);
        // The window can rescue the budget: only the last 8 units are searched.
        assert_eq!(overlap(&"ab".repeat(20), "abab", &with(8, 64, 8)), 4);
        assert_eq!(overlap("abc", "abcd", &with(1 << 16, 64, 0)), 3);
        assert_eq!(overlap("xabc", "abcd", &with(1 << 16, 64, 0)), 0);
    }

    #[test]
    fn the_rescue_finds_a_log_that_rolls_by_whole_lines() {
        let line = "[ 12%] Building CXX object src/foo.o\n";
        let new = "[ 13%] Building CXX object src/bar.o\n";
        for (dropped, added) in [(10, 10), (50, 3), (9, 200)] {
            let prev = format!("{}{}", line.repeat(1000), new.repeat(20));
            let next = format!("{}{}", &prev[dropped * line.len()..], new.repeat(added));
            let cfg = OverlapConfig::default();
            let want = prev.len() - dropped * line.len();
            // The reference gives up: the head occurs at every line of the periodic stretch.
            assert_eq!(model(&prev, &next, &cfg), 0, "{dropped}/{added}");
            assert_eq!(overlap(&prev, &next, &cfg), want, "{dropped}/{added}");
        }
        // All of `prev` is periodic: the overlap ends where every candidate diverges, so the
        // second search, from `prev.len() - m`, finds it.
        for (dropped, added) in [(10, 10), (200, 1)] {
            let prev = line.repeat(1352);
            let next = format!("{}{}", line.repeat(1352 - dropped), new.repeat(added));
            let cfg = OverlapConfig::default();
            assert_eq!(model(&prev, &next, &cfg), 0, "{dropped}/{added}");
            assert_eq!(
                overlap(&prev, &next, &cfg),
                prev.len() - dropped * line.len()
            );
        }
        // A run of one character: every candidate is longer than `next`, none diverges
        // inside it, so the same head is searched again from the first viable position.
        assert_eq!(model(&"a".repeat(12), "aaaa", &OverlapConfig::default()), 0);
        assert_eq!(ov(&"a".repeat(12), "aaaa"), 4);
        assert_eq!(ov(&"a".repeat(5000), &"a".repeat(10)), 10);
    }

    #[test]
    fn a_rolling_window_over_one_character_stays_within_the_budget() {
        let prev = format!("{}{}", "a".repeat(50_000), "!".repeat(400));
        let next = format!("{}{}", &prev[4..], "!!!!");
        assert_eq!(ov(&prev, &next), prev.len() - 4);
    }

    /// The count at `key` of a conformance case, if present.
    fn count(case: &serde_json::Value, key: &str) -> Option<usize> {
        case.get(key).map(|v| {
            let n = v
                .as_u64()
                .unwrap_or_else(|| panic!("{key} is a count: {v}"));
            usize::try_from(n).unwrap()
        })
    }

    /// The `overlap` cases of the conformance vectors generated from the reference
    /// (`testdata/conformance/vectors.jsonl`, format in its README): chord's answer is the
    /// reference's on every one, under the bounds the case sets and the defaults otherwise.
    /// (`tests/conformance_tracker.rs` replays the same cases through the public `diff`.)
    #[test]
    fn conformance_vectors() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../testdata/conformance/vectors.jsonl"
        );
        let text = std::fs::read_to_string(path).expect("conformance vectors readable");
        let defaults = OverlapConfig::default();
        // The reference's defaults, which tests/conformance_tracker.rs relies on as well.
        assert_eq!(defaults, with(1 << 16, 64, 8));
        let mut ran = 0;
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            // The one line serde_json cannot read (a lone surrogate) is an `apply` case, covered
            // by tests/conformance.rs.
            let Ok(case) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            if case["cmd"] != "overlap" {
                continue;
            }
            let name = case["name"].as_str().unwrap();
            let prev = case["prev"].as_str().unwrap();
            let next = case["next"].as_str().unwrap();
            let cfg = OverlapConfig {
                scan: count(&case, "scan").unwrap_or(defaults.scan),
                probe: count(&case, "probe").unwrap_or(defaults.probe),
                max_candidates: count(&case, "maxCandidates").unwrap_or(defaults.max_candidates),
            };
            let want = count(&case["expect"], "ok").expect("overlap cases expect a count");
            // Every overlap case is ASCII, where bytes and UTF-16 units coincide.
            assert!(prev.is_ascii() && next.is_ascii(), "case {name:?}");
            assert_eq!(overlap(prev, next, &cfg), want, "case {name:?}");
            ran += 1;
        }
        assert_eq!(ran, 12, "every overlap case must run");
    }

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[ab]{0,12}",
            "[abé😀]{0,16}",
            ("[ab😀]{1,3}", 0usize..30, "[abé😀X]{0,3}")
                .prop_map(|(unit, n, end)| format!("{}{end}", unit.repeat(n))),
            "\\PC{0,6}",
        ]
    }

    fn config() -> impl Strategy<Value = OverlapConfig> {
        prop_oneof![
            Just(OverlapConfig::default()),
            (0usize..12, 0usize..6, 0usize..4).prop_map(|(s, p, m)| with(s, p, m)),
            (0usize..40, 0usize..70, 0usize..12).prop_map(|(s, p, m)| with(s, p, m)),
        ]
    }

    /// `prev` and a `next` that shares part of it most of the time.
    fn pair() -> impl Strategy<Value = (String, String)> {
        (text(), 0usize..40, text()).prop_map(|(prev, cut, add)| {
            let mut at = cut.min(prev.len());
            while !prev.is_char_boundary(at) {
                at -= 1;
            }
            let next = format!("{}{add}", &prev[at..]);
            (prev, next)
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        #[test]
        fn at_least_is_overlap_down_to_its_minimum(
            (prev, next) in prop_oneof![pair(), (text(), text())],
            cfg in config(),
            min in 0usize..80,
        ) {
            let full = overlap(&prev, &next, &cfg);
            let n = overlap_at_least(&prev, &next, &cfg, min);
            prop_assert!(
                n == full || (n == 0 && full < min),
                "{} for a minimum of {} (overlap {})", n, min, full
            );
        }

        /// The quick check says "none" only when no overlap reaches the minimum.
        #[test]
        fn no_overlap_of_the_minimum_when_the_quick_check_says_none(
            (prev, next) in prop_oneof![pair(), (text(), text())],
            min in 1usize..80,
        ) {
            let best = brute(&prev, &next, usize::MAX);
            if !may_overlap(prev.as_bytes(), next.as_bytes(), min) {
                prop_assert!(best < min, "an overlap of {} for a minimum of {}", best, min);
                prop_assert!(best < next.len(), "all of the next text overlaps");
            }
        }

        #[test]
        fn find_is_str_find(
            hay in prop_oneof!["[ab]{0,12}", "[abé😀]{0,40}", "[ab]{100,300}", "\\PC{0,20}"],
            needle in prop_oneof!["[ab]{0,4}", "[abé😀]{1,3}", "\\PC{0,2}"],
            cut in 0usize..300,
        ) {
            // The needle taken from the haystack as often as not, so that it occurs.
            let needle = if cut % 2 == 0 && !hay.is_empty() {
                let start = floor_boundary(&hay, cut % hay.len());
                let end = ceil_boundary(&hay, start + 1 + cut % 7);
                hay[start..end].to_owned()
            } else {
                needle
            };
            prop_assert_eq!(find(&hay, &needle), hay.find(needle.as_str()));
        }

        #[test]
        fn exact_or_zero((prev, next) in prop_oneof![pair(), (text(), text())], cfg in config()) {
            let n = overlap(&prev, &next, &cfg);
            prop_assert!(next.is_char_boundary(n) && prev.is_char_boundary(prev.len() - n));
            prop_assert_eq!(&prev[prev.len() - n..], &next[..n]);
            let best = brute(&prev, &next, cfg.scan);
            prop_assert!(n == 0 || n == best, "{} is neither 0 nor {}", n, best);
            let unbounded = with(cfg.scan, cfg.probe, usize::MAX);
            prop_assert_eq!(overlap(&prev, &next, &unbounded), best);
        }

        #[test]
        fn agrees_with_the_reference_unless_it_gave_up(
            (prev, next) in prop_oneof![pair(), (text(), text())],
            cfg in config(),
        ) {
            let ours = units(&next[..overlap(&prev, &next, &cfg)]);
            let theirs = model(&prev, &next, &cfg);
            let best = units(&next[..brute(&prev, &next, cfg.scan)]);
            prop_assert!(
                ours == theirs || (theirs == 0 && ours == best),
                "chord {} reference {} best {}", ours, theirs, best
            );
        }
    }
}
