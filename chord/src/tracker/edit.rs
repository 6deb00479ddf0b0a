//! What a node records about its own value between flushes: the edit data types of strings
//! and arrays, with the run algebra of array splices. The dirty tree ([`node`](super::node))
//! holds them; the string and array flushes ([`text`](super::text), [`seq`](super::seq)) read
//! them.

use smallvec::SmallVec;

/// What happened to a string since the last flush.
#[derive(Debug)]
#[repr(u8)] // (a plain tag, as `State`'s)
pub(crate) enum TextEdit {
    /// Only appends and drops from the front: the accepted value is `dropped` followed by
    /// `current[..tail_start]`, and `current[tail_start..]` is new. Flushes to `t` + `a` in
    /// `O(change)`, independent of the string's length.
    Window { dropped: String, tail_start: usize },
    /// The accepted value, kept whole because an edit could not be described as a window;
    /// flush diffs it against the current value with the overlap detector.
    Baseline(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Run {
    Kept { start: usize, len: usize },
    New { len: usize },
}

impl Run {
    pub(crate) fn len(&self) -> usize {
        match *self {
            Run::Kept { len, .. } | Run::New { len } => len,
        }
    }
}

/// The splices made to an array since the last flush.
#[derive(Debug)]
pub(crate) struct SeqEdit {
    /// (Two runs inline: a push or an unshift on a clean array allocates nothing.)
    pub(crate) runs: SmallVec<[Run; 2]>,
    pub(crate) accepted_len: usize,
}

impl SeqEdit {
    pub(crate) fn fresh(len: usize) -> SeqEdit {
        let mut runs = SmallVec::new();
        if len > 0 {
            runs.push(Run::Kept { start: 0, len });
        }
        SeqEdit {
            runs,
            accepted_len: len,
        }
    }

    /// Splits runs so that one starts at `pos`; returns its index.
    pub(crate) fn split(&mut self, pos: usize) -> usize {
        let mut at = 0;
        for i in 0..self.runs.len() {
            let len = self.runs[i].len();
            if pos == at {
                return i;
            }
            if pos < at + len {
                let k = pos - at;
                let (left, right) = match self.runs[i] {
                    Run::Kept { start, len } => (
                        Run::Kept { start, len: k },
                        Run::Kept {
                            start: start + k,
                            len: len - k,
                        },
                    ),
                    Run::New { len } => (Run::New { len: k }, Run::New { len: len - k }),
                };
                self.runs[i] = left;
                self.runs.insert(i + 1, right);
                return i + 1;
            }
            at += len;
        }
        self.runs.len()
    }

    /// Records `remove` elements removed at `at` and `insert` new ones put there.
    pub(crate) fn splice(&mut self, at: usize, remove: usize, insert: usize) {
        let i = self.split(at);
        let j = self.split(at + remove);
        self.runs.drain(i..j);
        if insert > 0 {
            match (i.checked_sub(1).map(|k| self.runs[k]), self.runs.get(i)) {
                (Some(Run::New { len }), _) => self.runs[i - 1] = Run::New { len: len + insert },
                (_, Some(Run::New { len })) => {
                    let len = *len;
                    self.runs[i] = Run::New { len: len + insert };
                }
                _ => self.runs.insert(i, Run::New { len: insert }),
            }
        }
    }

    /// The accepted index of the element now at `current`, `None` if it is new.
    pub(crate) fn accepted_index(&self, current: usize) -> Option<usize> {
        let mut at = 0;
        for run in &self.runs {
            let len = run.len();
            if current < at + len {
                return match *run {
                    Run::Kept { start, .. } => Some(start + current - at),
                    Run::New { .. } => None,
                };
            }
            at += len;
        }
        None
    }

    /// The current index of the accepted element `accepted`, `None` if it was removed.
    pub(crate) fn current_index(&self, accepted: usize) -> Option<usize> {
        let mut at = 0;
        for run in &self.runs {
            if let Run::Kept { start, len } = *run {
                if (start..start + len).contains(&accepted) {
                    return Some(at + accepted - start);
                }
            }
            at += run.len();
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unshift_on_a_clean_array_is_two_runs() {
        let mut e = SeqEdit::fresh(1000);
        e.splice(0, 0, 1);
        assert_eq!(
            e.runs.as_slice(),
            [
                Run::New { len: 1 },
                Run::Kept {
                    start: 0,
                    len: 1000
                }
            ]
        );
        assert_eq!(e.accepted_index(0), None);
        assert_eq!(e.accepted_index(1), Some(0));
        assert_eq!(e.current_index(999), Some(1000));
    }

    #[test]
    fn pushes_merge_into_one_run() {
        let mut e = SeqEdit::fresh(2);
        for k in 0..100 {
            e.splice(2 + k, 0, 1);
        }
        assert_eq!(
            e.runs.as_slice(),
            [Run::Kept { start: 0, len: 2 }, Run::New { len: 100 }]
        );
    }

    #[test]
    fn removing_new_elements_forgets_them() {
        let mut e = SeqEdit::fresh(3);
        e.splice(1, 0, 2); // [k0, n, n, k1, k2]
        e.splice(0, 2, 0); // [n, k1, k2]
        assert_eq!(
            e.runs.as_slice(),
            [Run::New { len: 1 }, Run::Kept { start: 1, len: 2 }]
        );
        assert_eq!(e.current_index(0), None);
        assert_eq!(e.current_index(2), Some(2));
    }
}
