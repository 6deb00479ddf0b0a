//! The guide's stream server (`chord/examples/guide_server.rs`, the program the crate docs
//! show under "Streams") runs as written: started as a process of its own on a free port, it
//! serves the lane it wrote to a client, and Ctrl-C (SIGINT) stops it cleanly (exit 0).

#[path = "../examples/guide_server.rs"]
#[allow(dead_code)]
mod guide_server;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};

/// The child half: the guide's `run`, on a free port, in the directory the parent chose.
#[test]
#[ignore = "the guide's server as a child process: run by the_guides_server_serves_its_lane"]
fn guide_child() {
    if std::env::var_os("CHORD_GUIDE_CHILD").is_none() {
        return;
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(guide_server::run("127.0.0.1:0")).unwrap();
}

#[cfg(unix)]
#[test]
fn the_guides_server_serves_its_lane() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "guide_child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("CHORD_GUIDE_CHILD", "1")
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let url = lines
        .by_ref()
        .map(Result::unwrap)
        // (after the harness's `test guide_child ... `, on the same line)
        .find_map(|l| l.split("serving ").nth(1).map(str::to_owned))
        .expect("the server says where it serves");
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_once('/').unwrap();

    // A client's catch-up read: the lane's one batch, as the guide wrote it.
    let mut stream = std::net::TcpStream::connect(host).unwrap();
    write!(
        stream,
        "GET /{path}?offset=-1 HTTP/1.0\r\nHost: {host}\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(
        answer.starts_with("HTTP/1.0 200") || answer.starts_with("HTTP/1.1 200"),
        "{answer}"
    );
    assert!(
        answer.ends_with(r#"[[["r",{"text":"Hello"}]]]"#),
        "{answer}"
    );
    assert!(
        dir.path().join("agent.jsonl").exists(),
        "the log is where it runs"
    );

    // Ctrl-C: the server drains and the program ends well.
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::INT,
    )
    .unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
}
