use std::ops::{AddAssign, Deref};

use crate::error::Result;
use crate::op::Op;
use crate::path::Path;
use crate::tracker::{text, Cx, Node, Tracked};

/// The proxy of a `String`: appends become `a`, drops from the front become `t`, and whole
/// assignments are diffed at flush by the overlap detector (`t` + `a` for a rolling window,
/// `a` for growth, `s` otherwise).
///
/// ```
/// use chord::track;
/// let mut t = track(String::from("hello"));
/// t.flush().unwrap();
/// let mut text = t.state();
/// text.push_str(" world");
/// text += "!";
/// assert_eq!(&**t, "hello world!");
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
    pub fn push_str(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        text::record_append(self.cx.node.as_deref_mut(), self.s);
        self.s.push_str(text);
    }

    /// Appends one character.
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

    /// Empties the string.
    pub fn clear(&mut self) {
        self.edit(String::clear);
    }

    /// Shortens the string to `len` bytes, like `String::truncate`.
    pub fn truncate(&mut self, len: usize) {
        self.edit(|s| s.truncate(len));
    }

    /// Inserts text at byte `at`, like `String::insert_str`.
    pub fn insert_str(&mut self, at: usize, text: &str) {
        self.edit(|s| s.insert_str(at, text));
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

impl AddAssign<&str> for TextProxy<'_> {
    /// Appends, like [`push_str`](TextProxy::push_str).
    fn add_assign(&mut self, text: &str) {
        self.push_str(text);
    }
}

impl Tracked for String {
    type Proxy<'a> = TextProxy<'a>;

    fn __proxy<'a>(&'a mut self, cx: Cx<'a>) -> TextProxy<'a> {
        TextProxy::new(self, cx)
    }

    fn __flush(&self, node: &mut Node, path: &mut Path, out: &mut Vec<Op>) -> Result<()> {
        text::flush(self, node, path, out);
        Ok(())
    }
}
