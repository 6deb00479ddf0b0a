//! The record format, defined once for every backend: the text an address and a record are
//! checksummed as, the checksum, the SQL row a record is stored in, and the chain check of a
//! page of rows.
//!
//! # Address text
//!
//! ```text
//! {"def":<id>,"ns":<namespace>,"key":<key>
//! ```
//!
//! `<id>` in decimal (no sign, no leading zero), `<namespace>` and `<key>` as JSON strings as
//! serde_json writes them (`"` and `\` escaped, control characters as `\n`, `\t` and the
//! like or as `\u001f`, everything else, non-ASCII included, as is). The JSONL backend writes
//! this text as an address's definition line (ids from 0); the SQL backends checksum it for
//! the `crc` column of `chord_addresses` (ids from 1).
//!
//! # Record text
//!
//! ```text
//! {"s":<seq>,"a":<address id>,"p":<prev>,"t":<tag>,"b":<batch>
//! ```
//!
//! The numbers in decimal, `<tag>` a JSON string as above, `<batch>` the batch text exactly as
//! appended (the stored bytes). The `"t"` member is left out when the record has no tag. The
//! `"p"` member (the seq of the address's previous record, 0 for its first) is in the SQL
//! backends' text only: the JSONL backend writes the text without it as a record line, and
//! links its lines by their checksums instead.
//!
//! # Checksum
//!
//! CRC-32C (Castagnoli: polynomial `0x1EDC6F41`, reflected, initial value and final XOR
//! `0xFFFFFFFF`, as the `crc32c` crate computes it) of the text's UTF-8 bytes.
//!
//! - **SQL** (`SqliteStore`, `PostgresStore`): each row's `crc` column holds the checksum of its
//!   own text, computed from the start, as a non-negative integer (`0..=0xFFFFFFFF`).
//! - **JSONL**: each line ends with `,"c":"<checksum>"}` and its `\n`, the checksum as 8
//!   lowercase hex digits, most significant first; it is the CRC-32C of the line's text
//!   continued from the previous line's checksum (the header's from 0), so it covers every
//!   line from the start of the file.
//!
//! # The chain
//!
//! A SQL record names its address's previous record (`prev`), and the address row its newest
//! (`last`). A page read checks, on top of every row's checksum, that each row's `seq` is
//! positive and its `prev` lies below it; that, oldest first, each row's `prev` is the seq of
//! the row before it; and at the page's ends, the neighbours: the record just before the page
//! (or `prev = 0` when the page starts the list) and the one just after it (or `last` when
//! the page ends it). A record that is missing, the newest one included, or out of place is
//! [`Error::CorruptRecord`], naming the address and the seq.
//!
//! This module is private: the public docs of `JsonlStore` and `SqliteStore` restate these
//! texts for users, and change with them.

use std::fmt::Write as _;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
use std::path::Path;

#[cfg(any(feature = "sqlite", feature = "postgres"))]
use super::{Address, Error, Order, Page, ReadOptions, Record, Result};

/// `s` as a JSON string, as serde_json writes it.
pub(super) fn json_string(s: &str) -> String {
    // Serializing a string cannot fail.
    serde_json::to_string(s).unwrap_or_default()
}

/// Appends the address text (see the module documentation) to `out`.
pub(super) fn address_text(out: &mut String, id: impl itoa::Integer, namespace: &str, key: &str) {
    out.push_str("{\"def\":");
    out.push_str(itoa::Buffer::new().format(id));
    out.push_str(",\"ns\":");
    out.push_str(&json_string(namespace));
    out.push_str(",\"key\":");
    out.push_str(&json_string(key));
}

/// Appends the record text up to its batch (see the module documentation) to `out`: through
/// `"b":`, so that the caller adds the batch without copying it first. `prev` is `None` for
/// the JSONL form, which has no `"p"` member.
pub(super) fn record_head(
    out: &mut String,
    seq: u64,
    address: impl itoa::Integer,
    prev: Option<u64>,
    tag: Option<&str>,
) {
    // Writing to a String cannot fail.
    let _ = write!(
        out,
        "{{\"s\":{seq},\"a\":{},",
        itoa::Buffer::new().format(address)
    );
    if let Some(prev) = prev {
        let _ = write!(out, "\"p\":{prev},");
    }
    if let Some(tag) = tag {
        out.push_str("\"t\":");
        out.push_str(&json_string(tag));
        out.push(',');
    }
    out.push_str("\"b\":");
}

/// The checksum of an address row: CRC-32C of its address text.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(super) fn address_crc(id: i64, namespace: &str, key: &str) -> u32 {
    let mut text = String::new();
    address_text(&mut text, id, namespace, key);
    crc32c::crc32c(text.as_bytes())
}

/// The checksum of a record row: CRC-32C of its record text, `"p"` included.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(super) fn record_crc(seq: u64, address: i64, prev: u64, tag: Option<&str>, batch: &str) -> u32 {
    let mut head = String::with_capacity(64);
    record_head(&mut head, seq, address, Some(prev), tag);
    crc32c::crc32c_append(crc32c::crc32c(head.as_bytes()), batch.as_bytes())
}

/// A seq as a SQL `bigint` holds it (every seq handed out is at most `i64::MAX`).
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(super) fn to_sql(seq: u64) -> i64 {
    i64::try_from(seq).unwrap_or(i64::MAX)
}

/// Checks an address row's stored checksum against its id and names.
///
/// # Errors
///
/// [`Error::CorruptDatabase`] at `path` when they differ.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(super) fn check_address(path: &Path, id: i64, address: &Address, crc: i64) -> Result<()> {
    let computed = address_crc(id, &address.namespace, &address.key);
    if crc != i64::from(computed) {
        return Err(Error::CorruptDatabase {
            path: path.to_path_buf(),
            reason: format!(
                "address id {id} ({address}): checksum mismatch (stored {crc:08x}, computed \
                 {computed:08x})"
            ),
        });
    }
    Ok(())
}

/// The error for an address whose `last` link (`last`, 0 for none) disagrees with whether it
/// has records.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(super) fn newest_mismatch(
    path: &Path,
    address: &Address,
    last: u64,
    has_records: bool,
) -> Error {
    Error::CorruptRecord {
        path: path.to_path_buf(),
        address: address.clone(),
        seq: last,
        reason: format!(
            "the newest record of {address} should be {last}, but {}: a record is missing",
            if has_records {
                "it has records"
            } else {
                "it has none"
            }
        ),
    }
}

/// One record row as read, before it is checked.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(super) struct Row {
    pub(super) seq: i64,
    pub(super) prev: i64,
    pub(super) tag: Option<String>,
    pub(super) batch: String,
    pub(super) crc: i64,
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
impl Row {
    /// Checks, before compaction removes every record of `address` (id `id`) older than this
    /// one, that this row's checksum holds and that it links to `before`, the newest record
    /// it keeps apart from. Returns the checksum of the row once unlinked (`prev` 0, as for
    /// an address's first record).
    ///
    /// # Errors
    ///
    /// [`Error::CorruptRecord`] at `path` when either does not check out.
    pub(super) fn unlink(
        &self,
        path: &Path,
        address: &Address,
        id: i64,
        before: i64,
    ) -> Result<u32> {
        let seq = self.seq.max(0) as u64;
        let stored = record_crc(
            seq,
            id,
            self.prev.max(0) as u64,
            self.tag.as_deref(),
            &self.batch,
        );
        if self.crc != i64::from(stored) || self.prev != before {
            return Err(Error::CorruptRecord {
                path: path.to_path_buf(),
                address: address.clone(),
                seq,
                reason: format!(
                    "before compacting: its checksum or its link to the record before it \
                     ({before}, stored {}) does not check out",
                    self.prev
                ),
            });
        }
        Ok(record_crc(seq, id, 0, self.tag.as_deref(), &self.batch))
    }
}

/// One page of rows as a backend fetched it, with what the chain check needs around it.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(super) struct Fetched {
    /// The address's id.
    pub(super) id: i64,
    /// The address row's `last`: the seq of its newest record, 0 for none.
    pub(super) last: i64,
    /// The rows in the order read (`options.order`): one more than the page's limit when
    /// more follow.
    pub(super) rows: Vec<Row>,
    /// Ascending with a cursor: the seq of the newest record at or before the cursor.
    pub(super) older: Option<i64>,
    /// Descending with a cursor: (seq, prev) of the oldest record at or after the cursor.
    pub(super) newer: Option<(i64, i64)>,
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
impl Fetched {
    /// Checks the rows (see the module documentation: every checksum, and the chain among
    /// them and to their neighbours), then makes them the page `options` asks for: at most
    /// `limit` records, ending early after one tagged `stop_at_tag`, with a cursor when more
    /// follow.
    ///
    /// # Errors
    ///
    /// [`Error::CorruptRecord`] at `path` for the first row that does not check out.
    pub(super) fn into_page(
        self,
        path: &Path,
        address: &Address,
        options: &ReadOptions,
    ) -> Result<Page> {
        self.verify(path, address, options)?;
        let fetched = self.rows.len();
        let mut records = Vec::new();
        for r in self.rows.into_iter().take(options.limit) {
            let record = Record {
                seq: r.seq as u64,
                tag: r.tag,
                batch: r.batch,
            };
            let stop = options.stops_at(record.tag.as_deref());
            records.push(record);
            if stop {
                break;
            }
        }
        let next_cursor = if fetched > records.len() {
            records.last().map(|r| r.seq)
        } else {
            None
        };
        Ok(Page {
            records,
            next_cursor,
        })
    }

    fn verify(&self, path: &Path, address: &Address, options: &ReadOptions) -> Result<()> {
        let corrupt = |seq: i64, reason: String| Error::CorruptRecord {
            path: path.to_path_buf(),
            address: address.clone(),
            seq: seq.max(0) as u64,
            reason,
        };
        for r in &self.rows {
            if r.seq < 1 || r.prev < 0 || r.prev >= r.seq {
                return Err(corrupt(
                    r.seq,
                    format!("impossible seq {} with previous record {}", r.seq, r.prev),
                ));
            }
            let computed = record_crc(
                r.seq as u64,
                self.id,
                r.prev as u64,
                r.tag.as_deref(),
                &r.batch,
            );
            if r.crc != i64::from(computed) {
                return Err(corrupt(
                    r.seq,
                    format!(
                        "checksum mismatch (stored {:08x}, computed {computed:08x})",
                        r.crc
                    ),
                ));
            }
        }
        let missing = |seq: i64, expected: i64, found: i64| {
            corrupt(
                seq,
                format!(
                    "its previous record should be {expected}, but the record before it is \
                     {found}: a record of {address} is missing or out of place"
                ),
            )
        };
        let reached_end = self.rows.len() <= options.limit;
        let mut asc: Vec<&Row> = self.rows.iter().collect();
        if options.order == Order::Desc {
            asc.reverse();
        }
        let (first_known, last_known) = match options.order {
            // The page starts at the list's beginning when there is no cursor (or nothing
            // before it), and ends at its end when fewer rows came than asked for.
            Order::Asc => (true, reached_end),
            Order::Desc => (reached_end, self.newer.is_none()),
        };
        let mut before = self.older.unwrap_or(0);
        for (i, r) in asc.iter().enumerate() {
            let checked = i > 0 || first_known || self.older.is_some();
            if checked && r.prev != before {
                return Err(missing(r.seq, r.prev, before));
            }
            before = r.seq;
        }
        if let Some((seq, prev)) = self.newer {
            if prev != before {
                return Err(missing(seq, prev, before));
            }
        }
        if last_known && before != self.last {
            let seq = if self.last > 0 { self.last } else { before };
            return Err(corrupt(
                seq,
                format!(
                    "the newest record of {address} should be {}, but it is {before}: a record \
                     is missing",
                    self.last
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The expected checksums come from a bit-by-bit CRC-32C written apart from this crate
    // (polynomial 0x82F63B78 reflected, which gives the standard check value e3069283 for
    // "123456789"), over the texts as spelled here.

    #[test]
    fn address_text_is_the_jsonl_definition_line_and_the_sql_checksum_input() {
        let mut text = String::new();
        address_text(&mut text, 1u64, "lanes", "main");
        assert_eq!(text, r#"{"def":1,"ns":"lanes","key":"main""#);
        let mut escaped = String::new();
        address_text(&mut escaped, 7i64, "a\"b", "\u{1}é");
        assert_eq!(escaped, "{\"def\":7,\"ns\":\"a\\\"b\",\"key\":\"\\u0001é\"");
    }

    #[test]
    fn record_head_spells_each_member_in_order() {
        let mut sql = String::new();
        record_head(&mut sql, 17, 1i64, Some(0), Some("base"));
        assert_eq!(sql, r#"{"s":17,"a":1,"p":0,"t":"base","b":"#);
        let mut jsonl = String::new();
        record_head(&mut jsonl, 5, 2u64, None, Some("base"));
        assert_eq!(jsonl, r#"{"s":5,"a":2,"t":"base","b":"#);
        let mut untagged = String::new();
        record_head(&mut untagged, 18, 1i64, Some(17), None);
        assert_eq!(untagged, r#"{"s":18,"a":1,"p":17,"b":"#);
    }

    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    #[test]
    fn checksums_match_an_independent_crc32c() {
        assert_eq!(address_crc(1, "lanes", "main"), 0xbcc2_e127);
        assert_eq!(address_crc(7, "a\"b", "\u{1}é"), 0xb322_f370);
        assert_eq!(
            record_crc(17, 1, 0, Some("base"), r#"[["r",{}]]"#),
            0xb0a5_7b0c
        );
        assert_eq!(
            record_crc(18, 1, 17, None, r#"[["s",["n"],2]]"#),
            0x6733_240a
        );
    }

    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    mod chain {
        use super::super::*;

        const ID: i64 = 3;

        /// A sound row of address [`ID`].
        fn row(seq: i64, prev: i64, tag: Option<&str>) -> Row {
            let batch = format!("[[\"s\",[\"n\"],{seq}]]");
            let crc = i64::from(record_crc(seq as u64, ID, prev as u64, tag, &batch));
            Row {
                seq,
                prev,
                tag: tag.map(str::to_owned),
                batch,
                crc,
            }
        }

        fn fetched(last: i64, rows: Vec<Row>) -> Fetched {
            Fetched {
                id: ID,
                last,
                rows,
                older: None,
                newer: None,
            }
        }

        fn page(f: Fetched, options: &ReadOptions) -> Result<Page> {
            f.into_page(Path::new("db"), &Address::new("n", "k"), options)
        }

        fn reason(result: Result<Page>) -> (u64, String) {
            match result {
                Err(Error::CorruptRecord { seq, reason, .. }) => (seq, reason),
                other => panic!("expected CorruptRecord, got {other:?}"),
            }
        }

        fn seqs(page: &Page) -> Vec<u64> {
            page.records.iter().map(|r| r.seq).collect()
        }

        #[test]
        fn a_sound_chain_pages_with_a_cursor_and_stops_at_a_tag() {
            let rows = vec![row(1, 0, Some("base")), row(4, 1, None), row(9, 4, None)];
            let p = page(fetched(9, rows), &ReadOptions::asc().limit(2)).unwrap();
            assert_eq!(seqs(&p), [1, 4]);
            assert_eq!(p.next_cursor, Some(4));

            let rows = vec![row(9, 4, None), row(4, 1, None), row(1, 0, Some("base"))];
            let options = ReadOptions::desc().stop_at_tag("base");
            let p = page(fetched(9, rows), &options).unwrap();
            assert_eq!(seqs(&p), [9, 4, 1]);
            assert_eq!(p.next_cursor, None);
        }

        #[test]
        fn a_missing_record_in_the_middle_is_named() {
            // Record 4 is gone: 9 names it as its previous record.
            let rows = vec![row(1, 0, None), row(9, 4, None)];
            let (seq, why) = reason(page(fetched(9, rows), &ReadOptions::asc()));
            assert_eq!(seq, 9);
            assert!(
                why.contains("should be 4, but the record before it is 1"),
                "{why}"
            );
        }

        #[test]
        fn a_missing_newest_record_is_named_by_the_address_link() {
            let rows = vec![row(1, 0, None), row(4, 1, None)];
            let (seq, why) = reason(page(fetched(9, rows), &ReadOptions::asc()));
            assert_eq!(seq, 9);
            assert!(
                why.contains("newest record of n/k should be 9, but it is 4"),
                "{why}"
            );
        }

        #[test]
        fn a_changed_batch_fails_its_checksum() {
            let mut changed = row(4, 1, None);
            changed.batch.push(' ');
            let rows = vec![row(1, 0, None), changed];
            let (seq, why) = reason(page(fetched(4, rows), &ReadOptions::asc()));
            assert_eq!(seq, 4);
            assert!(why.starts_with("checksum mismatch"), "{why}");
        }

        #[test]
        fn an_impossible_link_is_refused_before_any_checksum() {
            let rows = vec![row(4, 4, None)];
            let (seq, why) = reason(page(fetched(4, rows), &ReadOptions::asc()));
            assert_eq!(seq, 4);
            assert_eq!(why, "impossible seq 4 with previous record 4");
        }

        #[test]
        fn the_neighbours_past_a_cursor_are_checked() {
            // Ascending after cursor 4: the record before the page is 1, not 4.
            let mut f = fetched(9, vec![row(9, 4, None)]);
            f.older = Some(1);
            let (seq, _) = reason(page(f, &ReadOptions::asc().cursor(Some(4))));
            assert_eq!(seq, 9);
            // Descending before cursor 9: the record after the page names 4, not 1.
            let mut f = fetched(9, vec![row(1, 0, None)]);
            f.newer = Some((9, 4));
            let (seq, why) = reason(page(f, &ReadOptions::desc().cursor(Some(9))));
            assert_eq!(seq, 9);
            assert!(
                why.contains("should be 4, but the record before it is 1"),
                "{why}"
            );
        }

        #[test]
        fn unlinking_rechecks_the_row_and_drops_its_link() {
            let kept = row(9, 4, Some("base"));
            let at = Address::new("n", "k");
            let crc = kept.unlink(Path::new("db"), &at, ID, 4).unwrap();
            assert_eq!(crc, record_crc(9, ID, 0, Some("base"), &kept.batch));
            assert_ne!(i64::from(crc), kept.crc);
            let err = kept.unlink(Path::new("db"), &at, ID, 1).unwrap_err();
            assert!(matches!(err, Error::CorruptRecord { seq: 9, .. }), "{err}");
        }
    }
}
