//! `chord show`: a value's records, decoded, in the readable op form (or as JSON Lines).

use std::io::Write;
use std::path::Path;

use chord::store::{Address, ReadOptions, BASE};
use chord::{display_batch, Decoder};
use serde_json::json;

use crate::failure::Failure;
use crate::location::Kind;
use crate::log::Log;
use crate::output::{self, plural, Out, Progress};

/// Runs `chord show`: every record of `address`, in seq order.
pub(crate) fn run(
    out: &mut Out,
    log: &Path,
    store: Option<Kind>,
    address: &Address,
    full: bool,
) -> Result<(), Failure> {
    let log = Log::open(log, store)?;
    let store = log.store();
    let total = log.count(address)?;
    if total == 0 {
        return Err(format!("{}: no records for {address}", log.name()).into());
    }
    let progress = Progress::new(total as u64, "records", total > output::LONG_RECORDS);
    let mut decoder = Some(Decoder::new());
    let mut failed = 0;
    let mut options = ReadOptions::asc().limit(1000);
    loop {
        let page = store.read_list(address, &options)?;
        for record in &page.records {
            progress.inc();
            let base = record.tag.as_deref() == Some(BASE);
            if base {
                // As recovery does: a base batch starts a fresh decoder.
                decoder = Some(Decoder::new());
            }
            let decoded = match decoder.as_mut() {
                Some(d) => d.decode_str(&record.batch).map_err(|e| e.to_string()),
                None => Err(
                    "follows an undecodable record; decoding resumes at the next base \
                             batch"
                        .to_owned(),
                ),
            };
            let tag = record.tag.as_deref();
            match decoded {
                Ok(ops) if out.json() => {
                    out.json_line(&json!({"seq": record.seq, "tag": tag, "ops": ops}))?;
                }
                Ok(ops) => {
                    write!(out, "#{}", record.seq)?;
                    if let Some(tag) = tag.filter(|&t| t != BASE) {
                        write!(out, " [{tag}]")?;
                    }
                    if full {
                        writeln!(out, " {:#}", display_batch(&ops))?;
                    } else {
                        writeln!(out, " {}", display_batch(&ops))?;
                    }
                }
                Err(error) => {
                    failed += 1;
                    decoder = None;
                    if out.json() {
                        out.json_line(&json!({
                            "seq": record.seq, "tag": tag, "batch": record.batch, "error": error,
                        }))?;
                    } else {
                        writeln!(
                            out,
                            "#{} undecodable: {error}\n  {}",
                            record.seq, record.batch
                        )?;
                    }
                }
            }
        }
        match page.next_cursor {
            Some(cursor) => options.cursor = Some(cursor),
            None => break,
        }
    }
    progress.done();
    if failed > 0 {
        return Err(format!(
            "{failed} record{} of {address} did not decode",
            plural(failed)
        )
        .into());
    }
    Ok(())
}
