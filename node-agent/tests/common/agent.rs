//! Running the real agent binary in a test: scratch directories, its metrics endpoint, waiting.
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_wattgraph-agent");

/// A fresh scratch directory for this test process.
pub fn tmp(prefix: &str, tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wg-{prefix}-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The agent's Prometheus text.
pub fn scrape(port: u16) -> String {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    text
}

/// Polls `cond` until it holds; the deadline only stops a hung test.
pub fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A running agent, killed and reaped when dropped, so a failing assertion leaves none behind.
pub struct Agent(Option<Child>);

impl Agent {
    pub fn id(&self) -> u32 {
        self.0.as_ref().map(|c| c.id()).unwrap_or(0)
    }
    /// The process, no longer killed on drop: for a test that stops it and checks how.
    pub fn into_child(mut self) -> Child {
        self.0.take().expect("agent running")
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Starts the agent as `host` (own netns only, no CPU sampling) with `args` and waits for its
/// ready file. None when BPF permission is missing outside CI (skipped, said); in CI that fails.
pub fn start(host: &str, args: &[&str], dir: &Path) -> Option<Agent> {
    let ready = dir.join("ready");
    let mut cmd = Command::new(BIN);
    cmd.args(["--host-id", host, "--ready-file", ready.to_str().unwrap(), "--netns", "/proc/self/ns/net", "--no-resources"])
        .args(args)
        .env("RUST_LOG", "info");
    spawn_ready(cmd, &ready)
}

/// Spawns `cmd` (an agent command line that writes `ready`) and waits for the ready file, as
/// `start` does.
pub fn spawn_ready(mut cmd: Command, ready: &Path) -> Option<Agent> {
    let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ready.exists() {
        if child.try_wait().unwrap().is_some() {
            let out = child.wait_with_output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr).to_string();
            if std::env::var("CI").as_deref() != Ok("true") && err.contains("BPF permission missing") {
                eprintln!("SKIPPED: {err}");
                return None;
            }
            panic!("agent exited early: {err}");
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("ready file not written");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Some(Agent(Some(child)))
}

/// The restart tests' agent: as `host`, counting only `netns` (no CPU accounting), with a spool
/// and its BPF programs pinned under `pins`; `extra` arguments added.
#[allow(clippy::too_many_arguments)]
pub fn pinned(host: &str, brokers: &str, ready: &Path, netns: &Path, metrics_port: u16, spool: &Path, pins: &Path, extra: &[&str]) -> Command {
    let mut cmd = pinned_host(host, brokers, ready, metrics_port, spool, pins);
    cmd.args(["--netns", netns.to_str().unwrap(), "--no-resources"]).args(extra);
    cmd
}

/// A restart test's agent on the whole host, CPU accounting included (its cgroup sampler off).
pub fn pinned_host(host: &str, brokers: &str, ready: &Path, metrics_port: u16, spool: &Path, pins: &Path) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(["--host-id", host, "--kafka-brokers", brokers, "--ready-file", ready.to_str().unwrap()])
        .args(["--cgroup-sample-interval-ms", "0", "--metrics-addr", &format!("127.0.0.1:{metrics_port}")])
        .args(["--spool-dir", spool.to_str().unwrap(), "--pin-bpf", "--bpf-pin-dir", pins.to_str().unwrap()])
        .env("RUST_LOG", "info");
    cmd
}

/// SIGTERM; the agent must exit 0. Returns its stderr.
pub fn sigterm(mut agent: Agent) -> String {
    let child = agent.0.take().expect("agent running");
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(0), "{err}");
    err
}

/// A consumer reading `topic`'s partitions 0..`partitions` from the beginning (no group offsets).
pub fn consumer_from_start(brokers: &str, topic: &str, partitions: i32) -> rdkafka::consumer::BaseConsumer {
    use rdkafka::consumer::Consumer;
    let c: rdkafka::consumer::BaseConsumer =
        rdkafka::config::ClientConfig::new().set("bootstrap.servers", brokers).set("group.id", "wattgraph-test").create().unwrap();
    let mut tpl = rdkafka::TopicPartitionList::new();
    for part in 0..partitions {
        tpl.add_partition_offset(topic, part, rdkafka::Offset::Beginning).unwrap();
    }
    c.assign(&tpl).unwrap();
    c
}
