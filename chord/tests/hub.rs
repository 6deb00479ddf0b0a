//! The hub: base batch first, every later batch once and in order, per-subscriber encoders,
//! bounded queues, the loader, removal.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use chord::hub::{Address, Hub, Published};

use chord::{apply, is_base, path, track, Decoder, Op};
use serde_json::{json, Value};

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

fn lane() -> Address {
    Address::new("lanes", "main")
}

fn append(text: &str) -> Vec<Op> {
    vec![Op::Append(path!["text"], text.into())]
}

/// Reads every batch waiting for `sub` as wire text, decoding it into `replica`.
fn drain(
    sub: &mut chord::hub::Subscription,
    decoder: &mut Decoder,
    replica: &mut Option<Value>,
) -> usize {
    let mut n = 0;
    while sub.queued() > 0 {
        let wire = block_on(sub.recv_wire()).unwrap();
        apply(replica, decoder.decode_str(&wire).unwrap()).unwrap();
        n += 1;
    }
    n
}

#[test]
fn a_subscription_starts_with_a_base_batch_then_follows_in_order() {
    let hub = Hub::new();
    hub.publish(&lane(), &[Op::Replace(json!({"text": "", "n": 0}))])
        .unwrap();
    hub.publish(&lane(), &append("a")).unwrap();

    let mut sub = hub.subscribe(&lane()).unwrap();
    hub.publish(&lane(), &append("b")).unwrap();
    hub.publish(&lane(), &[Op::Set(path!["n"], 2.into())])
        .unwrap();

    let first = block_on(sub.recv()).unwrap();
    assert!(is_base(&first));
    assert_eq!(&*first, &[Op::Replace(json!({"text": "a", "n": 0}))]);
    assert_eq!(&*block_on(sub.recv()).unwrap(), append("b").as_slice());
    assert_eq!(
        &*block_on(sub.recv()).unwrap(),
        &[Op::Set(path!["n"], 2.into())]
    );
    assert_eq!(sub.queued(), 0);
    assert_eq!(hub.get(&lane()), Some(json!({"text": "ab", "n": 2})));
}

#[test]
fn every_subscription_has_its_own_encoder() {
    let hub = Hub::new();
    hub.publish(&lane(), &[Op::Replace(json!({"text": ""}))])
        .unwrap();
    let mut early = hub.subscribe(&lane()).unwrap();
    let (mut early_decoder, mut early_replica) = (Decoder::new(), None);
    // The early subscriber's encoder interns ["text"] on its second use.
    for piece in ["a", "b", "c"] {
        hub.publish(&lane(), &append(piece)).unwrap();
    }
    drain(&mut early, &mut early_decoder, &mut early_replica);

    // A late subscriber never sees those ids: its fresh decoder resolves everything.
    let mut late = hub.subscribe(&lane()).unwrap();
    hub.publish(&lane(), &append("d")).unwrap();
    let (mut late_decoder, mut late_replica) = (Decoder::new(), None);
    let late_wire: Vec<String> = (0..2)
        .map(|_| block_on(late.recv_wire()).unwrap())
        .collect();
    assert_eq!(
        late_wire[1], r#"[["a",["text"],"d"]]"#,
        "first use, written inline"
    );
    for wire in &late_wire {
        apply(&mut late_replica, late_decoder.decode_str(wire).unwrap()).unwrap();
    }
    let early_wire = block_on(early.recv_wire()).unwrap();
    assert_eq!(early_wire, r#"[["a",0,"d"]]"#, "the early encoder's id");
    apply(
        &mut early_replica,
        early_decoder.decode_str(&early_wire).unwrap(),
    )
    .unwrap();
    assert_eq!(late_replica, Some(json!({"text": "abcd"})));
    assert_eq!(early_replica, late_replica);
}

#[test]
fn subscribing_while_publishing_loses_and_duplicates_nothing() {
    // A producer appends "<i>," for every i; a subscriber joining at any point must end with
    // exactly the producer's text: a lost batch drops a number, a duplicate repeats one.
    const BATCHES: usize = 2_000;
    const SUBSCRIBERS: usize = 16;
    let hub = Hub::builder().queue(BATCHES + 1).build();
    let mut producer = track(json!({"text": "", "n": 0}));
    hub.publish(&lane(), &producer.flush().unwrap()).unwrap();

    let joined = Arc::new(AtomicUsize::new(0));
    std::thread::scope(|scope| {
        let subscribers: Vec<_> = (0..SUBSCRIBERS)
            .map(|i| {
                let hub = hub.clone();
                let joined = Arc::clone(&joined);
                scope.spawn(move || {
                    // Join at staggered points of the run.
                    while hub.stats().published < (i * BATCHES / SUBSCRIBERS) as u64 {
                        std::thread::sleep(std::time::Duration::from_micros(200));
                    }
                    let mut sub = hub.subscribe(&lane()).unwrap();
                    joined.fetch_add(1, Ordering::SeqCst);
                    let (mut decoder, mut replica) = (Decoder::new(), None);
                    block_on(async {
                        let mut first = true;
                        while let Some(wire) = sub.recv_wire().await {
                            let ops = decoder.decode_str(&wire).unwrap();
                            assert_eq!(
                                is_base(&ops),
                                first,
                                "exactly the first batch is a base batch"
                            );
                            first = false;
                            apply(&mut replica, ops).unwrap();
                            if replica.as_ref().unwrap()["n"] == BATCHES {
                                break;
                            }
                        }
                    });
                    replica
                })
            })
            .collect();
        for i in 1..=BATCHES {
            let mut state = producer.state();
            state
                .member("text")
                .unwrap()
                .push_str(&format!("{i},"))
                .unwrap();
            state.member("n").unwrap().set(i);
            hub.publish(&lane(), &producer.flush().unwrap()).unwrap();
        }
        let expected = serde_json::to_value(producer.get()).unwrap();
        for s in subscribers {
            assert_eq!(s.join().unwrap(), Some(expected.clone()));
        }
    });
    assert_eq!(joined.load(Ordering::SeqCst), SUBSCRIBERS);
    assert_eq!(hub.stats().cut, 0);
}

#[test]
fn a_subscriber_that_falls_behind_is_cut_and_the_others_are_not() {
    let hub = Hub::builder().queue(4).build();
    hub.publish(&lane(), &[Op::Replace(json!({"text": ""}))])
        .unwrap();
    let mut stalled = hub.subscribe(&lane()).unwrap(); // never reads
    let mut reader = hub.subscribe(&lane()).unwrap();
    let (mut decoder, mut replica) = (Decoder::new(), None);
    let mut outcomes = Vec::new();
    for i in 0..10 {
        outcomes.push(hub.publish(&lane(), &append(&i.to_string())).unwrap());
        drain(&mut reader, &mut decoder, &mut replica);
    }
    // The base batch and three more filled the stalled queue; the fourth publish cut it.
    let seen: Vec<(usize, usize)> = outcomes.iter().map(|p| (p.delivered, p.cut)).collect();
    assert_eq!(seen[2], (2, 0));
    assert_eq!(seen[3], (1, 1));
    assert_eq!(seen[9], (1, 0));
    assert!(stalled.was_cut());
    assert_eq!(
        block_on(stalled.recv()),
        None,
        "a cut subscription ends at once"
    );
    assert!(!reader.was_cut());
    assert_eq!(replica, hub.get(&lane()));
    assert_eq!(replica, Some(json!({"text": "0123456789"})));
    let stats = hub.stats();
    assert_eq!((stats.subscribers, stats.cut, stats.published), (1, 1, 11));

    // Resubscribing starts again from a base batch with the current value.
    let mut again = hub.subscribe(&lane()).unwrap();
    assert_eq!(
        &*block_on(again.recv()).unwrap(),
        &[Op::Replace(json!({"text": "0123456789"}))]
    );
}

#[test]
fn a_batch_that_does_not_apply_is_refused_and_delivered_to_no_one() {
    let hub = Hub::new();
    // The first batch of a value must be a base batch.
    assert!(hub.publish(&lane(), &append("x")).is_err());
    assert_eq!(hub.get(&lane()), None);
    assert!(hub.subscribe(&lane()).is_none());

    hub.publish(&lane(), &[Op::Replace(json!({"text": ""}))])
        .unwrap();
    let mut sub = hub.subscribe(&lane()).unwrap();
    let bad = [
        Op::Append(path!["text"], "lost".into()),
        Op::Set(path!["missing", "deep"], 1.into()),
    ];
    let err = hub.publish(&lane(), &bad).unwrap_err();
    assert_eq!(err.op_index(), Some(1));
    assert_eq!(hub.get(&lane()), Some(json!({"text": ""})), "atomic");
    assert_eq!(sub.queued(), 1, "only the base batch");
    assert_eq!(hub.publish(&lane(), &[]).unwrap(), Published::default());
    assert_eq!(hub.stats().published, 1);
    let _ = block_on(sub.recv());
}

#[test]
fn a_value_only_on_disk_is_recovered_for_its_subscribers() {
    let loads = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&loads);
    let hub = Hub::builder()
        .loader(move |address| {
            counted.fetch_add(1, Ordering::SeqCst);
            (address.namespace == "lanes")
                .then(|| json!({"text": format!("saved {}", address.key)}))
        })
        .build();
    let old = Address::new("lanes", "old");
    assert!(hub.subscribe(&Address::new("other", "x")).is_none());

    let mut a = hub.subscribe(&old).unwrap();
    let b = hub.subscribe(&old).unwrap();
    assert_eq!(
        loads.load(Ordering::SeqCst),
        2,
        "one unknown address, then one load"
    );
    assert_eq!(
        &*block_on(a.recv()).unwrap(),
        &[Op::Replace(json!({"text": "saved old"}))]
    );
    // While loaded, the value is held; with its last subscriber it goes, to be loaded afresh.
    assert_eq!(hub.addresses(), vec![old.clone()]);
    drop(a);
    assert_eq!(hub.stats().streams, 1);
    drop(b);
    assert_eq!(hub.stats().streams, 0);
    let c = hub.subscribe(&old).unwrap();
    assert_eq!(loads.load(Ordering::SeqCst), 3);

    // A producer taking over the value keeps it live, subscribers or not.
    let mut producer = track(json!({"text": "saved old"}));
    hub.publish(&old, &producer.flush().unwrap()).unwrap();
    drop(c);
    assert_eq!(hub.get(&old), Some(json!({"text": "saved old"})));
    let mut d = hub.subscribe(&old).unwrap();
    assert_eq!(
        loads.load(Ordering::SeqCst),
        3,
        "live values are not loaded"
    );
    assert!(is_base(&block_on(d.recv()).unwrap()));
}

#[test]
fn removing_a_value_ends_its_subscriptions() {
    let hub = Hub::new();
    hub.publish(&lane(), &[Op::Replace(json!({}))]).unwrap();
    let mut sub = hub.subscribe(&lane()).unwrap();
    assert_eq!(hub.subscribers(&lane()), 1);
    assert!(hub.remove(&lane()));
    assert!(!hub.remove(&lane()));
    assert!(
        is_base(&block_on(sub.recv()).unwrap()),
        "what was queued is still read"
    );
    assert_eq!(block_on(sub.recv()), None);
    assert!(!sub.was_cut());
    assert!(hub.subscribe(&lane()).is_none());
    assert_eq!(hub.stats().subscribers, 0);
    // Publishing again starts a new stream.
    assert!(hub.publish(&lane(), &append("x")).is_err());
    hub.publish(&lane(), &[Op::Replace(json!({"text": "new"}))])
        .unwrap();
    assert_eq!(hub.get(&lane()), Some(json!({"text": "new"})));
}

#[test]
fn dropping_a_subscription_unsubscribes() {
    let hub = Hub::new();
    hub.publish(&lane(), &[Op::Replace(json!({"text": ""}))])
        .unwrap();
    let subs: Vec<_> = (0..5).map(|_| hub.subscribe(&lane()).unwrap()).collect();
    assert_eq!(hub.stats().subscribers, 5);
    drop(subs);
    assert_eq!(hub.stats().subscribers, 0);
    assert_eq!(hub.subscribers(&lane()), 0);
    assert_eq!(hub.publish(&lane(), &append("x")).unwrap().delivered, 0);
}

#[test]
fn a_value_in_the_durable_log_is_served_from_its_recovered_state() {
    use chord::store::{recover, Checkpoint, Durability, JsonlStore, LogWriter};
    use std::sync::Mutex;

    // A producer that ran earlier: its batches are in the log, it is gone.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("lanes.jsonl");
    let mut producer = track(json!({"text": "", "n": 0}));
    let mut writer = LogWriter::new(
        JsonlStore::open(&log, Durability::EveryAppend).unwrap(),
        Checkpoint::EveryBatches(10),
    );
    for i in 1..=25 {
        let mut state = producer.state();
        state
            .member("text")
            .unwrap()
            .push_str(&format!("{i} "))
            .unwrap();
        state.member("n").unwrap().set(i);
        writer.append(&lane(), &producer.flush().unwrap()).unwrap();
    }
    drop(writer);
    let expected = serde_json::to_value(producer.get()).unwrap();

    let store = Mutex::new(JsonlStore::open_read_only(&log).unwrap());
    let hub = Hub::builder()
        .loader(move |address| recover(&*store.lock().ok()?, address).ok().flatten())
        .build();
    let mut sub = hub.subscribe(&lane()).unwrap();
    let (mut decoder, mut replica) = (Decoder::new(), None);
    assert_eq!(drain(&mut sub, &mut decoder, &mut replica), 1);
    assert_eq!(replica, Some(expected));
    assert!(hub.subscribe(&Address::new("lanes", "never")).is_none());
}
