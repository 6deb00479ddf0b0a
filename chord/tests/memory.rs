//! Heap cost of tracking, measured with a counting global allocator (its own test binary, as a
//! global allocator applies to the whole binary).
//!
//! The target: the W5big state after its 1,000 flushes costs at most 25% more heap
//! than the same state untracked. The tracker keeps no baseline copy; between flushes it only
//! remembers what changed.

#[path = "support/workloads.rs"]
mod workloads;

#[path = "support/counting.rs"]
mod counting;

use std::sync::atomic::Ordering::Relaxed;

use counting::{LIVE, ONE_AT_A_TIME, PEAK};

use workloads::{
    ch, chord_w5big, chord_w6, w5big_chunk, w5big_text, Run, CH_ENTRIES, W6BIG_ENTRIES,
};

#[global_allocator]
static ALLOC: counting::Counting = counting::Counting;

fn live() -> usize {
    LIVE.load(Relaxed)
}

/// Starts a new high-water mark at the current live bytes.
fn reset_peak() {
    PEAK.store(live(), Relaxed);
}

fn mb(bytes: usize) -> String {
    format!("{:.2} MB", bytes as f64 / 1e6)
}

/// Heap held by `build()`'s result after `steps(result)`, above what was live before.
fn held<T>(build: impl FnOnce() -> T, steps: impl FnOnce(&mut T)) -> (usize, T) {
    let before = live();
    let mut value = build();
    steps(&mut value);
    (live() - before, value)
}

#[test]
fn tracking_adds_at_most_a_quarter_to_the_heap() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // Load the shared inputs first, so their (one-time) allocations are not counted below.
    let _ = (w5big_chunk(0), CH_ENTRIES.len());

    // W5big: a 10 MB message, 1,000 appends of 100 characters.
    let (untracked, state) = held(
        || ch::Messages {
            messages: vec![ch::Message {
                role: "assistant".into(),
                content: w5big_text(),
            }],
        },
        |s| {
            for i in 0..1000 {
                s.messages[0].content.push_str(w5big_chunk(i));
            }
        },
    );
    drop(state);
    reset_peak();
    let start = live();
    let (tracked, run) = held(chord_w5big, |run| {
        let base_peak = PEAK.load(Relaxed) - start;
        eprintln!(
            "W5big: peak while draining the base batch: {}",
            mb(base_peak)
        );
        reset_peak();
        let steady = live();
        for i in 0..1000 {
            run.step(i);
        }
        let steps_peak = PEAK.load(Relaxed) - steady;
        eprintln!("W5big: peak above the state during the 1,000 steps: {steps_peak} bytes");
    });
    eprintln!(
        "W5big: untracked {} ({untracked} B), tracked after 1,000 flushes {} ({tracked} B), ratio {:.4}",
        mb(untracked),
        mb(tracked),
        tracked as f64 / untracked as f64
    );
    assert!(
        tracked as f64 <= 1.25 * untracked as f64,
        "W5big: tracked {tracked} B > 1.25 × untracked {untracked} B"
    );
    drop(run);

    // W6big: 10,000 transcript entries, 1,000 pushes.
    let (untracked, state) = held(
        || ch::Transcript {
            transcript: CH_ENTRIES
                .iter()
                .cycle()
                .take(W6BIG_ENTRIES)
                .cloned()
                .collect(),
        },
        |s| {
            for i in 0..1000 {
                s.transcript.push(CH_ENTRIES[i % 1000].clone());
            }
        },
    );
    drop(state);
    let (tracked, run) = held(
        || chord_w6(W6BIG_ENTRIES),
        |run| {
            for i in 0..1000 {
                run.step(i);
            }
        },
    );
    eprintln!(
        "W6big: untracked {} ({untracked} B), tracked after 1,000 flushes {} ({tracked} B), ratio {:.4}",
        mb(untracked),
        mb(tracked),
        tracked as f64 / untracked as f64
    );
    assert!(
        tracked as f64 <= 1.25 * untracked as f64,
        "W6big: tracked {tracked} B > 1.25 × untracked {untracked} B"
    );
    drop(run);
}

/// Heap figures of one [`distinct_paths`] run.
#[derive(Debug)]
struct PathsRun {
    /// The state alone, untracked, after the same edits.
    untracked: usize,
    /// State, tracker, encoder and decoder after every element was edited once.
    once: usize,
    /// The encoder's and the decoder's heap after every element was edited twice.
    encoder: usize,
    decoder: usize,
}

/// `n` items named by their index.
fn items(n: usize) -> Vec<ch::Item> {
    (0..n)
        .map(|i| ch::Item {
            id: i as i64,
            name: format!("item{i}"),
        })
        .collect()
}

/// `n` elements each edited once (n distinct paths, each seen once), then each edited again
/// (every path seen twice: ids are defined and, past `MAX_IDS`, recycled); 100 edits a batch,
/// flushed straight to bytes and decoded, as a producer and a replica would.
fn distinct_paths(n: usize) -> PathsRun {
    use chord::{track, Decoder, Encoder, Tracker};
    let (untracked, state) = held(
        || ch::Items { items: items(n) },
        |s| s.items.iter_mut().for_each(|item| item.name.push('!')),
    );
    drop(state);

    fn send(t: &mut Tracker<ch::Items>, enc: &mut Encoder, dec: &mut Decoder, wire: &mut Vec<u8>) {
        wire.clear();
        if t.flush_into(enc, wire).unwrap() > 0 {
            drop(dec.decode_str(std::str::from_utf8(wire).unwrap()).unwrap());
        }
    }
    let before = live();
    let mut t = track(ch::Items { items: items(n) });
    let mut enc = Encoder::new();
    let mut dec = Decoder::new();
    let mut wire = Vec::new();
    send(&mut t, &mut enc, &mut dec, &mut wire);
    let mut once = 0;
    for (pass, mark) in ['!', '?'].into_iter().enumerate() {
        for start in (0..n).step_by(100) {
            let mut s = t.state();
            for i in start..(start + 100).min(n) {
                s.items.at(i).name.push(mark);
            }
            send(&mut t, &mut enc, &mut dec, &mut wire);
        }
        // The wire buffer is the caller's (reused, then freed): not what tracking holds.
        wire = Vec::new();
        if pass == 0 {
            once = live() - before;
        }
    }
    let at = live();
    drop(dec);
    let decoder = at - live();
    let at = live();
    drop(enc);
    let encoder = at - live();
    drop(t);
    PathsRun {
        untracked,
        once,
        encoder,
        decoder,
    }
}

#[test]
fn the_codec_tables_stay_bounded_whatever_the_number_of_paths() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut runs = Vec::new();
    for n in [10_000, 1_000_000] {
        let run = distinct_paths(n);
        eprintln!(
            "{n} distinct paths: untracked {} B; tracked, encoder and decoder after one edit \
             each {} B (ratio {:.3}); after two edits each, encoder {} B, decoder {} B",
            run.untracked,
            run.once,
            run.once as f64 / run.untracked as f64,
            run.encoder,
            run.decoder
        );
        assert!(
            run.once as f64 <= 1.25 * run.untracked as f64,
            "{n} paths: {run:?} exceeds 1.25x"
        );
        runs.push(run);
    }
    // A hundred times the paths, the same tables: bounded by MAX_IDS, not by the stream.
    let (small, large) = (&runs[0], &runs[1]);
    assert!(
        large.encoder <= small.encoder + 16_384,
        "{small:?} {large:?}"
    );
    assert!(
        large.decoder <= small.decoder + 16_384,
        "{small:?} {large:?}"
    );
}

/// Heap held by a tracker, its encoder and a decoder after `flushes`, above what was live
/// before the tracker was made, for `n` elements that one flush edits all at once.
fn after_a_huge_flush(n: usize, later: usize) -> (usize, usize) {
    use chord::{track, Decoder, Encoder};
    // The untracked state after the same edits.
    let (untracked, state) = held(
        || ch::Items { items: items(n) },
        |s| s.items.iter_mut().for_each(|item| item.name.push('!')),
    );
    drop(state);
    let before = live();
    let mut t = track(ch::Items { items: items(n) });
    let mut enc = Encoder::new();
    let mut dec = Decoder::new();
    let mut wire = Vec::new();
    let mut replica = None;
    let mut send = |t: &mut chord::Tracker<ch::Items>, replica: &mut Option<serde_json::Value>| {
        wire.clear();
        t.flush_into(&mut enc, &mut wire).unwrap();
        let text = std::str::from_utf8(&wire).unwrap();
        if !text.is_empty() {
            dec.apply_str(text, replica, &chord::Limits::default())
                .unwrap();
        }
        // The wire buffer is the caller's, reused or freed at will: not what tracking holds.
        wire.shrink_to(0);
    };
    send(&mut t, &mut replica);
    // One flush of `n` edits, one per element...
    {
        let mut s = t.state();
        for i in 0..n {
            s.items.at(i).name.push('!');
        }
    }
    send(&mut t, &mut replica);
    // ...then `later` flushes of one edit each.
    for k in 0..later {
        t.state().items.at(k % n).name.push('?');
        t.state().items.at(k % n).name.pop();
        send(&mut t, &mut replica);
    }
    assert_eq!(replica, Some(serde_json::to_value(t.get()).unwrap()));
    // The replica is the reader's: not what tracking holds.
    drop(replica);
    let held = live() - before;
    drop((t, enc, dec));
    (untracked, held)
}

#[test]
fn a_huge_flush_leaves_no_more_than_a_quarter_behind_after_one_more() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    {
        let n = 1_000_000;
        let (untracked, held) = after_a_huge_flush(n, 1);
        let ratio = held as f64 / untracked as f64;
        eprintln!(
            "{n} edits in one flush, then one more flush: untracked {}, tracker, encoder and \
             decoder {} ({ratio:.3}x)",
            mb(untracked),
            mb(held)
        );
        assert!(ratio <= 1.25, "{n}: {ratio:.3}x the untracked state");
    }
}
