//! What the state costs on the wire of each door, on the workloads: AG-UI's `STATE_DELTA`
//! (each flush's ops turned into an RFC 6902 JSON Patch by `chord::ag_ui::Patcher`) beside the
//! snapshot a producer without ops would send (the whole state, `serde_json::to_string`) and
//! chord's own wire batch; and the AI SDK door's transient `data-chord` chunk (the flush's ops
//! as JSON, `chord::ai_sdk`'s framing) beside the `data-state` chunk a runtime sending the whole
//! state per flush would send; all on the same flushes. Bytes, not time, so the figures are the same on every machine: the
//! `patch-bytes` binary prints the section `scripts/patch-bytes` writes into
//! `BENCHMARKS.md`, and `tests/patch_bytes.rs` fails when the committed section is not what
//! [`section`] computes now.

use chord::ag_ui::Patcher;
use chord::{Op, Tracked};
use serde::Serialize;
use serde_json::json;

use crate::workloads::*;

/// What one workload's flushes cost, summed over its steps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bytes {
    /// Flushes that emitted ops (every step of these workloads does).
    pub flushes: usize,
    /// chord's wire batches (the encoder's JSON text, path ids and all).
    pub wire: usize,
    /// The JSON Patches, each serialized as the RFC's JSON array.
    pub patch: usize,
    /// The state after each flush, serialized whole.
    pub snapshot: usize,
    /// The AI SDK door's chunk per flush, `{"type":"data-chord","data":<the ops>,
    /// "transient":true}` as [`data_chord`] builds it, serialized.
    pub data_chord: usize,
    /// The chunk carrying the whole state after each flush, `{"type":"data-state",
    /// "id":"state","data":<the state>}`, serialized: [`snapshot`](Bytes::snapshot) plus
    /// [`data_state_envelope`] per flush.
    pub data_state: usize,
}

/// The AI SDK door's chunk for one flush's `ops`, as `chord::ai_sdk`'s framing writes it (the
/// ops as JSON tuples, `serde_json::to_value(ops)`, in a transient `data-chord` part).
pub fn data_chord(ops: &[Op]) -> serde_json::Value {
    json!({"type": "data-chord", "data": serde_json::to_value(ops).unwrap(), "transient": true})
}

/// The bytes a `data-state` chunk adds around the state's JSON text:
/// `{"type":"data-state","id":"state","data":` and `}` (the state itself is counted once, as
/// [`Bytes::snapshot`], rather than serialized again inside the chunk).
pub fn data_state_envelope() -> usize {
    let empty = json!({"type": "data-state", "id": "state", "data": null});
    serde_json::to_string(&empty).unwrap().len() - "null".len()
}

/// Runs `steps` steps of `run`: each flush's ops through a [`Patcher`] (its patch applied
/// strictly to a client's copy of the state, which must end equal to the state) and the
/// bytes of each form added up.
///
/// # Panics
///
/// When a patch does not apply, or the client ends anywhere but at the state: the figures
/// would then measure a broken patcher.
pub fn measure<T: Tracked + Serialize>(mut run: ChordRun<T>, steps: usize) -> Bytes {
    let start = serde_json::to_value(run.t.get()).unwrap();
    let mut patcher = Patcher::new(start.clone());
    let mut client = start;
    let mut b = Bytes::default();
    let envelope = data_state_envelope();
    for i in 0..steps {
        let (ops, wire) = run.step_ops(i);
        let delta = patcher.patch(&ops).unwrap();
        json_patch::patch(&mut client, &delta).unwrap();
        if ops.is_empty() {
            continue;
        }
        b.flushes += 1;
        b.wire += wire.len();
        b.patch += serde_json::to_string(&delta).unwrap().len();
        let snapshot = serde_json::to_string(run.t.get()).unwrap().len();
        b.snapshot += snapshot;
        b.data_chord += serde_json::to_string(&data_chord(&ops)).unwrap().len();
        b.data_state += envelope + snapshot;
    }
    assert_eq!(client, serde_json::to_value(run.t.get()).unwrap());
    b
}

/// A workload's name, its step count, and what measures that many steps of it.
pub type Workload = (&'static str, usize, fn(usize) -> Bytes);

/// The workloads measured, with their step counts: W1-W7 (W4 and W4L by `drop_front` and
/// `push_str`, chord's window case) and the shapes S1-S6, as `BENCHMARKS.md` describes them.
pub fn workloads() -> Vec<Workload> {
    vec![
        ("W1", 1000, |n| measure(chord_w1(), n)),
        ("W2", 100, |n| measure(chord_w2(), n)),
        ("W3", 100, |n| measure(chord_w3(), n)),
        ("W4", 2000, |n| measure(chord_w4_window(false), n)),
        ("W4r", 2000, |n| measure(chord_w4_window(true), n)),
        ("W4L", 50, |n| measure(chord_w4l_window(), n)),
        ("W5", 5000, |n| measure(chord_w5(0), n)),
        ("W6", 1000, |n| measure(chord_w6(0), n)),
        ("W7", 1, |n| measure(chord_w7(), n)),
        ("S1", S1_STEPS, |n| measure(chord_s1(), n)),
        ("S2", S2_STEPS, |n| measure(chord_s2(), n)),
        ("S3", S3_STEPS, |n| measure(chord_s3(), n)),
        ("S4", S4_STEPS, |n| measure(chord_s4(), n)),
        ("S5", S5_STEPS, |n| measure(chord_s5(), n)),
        ("S6", S6_STEPS, |n| measure(chord_s6(), n)),
    ]
}

/// Every workload of [`workloads`], measured.
pub fn measure_all() -> Vec<(&'static str, usize, Bytes)> {
    workloads()
        .into_iter()
        .map(|(name, steps, run)| (name, steps, run(steps)))
        .collect()
}

/// What `scripts/patch-bytes` writes between its markers in `BENCHMARKS.md`: the command,
/// the table of [`measure_all`], and what the table says.
pub fn section() -> String {
    render(&measure_all())
}

/// The Markdown of [`section`] for `rows`.
pub fn render(rows: &[(&str, usize, Bytes)]) -> String {
    let mut s = String::new();
    s.push_str(
        "Written by `scripts/patch-bytes` (`cargo run --release -p chord-bench --features \
         ag-ui --bin patch-bytes`); bytes summed over every flush of each workload. \
         `cargo test -p chord-bench --features ag-ui --test patch_bytes` fails when this \
         section is not what the code computes now.\n\n",
    );
    s.push_str(
        "| workload | flushes | chord wire | JSON Patch | snapshots | JSON Patch / chord wire \
         | snapshots / JSON Patch | AI SDK data-chord | whole-state data-state \
         | data-state / data-chord |\n",
    );
    s.push_str("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (name, _, b) in rows {
        s.push_str(&format!(
            "| {name} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            thousands(b.flushes),
            thousands(b.wire),
            thousands(b.patch),
            thousands(b.snapshot),
            ratio(b.patch, b.wire),
            ratio(b.snapshot, b.patch),
            thousands(b.data_chord),
            thousands(b.data_state),
            ratio(b.data_state, b.data_chord),
        ));
    }
    // What the table says, from the figures: the workloads whose step edits a long string
    // (where RFC 6902 can only replace the string whole) against the rest.
    let (strings, rest): (Vec<Row<'_>>, Vec<Row<'_>>) =
        rows.iter().partition(|(_, _, b)| b.patch >= 10 * b.wire);
    let names = |rows: &[Row<'_>]| {
        rows.iter()
            .map(|(n, _, _)| *n)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let over_wire = |b: &Bytes| (b.patch, b.wire);
    let snapshot_over = |b: &Bytes| (b.snapshot, b.patch);
    s.push('\n');
    if !rest.is_empty() {
        s.push_str(&format!(
            "Where a step changes a member, an element or a counter ({}), the patch says what \
             chord's wire says, with op names, whole paths and no path ids: {} chord's bytes, \
             while a snapshot per flush is {} the patch's",
            names(&rest),
            span(&rest, over_wire),
            span(&rest, snapshot_over),
        ));
        let tiny: Vec<Row<'_>> = rest
            .iter()
            .copied()
            .filter(|(_, _, b)| b.snapshot < b.patch)
            .collect();
        if tiny.is_empty() {
            s.push('.');
        } else {
            let sizes = tiny
                .iter()
                .map(|(n, _, b)| format!("{n}, {} bytes", b.snapshot / b.flushes.max(1)))
                .collect::<Vec<_>>()
                .join("; ");
            s.push_str(&format!(
                " (smaller only where the whole state is a few bytes: {sizes})."
            ));
        }
    }
    if !strings.is_empty() {
        s.push_str(&format!(
            " Where a step edits a long string ({}), the patch loses to chord's wire by {}: \
             RFC 6902 has no string edit, so each append or cut carries the whole new string, \
             as large as a snapshot ({} of the patch). Streamed text belongs in AG-UI's text \
             events, not in state.",
            names(&strings),
            span(&strings, over_wire),
            span(&strings, snapshot_over),
        ));
    }
    s.push_str("\n\n");
    s.push_str(&ai_sdk_prose(rows));
    s.push('\n');
    s
}

/// What the AI SDK columns say, from the figures: where the `data-chord` chunks are smaller
/// than whole-state `data-state` chunks (chord wins: the long strings, whose ops carry only
/// the edit, and the rest), and where not (a state of a few bytes).
fn ai_sdk_prose(rows: &[(&str, usize, Bytes)]) -> String {
    let state_over_chord = |b: &Bytes| (b.data_state, b.data_chord);
    let (wins, losses): (Vec<Row<'_>>, Vec<Row<'_>>) = rows
        .iter()
        .partition(|(_, _, b)| b.data_state > b.data_chord);
    let (strings, rest): (Vec<Row<'_>>, Vec<Row<'_>>) =
        wins.iter().partition(|(_, _, b)| b.patch >= 10 * b.wire);
    let names = |rows: &[Row<'_>]| {
        rows.iter()
            .map(|(n, _, _)| *n)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let per_flush = |b: &Bytes, n: usize| thousands(n / b.flushes.max(1));
    let envelope = serde_json::to_string(&data_chord(&[])).unwrap().len() - "[]".len();
    let mut s = format!(
        "On the AI SDK door, a flush's transient `data-chord` chunk is its ops inline (whole \
         paths, no path ids) in a {envelope}-byte envelope, so it is larger than chord's wire \
         batch"
    );
    if wins.is_empty() {
        s.push('.');
    } else {
        s.push_str(&format!(
            "; a runtime that sends the whole state as a `data-state` chunk per flush sends \
             more on {} of the {} workloads",
            wins.len(),
            rows.len()
        ));
        let mut parts = Vec::new();
        if !strings.is_empty() {
            parts.push(format!(
                "{} where a step edits a long string ({}), whose ops carry only the appended \
                 text or the cut",
                span(&strings, state_over_chord),
                names(&strings),
            ));
        }
        if !rest.is_empty() {
            let top = rest
                .iter()
                .max_by(|a, b| {
                    let r = |b: &Bytes| b.data_state as f64 / b.data_chord as f64;
                    r(&a.2).total_cmp(&r(&b.2))
                })
                .unwrap();
            parts.push(format!(
                "{} elsewhere ({}), most where a step touches little of a large state ({}: \
                 {} bytes per flush against {})",
                span(&rest, state_over_chord),
                names(&rest),
                top.0,
                per_flush(&top.2, top.2.data_state),
                per_flush(&top.2, top.2.data_chord),
            ));
        }
        s.push_str(&format!(": {}.", parts.join(", and ")));
    }
    if !losses.is_empty() {
        let each = losses
            .iter()
            .map(|(n, _, b)| {
                format!(
                    "{n}, {} bytes of `data-state` against {} of `data-chord` per flush, {}",
                    per_flush(b, b.data_state),
                    per_flush(b, b.data_chord),
                    ratio(b.data_state, b.data_chord),
                )
            })
            .collect::<Vec<_>>()
            .join("; ");
        s.push_str(&format!(
            " chord loses where the whole state is smaller than that envelope ({each})."
        ));
    }
    s
}

/// A row of the table: a workload's name, its step count, its bytes.
type Row<'a> = &'a (&'a str, usize, Bytes);

/// The span of `f`'s ratio over `rows`: `lo–hi`, or one figure when both are equal.
fn span(rows: &[Row<'_>], f: fn(&Bytes) -> (usize, usize)) -> String {
    let r = |b: &Bytes| {
        let (x, y) = f(b);
        x as f64 / y as f64
    };
    let lo = rows
        .iter()
        .map(|(_, _, b)| b)
        .min_by(|a, b| r(a).total_cmp(&r(b)));
    let hi = rows
        .iter()
        .map(|(_, _, b)| b)
        .max_by(|a, b| r(a).total_cmp(&r(b)));
    match (lo, hi) {
        (Some(lo), Some(hi)) => {
            let ((a, b), (c, d)) = (f(lo), f(hi));
            let (lo, hi) = (ratio(a, b), ratio(c, d));
            if lo == hi {
                lo
            } else {
                format!("{lo}–{hi}")
            }
        }
        _ => String::new(),
    }
}

fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `a / b` with three significant figures or more: `0.235x`, `1.65x`, `59.6x`, `6,858x`.
fn ratio(a: usize, b: usize) -> String {
    if b == 0 {
        return String::new();
    }
    let r = a as f64 / b as f64;
    if r >= 1000.0 {
        format!("{}x", thousands(r.round() as usize))
    } else if r >= 100.0 {
        format!("{r:.0}x")
    } else if r >= 10.0 {
        format!("{r:.1}x")
    } else if r >= 1.0 {
        format!("{r:.2}x")
    } else {
        format!("{r:.3}x")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
    }

    #[test]
    fn ratios_keep_three_figures() {
        assert_eq!(ratio(43, 10), "4.30x");
        assert_eq!(ratio(10, 43), "0.233x");
        assert_eq!(ratio(596, 10), "59.6x");
        assert_eq!(ratio(6858, 1), "6,858x");
        assert_eq!(ratio(1, 0), "");
    }
}
