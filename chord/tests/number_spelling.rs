//! How encoded payloads spell numbers, next to how JavaScript's `JSON.stringify` spells the
//! same values (listed in the crate docs under "Where chord differs from the TypeScript
//! reference"). By default chord writes serde_json's spellings so that a Rust replica decodes
//! exactly the `serde_json::Value` the producer serialized (`1.0` stays a float; `1` would
//! come back as an integer and compare unequal); every spelling parses to the same number in
//! JavaScript, so the replicas' values agree even where the bytes do not. An encoder set to
//! [`Numbers::JavaScript`] writes `JSON.stringify`'s bytes, checked here against Node itself
//! on random floats.

use std::io::Write;
use std::process::{Command, Stdio};

use chord::wire::Numbers;
use chord::{track, Encoder, Op, Tracked};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde::Serialize;
use serde_json::Value;

/// (value, chord's spelling, JavaScript's spelling)
const SPELLINGS: &[(f64, &str, &str)] = &[
    (1.0, "1.0", "1"),
    (-0.0, "-0.0", "0"),
    (0.5, "0.5", "0.5"),
    (1e-6, "1e-6", "0.000001"),
    (1e-7, "1e-7", "1e-7"),
    (1e20, "1e+20", "100000000000000000000"),
    (1e21, "1e+21", "1e+21"),
    (123456.789, "123456.789", "123456.789"),
];

#[test]
fn floats_are_spelled_as_serde_json_spells_them() {
    for &(value, chord, _javascript) in SPELLINGS {
        let wire = Encoder::new()
            .encode(&[Op::Replace(value.into())])
            .to_json();
        assert_eq!(wire, format!("[[\"r\",{chord}]]"), "{value:?}");
    }
}

#[test]
fn every_spelling_reads_back_as_the_same_number_in_both_grammars() {
    for &(value, chord, javascript) in SPELLINGS {
        let ours: Value = serde_json::from_str(chord).unwrap();
        let theirs: Value = serde_json::from_str(javascript).unwrap();
        assert_eq!(ours.as_f64(), Some(value), "{chord}");
        // JavaScript's spelling names the same f64 (-0 and 0 compare equal).
        assert_eq!(theirs.as_f64(), Some(value), "{javascript}");
    }
    // And an integral float stays a float in Rust only with its `.0`.
    let float: Value = serde_json::from_str("1.0").unwrap();
    let int: Value = serde_json::from_str("1").unwrap();
    assert_ne!(float, int);
}

#[test]
fn a_javascript_encoder_spells_floats_as_json_stringify() {
    for &(value, _chord, javascript) in SPELLINGS {
        let wire = Encoder::new()
            .numbers(Numbers::JavaScript)
            .encode(&[Op::Replace(value.into())])
            .to_json();
        assert_eq!(wire, format!("[[\"r\",{javascript}]]"), "{value:?}");
    }
}

/// `JSON.stringify(JSON.parse(text))` by Node: the bytes a JavaScript producer writes for
/// the values of `text`.
fn restringified_by_node(text: &str) -> String {
    let mut child = Command::new("node")
        .arg("-e")
        .arg(
            "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>\
             process.stdout.write(JSON.stringify(JSON.parse(s))))",
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("`node` (Node.js 20 or later) is needed for this test; scripts/test installs it");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "node failed: {output:?}");
    String::from_utf8(output.stdout).unwrap()
}

/// Floats of every kind: any bit pattern, integral values, powers of ten around the places
/// where JavaScript switches to exponents (1e-7, 1e21), tiny and huge.
fn float() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>().prop_filter("finite", |f| f.is_finite()),
        (-1e6f64..1e6).prop_map(f64::trunc),
        (-30i32..30, 1u32..10_000).prop_map(|(e, m)| f64::from(m) * 10f64.powi(e)),
        Just(-0.0),
        Just(f64::MIN_POSITIVE),
        Just(f64::MAX),
        Just(5e-324),
    ]
}

#[derive(Tracked, Serialize, Clone, Debug, Default)]
struct Sample {
    x: f64,
    xs: Vec<f64>,
}

#[test]
fn javascript_spelling_is_node_s_on_random_floats() {
    let mut runner = TestRunner::new(Config {
        cases: 4,
        failure_persistence: None,
        ..Config::default()
    });
    let compared = std::cell::Cell::new(0);
    runner
        .run(&proptest::collection::vec(float(), 2_000), |floats| {
            let values = Value::Array(floats.iter().map(|&f| Value::from(f)).collect());
            let batch = [Op::Replace(values)];
            let serde = Encoder::new().encode(&batch).to_json();
            let javascript = Encoder::new()
                .numbers(Numbers::JavaScript)
                .encode(&batch)
                .to_json();
            prop_assert_eq!(&javascript, &restringified_by_node(&serde));
            // A tracker's flush straight to bytes spells them the same way, in values it
            // serializes itself (a base) and in the ops after it.
            let mut sample = track(Sample::default());
            let mut encoder = Encoder::new().numbers(Numbers::JavaScript);
            let mut texts = Vec::new();
            for chunk in floats.chunks(500) {
                let mut state = sample.state();
                *state.x = chunk[0];
                for &f in chunk {
                    state.xs.push(f);
                }
                let mut out = Vec::new();
                sample.flush_into(&mut encoder, &mut out).unwrap();
                texts.push(String::from_utf8(out).unwrap());
            }
            let joined = format!("[{}]", texts.join(","));
            prop_assert_eq!(&joined, &restringified_by_node(&joined));
            compared.set(compared.get() + floats.len());
            Ok(())
        })
        .unwrap();
    assert_eq!(compared.get(), 8_000);
}
