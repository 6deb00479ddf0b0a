//! Decoded-grammar batches, one per line, through `parse_batch` into `apply_with` under small
//! limits: see `chord_fuzz::parse_apply` for the invariants.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| chord_fuzz::parse_apply(data));
