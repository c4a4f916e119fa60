//! The binary itself: CLI validation, missing BPF permission, ready file and clean
//! SIGTERM shutdown (Kafka unreachable on purpose: flush is bounded).
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common;

const BIN: &str = env!("CARGO_BIN_EXE_wattgraph-agent");

fn base() -> Command {
    let mut c = Command::new(BIN);
    c.args(["--host-id", "test-host", "--kafka-brokers", "127.0.0.1:1"]);
    c
}

#[test]
fn invalid_value_is_named() {
    let out = base().args(["--snapshot-bytes", "0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--snapshot-bytes '0'"), "{err}");
    let out = Command::new(BIN).args(["--host-id", "h"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--kafka-brokers"));
}

#[test]
fn without_bpf_permission_exits_with_clear_message() {
    if unsafe { libc::geteuid() } != 0 || Command::new("setpriv").arg("--version").output().is_err() {
        eprintln!("SKIPPED: needs root and setpriv to drop privileges");
        return;
    }
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", BIN])
        .args(["--host-id", "h", "--kafka-brokers", "127.0.0.1:1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(err.contains("BPF permission missing") && err.contains("root"), "{err}");
}

#[test]
fn ready_file_and_sigterm_shutdown() {
    let dir = std::env::temp_dir().join(format!("wg-agent-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ready = dir.join("ready");
    let mut cmd = base();
    cmd.args(["--ready-file", ready.to_str().unwrap(), "--netns", "/proc/self/ns/net", "--snapshot-interval-ms", "100"]);
    let Some(agent) = common::agent::spawn_ready(cmd, &ready) else { return };
    let child = agent.into_child();
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let t0 = Instant::now();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(t0.elapsed() < Duration::from_secs(15), "shutdown took {:?}", t0.elapsed());
    assert!(err.contains("sock:inet_sock_set_state"), "startup line names tracepoints: {err}");
    assert!(err.contains("stats: opened="), "final stats line: {err}");
    assert!(!ready.exists(), "ready file removed on exit");
    let _ = std::fs::remove_dir_all(&dir);
}

fn skip_without_bpf(err: &str) -> bool {
    if std::env::var("CI").as_deref() != Ok("true") && err.contains("BPF permission missing") {
        eprintln!("SKIPPED: {err}");
        return true;
    }
    false
}

#[test]
fn once_prints_one_interval_and_exits() {
    let out = Command::new(BIN).args(["--host-id", "h1", "--once", "--sample-interval-ms", "300"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if skip_without_bpf(&err) {
        return;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{err}\n{text}");
    for needle in ["connections:", "power:", "top processes by CPU:", "groups:", "cpu:"] {
        assert!(text.contains(needle), "missing {needle}: {text}");
    }
    // Without RAPL (this machine) the estimate is marked and the reason is said once.
    if !std::path::Path::new("/sys/class/powercap/intel-rapl:0").exists() {
        assert!(text.contains("ESTIMATED"), "{text}");
        assert_eq!(err.matches("RAPL not found").count(), 1, "{err}");
    }
}

/// `--once` over real HTTP/1.1 traffic on loopback (`GET /items/<n>`, a new keep-alive connection
/// every 20 requests so some handshakes fall inside the agent's interval): the printout has the
/// transactions and the normalised route with its latency.
#[test]
fn once_prints_http_routes() {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::sync::atomic::{AtomicBool, Ordering};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let done = std::sync::Arc::new(AtomicBool::new(false));
    let server = std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(s) = s else { return };
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut w = s;
            loop {
                let mut line = String::new();
                if r.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                if line.starts_with("STOP") {
                    return;
                }
                while {
                    let mut h = String::new();
                    r.read_line(&mut h).unwrap_or(0) > 0 && h != "\r\n"
                } {}
                w.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").unwrap();
            }
        }
    });
    let d = done.clone();
    let client = std::thread::spawn(move || {
        let mut i = 0u64;
        // Bounded: until the agent is done, at most 60 s.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !d.load(Ordering::Relaxed) && std::time::Instant::now() < deadline {
            let mut c = TcpStream::connect(addr).unwrap();
            for _ in 0..20 {
                c.write_all(format!("GET /items/{i} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes()).unwrap();
                let mut buf = [0u8; 40];
                c.read_exact(&mut buf).unwrap();
                i += 1;
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        }
        TcpStream::connect(addr).unwrap().write_all(b"STOP\r\n").unwrap();
    });
    let out = Command::new(BIN).args(["--host-id", "h1", "--once", "--sample-interval-ms", "1000"]).output().unwrap();
    done.store(true, Ordering::Relaxed);
    client.join().unwrap();
    server.join().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if skip_without_bpf(&err) {
        return;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{err}\n{text}");
    assert!(!text.contains("transactions: 0 as client, 0 as server"), "{text}");
    let line = text.lines().find(|l| l.contains("server GET /items/{id}")).unwrap_or_else(|| panic!("no route line: {text}"));
    assert!(line.contains(" p50 ") && line.contains(" p99 "), "{line}");
    assert!(text.lines().any(|l| l.contains("client GET /items/{id}")), "{text}");
}

#[test]
fn metrics_endpoint_serves_agent_metrics() {
    use std::io::{Read, Write};
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let dir = std::env::temp_dir().join(format!("wg-agent-metrics-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ready = dir.join("ready");
    let mut cmd = base();
    cmd.args(["--ready-file", ready.to_str().unwrap(), "--metrics-addr", &format!("127.0.0.1:{port}"), "--sample-interval-ms", "100"]);
    let Some(agent) = common::agent::spawn_ready(cmd, &ready) else { return };
    let deadline = Instant::now() + Duration::from_secs(20);
    // Wait until at least one sampling interval is reflected.
    let mut text = String::new();
    while Instant::now() < deadline {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
        text.clear();
        s.read_to_string(&mut text).unwrap();
        if !text.contains("wattgraph_agent_sample_intervals_total 0") {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let child = agent.into_child();
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    for needle in [
        "wattgraph_agent_connection_events_total{kind=\"OPENED\"}",
        "wattgraph_agent_connection_events_per_second{kind=\"CLOSED\"}",
        "wattgraph_agent_ringbuf_lost_total{program=\"connections\"}",
        "wattgraph_agent_thread_map_fill_ratio",
        "wattgraph_agent_kafka_delivery_errors_total",
        "wattgraph_agent_cpu_seconds_total",
        "wattgraph_agent_host_power_watts",
    ] {
        assert!(text.contains(needle), "missing {needle}:\n{text}");
    }
    assert!(!text.contains("wattgraph_agent_sample_intervals_total 0\n"), "{text}");
    assert!(!text.contains("wattgraph_agent_sched_switches_total 0\n"), "{text}");
}
