// The stream server of the guide (the crate docs, "Streams"), a complete program: a lane
// written through a durable log, served as a Durable Stream until Ctrl-C.
//
// Its dependencies: `chord-delta` (feature `streams`), `serde` (feature `derive`) and
// `tokio` (features `macros`, `rt-multi-thread`, `net`, `signal`).
// `cargo run --example guide_server`, then
// `curl 'http://127.0.0.1:8080/streams/lanes/main?offset=-1'`.
use chord::store::{Address, Checkpoint, Durable, JsonlStore, LogWriter};
use chord::streams::{serve, Log, Streams};

#[derive(chord::Tracked, serde::Serialize, serde::Deserialize, Default)]
struct Lane {
    text: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    run("127.0.0.1:8080").await
}

/// Writes the lane, then serves it on `addr` (`127.0.0.1:0`: any free port) until Ctrl-C.
pub async fn run(addr: &str) -> Result<(), Box<dyn std::error::Error>> {
    let log = Log::new(JsonlStore::open("agent.jsonl", Default::default())?);
    let writer = LogWriter::new(log.clone(), Checkpoint::EveryBytes(256 * 1024));
    let mut lane = Durable::open(writer, Address::new("lanes", "main"), Lane::default)?;
    lane.state().text.push_str("Hello");
    lane.flush()?; // now readable at /streams/lanes/main

    let app = Streams::new(&log).router(); // an axum Router: merge your own routes into it
    let listener = tokio::net::TcpListener::bind(addr).await?;
    println!(
        "serving http://{}/streams/lanes/main",
        listener.local_addr()?
    );
    // Ctrl-C drains the server (live readers end at an event boundary and resume elsewhere).
    let stop = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    serve(listener, app, stop).await?;
    Ok(())
}
