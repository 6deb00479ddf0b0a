//! Hand-made JSONL log lines with valid checksums, for tests that craft logs the library
//! would never write (format 2: each line's checked bytes, then `,"c":"<crc>"}`, the CRC-32C
//! chained from the previous line's).

/// Lines sealed with valid chained checksums, each ended with `\n`.
pub fn seal_lines(checked: &[&str]) -> String {
    let mut crc = 0;
    let mut out = String::new();
    for line in checked {
        crc = crc32c::crc32c_append(crc, line.as_bytes());
        out.push_str(&format!("{line},\"c\":\"{crc:08x}\"}}\n"));
    }
    out
}
