//! `chord stats`: records, base batches, bytes by verb, replay length.

use std::io::Write;
use std::path::Path;

use chord::store::{is_base_tag, Address, ReadOptions};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use crate::failure::Failure;
use crate::location::Kind;
use crate::log::Log;
use crate::output::{plural, Out, Progress, LONG_RECORDS};

/// What one address holds.
struct PerAddress {
    address: Address,
    records: usize,
    bases: usize,
    replay: usize,
}

/// Runs `chord stats`.
pub(crate) fn run(out: &mut Out, log: &Path, store: Option<Kind>) -> Result<(), Failure> {
    let log = Log::open(log, store)?;
    let store = log.store();
    // A database's record count is not known before reading (no bar, then).
    let total = log.len().unwrap_or(0);
    let progress = Progress::new(total as u64, "records", total > LONG_RECORDS);
    // Wire verbs in the order the format lists them, `#` (a path-id definition) last.
    let mut verbs: Vec<(String, u64)> = ["r", "s", "d", "a", "t", "p", "#"]
        .iter()
        .map(|v| ((*v).to_owned(), 0))
        .collect();
    let mut per = Vec::new();
    for address in store.addresses()? {
        let (mut records, mut bases) = (0, 0);
        let mut options = ReadOptions::asc().limit(1000);
        loop {
            let page = store.read_list(&address, &options)?;
            for record in &page.records {
                progress.inc();
                records += 1;
                if is_base_tag(record.tag.as_deref()) {
                    bases += 1;
                }
                measure(&record.batch, &mut verbs).map_err(|e| {
                    format!("{}: record #{} of {address}: {e}", log.name(), record.seq)
                })?;
            }
            match page.next_cursor {
                Some(cursor) => options.cursor = Some(cursor),
                None => break,
            }
        }
        let replay = log.replay_len(&address)?;
        per.push(PerAddress {
            address,
            records,
            bases,
            replay,
        });
    }
    progress.done();

    let records: usize = per.iter().map(|p| p.records).sum();
    let bases: usize = per.iter().map(|p| p.bases).sum();
    let max_replay = per.iter().map(|p| p.replay).max().unwrap_or(0);
    if out.json() {
        let by_verb: Map<String, Value> = verbs.into_iter().map(|(v, n)| (v, n.into())).collect();
        let by_address: Vec<Value> = per
            .iter()
            .map(|p| {
                json!({
                    "namespace": p.address.namespace,
                    "key": p.address.key,
                    "records": p.records,
                    "base_batches": p.bases,
                    "replay": p.replay,
                })
            })
            .collect();
        let file = log.jsonl();
        let torn = file
            .and_then(|f| f.torn_tail())
            .map(|t| json!({"line": t.line, "offset": t.offset, "bytes": t.len}));
        return out.json_value(&json!({
            "log": log.name(),
            // A file's size; null for a database.
            "bytes": file.map(|f| f.size()),
            "records": records,
            "base_batches": bases,
            "addresses": per.len(),
            "bytes_by_verb": by_verb,
            "replay": {"max": max_replay, "by_address": by_address},
            "torn_tail": torn,
            "unterminated_line": file.and_then(|f| f.unterminated_line()),
        }));
    }
    writeln!(out, "log            {}", log.name())?;
    if let Some(file) = log.jsonl() {
        writeln!(out, "size           {} bytes", group(file.size()))?;
    }
    writeln!(
        out,
        "records        {} in {} address{}, {} base batch{}",
        group(records as u64),
        per.len(),
        if per.len() == 1 { "" } else { "es" },
        group(bases as u64),
        if bases == 1 { "" } else { "es" },
    )?;
    writeln!(
        out,
        "replay         at most {max_replay} record{}",
        plural(max_replay)
    )?;
    writeln!(out, "bytes by verb  (each op's JSON tuple as stored)")?;
    for (verb, bytes) in &verbs {
        let name = match verb.as_str() {
            "r" => "replace",
            "s" => "set",
            "d" => "delete",
            "a" => "append",
            "t" => "truncate",
            "p" => "splice",
            "#" => "path id",
            _ => "unknown",
        };
        writeln!(out, "  {verb} {name:<9} {:>14}", group(*bytes))?;
    }
    writeln!(out, "by address     records    bases   replay  address")?;
    for p in &per {
        writeln!(
            out,
            "             {:>9} {:>8} {:>8}  {}",
            group(p.records as u64),
            group(p.bases as u64),
            group(p.replay as u64),
            p.address
        )?;
    }
    Ok(())
}

/// Adds each op's byte length in `batch` to its verb. The batch is read as a list of JSON
/// tuples only; nothing is decoded or applied.
fn measure(batch: &str, verbs: &mut Vec<(String, u64)>) -> Result<(), serde_json::Error> {
    let ops: Vec<&RawValue> = serde_json::from_str(batch)?;
    for op in ops {
        let parts: Vec<&RawValue> = serde_json::from_str(op.get())?;
        let verb = match parts.first() {
            Some(v) => serde_json::from_str::<String>(v.get())?,
            None => String::new(),
        };
        let bytes = op.get().len() as u64;
        match verbs.iter_mut().find(|(v, _)| *v == verb) {
            Some((_, n)) => *n += bytes,
            None => verbs.push((verb, bytes)),
        }
    }
    Ok(())
}

/// `1234567` as `1,234,567`.
fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
