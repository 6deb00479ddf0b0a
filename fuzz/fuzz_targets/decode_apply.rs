//! Wire batches, one per line, through one `Decoder` into `apply`: see
//! `chord_fuzz::decode_apply` for the invariants.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| chord_fuzz::decode_apply(data));
