//! Where output goes: text for a terminal, JSON for a pipe, a progress bar for long work.

use std::io::{self, BufWriter, IsTerminal, Stdout, Write};

use indicatif::{ProgressBar, ProgressStyle};
use serde_json::Value;

use crate::failure::Failure;

/// A log bigger than this shows a progress bar while it is read.
pub(crate) const LONG_BYTES: u64 = 16 << 20;
/// More records than this show a progress bar while they are walked.
pub(crate) const LONG_RECORDS: usize = 50_000;

/// The output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// Text on a terminal, JSON otherwise.
    Auto,
    /// Readable text (values still print as indented JSON).
    Text,
    /// Plain JSON: one document, or one JSON object a line for record listings.
    Json,
}

/// Standard output, buffered, in the chosen format.
pub(crate) struct Out {
    json: bool,
    out: BufWriter<Stdout>,
}

impl Out {
    pub(crate) fn new(format: Format) -> Out {
        let json = match format {
            Format::Auto => !io::stdout().is_terminal(),
            Format::Text => false,
            Format::Json => true,
        };
        Out {
            json,
            out: BufWriter::new(io::stdout()),
        }
    }

    /// Whether output is JSON.
    pub(crate) fn json(&self) -> bool {
        self.json
    }

    /// One JSON document: compact for programs, indented for people.
    pub(crate) fn json_value(&mut self, value: &Value) -> Result<(), Failure> {
        if self.json {
            serde_json::to_writer(&mut self.out, value)?;
        } else {
            serde_json::to_writer_pretty(&mut self.out, value)?;
        }
        writeln!(self.out)?;
        Ok(())
    }

    /// One JSON value on its own line (JSON Lines).
    pub(crate) fn json_line(&mut self, value: &Value) -> Result<(), Failure> {
        serde_json::to_writer(&mut self.out, value)?;
        writeln!(self.out)?;
        Ok(())
    }

    pub(crate) fn finish(mut self) -> io::Result<()> {
        self.out.flush()
    }
}

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Whether an error is a closed output pipe (the reader stopped early).
pub(crate) fn is_broken_pipe(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(e) = current {
        if let Some(io) = e.downcast_ref::<io::Error>() {
            if io.kind() == io::ErrorKind::BrokenPipe {
                return true;
            }
        }
        if let Some(json) = e.downcast_ref::<serde_json::Error>() {
            if json.io_error_kind() == Some(io::ErrorKind::BrokenPipe) {
                return true;
            }
        }
        current = e.source();
    }
    false
}

/// A progress bar on stderr, drawn only for long work and only when stderr is a terminal.
pub(crate) struct Progress(Option<ProgressBar>);

impl Progress {
    /// `unit` is `"reading"` for bytes, anything else names the items counted.
    pub(crate) fn new(total: u64, unit: &str, long: bool) -> Progress {
        if !long || !io::stderr().is_terminal() {
            return Progress(None);
        }
        let template = if unit == "reading" {
            "{msg} [{bar:40}] {bytes}/{total_bytes} ({eta})"
        } else {
            "{msg} [{bar:40}] {human_pos}/{human_len} ({eta})"
        };
        let bar = ProgressBar::new(total);
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message(unit.to_owned());
        Progress(Some(bar))
    }

    pub(crate) fn set(&self, position: u64) {
        if let Some(bar) = &self.0 {
            bar.set_position(position);
        }
    }

    pub(crate) fn inc(&self) {
        if let Some(bar) = &self.0 {
            bar.inc(1);
        }
    }

    pub(crate) fn done(&self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}

/// The plural ending of a count's noun in the text output: `1 record`, `2 records`.
pub(crate) fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
