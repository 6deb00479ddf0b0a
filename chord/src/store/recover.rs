//! Recovery: read back to the last base record, then decode and apply forward.

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{is_base_tag, Address, Error, ReadOptions, Record, Result, Store, BASE};
use crate::{Decoder, Limits};

/// Records read per page while looking for the last base record.
const PAGE: usize = 100;

/// What a recovery found: the value, and how much history it took.
#[derive(Clone, Debug, PartialEq)]
pub struct Replay {
    /// The recovered value; `None` when the address has no records (up to the seq asked for).
    pub value: Option<Value>,
    /// The seq of the last record applied.
    pub seq: Option<u64>,
    /// The seq of the base record replay started from; `None` when the history up to `seq`
    /// has no base record, and replay started from its first record.
    pub base_seq: Option<u64>,
    /// How many records were decoded and applied, the base record included.
    pub batches: usize,
}

/// Recovers the value at `address`: the last base record and everything after it, decoded
/// with a fresh [`Decoder`] and applied in order. `None` when the address has no records.
///
/// Cost: proportional to the records since the last base batch (see
/// [`Checkpoint`](super::Checkpoint)), not to the length of the history.
///
/// # Errors
///
/// A store error while reading; [`Error::Replay`] naming the record whose batch does not
/// decode or apply (a history that does not start with a base batch fails this way at its
/// first record).
///
/// # Examples
///
/// ```
/// use chord::store::{recover, Address, Durability, JsonlStore, Store, BASE};
/// let dir = tempfile::tempdir()?;
/// let mut log = JsonlStore::open(dir.path().join("log.jsonl"), Durability::EveryAppend)?;
/// let a = Address::new("ns", "k");
/// log.append(&a, r#"[["r",{"n":1}]]"#, Some(BASE))?;
/// log.append(&a, r#"[["s",["n"],2]]"#, None)?;
/// assert_eq!(recover(&log, &a)?, Some(serde_json::json!({"n": 2})));
/// assert_eq!(recover(&log, &Address::new("ns", "other"))?, None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn recover<S: Store + ?Sized>(store: &S, address: &Address) -> Result<Option<Value>> {
    Ok(replay(store, address, None)?.value)
}

/// Recovers the value at `address` as it was right after record `seq`: only records with a
/// seq up to `seq` count. `None` when there are none.
///
/// # Errors
///
/// As [`recover`].
///
/// # Examples
///
/// ```
/// use chord::store::{recover_at, Address, Durability, JsonlStore, Store, BASE};
/// let dir = tempfile::tempdir()?;
/// let mut log = JsonlStore::open(dir.path().join("log.jsonl"), Durability::EveryAppend)?;
/// let a = Address::new("ns", "k");
/// let first = log.append(&a, r#"[["r",{"n":1}]]"#, Some(BASE))?;
/// log.append(&a, r#"[["s",["n"],2]]"#, None)?;
/// assert_eq!(recover_at(&log, &a, first)?, Some(serde_json::json!({"n": 1})));
/// assert_eq!(recover_at(&log, &a, first - 1)?, None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn recover_at<S: Store + ?Sized>(
    store: &S,
    address: &Address,
    seq: u64,
) -> Result<Option<Value>> {
    Ok(replay(store, address, Some(seq))?.value)
}

/// Recovers the value at `address` as the user's type.
///
/// # Errors
///
/// As [`recover`], and [`Error::Deserialize`] when the value does not fit `T`.
///
/// # Examples
///
/// ```
/// use chord::store::{recover_as, Address, JsonlStore, Store, BASE};
/// #[derive(serde::Deserialize, Debug, PartialEq)]
/// struct Counter {
///     n: u32,
/// }
/// let dir = tempfile::tempdir()?;
/// let mut log = JsonlStore::open(dir.path().join("log.jsonl"), Default::default())?;
/// let a = Address::new("ns", "k");
/// log.append(&a, r#"[["r",{"n":1}]]"#, Some(BASE))?;
/// assert_eq!(recover_as::<Counter, _>(&log, &a)?, Some(Counter { n: 1 }));
/// assert!(recover_as::<Vec<u32>, _>(&log, &a).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn recover_as<T: DeserializeOwned, S: Store + ?Sized>(
    store: &S,
    address: &Address,
) -> Result<Option<T>> {
    match recover(store, address)? {
        None => Ok(None),
        Some(value) => {
            serde_json::from_value(value)
                .map(Some)
                .map_err(|source| Error::Deserialize {
                    address: address.clone(),
                    source,
                })
        }
    }
}

/// Recovers the value at `address` (up to record `at` when given) and reports how: which
/// base record replay started from and how many records it applied.
///
/// Reads descending pages of 100 records with `stop_at_tag` [`BASE`], paging on with the
/// cursor while a page holds no base record, then decodes and applies forward.
///
/// # Errors
///
/// As [`recover`].
///
/// # Examples
///
/// ```
/// use chord::store::{replay, Address, Durability, JsonlStore, Store, BASE};
/// let dir = tempfile::tempdir()?;
/// let mut log = JsonlStore::open(dir.path().join("log.jsonl"), Durability::EveryAppend)?;
/// let a = Address::new("ns", "k");
/// log.append(&a, r#"[["r",{"n":1}]]"#, Some(BASE))?;
/// log.append(&a, r#"[["s",["n"],2]]"#, None)?;
/// let base = log.append(&a, r#"[["r",{"n":3}]]"#, Some(BASE))?;
/// let last = log.append(&a, r#"[["s",["n"],4]]"#, None)?;
/// let r = replay(&log, &a, None)?;
/// assert_eq!((r.base_seq, r.seq, r.batches), (Some(base), Some(last), 2));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn replay<S: Store + ?Sized>(store: &S, address: &Address, at: Option<u64>) -> Result<Replay> {
    let mut options = ReadOptions::desc()
        .limit(PAGE)
        .stop_at_tag(BASE)
        // Records up to `at`, included: a descending cursor is exclusive. Up to `u64::MAX`
        // means every record (no cursor: a record may have that very seq).
        .cursor(at.and_then(|seq| seq.checked_add(1)));
    let mut newest_first: Vec<Record> = Vec::new();
    let mut base_seq = None;
    loop {
        let page = store.read_list(address, &options)?;
        if let Some(last) = page.records.last() {
            if is_base_tag(last.tag.as_deref()) {
                base_seq = Some(last.seq);
            }
        }
        newest_first.extend(page.records);
        if base_seq.is_some() || page.next_cursor.is_none() {
            break;
        }
        options.cursor = page.next_cursor;
    }
    let mut decoder = Decoder::new();
    let limits = Limits::default();
    let mut value = None;
    for record in newest_first.iter().rev() {
        let failed = |source| Error::Replay {
            address: address.clone(),
            seq: record.seq,
            source,
        };
        decoder
            .apply_str(&record.batch, &mut value, &limits)
            .map_err(failed)?;
    }
    Ok(Replay {
        value,
        seq: newest_first.first().map(|r| r.seq),
        base_seq,
        batches: newest_first.len(),
    })
}
