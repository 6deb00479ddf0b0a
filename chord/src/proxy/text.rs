use std::fmt;
use std::ops::{AddAssign, Bound, Deref, DerefMut, RangeBounds};

use crate::error::Result;
use crate::tracker::Out;
use crate::tracker::{text, Cx, Node, Tracked, Trail};

/// The proxy of a `String`, with `String`'s methods: appends (`push_str`, `push`, `+=`,
/// `write!`) become `a`, drops from the front (`drain(..n)`, [`keep_last`](TextProxy::keep_last))
/// become `t`, and any other change is compared with the accepted text at flush by the
/// overlap detector (`t` + `a` for a rolling window, `a` for growth, `s` otherwise, whichever
/// is smallest).
///
/// ```
/// use std::fmt::Write;
/// use chord::{path, track, Op, Tracked};
///
/// #[derive(Tracked, serde::Serialize)]
/// struct Lane {
///     answer: String,
/// }
///
/// let mut t = track(Lane { answer: "hello".into() });
/// t.flush().unwrap();
/// let mut lane = t.state();
/// lane.answer.push_str(" world");
/// lane.answer += "!";
/// write!(lane.answer, " {}", 42).unwrap();
/// assert_eq!(t.flush().unwrap(), vec![Op::Append(path!["answer"], " world! 42".into())]);
/// ```
pub struct TextProxy<'a> {
    s: &'a mut String,
    cx: Cx<'a>,
}

impl<'a> TextProxy<'a> {
    pub(crate) fn new(s: &'a mut String, cx: Cx<'a>) -> Self {
        TextProxy { s, cx }
    }

    /// Appends text: one `a` op (appends between flushes join into one). `O(text)`,
    /// independent of the string's length.
    #[inline]
    pub fn push_str(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        text::record_append(self.cx.node.as_deref_mut(), self.s);
        self.s.push_str(text);
    }

    /// Appends one character.
    #[inline]
    pub fn push(&mut self, c: char) {
        self.push_str(c.encode_utf8(&mut [0; 4]));
    }

    /// Drops the first `bytes` bytes: a `t` op counting the UTF-16 units they hold.
    ///
    /// # Panics
    ///
    /// If `bytes` is past the end or not on a character boundary, like `String::drain`.
    pub fn drop_front(&mut self, bytes: usize) {
        assert!(
            self.s.is_char_boundary(bytes),
            "drop_front({bytes}) is not on a character boundary of a string of {} bytes",
            self.s.len()
        );
        if bytes == 0 {
            return;
        }
        text::record_drop_front(self.cx.node.as_deref_mut(), self.s, bytes);
        self.s.drain(..bytes);
    }

    /// Keeps at most the last `max_bytes` bytes (rounded down to a character boundary), as a
    /// rolling output window does: a `t` op when anything is dropped.
    pub fn keep_last(&mut self, max_bytes: usize) {
        if self.s.len() <= max_bytes {
            return;
        }
        let mut cut = self.s.len() - max_bytes;
        while !self.s.is_char_boundary(cut) {
            cut += 1;
        }
        self.drop_front(cut);
    }

    /// Replaces the whole string. At flush the old and new values are compared: a rolling
    /// window becomes `t` + `a`, growth becomes `a`, anything else `s`.
    pub fn set(&mut self, value: impl Into<String>) {
        let old = std::mem::replace(self.s, value.into());
        text::record_set(self.cx.node.as_deref_mut(), old);
    }

    /// Removes the text in `range` and returns it, like `String::drain`. A range from the
    /// start is a drop from the front (`t`); any other is compared at flush.
    ///
    /// # Panics
    ///
    /// As `String::drain`: a bound out of range or not on a character boundary.
    pub fn drain<R: RangeBounds<usize>>(&mut self, range: R) -> std::string::Drain<'_> {
        let end = match range.end_bound() {
            Bound::Included(&e) => e.saturating_add(1),
            Bound::Excluded(&e) => e,
            Bound::Unbounded => self.s.len(),
        };
        let from_start = matches!(range.start_bound(), Bound::Unbounded | Bound::Included(&0));
        if from_start && end <= self.s.len() && self.s.is_char_boundary(end) {
            if end > 0 {
                text::record_drop_front(self.cx.node.as_deref_mut(), self.s, end);
            }
        } else {
            text::record_rewrite(self.cx.node.as_deref_mut(), self.s);
        }
        self.s.drain(range)
    }

    /// Empties the string.
    pub fn clear(&mut self) {
        self.edit(String::clear);
    }

    /// Shortens the string to `len` bytes, like `String::truncate`.
    pub fn truncate(&mut self, len: usize) {
        if len < self.s.len() {
            self.edit(|s| s.truncate(len));
        }
    }

    /// Removes the last character, like `String::pop`.
    pub fn pop(&mut self) -> Option<char> {
        if self.s.is_empty() {
            return None;
        }
        self.edit(String::pop)
    }

    /// Removes the character at byte `at`, like `String::remove`.
    pub fn remove(&mut self, at: usize) -> char {
        self.edit(|s| s.remove(at))
    }

    /// Inserts a character at byte `at`, like `String::insert`.
    pub fn insert(&mut self, at: usize, c: char) {
        self.edit(|s| s.insert(at, c));
    }

    /// Inserts text at byte `at`, like `String::insert_str`.
    pub fn insert_str(&mut self, at: usize, text: &str) {
        self.edit(|s| s.insert_str(at, text));
    }

    /// Keeps the characters for which `keep` returns true, like `String::retain`.
    pub fn retain(&mut self, keep: impl FnMut(char) -> bool) {
        self.edit(|s| s.retain(keep));
    }

    /// Replaces the text in `range`, like `String::replace_range`.
    pub fn replace_range<R: RangeBounds<usize>>(&mut self, range: R, with: &str) {
        self.edit(|s| s.replace_range(range, with));
    }

    /// Splits off the text from byte `at`, like `String::split_off`.
    pub fn split_off(&mut self, at: usize) -> String {
        self.edit(|s| s.split_off(at))
    }

    /// Any other edit: the old value is compared with the new one at flush.
    pub fn edit<R>(&mut self, f: impl FnOnce(&mut String) -> R) -> R {
        text::record_rewrite(self.cx.node.as_deref_mut(), self.s);
        f(self.s)
    }
}

impl Deref for TextProxy<'_> {
    type Target = String;
    fn deref(&self) -> &String {
        self.s
    }
}

impl DerefMut for TextProxy<'_> {
    /// Any change through `&mut String`: compared with the accepted text at flush (see
    /// [`edit`](TextProxy::edit)).
    fn deref_mut(&mut self) -> &mut String {
        text::record_rewrite(self.cx.node.as_deref_mut(), self.s);
        self.s
    }
}

impl AddAssign<&str> for TextProxy<'_> {
    /// Appends, like [`push_str`](TextProxy::push_str).
    #[inline]
    fn add_assign(&mut self, text: &str) {
        self.push_str(text);
    }
}

impl AddAssign<&String> for TextProxy<'_> {
    /// Appends, like [`push_str`](TextProxy::push_str).
    #[inline]
    fn add_assign(&mut self, text: &String) {
        self.push_str(text);
    }
}

impl AddAssign<String> for TextProxy<'_> {
    /// Appends, like [`push_str`](TextProxy::push_str).
    #[inline]
    fn add_assign(&mut self, text: String) {
        self.push_str(&text);
    }
}

impl AddAssign<char> for TextProxy<'_> {
    /// Appends, like [`push`](TextProxy::push).
    #[inline]
    fn add_assign(&mut self, c: char) {
        self.push(c);
    }
}

impl fmt::Write for TextProxy<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.push_str(s);
        Ok(())
    }
}

impl Extend<char> for TextProxy<'_> {
    fn extend<I: IntoIterator<Item = char>>(&mut self, iter: I) {
        let text: String = iter.into_iter().collect();
        self.push_str(&text);
    }
}

impl<'s> Extend<&'s str> for TextProxy<'_> {
    fn extend<I: IntoIterator<Item = &'s str>>(&mut self, iter: I) {
        for s in iter {
            self.push_str(s);
        }
    }
}

impl fmt::Debug for TextProxy<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self.s, f)
    }
}

impl fmt::Display for TextProxy<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.s)
    }
}

impl PartialEq<str> for TextProxy<'_> {
    fn eq(&self, other: &str) -> bool {
        self.s == other
    }
}

impl PartialEq<&str> for TextProxy<'_> {
    fn eq(&self, other: &&str) -> bool {
        self.s == other
    }
}

impl PartialEq<String> for TextProxy<'_> {
    fn eq(&self, other: &String) -> bool {
        *self.s == *other
    }
}

impl Tracked for String {
    type Proxy<'a> = TextProxy<'a>;

    fn __proxy<'a>(&'a mut self, cx: Cx<'a>) -> TextProxy<'a> {
        TextProxy::new(self, cx)
    }

    #[inline]
    fn __flush(&self, node: &mut Node, path: &Trail<'_>, out: &mut Out<'_>) -> Result<()> {
        text::flush(self, node, path, out);
        Ok(())
    }

    fn __assign<'a>(proxy: &mut TextProxy<'a>, value: Self)
    where
        Self: 'a,
    {
        proxy.set(value);
    }
}
