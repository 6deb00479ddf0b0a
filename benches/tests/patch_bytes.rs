//! The patch-bytes section of `BENCHMARKS.md` is what `chord_bench::patch_bytes` computes
//! now (bytes are deterministic, so any difference means the document went stale: run
//! `scripts/patch-bytes`), and the program's counts agree with counts made without the
//! patcher where the patch is known in advance.

use chord_bench::patch_bytes::{data_chord, measure, section};
use chord_bench::workloads::*;

#[test]
fn benchmarks_md_has_the_section_the_code_computes() {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../BENCHMARKS.md")).unwrap();
    let (begin, end) = ("<!-- patch-bytes:begin -->\n", "\n<!-- patch-bytes:end -->");
    let from = doc.find(begin).expect("BENCHMARKS.md has the begin marker") + begin.len();
    let to = doc[from..].find(end).expect("and the end marker after it") + from;
    let committed = &doc[from..to];
    let now = section();
    assert!(
        committed == now.trim_end_matches('\n'),
        "BENCHMARKS.md's patch-bytes section is stale: run scripts/patch-bytes\n\
         --- committed\n{committed}\n--- now\n{now}"
    );
}

/// W1 appends "x" to a 40 KB text: each patch is one `replace` of `/text` with the whole new
/// text, each snapshot `{"text": ...}`, counted here from the text alone; each AI SDK
/// `data-chord` chunk carries the one append, each `data-state` chunk the whole text.
#[test]
fn w1_counts_agree_with_the_text_alone() {
    let steps = 50;
    let mut text = w1_text();
    let (mut patch, mut snapshot, mut data_state) = (0, 0, 0);
    for _ in 0..steps {
        text.push('x');
        let quoted = serde_json::to_string(&text).unwrap().len();
        patch += r#"[{"op":"replace","path":"/text","value":}]"#.len() + quoted;
        snapshot += r#"{"text":}"#.len() + quoted;
        data_state += r#"{"type":"data-state","id":"state","data":{"text":}}"#.len() + quoted;
    }
    let b = measure(chord_w1(), steps);
    assert_eq!(b.flushes, steps);
    assert_eq!(b.patch, patch);
    assert_eq!(b.snapshot, snapshot);
    let chunk = r#"{"type":"data-chord","data":[["a",["text"],"x"]],"transient":true}"#;
    assert_eq!(b.data_chord, steps * chunk.len());
    assert_eq!(b.data_state, data_state);
}

/// W7 clears a list of ten: one `replace` of `/arr` with `[]` (one operation, not ten
/// removes), against the snapshot `{"arr":[]}`.
#[test]
fn w7_is_one_replace_of_the_list() {
    let b = measure(chord_w7(), 1);
    assert_eq!(b.flushes, 1);
    assert_eq!(
        b.patch,
        r#"[{"op":"replace","path":"/arr","value":[]}]"#.len()
    );
    assert_eq!(b.snapshot, r#"{"arr":[]}"#.len());
    assert_eq!(
        b.data_chord,
        r#"{"type":"data-chord","data":[["s",["arr"],[]]],"transient":true}"#.len()
    );
    assert_eq!(
        b.data_state,
        r#"{"type":"data-state","id":"state","data":{"arr":[]}}"#.len()
    );
}

/// The chunk counted is the one the AI SDK door writes, key for key.
#[test]
fn data_chord_is_the_door_s_chunk() {
    let ops = vec![chord::Op::Set(chord::path!["arr"], serde_json::json!([]))];
    assert_eq!(
        serde_json::to_string(&data_chord(&ops)).unwrap(),
        r#"{"type":"data-chord","data":[["s",["arr"],[]]],"transient":true}"#
    );
}
