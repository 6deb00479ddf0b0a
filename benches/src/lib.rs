//! The benchmarks of chord, in a workspace member of their own so that the published crates'
//! test builds do not compile what only the benchmarks need (muon, json-patch, criterion).
//! Not published.
//!
//! - [`workloads`]: the workloads' inputs and chord's side of each (the file the tests of
//!   `chord-delta` use too, `chord/tests/support/workloads.rs`);
//! - [`alternatives`]: the same workloads in muon and json-patch;
//! - [`cases`]: every workload in every library, as the benches run them;
//! - `patch_bytes` (feature `ag-ui`): the bytes of AG-UI's JSON Patches against snapshots
//!   and chord's wire, on the same flushes.
//!
//! The bench targets (`workloads`, `steps`, `store`, `overlap`) are described in their files
//! and in `BENCHMARKS.md` at the repository's root.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

#[path = "../../chord/tests/support/workloads.rs"]
pub mod workloads;

pub mod alternatives;
pub mod cases;
#[cfg(feature = "ag-ui")]
pub mod patch_bytes;
