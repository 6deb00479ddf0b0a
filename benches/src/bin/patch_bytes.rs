//! Prints the patch-bytes section of `BENCHMARKS.md` (see `chord_bench::patch_bytes`);
//! `scripts/patch-bytes` writes it between its markers.

fn main() {
    print!("{}", chord_bench::patch_bytes::section());
}
