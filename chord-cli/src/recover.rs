//! `chord recover`: a value as JSON, replayed from its last base batch, latest or at a seq.

use std::path::Path;

use chord::store::{replay, Address};

use crate::failure::Failure;
use crate::location::Kind;
use crate::log::Log;
use crate::output::{plural, Out};

/// Runs `chord recover`: the value of `address`, or as it was right after record `at`.
pub(crate) fn run(
    out: &mut Out,
    log: &Path,
    store: Option<Kind>,
    address: &Address,
    at: Option<u64>,
) -> Result<(), Failure> {
    let log = Log::open(log, store)?;
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
