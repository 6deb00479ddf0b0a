//! How encoded payloads spell numbers, next to how JavaScript's `JSON.stringify` spells the
//! same values (listed in the crate docs under "Where chord differs from the TypeScript
//! reference"). chord writes serde_json's spellings so that a Rust replica decodes exactly
//! the `serde_json::Value` the producer serialized (`1.0` stays a float; `1` would come back
//! as an integer and compare unequal);
//! every spelling parses to the same number in JavaScript, so the replicas' values agree even
//! where the bytes do not.

use chord::{Encoder, Op};
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
