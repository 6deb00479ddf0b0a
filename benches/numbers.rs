//! What spelling numbers as JavaScript does costs ([`Numbers::JavaScript`] against the default
//! [`Numbers::Serde`]), on number-heavy flushes straight to bytes:
//!
//! - `base`: a base batch of a state of 10,000 floats (a tracker's first `flush_into`);
//! - `steps`: 100 of those floats reassigned per flush, then `flush_into`;
//! - `integers`: the same steps on integers, which both spell alike (the formatter's cost
//!   alone).
//!
//! The floats are of every kind (integral, tiny, huge, any fraction), from a fixed seed.
//!
//! ```sh
//! cargo bench -p chord-bench --bench numbers
//! ```

use std::hint::black_box;
use std::time::Duration;

use chord::wire::Numbers;
use chord::{track, Encoder, Tracked};
use criterion::{criterion_group, criterion_main, Criterion};
use serde::Serialize;

#[derive(Tracked, Serialize, Clone, Debug, Default)]
struct Floats {
    xs: Vec<f64>,
}

#[derive(Tracked, Serialize, Clone, Debug, Default)]
struct Integers {
    xs: Vec<u64>,
}

/// A fixed sequence of floats of every kind (xorshift over bit patterns, and decimals).
fn floats(n: usize) -> Vec<f64> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..n)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            match i % 4 {
                0 => f64::from_bits(x >> 2), // positive and below 2, all 52 bits of fraction
                1 => (x % 1_000_000) as f64,
                2 => (x % 10_000) as f64 / 1000.0,
                _ => (x % 1000) as f64 * 1e-9,
            }
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    const N: usize = 10_000;
    let values = floats(N);
    for numbers in [Numbers::Serde, Numbers::JavaScript] {
        let name = format!("{numbers:?}");
        let mut group = c.benchmark_group(format!("numbers/{name}"));
        group.bench_function("base", |b| {
            let state = Floats { xs: values.clone() };
            let mut out = Vec::with_capacity(1 << 20);
            b.iter(|| {
                let mut t = track(state.clone());
                let mut enc = Encoder::new().numbers(numbers);
                out.clear();
                t.flush_into(&mut enc, &mut out).unwrap();
                black_box(out.len())
            })
        });
        group.bench_function("steps", |b| {
            let mut t = track(Floats { xs: values.clone() });
            let mut enc = Encoder::new().numbers(numbers);
            let mut out = Vec::with_capacity(1 << 16);
            t.flush_into(&mut enc, &mut out).unwrap();
            let mut step = 0usize;
            b.iter(|| {
                let mut state = t.state();
                for k in 0..100 {
                    let at = (step * 101 + k * 97) % N;
                    if let Some(mut x) = state.xs.get_mut(at) {
                        *x = values[(at + step) % N];
                    }
                }
                step += 1;
                out.clear();
                t.flush_into(&mut enc, &mut out).unwrap();
                black_box(out.len())
            })
        });
        group.bench_function("integers", |b| {
            let mut t = track(Integers {
                xs: (0..N as u64).map(|i| i * 7919).collect(),
            });
            let mut enc = Encoder::new().numbers(numbers);
            let mut out = Vec::with_capacity(1 << 16);
            t.flush_into(&mut enc, &mut out).unwrap();
            let mut step = 0u64;
            b.iter(|| {
                let mut state = t.state();
                for k in 0..100u64 {
                    let at = ((step * 101 + k * 97) % N as u64) as usize;
                    if let Some(mut x) = state.xs.get_mut(at) {
                        *x = step * k;
                    }
                }
                step += 1;
                out.clear();
                t.flush_into(&mut enc, &mut out).unwrap();
                black_box(out.len())
            })
        });
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = bench
}
criterion_main!(benches);
