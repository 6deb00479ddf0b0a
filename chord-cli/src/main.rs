//! `chord`: look inside chord's durable logs (JSONL files, and PostgreSQL stores named by URL),
//! and serve them as Durable Streams.
//!
//! ```text
//! chord addresses <LOG>                            the addresses that have records
//! chord show <LOG> <NAMESPACE> <KEY> [--full]      a value's records, ops in readable form
//! chord recover <LOG> <NAMESPACE> <KEY> [--at SEQ] the value as JSON, latest or at a seq
//! chord stats <LOG>                                records, base batches, bytes by verb, replay
//! chord serve <LOG> (--public | --read-token-file PATH) [--listen ADDR] ...
//!                                                  the log's streams over HTTP, with /healthz,
//!                                                  /readyz and /metrics, drained on SIGTERM
//! ```
//!
//! `<LOG>` is a JSONL file or a PostgreSQL URL (`postgres://user@host:port/db?schema=name`).
//! Logs are opened read-only (no lock, nothing changed), so a log a producer is writing can be
//! inspected. Output is readable text on a terminal and plain JSON when piped (`--format`
//! overrides); long work shows a progress bar on stderr when stderr is a terminal.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod log;
mod output;
mod serve;
mod stats;
mod tokens;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use chord::store::{replay, Address, ReadOptions, BASE};
use chord::{display_batch, Decoder};
use clap::{Parser, Subcommand};
use serde_json::json;

use crate::output::{Format, Out, Progress};

/// Look inside chord's durable logs: list addresses, show records, recover values, print
/// statistics; serve them as Durable Streams over HTTP.
#[derive(Parser, Debug)]
#[command(name = "chord", version)]
struct Cli {
    /// `text` is for people, `json` for programs; `auto` picks text on a terminal, JSON
    /// otherwise.
    #[arg(long, value_enum, default_value_t = Format::Auto, global = true)]
    format: Format,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List the addresses (namespace and key) that have records.
    Addresses {
        /// The JSONL log, or a PostgreSQL URL (`postgres://...?schema=name`).
        log: PathBuf,
    },
    /// Show a value's records, decoded, in the readable op form.
    Show {
        /// The JSONL log, or a PostgreSQL URL (`postgres://...?schema=name`).
        log: PathBuf,
        /// The value's namespace.
        namespace: String,
        /// The value's key.
        key: String,
        /// Print payloads whole instead of a preview.
        #[arg(long)]
        full: bool,
    },
    /// Recover a value as JSON: replay from its last base batch.
    Recover {
        /// The JSONL log, or a PostgreSQL URL (`postgres://...?schema=name`).
        log: PathBuf,
        /// The value's namespace.
        namespace: String,
        /// The value's key.
        key: String,
        /// Recover the value as it was right after this record.
        #[arg(long, value_name = "SEQ")]
        at: Option<u64>,
    },
    /// Print statistics: records, base batches, bytes by verb, replay length.
    Stats {
        /// The JSONL log, or a PostgreSQL URL (`postgres://...?schema=name`).
        log: PathBuf,
    },
    /// Serve the log's streams over HTTP (catch-up, long-poll, SSE) with `/healthz`,
    /// `/readyz` and `/metrics`, until SIGTERM or Ctrl-C, then drain.
    Serve(serve::Args),
}

/// An error for the user: printed as `chord: <message>`, exit code 1.
type Failure = Box<dyn std::error::Error>;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let mut out = Out::new(cli.format);
    let result = match cli.command {
        Command::Addresses { log } => addresses(&mut out, &log),
        Command::Show {
            log,
            namespace,
            key,
            full,
        } => show(&mut out, &log, &Address::new(namespace, key), full),
        Command::Recover {
            log,
            namespace,
            key,
            at,
        } => recover(&mut out, &log, &Address::new(namespace, key), at),
        Command::Stats { log } => stats::run(&mut out, &log),
        Command::Serve(args) => serve::run(&args).map_err(Failure::from),
    };
    let result = result.and_then(|()| out.finish().map_err(Failure::from));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // A reader that stopped early (`chord show ... | head`) is not an error.
        Err(e) if output::is_broken_pipe(&*e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("chord: {}", with_causes(&*e));
            ExitCode::FAILURE
        }
    }
}

/// An error's message followed by each of its causes the message does not already say
/// (`postgres://…: connect failed: error connecting to server: Connection refused`): the
/// library's errors name what failed, their sources why.
pub(crate) fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let said = cause.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        source = cause.source();
    }
    text
}

/// Opens a log read-only (see [`log::Log::open`]).
pub(crate) fn open(log: &Path) -> Result<log::Log, Failure> {
    log::Log::open(log)
}

fn addresses(out: &mut Out, log: &Path) -> Result<(), Failure> {
    let log = open(log)?;
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

fn show(out: &mut Out, log: &Path, address: &Address, full: bool) -> Result<(), Failure> {
    let log = open(log)?;
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

fn recover(out: &mut Out, log: &Path, address: &Address, at: Option<u64>) -> Result<(), Failure> {
    let log = open(log)?;
    let r = replay(log.store(), address, at)?;
    let Some(value) = r.value else {
        let when = at.map(|s| format!(" up to seq {s}")).unwrap_or_default();
        return Err(format!("{}: no records for {address}{when}", log.name()).into());
    };
    if !out.json() {
        let from = match r.base_seq {
            Some(base) => format!("from the base batch at #{base}"),
            None => "from the first record (no base batch)".to_owned(),
        };
        let last = r.seq.map(|s| format!("#{s}")).unwrap_or_default();
        eprintln!(
            "{address} at {last}: replayed {} record{} {from}",
            r.batches,
            plural(r.batches)
        );
    }
    out.json_value(&value)
}

pub(crate) fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
