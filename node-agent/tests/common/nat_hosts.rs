//! Two network namespaces joined by a veth pair; A's iptables DNATs a virtual address to a
//! server in B and SNATs the connection to another address and port range of A's, as
//! kube-proxy does for a Service with masquerading. Names carry the test's pid; both namespaces
//! (and with them the rules) are removed on drop. Needs root, iproute2 and iptables.
use std::fs::File;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

pub const ADDR_A: &str = "10.253.0.1";
pub const SNAT_A: &str = "10.253.0.3";
pub const ADDR_B: &str = "10.253.0.2";
pub const VIP: &str = "10.253.9.100";
pub const VIP_PORT: u16 = 80;
pub const SERVER_PORT: u16 = 7080;
pub const SNAT_PORTS: (u16, u16) = (40000, 40999);

fn sh(args: &[&str]) {
    let out = Command::new(args[0]).args(&args[1..]).output().unwrap_or_else(|e| panic!("{}: {e}", args[0]));
    assert!(out.status.success(), "{}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
}

pub struct Hosts {
    pub a: String,
    pub b: String,
}

impl Hosts {
    /// `tag` tells apart the namespaces of several tests of one process.
    pub fn new(tag: &str) -> Hosts {
        let pid = std::process::id();
        let h = Hosts { a: format!("wg-nat-{tag}-a-{pid}"), b: format!("wg-nat-{tag}-b-{pid}") };
        h.remove();
        let (na, nb) = (h.a.as_str(), h.b.as_str());
        let a = |args: &[&str]| sh(&[&["ip", "netns", "exec", na], args].concat());
        let b = |args: &[&str]| sh(&[&["ip", "netns", "exec", nb], args].concat());
        sh(&["ip", "netns", "add", na]);
        sh(&["ip", "netns", "add", nb]);
        // The veth ends are made inside the namespaces: their names cannot collide with anyone's.
        sh(&["ip", "link", "add", "wgnat0", "netns", na, "type", "veth", "peer", "name", "wgnat1", "netns", nb]);
        a(&["ip", "addr", "add", &format!("{ADDR_A}/24"), "dev", "wgnat0"]);
        a(&["ip", "addr", "add", &format!("{SNAT_A}/24"), "dev", "wgnat0"]);
        a(&["ip", "link", "set", "wgnat0", "up"]);
        a(&["ip", "link", "set", "lo", "up"]);
        // The virtual address needs a route for the first lookup, before the DNAT (no default route).
        a(&["ip", "route", "add", "10.253.9.0/24", "dev", "wgnat0"]);
        b(&["ip", "addr", "add", &format!("{ADDR_B}/24"), "dev", "wgnat1"]);
        b(&["ip", "link", "set", "wgnat1", "up"]);
        b(&["ip", "link", "set", "lo", "up"]);
        let vip_port = VIP_PORT.to_string();
        let backend = format!("{ADDR_B}:{SERVER_PORT}");
        a(&["iptables", "-t", "nat", "-A", "OUTPUT", "-d", VIP, "-p", "tcp", "--dport", &vip_port, "-j", "DNAT", "--to-destination", &backend]);
        let snat = format!("{SNAT_A}:{}-{}", SNAT_PORTS.0, SNAT_PORTS.1);
        let sport = SERVER_PORT.to_string();
        // Only connections that were DNATed are SNATed (kube-proxy marks those it masquerades).
        a(&["iptables", "-t", "nat", "-A", "POSTROUTING", "-d", ADDR_B, "-p", "tcp", "--dport", &sport, "-m", "conntrack", "--ctstate", "DNAT", "-j", "SNAT", "--to-source", &snat]);
        h
    }

    fn remove(&self) {
        for ns in [&self.a, &self.b] {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
        }
    }

    pub fn path(ns: &str) -> PathBuf {
        PathBuf::from(format!("/run/netns/{ns}"))
    }

    /// B's server: per connection, reads `req` bytes, answers `resp`, reads to EOF.
    pub fn serve(&self, n: usize, req: usize, resp: usize) -> std::thread::JoinHandle<()> {
        let listener = in_ns(&self.b, || TcpListener::bind((ADDR_B, SERVER_PORT)).unwrap()).join().unwrap();
        std::thread::spawn(move || {
            for _ in 0..n {
                let (mut s, _) = listener.accept().unwrap();
                s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                let mut buf = vec![0u8; req];
                s.read_exact(&mut buf).unwrap();
                s.write_all(&vec![7u8; resp]).unwrap();
                let mut rest = Vec::new();
                let _ = s.read_to_end(&mut rest);
            }
        })
    }

    /// From A: dials `to`, sends `req` bytes, reads `resp`, waits `hold`, closes. Returns the
    /// local endpoint.
    pub fn dial(&self, to: &str, port: u16, req: usize, resp: usize, hold: Duration) -> SocketAddr {
        let to = to.to_string();
        in_ns(&self.a, move || {
            let mut s = TcpStream::connect_timeout(&format!("{to}:{port}").parse().unwrap(), Duration::from_secs(5)).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            s.write_all(&vec![1u8; req]).unwrap();
            let mut buf = vec![0u8; resp];
            s.read_exact(&mut buf).unwrap();
            std::thread::sleep(hold);
            s.local_addr().unwrap()
        })
        .join()
        .unwrap()
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        self.remove();
    }
}

/// Moves the calling thread into namespace `ns` (threads and processes it starts follow).
pub fn enter(ns: &str) {
    let file = File::open(Hosts::path(ns)).unwrap();
    assert_eq!(unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) }, 0, "setns {ns}");
}

/// Runs `f` on a thread inside namespace `ns`.
pub fn in_ns<T: Send + 'static>(ns: &str, f: impl FnOnce() -> T + Send + 'static) -> std::thread::JoinHandle<T> {
    let ns = ns.to_string();
    std::thread::spawn(move || {
        enter(&ns);
        f()
    })
}
