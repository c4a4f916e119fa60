//! With pins, the transaction baseline moves only past records the output took (journaled): a
//! capture in a child process (this test binary again, its ignored entry below) takes the records
//! of some requests on keep-alive connections, then reads those of more requests and takes none
//! (as an agent killed before its output journaled them), and is killed with SIGKILL; more
//! requests follow while no capture runs, and a capture started on the same pins delivers exactly
//! the requests the child did not take: none of those taken again, none of the others lost.
use crate::common;
use common::child::{wait_file, KillOnDrop};
use common::keepalive::{self, REQUEST, RESPONSE};
use common::netns::NetnsThread;
use common::pin_dir::PinDir;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::AtomicUsize;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use libbpf_rs::{MapCore, MapFlags, MapHandle};
use wattgraph_agent::capture::connections::transactions::{ConnTxn, TxnRole};
use wattgraph_agent::capture::connections::{CaptureHandle, CaptureOptions};

const CONNS: usize = 3;
/// Requests per connection: taken by the child, read by the child and not taken, made while no
/// capture runs.
const TAKEN: u64 = 20;
const NOT_TAKEN: u64 = 15;
const UNSEEN: u64 = 10;
const CHILD_ENV: &str = "WG_PINNED_TXN_CHILD";

/// Per socket (role, client port): transactions, request and response bytes, latencies, closed.
type Sums = HashMap<(TxnRole, u16), (u64, u64, u64, u64, bool)>;

pub fn opts(netns: PathBuf, pin_root: PathBuf) -> CaptureOptions {
    CaptureOptions { netns: vec![netns], pin_root: Some(pin_root), ..common::transaction_options() }
}

fn add(sums: &mut Sums, t: &ConnTxn) {
    let port = if t.role == TxnRole::Client { t.local_port } else { t.remote_port };
    let s = sums.entry((t.role, port)).or_default();
    (s.0, s.1, s.2, s.3) = (s.0 + t.transactions, s.1 + t.request_bytes, s.2 + t.response_bytes, s.3 + t.latency().total());
    s.4 |= t.closed;
}

/// Every socket has `n` transactions, but a client `n - 1` when `client_lags`: a client's
/// transaction completes when its next request starts (or at the close).
fn each_socket_has(sums: &Sums, n: u64, client_lags: bool) -> bool {
    let want = |role: TxnRole| if client_lags && role == TxnRole::Client { n - 1 } else { n };
    sums.len() == 2 * CONNS && sums.iter().all(|((role, _), s)| s.0 >= want(*role))
}

#[test]
fn transactions_taken_are_not_delivered_again_and_those_not_taken_are_after_a_kill() {
    let (dir, pins) = PinDir::fresh("wg-pinned-txn");
    let root = pins.0.clone();
    let (steps, steps_rx) = mpsc::channel::<Option<usize>>();
    let (step_done, step_done_rx) = mpsc::channel::<()>();
    let netns = NetnsThread::spawn(move || keepalive::load(CONNS, steps_rx, step_done, Arc::new(AtomicUsize::new(0))));
    let ns = netns.path.clone();
    let step = |n: u64| {
        steps.send(Some(n as usize)).unwrap();
        step_done_rx.recv_timeout(Duration::from_secs(60)).expect("load step finished");
    };

    let out = dir.join("child");
    let (mut child, kill) = spawn_child(CHILD_ENV, &common::child::test_name(module_path!(), "child_takes_some_records"), &ns, &root, &out);
    let worker = std::thread::spawn(move || netns.run());
    step(TAKEN);
    wait_file(&out.with_extension("taken"), &mut child);
    step(NOT_TAKEN);
    wait_file(&out.with_extension("read"), &mut child);
    kill_child(child, kill);
    step(UNSEEN);

    let Some(h) = common::start_capture(opts(ns, root.clone())) else { return };
    steps.send(None).unwrap();
    let truth = worker.join().unwrap();
    let mut sums = Sums::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while sums.values().filter(|s| s.4).count() < 2 * CONNS {
        assert!(Instant::now() < deadline, "timed out: {sums:?}");
        if let Ok(t) = h.transactions().recv_timeout(Duration::from_millis(100)) {
            h.txn_taken();
            add(&mut sums, &t);
        }
    }
    for t in h.stop_and_drain_all().1 {
        add(&mut sums, &t);
    }
    assert_eq!(sums.len(), 2 * CONNS, "{sums:?}");
    for (port, made) in &truth {
        assert_eq!(*made, TAKEN + NOT_TAKEN + UNSEEN);
        for role in [TxnRole::Client, TxnRole::Server] {
            // The child took TAKEN transactions of each server, TAKEN - 1 of each client (its last
            // completed with the next request), and TAKEN - 1 responses' bytes of both (a server's
            // response bytes are counted at the next request).
            let n = NOT_TAKEN + UNSEEN + u64::from(role == TxnRole::Client);
            let want = (n, n * REQUEST as u64, (NOT_TAKEN + UNSEEN + 1) * RESPONSE as u64, n, true);
            assert_eq!(sums.get(&(role, *port)), Some(&want), "{role:?} end of the connection from port {port}: {sums:?}");
        }
    }
}

/// The killed capture: run by the test above only (it sets CHILD_ENV).
#[test]
#[ignore]
fn child_takes_some_records() {
    let Some((h, root, out)) = child_capture(CHILD_ENV) else { return };
    let next = || h.transactions().recv_timeout(Duration::from_secs(30)).expect("transaction records in the child");
    let mut taken = Sums::new();
    let mut cookies = HashMap::new();
    while !each_socket_has(&taken, TAKEN, true) {
        let t = next();
        h.txn_taken();
        add(&mut taken, &t);
        cookies.insert(t.cookie, (t.role, if t.role == TxnRole::Client { t.local_port } else { t.remote_port }));
    }
    let count = |c: &u64| taken[&cookies[c]].0;
    assert!(taken.iter().all(|((role, _), s)| s.0 == TAKEN - u64::from(*role == TxnRole::Client)), "{taken:?}");
    // Once the kernel was told (the baseline's totals of each socket), the next requests.
    let base = committed_totals(&root);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !cookies.keys().all(|c| base.lookup(&base_key(*c), MapFlags::ANY).ok().flatten().is_some_and(|v| v[..8] == count(c).to_ne_bytes())) {
        assert!(Instant::now() < deadline, "baseline not committed");
        std::thread::sleep(Duration::from_millis(10));
    }
    std::fs::write(out.with_extension("taken"), "").unwrap();
    let mut read = Sums::new();
    while !each_socket_has(&read, NOT_TAKEN, false) {
        add(&mut read, &next());
    }
    std::fs::write(out.with_extension("read"), "").unwrap();
    loop {
        std::thread::sleep(Duration::from_secs(1)); // killed here
    }
}

/// Runs `test` (an ignored child entry of this binary) with `var` set for `child_capture`, and
/// waits until it is ready; SIGKILLed if the test fails.
pub fn spawn_child(var: &str, test: &str, ns: &Path, root: &Path, out: &Path) -> (Child, KillOnDrop) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", test, "--test-threads=1", "--nocapture"])
        .env(var, format!("{}\n{}\n{}", ns.display(), root.display(), out.display()))
        .spawn()
        .unwrap();
    let kill = KillOnDrop(child.id());
    wait_file(&out.with_extension("ready"), &mut child);
    (child, kill)
}

/// SIGKILLs the child and reaps it.
pub fn kill_child(mut child: Child, kill: KillOnDrop) {
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    child.wait().unwrap();
    std::mem::forget(kill); // reaped: its pid may be another process's now
}

/// In a child run by a test that set `var` to its namespace, pin root and output path (a line
/// each): a capture on those pins, told ready by the file `out`.ready; None in a plain test run.
pub fn child_capture(var: &str) -> Option<(CaptureHandle, PathBuf, PathBuf)> {
    let env = std::env::var(var).ok()?;
    let mut lines = env.lines().map(PathBuf::from);
    let (ns, root, out) = (lines.next().unwrap(), lines.next().unwrap(), lines.next().unwrap());
    let h = wattgraph_agent::capture::connections::spawn(opts(ns, root.clone())).expect("child capture");
    std::fs::write(out.with_extension("ready"), "").unwrap();
    Some((h, root, out))
}

/// The pinned baseline map of the connection programs under `root`.
pub fn committed_totals(root: &Path) -> MapHandle {
    pinned_map(root, "txn_base")
}

/// A pinned map of the connection programs under `root`.
pub fn pinned_map(root: &Path, name: &str) -> MapHandle {
    let dir = std::fs::read_dir(root).unwrap().map(|e| e.unwrap().path()).find(|p| p.file_name().unwrap().to_string_lossy().starts_with("connections-")).unwrap();
    MapHandle::from_pinned_path(dir.join("maps").join(name)).unwrap()
}

/// Key of a socket's totals in `txn_base` (struct txn_hist_key, kind TXN_BASE_CONN).
pub fn base_key(cookie: u64) -> [u8; 24] {
    let mut k = [0u8; 24];
    k[..8].copy_from_slice(&cookie.to_ne_bytes());
    k[18] = 0xff;
    k
}
