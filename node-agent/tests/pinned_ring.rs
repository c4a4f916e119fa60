//! With pins, events the capture read from the kernel but the output never took are not lost when
//! the process is killed: a capture in a child process (this test binary again, its ignored
//! entry below) reads every event of some connections and takes none (as an agent killed before
//! its output journaled them), is killed with SIGKILL, and a capture started on the same pins
//! reads all of them again.
use crate::common;
use common::child::{wait_file, KillOnDrop};
use common::netns::NetnsThread;
use common::pin_dir::PinDir;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use wattgraph_agent::capture::connections::{spawn, CaptureOptions};
use wattgraph_agent::capture::event::Kind;
use wattgraph_agent::shared::net::Role;

const CONNECTIONS: usize = 20;
const CHILD_ENV: &str = "WG_PINNED_RING_CHILD";

fn opts(netns: PathBuf, pin_root: PathBuf) -> CaptureOptions {
    CaptureOptions { netns: vec![netns], ignore_self: false, pin_root: Some(pin_root), ..Default::default() }
}

#[test]
fn events_read_but_not_taken_are_read_again_after_a_kill() {
    let (dir, pins) = PinDir::fresh("wg-pinned-ring");
    let root = pins.0.clone();
    let netns = NetnsThread::spawn(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            for _ in 0..CONNECTIONS {
                let (mut s, _) = listener.accept().unwrap();
                let mut buf = [0u8; 4096];
                while let Ok(n @ 1..) = s.read(&mut buf) {
                    s.write_all(&buf[..n]).unwrap();
                }
            }
        });
        let ports: Vec<u16> = (0..CONNECTIONS)
            .map(|i| {
                let mut c = TcpStream::connect(addr).unwrap();
                c.write_all(&vec![b'r'; 100 + i]).unwrap();
                // The echo read before the close: bytes read once the socket reached TCP_CLOSE
                // (its entry gone) are not counted.
                let mut back = vec![0u8; 100 + i];
                c.read_exact(&mut back).unwrap();
                c.shutdown(Shutdown::Write).unwrap();
                c.read_to_end(&mut Vec::new()).unwrap();
                c.local_addr().unwrap().port()
            })
            .collect();
        server.join().unwrap();
        ports
    });
    // Held open, so the namespace (and its inode, part of the pins' name) outlives its thread.
    let ns_file = std::fs::File::open(&netns.path).unwrap();
    let ns_path = PathBuf::from(format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&ns_file)));

    let got = dir.join("got");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", &common::child::test_name(module_path!(), "child_reads_and_takes_nothing"), "--test-threads=1", "--nocapture"])
        .env(CHILD_ENV, format!("{}\n{}\n{}", netns.path.display(), root.display(), got.display()))
        .spawn()
        .unwrap();
    let kill = KillOnDrop(child.id());
    wait_file(&dir.join("got.ready"), &mut child);
    let ports = netns.run();
    wait_file(&got, &mut child);
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    child.wait().unwrap();
    std::mem::forget(kill); // reaped: its pid may be another process's now
    eprintln!("child read {} events and was killed", std::fs::read_to_string(&got).unwrap().trim());

    let Some(h) = common::start_capture(opts(ns_path, root.clone())) else { return };
    let mut closed = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while closed.len() < 2 * CONNECTIONS && Instant::now() < deadline {
        if let Ok(ev) = h.events().recv_timeout(Duration::from_millis(100)) {
            h.taken();
            if ev.kind == Kind::Closed {
                closed.push((ev.role, if ev.role == Role::Client { ev.local_port } else { ev.remote_port }, ev.bytes_sent, ev.bytes_recv));
            }
        }
    }
    h.stop();
    for (i, port) in ports.iter().enumerate() {
        let n = 100 + i as u64;
        assert!(closed.contains(&(Role::Client, *port, n, n)), "client CLOSED of port {port} read again: {closed:?}");
        assert!(closed.contains(&(Role::Server, *port, n, n)), "server CLOSED of port {port} read again: {closed:?}");
    }
}

/// The killed capture: run by the test above only (it sets CHILD_ENV).
#[test]
#[ignore]
fn child_reads_and_takes_nothing() {
    let Ok(env) = std::env::var(CHILD_ENV) else { return };
    let mut lines = env.lines().map(PathBuf::from);
    let (ns, root, got) = (lines.next().unwrap(), lines.next().unwrap(), lines.next().unwrap());
    let h = spawn(opts(ns, root)).expect("child capture");
    std::fs::write(got.with_extension("ready"), "").unwrap();
    // OPENED and CLOSED of both ends of every connection, none taken.
    let mut n = 0;
    while n < 4 * CONNECTIONS {
        h.events().recv_timeout(Duration::from_secs(30)).expect("events in the child");
        n += 1;
    }
    std::fs::write(&got, format!("{n}\n")).unwrap();
    loop {
        std::thread::sleep(Duration::from_secs(1)); // killed here
    }
}
