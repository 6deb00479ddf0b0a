//! `chord`: look inside chord's durable logs (JSONL files, SQLite databases with the `sqlite`
//! feature, and PostgreSQL stores named by URL), and serve them as Durable Streams.
//!
//! ```text
//! chord addresses <LOG>                            the addresses that have records
//! chord show <LOG> <NAMESPACE> <KEY> [--full]      a value's records, ops in readable form
//! chord recover <LOG> <NAMESPACE> <KEY> [--at SEQ] the value as JSON, latest or at a seq
//! chord stats <LOG>                                records, base batches, bytes by verb, replay
//! chord serve <LOG> (--public | --read-token-file PATH) [--listen HOST:PORT] [--create] ...
//!                                                  the log's streams over HTTP, with /healthz,
//!                                                  /readyz and /metrics, drained on SIGTERM
//! ```
//!
//! `<LOG>` is a JSONL file, a SQLite database, or a PostgreSQL URL
//! (`postgres://user@host:port/db?schema=name`); a file is the kind its contents say, or,
//! with none yet, its name (`.jsonl`; `.sqlite`, `.sqlite3`, `.db`) or `--store`. Logs are
//! opened read-only (nothing changed; a JSONL log or a PostgreSQL store without a lock, so a
//! log a producer is writing can be inspected; a SQLite database only while no writer has it
//! open). Output is readable text on a terminal and plain JSON when piped (`--format`
//! overrides); long work shows a progress bar on stderr when stderr is a terminal.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod addresses;
mod failure;
mod listen;
mod location;
mod log;
mod output;
mod recover;
mod serve;
mod show;
mod stats;
mod tokens;

use std::path::PathBuf;
use std::process::ExitCode;

use chord::store::Address;
use clap::{Parser, Subcommand};

use crate::failure::{with_causes, Failure};
use crate::location::Kind;
use crate::output::{Format, Out};

/// Look inside chord's durable logs: list addresses, show records, recover values, print
/// statistics; serve them as Durable Streams over HTTP.
#[derive(Parser, Debug)]
#[command(name = "chord", version)]
struct Cli {
    /// `text` is for people, `json` for programs; `auto` picks text on a terminal, JSON
    /// otherwise.
    #[arg(long, value_enum, default_value_t = Format::Auto, global = true)]
    format: Format,
    /// The kind of store the file is, over what its name says (`.jsonl` a JSONL log;
    /// `.sqlite`, `.sqlite3`, `.db` a SQLite database): needed to create a store under any
    /// other name. A file with contents is the kind its first bytes say, and refused when
    /// its name or this says another.
    #[arg(long, value_enum, value_name = "KIND", global = true)]
    store: Option<Kind>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List the addresses (namespace and key) that have records.
    Addresses {
        /// The JSONL log, the SQLite database, or a PostgreSQL URL (`postgres://...?schema=name`).
        log: PathBuf,
    },
    /// Show a value's records, decoded, in the readable op form.
    Show {
        /// The JSONL log, the SQLite database, or a PostgreSQL URL (`postgres://...?schema=name`).
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
        /// The JSONL log, the SQLite database, or a PostgreSQL URL (`postgres://...?schema=name`).
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
        /// The JSONL log, the SQLite database, or a PostgreSQL URL (`postgres://...?schema=name`).
        log: PathBuf,
    },
    /// Serve the log's streams over HTTP (catch-up, long-poll, SSE) with `/healthz`,
    /// `/readyz` and `/metrics`, until SIGTERM or Ctrl-C, then drain.
    Serve(serve::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let mut out = Out::new(cli.format);
    let result = match cli.command {
        Command::Addresses { log } => addresses::run(&mut out, &log, cli.store),
        Command::Show {
            log,
            namespace,
            key,
            full,
        } => show::run(
            &mut out,
            &log,
            cli.store,
            &Address::new(namespace, key),
            full,
        ),
        Command::Recover {
            log,
            namespace,
            key,
            at,
        } => recover::run(&mut out, &log, cli.store, &Address::new(namespace, key), at),
        Command::Stats { log } => stats::run(&mut out, &log, cli.store),
        Command::Serve(args) => serve::run(&args, cli.store).map_err(Failure::from),
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
