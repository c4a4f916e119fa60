//! The binary itself: CLI validation, missing BPF permission, ready file and clean
//! SIGTERM shutdown (Kafka unreachable on purpose: flush is bounded).
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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
    let mut child = base()
        .args(["--ready-file", ready.to_str().unwrap(), "--netns", "/proc/self/ns/net", "--snapshot-interval-ms", "100"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !ready.exists() {
        if let Some(st) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr).to_string();
            if std::env::var("CI").as_deref() != Ok("true") && err.contains("BPF permission missing") {
                eprintln!("SKIPPED: {err}");
                return;
            }
            panic!("agent exited early ({st}): {err}");
        }
        assert!(Instant::now() < deadline, "ready file not written");
        std::thread::sleep(Duration::from_millis(50));
    }
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
