//! BPF integration tests: real programs, real loopback TCP traffic.
//! Need root. Without BPF: fail when CI=true, otherwise skip with a reason.
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::common;
use common::agent::wait_for;
use common::netns::NetnsThread;

use wattgraph_agent::capture::connections::{self as capture, CaptureHandle, CaptureOptions};
use wattgraph_agent::capture::event::{ConnEvent, Kind};
use wattgraph_agent::shared::net::{addr16_from_ip, Role};
use wattgraph_agent::identity::proc_info::ProcCache;

fn start(opts: CaptureOptions) -> Option<CaptureHandle> {
    common::start_capture(opts)
}

fn opts() -> CaptureOptions {
    CaptureOptions {
        snapshot_bytes: 1 << 30,
        snapshot_interval: Duration::from_secs(600),
        ignore_self: false, // the test process is the traffic source
        map_entries: 4096,
        ..Default::default()
    }
}

#[derive(Debug, Clone)]
struct Conn {
    client_port: u16,
    server_port: u16,
    client_tid: u32,
    server_tid: u32,
    server_addr: SocketAddr,
}

fn tid() -> u32 {
    unsafe { libc::gettid() as u32 }
}

/// One connection: client sends `n` bytes, server answers `m`, client holds the
/// connection for `hold`, then closes; the server closes on EOF.
/// Threads are named ("wg-cli" / "wg-srv"): the events carry the process's name, not theirs.
fn run_conn(bind: &str, n: usize, m: usize, chunk: usize, hold: Duration) -> Conn {
    let listener = TcpListener::bind(bind).expect("bind");
    let server_addr = listener.local_addr().unwrap();
    let srv = std::thread::Builder::new()
        .name("wg-srv".into())
        .spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = vec![0u8; n];
            s.read_exact(&mut buf).unwrap();
            s.write_all(&vec![7u8; m]).unwrap();
            let mut rest = Vec::new();
            s.read_to_end(&mut rest).unwrap();
            assert!(rest.is_empty());
            tid()
        })
        .unwrap();
    let (ptx, prx) = mpsc::channel();
    let cli = std::thread::Builder::new()
        .name("wg-cli".into())
        .spawn(move || {
            let mut c = TcpStream::connect(server_addr).unwrap();
            ptx.send(c.local_addr().unwrap().port()).unwrap();
            let data = vec![1u8; n];
            for part in data.chunks(chunk.max(1)) {
                c.write_all(part).unwrap();
            }
            let mut back = vec![0u8; m];
            c.read_exact(&mut back).unwrap();
            std::thread::sleep(hold);
            drop(c);
            tid()
        })
        .unwrap();
    let client_port = prx.recv().unwrap();
    let client_tid = cli.join().unwrap();
    let server_tid = srv.join().unwrap();
    Conn { client_port, server_port: server_addr.port(), client_tid, server_tid, server_addr }
}

fn is_client(e: &ConnEvent, c: &Conn) -> bool {
    e.local_port == c.client_port && e.remote_port == c.server_port
}
fn is_server(e: &ConnEvent, c: &Conn) -> bool {
    e.local_port == c.server_port && e.remote_port == c.client_port
}

/// Collects events until both ends of `c` were CLOSED (or 10 s passed).
fn collect_conn(h: &CaptureHandle, c: &Conn) -> (Vec<ConnEvent>, Vec<ConnEvent>) {
    let (mut cl, mut sv) = (Vec::new(), Vec::new());
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        let done = |v: &Vec<ConnEvent>| v.iter().any(|e| e.kind == Kind::Closed);
        if done(&cl) && done(&sv) {
            break;
        }
        if let Ok(e) = h.events().recv_timeout(Duration::from_millis(100)) {
            if is_client(&e, c) {
                cl.push(e);
            } else if is_server(&e, c) {
                sv.push(e);
            }
        }
    }
    (cl, sv)
}

fn own_netns() -> u32 {
    capture::netns_inode(&PathBuf::from("/proc/self/ns/net")).unwrap()
}

fn comm_of(e: &ConnEvent) -> &str {
    e.comm_str()
}

fn check_pair(c: &Conn, cl: &[ConnEvent], sv: &[ConnEvent], n: u64, m: u64) {
    let (me, comm) = (std::process::id(), common::own_process_comm());
    let ip = addr16_from_ip(c.server_addr.ip());
    for (evs, role, tid) in [(cl, Role::Client, c.client_tid), (sv, Role::Server, c.server_tid)] {
        let first = evs.first().unwrap_or_else(|| panic!("no events for {role:?} of {c:?}"));
        assert_eq!(first.kind, Kind::Opened, "{role:?} first event: {evs:?}");
        let last = evs.last().unwrap();
        assert_eq!(last.kind, Kind::Closed, "{role:?} last event: {evs:?}");
        assert_eq!(evs.iter().filter(|e| e.kind == Kind::Opened).count(), 1);
        assert_eq!(evs.iter().filter(|e| e.kind == Kind::Closed).count(), 1);
        for e in evs {
            assert_eq!(e.role, role);
            assert_eq!(e.tgid, me, "{role:?} tgid");
            assert_eq!(e.pid, tid, "{role:?} pid (thread id)");
            assert_eq!(comm_of(e), comm, "{role:?} comm");
            assert_eq!(e.netns, own_netns());
            assert_eq!(e.local_addr, ip);
            assert_eq!(e.remote_addr, ip);
            assert!(e.proc_start_ns > 0 && e.cookie != 0 && e.cgroup_id != 0);
            assert_eq!(e.cookie, first.cookie);
        }
    }
    let (cc, sc) = (cl.last().unwrap(), sv.last().unwrap());
    assert_eq!((cc.bytes_sent, cc.bytes_recv), (n, m), "client CLOSED bytes");
    assert_eq!((sc.bytes_sent, sc.bytes_recv), (m, n), "server CLOSED bytes");
    assert_ne!(cc.cookie, sc.cookie);
}

#[test]
fn opened_closed_both_ends_ipv4_and_ipv6() {
    let Some(h) = start(opts()) else { return };
    assert_eq!(h.attached.len(), 3);
    for (bind, n, m) in [("127.0.0.1:0", 12_345usize, 54_321usize), ("[::1]:0", 777, 3)] {
        let c = run_conn(bind, n, m, 4096, Duration::ZERO);
        let (cl, sv) = collect_conn(&h, &c);
        check_pair(&c, &cl, &sv, n as u64, m as u64);
        let opened = cl.first().unwrap();
        assert_eq!((opened.bytes_sent, opened.bytes_recv), (0, 0), "client OPENED at handshake");
    }
    h.stop();
}

#[test]
fn byte_threshold_snapshots_are_monotone() {
    let Some(h) = start(CaptureOptions { snapshot_bytes: 64 * 1024, snapshot_min_interval: Duration::ZERO, ..opts() }) else { return };
    let n = 1 << 20;
    let c = run_conn("127.0.0.1:0", n, 10, 16 * 1024, Duration::ZERO);
    let (cl, sv) = collect_conn(&h, &c);
    check_pair(&c, &cl, &sv, n as u64, 10);
    // The client writes 16 KiB at a time (~16 crossings of 64 KiB); the server's
    // reads may each return several hundred KiB, so it crosses fewer times.
    for (evs, min) in [(&cl, 8), (&sv, 2)] {
        let snaps: Vec<_> = evs.iter().filter(|e| e.kind == Kind::Snapshot).collect();
        assert!(snaps.len() >= min, "expected >= {min} SNAPSHOTs, got {}", snaps.len());
        let mut prev = (0u64, 0u64);
        for e in evs {
            let cur = (e.bytes_sent, e.bytes_recv);
            assert!(cur.0 >= prev.0 && cur.1 >= prev.1, "not monotone: {prev:?} -> {cur:?}");
            prev = cur;
        }
    }
    h.stop();
}

/// The byte rule reports a busy socket at most once per `snapshot_min_interval`: a megabyte
/// written in 16 KiB parts crosses 64 KiB sixteen times, and within an hour of its OPENED none of
/// the crossings is reported; its CLOSED still carries every byte.
#[test]
fn byte_rule_holds_a_socket_reported_within_the_min_interval() {
    let Some(h) = start(CaptureOptions { snapshot_bytes: 64 * 1024, snapshot_min_interval: Duration::from_secs(3600), ..opts() }) else { return };
    let n = 1 << 20;
    let c = run_conn("127.0.0.1:0", n, 10, 16 * 1024, Duration::ZERO);
    let (cl, sv) = collect_conn(&h, &c);
    check_pair(&c, &cl, &sv, n as u64, 10);
    for evs in [&cl, &sv] {
        assert!(evs.iter().all(|e| e.kind != Kind::Snapshot), "a SNAPSHOT within the min interval: {evs:?}");
    }
    h.stop();
}

/// ... and once the interval has passed since its last report, the next crossing is reported.
#[test]
fn byte_rule_reports_again_once_the_min_interval_passed() {
    let Some(h) = start(CaptureOptions { snapshot_bytes: 64 * 1024, snapshot_min_interval: Duration::from_millis(200), ..opts() }) else { return };
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let server_addr = listener.local_addr().unwrap();
    let srv = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut all = Vec::new();
        s.read_to_end(&mut all).unwrap();
        all.len()
    });
    let mut cli = TcpStream::connect(server_addr).unwrap();
    let client_port = cli.local_addr().unwrap().port();
    cli.write_all(&[1u8; 128 * 1024]).unwrap();
    std::thread::sleep(Duration::from_millis(400)); // past the interval, whatever the first part did
    cli.write_all(&[2u8; 128 * 1024]).unwrap();
    drop(cli);
    assert_eq!(srv.join().unwrap(), 256 * 1024);
    let c = Conn { client_port, server_port: server_addr.port(), client_tid: 0, server_tid: 0, server_addr };
    let (cl, _) = collect_conn(&h, &c);
    let closed_at = cl.iter().position(|e| e.kind == Kind::Closed).expect("client CLOSED");
    assert!(
        cl[..closed_at].iter().any(|e| e.kind == Kind::Snapshot && e.bytes_sent > 128 * 1024),
        "no SNAPSHOT of the second part before CLOSED: {cl:?}"
    );
    h.stop();
}

#[test]
fn idle_connection_bytes_are_swept() {
    let Some(h) = start(CaptureOptions { snapshot_interval: Duration::from_millis(200), ..opts() }) else { return };
    let c = run_conn("127.0.0.1:0", 100, 5, 100, Duration::from_millis(1200));
    let (cl, sv) = collect_conn(&h, &c);
    check_pair(&c, &cl, &sv, 100, 5);
    for evs in [&cl, &sv] {
        let closed_at = evs.len() - 1;
        let snap = evs[..closed_at].iter().find(|e| e.kind == Kind::Snapshot && e.bytes_sent + e.bytes_recv == 105);
        assert!(snap.is_some(), "no SNAPSHOT with all bytes before CLOSED: {evs:?}");
    }
    h.stop();
}

/// More idle sockets with unreported bytes than the sweep holds at once (it emits their SNAPSHOTs
/// chunk by chunk, sweep.rs): every one of them still gets a SNAPSHOT with all its bytes.
#[test]
fn many_idle_sockets_bytes_are_all_swept() {
    use std::collections::HashSet;
    const N: usize = 1500; // 3,000 sockets, about three chunks
    let Some(h) = start(CaptureOptions { snapshot_interval: Duration::from_millis(200), ..opts() }) else { return };
    let (clients, _servers) = hold_connections(N);
    // Each socket sent one byte and received one; keyed by (local port, remote port).
    let mut left: HashSet<(u16, u16)> = HashSet::new();
    for c in &clients {
        let (l, r) = (c.local_addr().unwrap().port(), c.peer_addr().unwrap().port());
        left.insert((l, r));
        left.insert((r, l));
    }
    wait_for(&format!("a SNAPSHOT with both bytes of each of {} sockets", 2 * N), || {
        while let Ok(e) = h.events().try_recv() {
            if e.kind == Kind::Snapshot && e.bytes_sent == 1 && e.bytes_recv == 1 {
                left.remove(&(e.local_port, e.remote_port));
            }
        }
        left.is_empty()
    });
    h.stop();
}

/// A process whose dialling thread has a name of its own: prints that thread's id.
const NAMED_THREAD_DIALER: &str = r#"
#include <arpa/inet.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

static int port;

static void *dial(void *unused) {
    prctl(PR_SET_NAME, "wg-io-thread");
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0 || write(fd, "hi", 2) != 2)
        exit(2);
    printf("%ld\n", (long)syscall(SYS_gettid));
    close(fd);
    return unused;
}

int main(void) {
    if (scanf("%d", &port) != 1)
        return 3;
    prctl(PR_SET_NAME, "wg-proc");
    pthread_t t;
    return pthread_create(&t, 0, dial, 0) || pthread_join(t, 0);
}
"#;

/// A connection carries its process's name, not the name of the thread that opened it: a
/// service's driver thread (`Neo4jDriverIO-2`) showed on the map instead of the service (`java`).
/// Both ends: the client in a process named `wg-proc` dialling from `wg-io-thread`, the server
/// in this process accepting on `wg-acceptor`.
#[test]
fn connections_are_named_after_their_process_not_the_calling_thread() {
    let Some(exe) = common::native::compile("named-thread-dialer", NAMED_THREAD_DIALER) else { return };
    let Some(h) = start(opts()) else { return };
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let server_addr = listener.local_addr().unwrap();
    let acceptor = std::thread::Builder::new()
        .name("wg-acceptor".into())
        .spawn(move || {
            let (mut s, peer) = listener.accept().unwrap();
            let mut got = Vec::new();
            s.read_to_end(&mut got).unwrap();
            (got, peer.port(), tid())
        })
        .unwrap();
    let dial_tid: u32 = common::native::run(&exe, format!("{}\n", server_addr.port())).trim().parse().unwrap();
    let (got, client_port, server_tid) = acceptor.join().unwrap();
    assert_eq!(got, b"hi");
    let c = Conn { client_port, server_port: server_addr.port(), client_tid: dial_tid, server_tid, server_addr };
    let (cl, sv) = collect_conn(&h, &c);
    h.stop();
    assert!(cl.iter().any(|e| e.kind == Kind::Closed) && sv.iter().any(|e| e.kind == Kind::Closed), "client {cl:?}\nserver {sv:?}");
    let me = common::own_process_comm();
    assert_ne!(me, "wg-acceptor");
    for e in &cl {
        assert_eq!(e.pid, dial_tid, "the named thread dialled: {e:?}");
        assert_ne!(e.pid, e.tgid, "not the process's main thread: {e:?}");
        assert_eq!(comm_of(e), "wg-proc", "client {:?} of the process named wg-proc", e.kind);
    }
    for e in &sv {
        assert_eq!(e.pid, server_tid, "the named thread accepted: {e:?}");
        assert_eq!(comm_of(e), me, "server {:?} of this process", e.kind);
    }
}

/// A process that connects, sends and exits before anything reads its events still gets its
/// command line: the kernel copies it from the process's memory at its first socket, while
/// /proc/<pid>/cmdline (all user space can read later) is gone with the process.
#[test]
fn command_line_of_a_process_gone_before_its_events_were_read() {
    let Some(h) = start(opts()) else { return };
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let marker = format!("wg-short-lived-{}", std::process::id());
    let script = format!("exec 3<>/dev/tcp/127.0.0.1/{port}; printf hello >&3; exec 3>&-");
    let child = std::process::Command::new("bash").args(["-c", &script, &marker]).spawn().expect("bash");
    let child_pid = child.id();
    let (mut s, _) = listener.accept().unwrap();
    let mut got = Vec::new();
    s.read_to_end(&mut got).unwrap();
    assert_eq!(got, b"hello");
    let status = child.wait_with_output().unwrap().status;
    assert!(status.success(), "bash /dev/tcp client: {status}");
    // Reaped: /proc has nothing of it any more.
    assert!(!std::path::Path::new(&format!("/proc/{child_pid}")).exists());

    let deadline = Instant::now() + Duration::from_secs(10);
    let mut opened = None;
    while opened.is_none() && Instant::now() < deadline {
        if let Ok(e) = h.events().recv_timeout(Duration::from_millis(100)) {
            if e.tgid == child_pid && e.kind == Kind::Opened && e.remote_port == port {
                opened = Some(e);
            }
        }
    }
    let ev = opened.expect("OPENED of the short-lived client");
    let mut from_proc_only = ProcCache::new(16);
    assert_eq!(from_proc_only.cmdline(ev.tgid, ev.proc_start_ns), None, "control: /proc no longer has it");
    let mut procs = ProcCache::new(16);
    procs.use_kernel_cmdlines(h.kernel_cmdlines().clone());
    // The copy is read with the event's ring poll; a later poll at worst (the pipeline asks again).
    let mut cmdline = None;
    wait_for("the kernel's copy of the command line", || {
        cmdline = procs.cmdline(ev.tgid, ev.proc_start_ns).map(str::to_string);
        cmdline.is_some()
    });
    let cmdline = cmdline.unwrap();
    assert!(cmdline.starts_with("bash -c exec 3<>/dev/tcp/127.0.0.1/"), "{cmdline}");
    assert!(cmdline.ends_with(&marker), "{cmdline}");
    h.stop();
}

#[test]
fn own_process_ignored_by_default() {
    let Some(h) = start(CaptureOptions { ignore_self: true, ..opts() }) else { return };
    let c = run_conn("127.0.0.1:0", 1000, 1000, 1000, Duration::ZERO);
    // Give the ring buffer time, then assert nothing of ours arrived.
    std::thread::sleep(Duration::from_millis(500));
    let me = std::process::id();
    let evs = h.stop_and_drain();
    assert!(!evs.iter().any(|e| is_client(e, &c) || is_server(e, &c)), "own sockets captured");
    assert!(!evs.iter().any(|e| e.tgid == me));
}

#[test]
fn netns_filter_excludes_other_namespaces() {
    let ns = NetnsThread::spawn(|| run_conn("127.0.0.1:0", 4321, 1234, 4321, Duration::ZERO));
    let ns_path = ns.path.clone();
    let ns_ino = capture::netns_inode(&ns_path).unwrap();
    assert_ne!(ns_ino, own_netns());
    let Some(h) = start(CaptureOptions { netns: vec![ns_path], ..opts() }) else {
        ns.cancel();
        return;
    };
    let inside = ns.run();
    let outside = run_conn("127.0.0.1:0", 999, 999, 999, Duration::ZERO);
    let (cl, sv) = collect_conn(&h, &inside);
    check_pair_netns(&inside, &cl, &sv, 4321, 1234, ns_ino);
    std::thread::sleep(Duration::from_millis(300));
    let rest = h.stop_and_drain();
    for e in cl.iter().chain(&sv).chain(&rest) {
        assert_eq!(e.netns, ns_ino, "event from another namespace: {e:?}");
    }
    let _ = outside;
}

fn check_pair_netns(c: &Conn, cl: &[ConnEvent], sv: &[ConnEvent], n: u64, m: u64, ns: u32) {
    assert_eq!(cl.first().map(|e| e.kind), Some(Kind::Opened), "{cl:?}");
    assert_eq!(sv.first().map(|e| e.kind), Some(Kind::Opened), "{sv:?}");
    let (cc, sc) = (cl.last().unwrap(), sv.last().unwrap());
    assert_eq!((cc.kind, sc.kind), (Kind::Closed, Kind::Closed));
    assert_eq!((cc.role, sc.role), (Role::Client, Role::Server));
    assert_eq!((cc.bytes_sent, cc.bytes_recv, sc.bytes_sent, sc.bytes_recv), (n, m, m, n));
    assert_eq!((cc.netns, sc.netns), (ns, ns));
    assert_eq!((cc.pid, sc.pid), (c.client_tid, c.server_tid));
}

/// Holds `n` loopback connections open at once (2n sockets), each with one byte each way.
fn hold_connections(n: usize) -> (Vec<TcpStream>, Vec<TcpStream>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (mut clients, mut servers) = (Vec::new(), Vec::new());
    for _ in 0..n {
        let mut c = TcpStream::connect(addr).unwrap();
        let (mut s, _) = listener.accept().unwrap();
        c.write_all(b"q").unwrap();
        let mut b = [0u8; 1];
        s.read_exact(&mut b).unwrap();
        s.write_all(b"r").unwrap();
        c.read_exact(&mut b).unwrap();
        clients.push(c);
        servers.push(s);
    }
    (clients, servers)
}

/// Socket state is socket-local storage: nothing is evicted, `--map-entries` (the closed-
/// transaction map) does not bound the live sockets tracked, and what caps the memory is the
/// kernel's per-socket `net.core.optmem_max`: a socket whose storage it refuses is counted.
#[test]
fn socket_state_has_no_eviction_and_refusals_are_counted() {
    use std::sync::atomic::Ordering::Relaxed;
    const MANY: usize = 2500;
    let every = Duration::from_millis(500);
    // 5,000 live sockets with `--map-entries` at its minimum (64): the sweep (which reads a few
    // hundred sockets per syscall) sees every one of them, and nothing was refused.
    let Some(h) = start(CaptureOptions { snapshot_interval: every, map_entries: 64, ..opts() }) else { return };
    let held = hold_connections(MANY);
    let st = h.stats();
    // A sweep after all of them were created (the count is taken in the same sweep). Events are
    // taken meanwhile: a full channel would hold the capture thread, and its sweeps, back.
    wait_for("a sweep that sees every live socket", || {
        while h.events().try_recv().is_ok() {}
        st.socket_map_entries.load(Relaxed) >= (2 * MANY) as u64
    });
    assert_eq!(st.socket_storage_refused.load(Relaxed), 0, "storage refused on a host with room");
    drop(held);

    // In a namespace whose optmem_max (per namespace) is below one socket's state, the kernel
    // refuses each socket's storage: counted (at least once per socket; again at its later calls).
    const N: usize = 50;
    let ns = NetnsThread::spawn(|| {
        std::fs::write("/proc/sys/net/core/optmem_max", "64").expect("set optmem_max in the test's namespace");
        hold_connections(N)
    });
    let small = ns.run();
    wait_for(&format!("{} refusals counted for {} sockets", 2 * N, 2 * N), || {
        while h.events().try_recv().is_ok() {}
        st.socket_storage_refused.load(Relaxed) >= (2 * N) as u64
    });
    drop(small);
    drop(h);
}

/// A connection older than the agent: the kernel saw no handshake, so it cannot tell the ends
/// apart; the listening sockets can. The accepted socket (its port listens) is the SERVER, the
/// dialling one (its peer listens on this host) the CLIENT, for every event of each.
#[test]
fn sockets_older_than_the_agent_get_their_role_from_the_listeners() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let mut client = TcpStream::connect(addr).unwrap();
    let (mut server, _) = listener.accept().unwrap();
    let cport = client.local_addr().unwrap().port();
    let Some(h) = start(opts()) else { return };
    client.write_all(&[1u8; 1000]).unwrap();
    let mut buf = [0u8; 1000];
    server.read_exact(&mut buf).unwrap();
    server.write_all(&[2u8; 300]).unwrap();
    client.read_exact(&mut buf[..300]).unwrap();
    drop(client);
    drop(server);
    let (mut cl, mut sv) = (Vec::new(), Vec::new());
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let closed = |v: &Vec<ConnEvent>| v.iter().any(|e| e.kind == Kind::Closed);
    while std::time::Instant::now() < deadline && !(closed(&cl) && closed(&sv)) {
        if let Ok(e) = h.events().recv_timeout(Duration::from_millis(100)) {
            if (e.local_port, e.remote_port) == (cport, addr.port()) {
                cl.push(e);
            } else if (e.local_port, e.remote_port) == (addr.port(), cport) {
                sv.push(e);
            }
        }
    }
    h.stop();
    drop(listener);
    assert!(closed(&cl) && closed(&sv), "client {cl:?}\nserver {sv:?}");
    assert!(cl.iter().all(|e| e.role == Role::Client), "{cl:?}");
    assert!(sv.iter().all(|e| e.role == Role::Server), "{sv:?}");
    let last = |v: &Vec<ConnEvent>| *v.iter().find(|e| e.kind == Kind::Closed).unwrap();
    assert_eq!((last(&cl).bytes_sent, last(&cl).bytes_recv), (1000, 300));
    assert_eq!((last(&sv).bytes_sent, last(&sv).bytes_recv), (300, 1000));
}
