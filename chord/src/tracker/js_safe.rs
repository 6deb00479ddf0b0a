//! The JavaScript-safe integer rule: a JavaScript replica holds every number as an IEEE
//! double, so an integer beyond ±(2^53 − 1) arrives rounded there while a Rust replica keeps
//! it exactly, and the two replicas of one stream disagree. A tracker in JS-safe mode (the
//! default) refuses such integers at flush, naming where they are.

use serde_json::Value;

use crate::error::{Error, ErrorKind, Result};
use crate::op::Op;
use crate::path::{Path, Seg};
use crate::safe_integer::MAX_SAFE_INTEGER;

/// Checks every value `ops` carry; the error names the first offending integer's path.
pub(crate) fn check(ops: &[Op]) -> Result<()> {
    for op in ops {
        match op {
            Op::Replace(v) => value(v, &mut Path::root())?,
            Op::Set(p, v) => value(v, &mut p.as_path().clone())?,
            Op::Splice {
                path, index, items, ..
            } => {
                for (k, item) in items.iter().enumerate() {
                    let mut p = path.clone();
                    p.push(Seg::Index(index + k));
                    value(item, &mut p)?;
                }
            }
            Op::Delete(_) | Op::Append(..) | Op::Truncate(..) => {}
        }
    }
    Ok(())
}

fn value(v: &Value, path: &mut Path) -> Result<()> {
    match v {
        Value::Number(n) => {
            let unsafe_int = match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => u > MAX_SAFE_INTEGER,
                (None, Some(i)) => i.unsigned_abs() > MAX_SAFE_INTEGER,
                (None, None) => false, // a float: JavaScript holds it exactly
            };
            if unsafe_int {
                return Err(Error::from(ErrorKind::NotJson(format!(
                    "the integer {n} is outside ±(2^53 − 1), so a JavaScript replica would round it; \
                     send it as a string, or turn JS-safe mode off (`Tracker::set_js_safe(false)`) \
                     if every replica is a Rust one"
                )))
                .at_path(path.clone()));
            }
            Ok(())
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                path.push(Seg::Index(i));
                let r = value(item, path);
                path.pop();
                r?;
            }
            Ok(())
        }
        Value::Object(m) => {
            for (k, item) in m {
                path.push(Seg::Key(k.clone().into()));
                let r = value(item, path);
                path.pop();
                r?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}
