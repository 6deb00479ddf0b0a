//! Cross-checks the JavaScript replica (`js/chord-replica.mjs`) against chord.
//!
//! A tracked `serde_json::Value` is mutated at random through its proxies (text appends and
//! rolling windows with multi-byte characters, array pushes, inserts, removals and splices,
//! map inserts and removals with awkward keys, rebases); every flush is encoded with one
//! `Encoder` and written as a line of wire JSON. Hand-written edge streams (poisoning, limits,
//! reserved names, surrogate pairs, index rules) are written beside it. `node
//! js/test/replay.mjs <dir>` replays them with the module; every batch's outcome must equal
//! chord's own `Decoder` + `apply`: the same value, or an error of the same kind.
//!
//! Fails, saying so, when `node` is not on PATH (`scripts/test` installs Node.js).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use chord::{apply, track, Decoder, Encoder, Tracker};
use serde_json::{json, Value};

/// A small deterministic generator, so a failure replays exactly.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

const CHUNKS: &[&str] = &[
    "a",
    "hello ",
    "é",
    "😀",
    "line\n",
    "€uro",
    "\"q\"",
    "\\",
    "\t",
    "\u{0}",
    "日本語",
    "\u{2028}",
    "𝄞x",
];

const KEYS: &[&str] = &[
    "model",
    "0",
    "10",
    "two words",
    "__proto__",
    "constructor",
    "prototype",
    "toString",
    "hasOwnProperty",
    "length",
    "日本",
    "",
];

fn random_value(rng: &mut Rng, n: usize) -> Value {
    match rng.below(9) {
        0 => Value::Null,
        1 => json!(rng.below(2) == 0),
        2 => json!(n),
        3 => json!(*rng.pick(&[0.1, -2.5, 1e21, 1e-7, 3.0])),
        4 => json!(rng.pick(CHUNKS).repeat(1 + rng.below(3))),
        5 => json!({"__proto__": {"polluted": true}, "n": n}),
        6 => json!({"constructor": {"prototype": {"polluted": n}}}),
        7 => json!([n, {"deep": [[n]]}, "x"]),
        _ => json!({"id": n, "text": rng.pick(CHUNKS)}),
    }
}

/// One random mutation through the proxies.
fn mutate(t: &mut Tracker<Value>, rng: &mut Rng, n: usize) {
    let chunk = *rng.pick(CHUNKS);
    let mut s = t.state();
    match rng.below(13) {
        0 | 1 => s.member("text").unwrap().push_str(chunk).unwrap(),
        2 => {
            let mut out = s.member("out").unwrap();
            let mut out = out.as_text().unwrap();
            out.push_str(chunk);
            out.push_str(&format!("[{n}]"));
            out.keep_last(24);
        }
        3 => {
            let mut text = s.member("text").unwrap();
            let mut text = text.as_text().unwrap();
            // A rewrite: the overlap detector turns it into t + a, a or s.
            let keep = text.char_indices().nth(rng.below(4)).map_or(0, |(i, _)| i);
            let next = format!("{}{chunk}", &text[keep..]);
            text.set(next);
        }
        4 => s
            .member("items")
            .unwrap()
            .push(random_value(rng, n))
            .unwrap(),
        5 => {
            let mut items = s.member("items").unwrap();
            let mut items = items.as_array().unwrap();
            let at = rng.below(items.len() + 1);
            items.insert(at, json!({"id": n, "text": ""}));
        }
        6 => {
            let mut items = s.member("items").unwrap();
            let mut items = items.as_array().unwrap();
            if !items.is_empty() {
                let at = rng.below(items.len());
                items.remove(at);
            }
        }
        7 => {
            let mut items = s.member("items").unwrap();
            let mut items = items.as_array().unwrap();
            let start = rng.below(items.len() + 1);
            let end = start + rng.below(items.len() - start + 1);
            let new: Vec<Value> = (0..rng.below(3)).map(|k| json!(n * 10 + k)).collect();
            items.splice(start..end, new);
        }
        8 => {
            let mut items = s.member("items").unwrap();
            let len = items.as_array().unwrap().len();
            if len > 0 {
                let mut item = items.element(rng.below(len)).unwrap();
                if let Some(mut text) = item.member("text") {
                    if let Some(mut text) = text.as_text() {
                        text.push_str(chunk);
                    }
                }
            }
        }
        9 => {
            let key = *rng.pick(KEYS);
            let value = random_value(rng, n);
            s.member("meta").unwrap().insert(key, value).unwrap();
        }
        10 => {
            let key = *rng.pick(KEYS);
            s.member("meta").unwrap().remove(key).unwrap();
        }
        11 => {
            let mut lanes = s.member("lanes").unwrap();
            let mut lane = lanes.element(rng.below(2)).unwrap();
            let status = *rng.pick(&["idle", "running", "done", "failed"]);
            lane.member("status").unwrap().set(status);
        }
        _ => {
            let mut lanes = s.member("lanes").unwrap();
            let mut lane = lanes.element(rng.below(2)).unwrap();
            let mut log = lane.member("log").unwrap();
            let mut log = log.as_text().unwrap();
            log.push_str(chunk);
            log.keep_last(16);
        }
    }
}

/// A random stream: its wire lines, and the producer's value after each batch.
fn random_stream(seed: u64, batches: usize) -> (Vec<String>, Vec<Value>) {
    let mut rng = Rng(seed);
    let mut t = track(json!({
        "text": "", "out": "", "items": [], "meta": {},
        "lanes": [{"status": "idle", "log": ""}, {"status": "idle", "log": ""}],
    }));
    let mut encoder = Encoder::new();
    let mut lines = Vec::new();
    let mut states = Vec::new();
    let mut n = 0;
    for _ in 0..batches {
        for _ in 0..1 + rng.below(4) {
            n += 1;
            mutate(&mut t, &mut rng, n);
        }
        if rng.below(40) == 0 {
            t.rebase();
        }
        let ops = t.flush().expect("the stream's values are JSON");
        lines.push(encoder.encode(&ops).to_json());
        states.push(t.get().clone());
    }
    (lines, states)
}

/// Hand-written streams of wire JSON text, for the rules random streams rarely reach.
fn edge_streams() -> Vec<(&'static str, Vec<String>)> {
    let nest = |n: usize| format!("{}0{}", "[".repeat(n), "]".repeat(n));
    let streams: Vec<(&str, Vec<&str>)> = vec![
        (
            "poison",
            vec![
                r##"[["r",{"a":""}],["#",0,["a"]]]"##,
                r##"[["a",0,"x"],["a","y"]]"##,
                r##"[["s",1]]"##,
                r##"[["r",{}]]"##,
                "[]",
            ],
        ),
        ("poison-json", vec![r##"[["r",1]"##, r##"[["r",1]]"##]),
        ("poison-not-a-batch", vec![r##"{"r":1}"##, r##"[["r",1]]"##]),
        (
            "poison-grammar",
            vec![
                r##"[["r",{"a":1}]]"##,
                r##"[["s",["a"],1,2]]"##,
                r##"[["s",["a"],3]]"##,
            ],
        ),
        (
            "poison-unknown-verb",
            vec![r##"[["r",{}]]"##, r##"[["s",["a"],1],["zz"]]"##],
        ),
        (
            "poison-empty-path",
            vec![r##"[["r",{}]]"##, r##"[["#",0,[]],["s",0,1]]"##],
        ),
        (
            "ids",
            vec![
                r##"[["r",{"a":"","b":""}],["#",0,["a"]],["#",0,["b"]],["a",0,"1"]]"##,
                r##"[["a",0,"2"],["a","3"]]"##,
                r##"[["r",{"a":"x"}]]"##,
                r##"[["a",0,"4"]]"##,
            ],
        ),
        (
            "apply-error-does-not-poison",
            vec![
                r##"[["r",{"xs":[1],"a":1}]]"##,
                r##"[["s",["a"],2],["s",["xs",5],1]]"##,
                r##"[["s",["xs",1],2],["d",["zz"]]]"##,
                r##"[["s",["a"],2],["r",{"b":1}],["s",["c","d"],3]]"##,
                r##"[["s",["xs","0"],1]]"##,
                r##"[["s",["xs","length"],0]]"##,
                r##"[["d",["xs",2]]]"##,
                r##"[["d",["xs",0]],["p",["xs"],9,9007199254740991,[7,8]]]"##,
            ],
        ),
        (
            "surrogates",
            vec![
                r##"[["r",{"s":"\ud83d\ude00b","t":"é😀"}]]"##,
                r##"[["t",["s"],1]]"##,
                r##"[["t",["s"],2],["t",["t"],1]]"##,
                r##"[["t",["t"],1]]"##,
                r##"[["t",["t"],2],["a",["t"],"\u0000\u2028"]]"##,
            ],
        ),
        (
            "negative-zero",
            vec![r##"[["r",{"s":"abc","xs":[1]}]]"##, r##"[["t",["s"],-0]]"##],
        ),
        (
            "negative-zero-segment",
            vec![r##"[["r",{"xs":[1]}]]"##, r##"[["s",["xs",-0],1]]"##],
        ),
        (
            "fractions",
            vec![r##"[["r",{"s":"abc"}]]"##, r##"[["t",["s"],1.5]]"##],
        ),
        (
            "reserved-value-keys",
            vec![
                r##"[["r",{"__proto__":{"polluted":true},"o":{}}]]"##,
                r##"[["s",["o","x"],{"constructor":{"prototype":{"polluted":1}}}]]"##,
                r##"[["p",["o","x","constructor","prototype","polluted"],0,0,[]]]"##,
            ],
        ),
        (
            "reserved-walk",
            vec![
                r##"[["r",{}]]"##,
                r##"[["s",["constructor","prototype","polluted"],true]]"##,
            ],
        ),
        (
            "reserved-id",
            vec![
                r##"[["r",{}]]"##,
                r##"[["#",0,["__proto__","polluted"]],["s",0,true]]"##,
            ],
        ),
        (
            "repeated-name",
            vec![r##"[["r",{"o":{},"a":1,"a":2}]]"##, r##"[["r",{"a":1}]]"##],
        ),
        (
            "objects",
            vec![
                r##"[["r",{"o":{},"a":1}]]"##,
                r##"[["s",["o",0],1],["s",["o","0"],2],["s",["o","toString"],3]]"##,
                r##"[["s",["o","hasOwnProperty","x"],1]]"##,
                r##"[["a",["o","valueOf"],"x"]]"##,
                r##"[["d",["o","toString"]],["d",["o","isPrototypeOf"]]]"##,
                r##"[["p",["o"],0,0,[]]]"##,
            ],
        ),
        (
            "rollback-appends",
            vec![
                r##"[["r",{"t":"ab","u":"c","o":{"k":"v"}}]]"##,
                r##"[["a",["t"],"x"],["a",["t"],"y"],["d",["t"]],["s",["t"],"n"],["a",["t"],"z"],["s",["zz","q"],1]]"##,
                r##"[["a",["t"],"x"],["t",["t"],1],["a",["u"],"!"],["s",["o"],{"k":""}],["a",["o","k"],"w"],["d",["u"]],["s",["t",0],1]]"##,
                r##"[["a",["t"],"1"],["a",["t"],"2"],["d",["u"]],["s",["u"],"d"],["a",["u"],"e"]]"##,
            ],
        ),
        (
            "root",
            vec![
                "[]",
                r##"[["s",["a"],1]]"##,
                r##"[["r",[1,2,3]],["p",[],1,1,[]],["s",[2],4]]"##,
                r##"[["s",[4],5]]"##,
                r##"[["r",null]]"##,
                r##"[["s",["a"],1]]"##,
                r##"[["r","text"],["a",[0],"x"]]"##,
            ],
        ),
    ];
    let mut out: Vec<(&'static str, Vec<String>)> = streams
        .into_iter()
        .map(|(name, lines)| (name, lines.into_iter().map(str::to_owned).collect()))
        .collect();
    out.push((
        "depth",
        vec![
            format!(r##"[["r",{}]]"##, nest(120)),
            format!(r##"[["r",{}]]"##, nest(121)),
            r##"[["r",{"a":{}}]]"##.to_owned(),
            format!(r##"[["s",["a","b"],{}]]"##, nest(118)),
            format!(r##"[["s",["a","b"],{}]]"##, nest(119)),
        ],
    ));
    out.extend(decode_refusals());
    out
}

/// The smallest nesting of arrays, counted over the whole batch text (the batch's own array
/// and the op's tuple included), that chord's decoder refuses, found by trying: the JSON
/// parser's recursion limit, whatever it is, is what the JavaScript replica must match.
fn refused_nesting() -> usize {
    let refused = |total: usize| {
        let line = format!(
            r##"[["r",{}0{}]]"##,
            "[".repeat(total - 2),
            "]".repeat(total - 2)
        );
        Decoder::new().decode_str(&line).is_err()
    };
    let total = (3..1000)
        .find(|&total| refused(total))
        .expect("some nesting is refused");
    assert!(
        (3..total).all(|t| !refused(t)),
        "every shallower batch decodes"
    );
    // chord's replica splits an SSE data event (an array of batches) into each batch's raw
    // text before decoding it, so the event's own array does not count against a batch,
    // as in the JavaScript replica, which checks each batch from its own array.
    let deepest = format!(
        r##"[["r",{}0{}]]"##,
        "[".repeat(total - 3),
        "]".repeat(total - 3)
    );
    let event = format!("[{deepest},{deepest}]");
    let batches: Vec<&serde_json::value::RawValue> =
        serde_json::from_str(&event).expect("an event of the deepest batches splits");
    assert_eq!(batches.len(), 2);
    total
}

/// Streams that JSON.parse reads but chord's decoder refuses, each followed by batches that
/// must then meet a poisoned decoder: lone surrogates, numbers out of range, and nesting
/// at, just under and just over the parser's recursion limit, in each place a value sits.
fn decode_refusals() -> Vec<(&'static str, Vec<String>)> {
    let limit = refused_nesting();
    let arrays = |n: usize| format!("{}0{}", "[".repeat(n), "]".repeat(n));
    let objects = |n: usize| format!("{}0{}", r#"{"k":"#.repeat(n), "}".repeat(n));
    let then = |first: &str| {
        vec![
            r##"[["r",{"a":1,"xs":[]}]]"##.to_owned(),
            first.to_owned(),
            r##"[["s",["a"],2]]"##.to_owned(),
            r##"[["r",3]]"##.to_owned(),
        ]
    };
    let mut out: Vec<(&'static str, Vec<String>)> = vec![
        ("lone-high", then(r##"[["s",["a"],"\ud800"]]"##)),
        ("lone-low", then(r##"[["s",["a"],"x\udc00y"]]"##)),
        (
            "high-then-not-low",
            then(r##"[["s",["a"],"\ud800\u0041"]]"##),
        ),
        ("lone-in-key", then(r##"[["s",["a"],{"\udbff":1}]]"##)),
        ("lone-in-path", then(r##"[["s",["\ud800"],1]]"##)),
        ("lone-in-append", then(r##"[["a",["a"],"\ud800"]]"##)),
        (
            "lone-in-base",
            vec![
                "[]".to_owned(),
                r##"[["r",["\ud800"]]]"##.to_owned(),
                "[]".to_owned(),
                r##"[["r",3]]"##.to_owned(),
            ],
        ),
        (
            "pair-escaped",
            then(r##"[["s",["a"],"\ud83d\ude00\u00e9"]]"##),
        ),
        ("number-too-large", then(r##"[["s",["a"],1e400]]"##)),
        ("number-too-small", then(r##"[["p",["xs"],0,0,[-1e309]]]"##)),
        ("number-underflow", then(r##"[["s",["a"],1e-400]]"##)),
        ("number-count", then(r##"[["t",["a"],1e400]]"##)),
    ];
    let nesting: [(&'static str, &'static str, usize); 6] = [
        ("nest-r-under", "r", limit - 1),
        ("nest-r-at", "r", limit),
        ("nest-s-under", "s", limit - 1),
        ("nest-s-at", "s", limit),
        ("nest-p-under", "p", limit - 1),
        ("nest-p-over", "p", limit + 1),
    ];
    for (name, verb, total) in nesting {
        // The batch's array and the op's tuple are two levels; `p`'s items array a third.
        let line = match verb {
            "r" => format!(r##"[["r",{}]]"##, arrays(total - 2)),
            "s" => format!(r##"[["s",["a"],{}]]"##, objects(total - 2)),
            _ => format!(r##"[["p",["xs"],0,0,[{}]]]"##, arrays(total - 3)),
        };
        out.push((name, then(&line)));
    }
    out
}

/// JSON text of objects and values a replica must refuse or read alike: members named twice
/// (first and last, escaped, nested, in small and large objects, beside values out of
/// range), numbers out of range, lone surrogates, reserved names.
fn hostile_value(rng: &mut Rng, depth: usize) -> String {
    const SCALARS: &[&str] = &[
        "1",
        "-0",
        "1.0",
        "1e400",
        "-1e400",
        "9007199254740993",
        r#""x""#,
        r#""\ud800""#,
        r#""é😀""#,
        "null",
        "true",
    ];
    const NAMES: &[&str] = &[
        r#""a""#,
        r#""\u0061""#,
        r#""b""#,
        r#""__proto__""#,
        r#""constructor""#,
        r#""\udfff""#,
        r#""é""#,
        r#""e\u0301""#,
        r#""""#,
    ];
    match rng.below(if depth > 3 { 2 } else { 5 }) {
        0 | 1 => (*rng.pick(SCALARS)).to_owned(),
        2 => {
            let items: Vec<String> = (0..rng.below(4))
                .map(|_| hostile_value(rng, depth + 1))
                .collect();
            format!("[{}]", items.join(","))
        }
        _ => {
            // Sometimes many members, so that a repeat is looked for among many names.
            let n = if rng.below(4) == 0 {
                15 + rng.below(8)
            } else {
                rng.below(4)
            };
            let mut members: Vec<String> = (0..n)
                .map(|i| {
                    let name = if n > 8 {
                        format!(r#""m{i}""#)
                    } else {
                        (*rng.pick(NAMES)).to_owned()
                    };
                    format!("{name}:{}", hostile_value(rng, depth + 1))
                })
                .collect();
            // A repeat of a member's name, anywhere after it, now and then.
            if !members.is_empty() && rng.below(2) == 0 {
                let first = rng.below(members.len());
                let name = members[first].split(':').next().unwrap().to_owned();
                let at = first + 1 + rng.below(members.len() - first);
                members.insert(at, format!("{name}:{}", hostile_value(rng, depth + 1)));
            }
            format!("{{{}}}", members.join(","))
        }
    }
}

/// Streams of a base batch, one hostile batch (values from [`hostile_value`] in every op
/// that carries one), then a plain batch: each replica must refuse or apply each batch as
/// chord does.
fn hostile_streams(seed: u64, n: usize) -> Vec<(String, Vec<String>)> {
    let mut rng = Rng(seed);
    (0..n)
        .map(|i| {
            let v = hostile_value(&mut rng, 0);
            let w = hostile_value(&mut rng, 0);
            let op = match rng.below(6) {
                0 => format!(r#"["r",{v}]"#),
                1 => format!(r#"["s",["o","k"],{v}]"#),
                2 => format!(r#"["s",{v}]"#),
                3 => format!(r#"["p",["xs"],0,0,[{v},{w}]]"#),
                4 => format!(r#"["s",["o",{v}],1]"#),
                _ => format!(r#"["s",["xs",0],{v}],["s",["o","n"],{w}]"#),
            };
            let lines = vec![
                r#"[["r",{"o":{"k":1},"xs":[0]}]]"#.to_owned(),
                format!(r#"[{op}]"#),
                r#"[["s",["o","k"],2]]"#.to_owned(),
            ];
            (format!("hostile-{seed}-{i:03}"), lines)
        })
        .collect()
}

/// chord's outcome for one batch, in the form `replay.mjs` prints.
fn outcome(result: chord::Result<()>, value: &Option<Value>) -> Value {
    match (result, value) {
        (Err(e), _) => {
            let kind = format!("{:?}", e.kind());
            let name: String = kind
                .chars()
                .take_while(char::is_ascii_alphanumeric)
                .collect();
            json!({ "err": name })
        }
        (Ok(()), Some(v)) => json!({ "ok": v }),
        (Ok(()), None) => json!({}),
    }
}

/// Replays lines of wire text through chord's Decoder + apply, going on after errors.
fn chord_outcomes(lines: &[String]) -> Vec<Value> {
    let mut decoder = Decoder::new();
    let mut value = None;
    lines
        .iter()
        .map(|line| {
            let result = decoder
                .decode_str(line)
                .and_then(|ops| apply(&mut value, ops));
            outcome(result, &value)
        })
        .collect()
}

/// The value with every number as an f64: JavaScript reads `3.0` as `3`, and JSON numbers
/// carry no integer/float distinction, so neither may the comparison.
fn numbers_as_f64(v: &Value) -> Value {
    match v {
        Value::Number(n) => json!(n.as_f64().unwrap()),
        Value::Array(items) => items.iter().map(numbers_as_f64).collect(),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| (k.clone(), numbers_as_f64(v)))
            .collect(),
        other => other.clone(),
    }
}

#[test]
fn javascript_replica_agrees_with_chord() {
    // Without Node.js the cross-check cannot run: a failure, as in the other JavaScript
    // tests (`scripts/test` installs Node.js first).
    let version = Command::new("node").arg("--version").output();
    assert!(
        version.as_ref().is_ok_and(|o| o.status.success()),
        "`node` (Node.js 20 or later) is needed for this cross-check: {version:?}"
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = tempfile::Builder::new()
        .prefix("chord-js-replica-")
        .tempdir()
        .unwrap();

    let mut expected: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for seed in [1, 2, 3] {
        let (lines, states) = random_stream(seed, 300);
        // The producer's own view first: chord's replica must equal the tracked value.
        let ours = chord_outcomes(&lines);
        for (i, (got, state)) in ours.iter().zip(&states).enumerate() {
            assert_eq!(
                got,
                &json!({ "ok": state }),
                "seed {seed}, batch {i}: chord's own replica differs from the tracker (a chord bug, not the module's)"
            );
        }
        let name = format!("random-{seed}.jsonl");
        std::fs::write(dir.path().join(&name), lines.join("\n") + "\n").unwrap();
        let last = states.last().unwrap();
        std::fs::write(
            dir.path().join(format!("random-{seed}.expected.json")),
            serde_json::to_string_pretty(last).unwrap(),
        )
        .unwrap();
        expected.insert(name, ours);
    }
    for (name, lines) in edge_streams() {
        let name = format!("edge-{name}.jsonl");
        std::fs::write(dir.path().join(&name), lines.join("\n") + "\n").unwrap();
        expected.insert(name, chord_outcomes(&lines));
    }
    // Hostile batches: the same outcome in both replicas, batch by batch. Counted, so that a
    // generator that stopped making repeats or stopped applying cannot pass unseen.
    let (mut repeats, mut applied) = (0, 0);
    for (name, lines) in hostile_streams(7, 600) {
        let name = format!("{name}.jsonl");
        std::fs::write(dir.path().join(&name), lines.join("\n") + "\n").unwrap();
        let ours = chord_outcomes(&lines);
        if let Err(e) = Decoder::new().decode_str(&lines[1]) {
            if e.to_string().contains("duplicate member name") {
                repeats += 1;
            }
        }
        if ours[1].get("ok").is_some() {
            applied += 1;
        }
        expected.insert(name, ours);
    }
    assert!(
        repeats > 60 && applied > 60,
        "the hostile batches hold {repeats} repeated names and {applied} batches that apply"
    );
    println!("js_replica: {repeats} hostile batches repeat a name, {applied} of 600 apply");

    let output = Command::new("node")
        .arg(root.join("js/test/replay.mjs"))
        .arg(dir.path())
        .output()
        .expect("node runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let keep = |dir: tempfile::TempDir| dir.keep().display().to_string();
    if !output.status.success() {
        panic!(
            "replay.mjs failed ({}): {stderr}\ninputs kept in {}",
            output.status,
            keep(dir)
        );
    }

    let mut got: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for line in String::from_utf8(output.stdout).unwrap().lines() {
        let Ok(mut v) = serde_json::from_str::<Value>(line) else {
            let dir = keep(dir);
            panic!("replay.mjs printed a line chord cannot read (a lone surrogate?): {line}\ninputs kept in {dir}");
        };
        let stream = v["stream"].as_str().unwrap().to_owned();
        v.as_object_mut().unwrap().remove("stream");
        got.entry(stream).or_default().push(v);
    }
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        expected.keys().collect::<Vec<_>>(),
        "every stream replayed"
    );
    let mut batches = 0;
    for (stream, want) in &expected {
        let have = &got[stream];
        assert_eq!(have.len(), want.len(), "{stream}: one line per batch");
        for (i, (h, w)) in have.iter().zip(want).enumerate() {
            if numbers_as_f64(h) != numbers_as_f64(w) {
                let dir = keep(dir);
                panic!(
                    "{stream}, batch {}: JavaScript {h}\nchord {w}\ninputs kept in {dir}",
                    i + 1
                );
            }
        }
        batches += want.len();
    }
    // The edge streams cover both outcomes and every rule they were written for.
    let edge_errors: Vec<&str> = expected
        .iter()
        .filter(|(k, _)| k.starts_with("edge-"))
        .flat_map(|(_, v)| v.iter().filter_map(|o| o["err"].as_str()))
        .collect();
    for kind in [
        "DecoderPoisoned",
        "Json",
        "NotABatch",
        "Arity",
        "UnknownVerb",
        "EmptyPath",
        "UnknownId",
        "NoPreviousPath",
        "IndexOutOfRange",
        "KeyOnArray",
        "Missing",
        "SplitsCharacter",
        "InvalidCount",
        "InvalidPath",
        "ReservedSegment",
        "NotAnArray",
        "NoValue",
        "NotAContainer",
        "LimitExceeded",
    ] {
        assert!(edge_errors.contains(&kind), "no edge case produced {kind}");
    }
    // Each refusal is chord's decoder refusing the batch (a JSON error), which poisons it;
    // the shallower, paired and underflowing neighbours decode and apply.
    for (stream, outcomes) in expected.iter().filter(|(k, _)| {
        [
            "edge-lone-",
            "edge-high-",
            "edge-number-too-",
            "edge-number-count",
            "-at.",
            "-over.",
        ]
        .iter()
        .any(|p| k.contains(p))
    }) {
        assert_eq!(outcomes[1], json!({"err": "Json"}), "{stream}");
        assert_eq!(outcomes[2], json!({"err": "DecoderPoisoned"}), "{stream}");
    }
    for stream in [
        "edge-pair-escaped.jsonl",
        "edge-number-underflow.jsonl",
        "edge-nest-r-under.jsonl",
        "edge-nest-s-under.jsonl",
        "edge-nest-p-under.jsonl",
    ] {
        let outcomes = &expected[stream];
        assert!(
            outcomes[1].get("err").is_none_or(|e| e == "LimitExceeded"),
            "{stream}: {outcomes:?}"
        );
        assert!(
            outcomes[2].get("ok").is_some(),
            "{stream}: the decoder is not poisoned"
        );
    }
    eprintln!(
        "js_replica: {} streams, {batches} batches agree ({} edge errors)",
        expected.len(),
        edge_errors.len()
    );
}

/// A control event whose `streamNextOffset` is not an offset (here a space in it, on a
/// resumed connection) must make chord's replica start over from the latest base, as the
/// JavaScript replica does (`StreamEventError` `BadOffset`, `js/test/hostile.test.mjs`):
/// the position it names cannot be trusted, and sending it back cannot work.
#[cfg(feature = "replica")]
#[tokio::test]
async fn a_bad_offset_restarts_from_the_base_as_in_javascript() {
    use std::io::{BufRead, BufReader, Write};
    use std::sync::{Arc, Mutex};

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let requests = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen = Arc::clone(&requests);
    std::thread::spawn(move || {
        let event = |name: &str, data: &str| format!("event: {name}\ndata: {data}\n\n");
        // Each connection carries one GET, whose response ends it.
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                continue;
            }
            while let Ok(n) = reader.read_line(&mut String::new()) {
                if n <= 2 {
                    break; // the blank line ending the head
                }
            }
            let request = line.trim_end().to_owned();
            seen.lock().unwrap().push(request.clone());
            // A fresh start's catch-up read gets a base and a good offset; the live read
            // after it a bad offset.
            let response = if request.contains("offset=base") {
                let body = r#"[[["r",1]]]"#;
                format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nstream-next-offset: 0000000000000001\r\nstream-up-to-date: true\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len())
            } else {
                let body = event("data", r#"[[["r",2]]]"#)
                    + &event("control", r#"{"streamNextOffset":"a b"}"#);
                format!("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len())
            };
            let _ = stream.write_all(response.as_bytes());
        }
    });
    let replica = chord::replica::Replica::builder(&format!("http://127.0.0.1:{port}/s"))
        .backoff(
            std::time::Duration::from_millis(1),
            std::time::Duration::from_millis(5),
        )
        .connect()
        .unwrap();
    // Waits (not a timing assertion) until the server has seen five requests.
    for _ in 0..2000 {
        if requests.lock().unwrap().len() >= 5 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let stats = replica.stats();
    drop(replica);
    let methods: Vec<String> = requests
        .lock()
        .unwrap()
        .iter()
        .take(5)
        .map(|r| {
            let offset = r.split("offset=").nth(1).unwrap_or("");
            offset.split(['&', ' ']).next().unwrap().to_owned()
        })
        .collect();
    // The fresh start (a catch-up read from the latest base), the live read whose control event names a
    // bad offset, then a fresh start again: a restart.
    assert_eq!(
        methods,
        [
            "base",
            "0000000000000001",
            "base",
            "0000000000000001",
            "base"
        ],
        "requests; the replica's stats: {stats:?}"
    );
}
