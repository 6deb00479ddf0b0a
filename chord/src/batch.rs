//! Batches: the ops of one flush, sent, stored and applied together. A batch that starts
//! with an `r` is a base batch, where a reader may start.

use std::fmt;

use crate::op::Op;

/// Whether `batch` is a base batch: exactly when its first op is an `r`.
///
/// Recovery stops at base batches, so this is a token comparison, never a path inspection.
///
/// ```
/// use chord::{is_base, path, Op};
/// assert!(is_base(&[Op::Replace(serde_json::json!({}))]));
/// assert!(!is_base(&[Op::Delete(path!["a"]), Op::Replace(serde_json::json!({}))]));
/// assert!(!is_base(&[]));
/// ```
pub fn is_base(batch: &[Op]) -> bool {
    matches!(batch.first(), Some(Op::Replace(_)))
}

/// A readable multi-line rendering of a batch: one op per line, base batches marked.
///
/// ```
/// use chord::{display_batch, path, Op};
/// let batch = [Op::Replace(serde_json::json!({"x": 1})), Op::Set(path!["x"], 2.into())];
/// assert_eq!(display_batch(&batch).to_string(), "base batch, 2 ops\n  replace {\"x\":1}\n  set x = 2");
/// ```
pub fn display_batch(batch: &[Op]) -> impl fmt::Display + '_ {
    BatchDisplay(batch)
}

struct BatchDisplay<'a>(&'a [Op]);

impl fmt::Display for BatchDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = if is_base(self.0) {
            "base batch"
        } else {
            "batch"
        };
        let plural = if self.0.len() == 1 { "" } else { "s" };
        write!(f, "{kind}, {} op{plural}", self.0.len())?;
        for op in self.0 {
            if f.alternate() {
                write!(f, "\n  {op:#}")?;
            } else {
                write!(f, "\n  {op}")?;
            }
        }
        Ok(())
    }
}
