//! `chord addresses`: the addresses (namespace and key) that have records, with their counts.

use std::io::Write;
use std::path::Path;

use serde_json::json;

use crate::failure::Failure;
use crate::location::Kind;
use crate::log::Log;
use crate::output::{plural, Out};

/// Runs `chord addresses`.
pub(crate) fn run(out: &mut Out, log: &Path, store: Option<Kind>) -> Result<(), Failure> {
    let log = Log::open(log, store)?;
    let addresses = log.store().addresses()?;
    if out.json() {
        let mut list = Vec::new();
        for a in &addresses {
            let n = log.count(a)?;
            list.push(json!({"namespace": a.namespace, "key": a.key, "records": n}));
        }
        out.json_value(&json!(list))?;
    } else {
        for a in &addresses {
            let n = log.count(a)?;
            writeln!(out, "{}\t{}\t{n} record{}", a.namespace, a.key, plural(n))?;
        }
    }
    Ok(())
}
