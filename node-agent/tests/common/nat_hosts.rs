//! Two network namespaces joined by a veth pair; A's iptables DNATs a virtual address to a
//! server in B and SNATs the connection to another address and port range of A's, as
//! kube-proxy does for a Service with masquerading. Names carry the test's pid; both namespaces
//! (and with them the rules) are removed on drop. Needs root, iproute2 and iptables.
use std::fs::File;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd};
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

/// A server's side of one request: reads `req` bytes (10 s at most) and answers `resp`.
pub fn answer(s: &mut TcpStream, req: usize, resp: usize) {
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut buf = vec![0u8; req];
    s.read_exact(&mut buf).unwrap();
    s.write_all(&vec![7u8; resp]).unwrap();
}

/// Runs a command, panicking with its stderr when it fails.
pub fn sh(args: &[&str]) {
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
                answer(&mut s, req, resp);
                let mut rest = Vec::new();
                let _ = s.read_to_end(&mut rest);
            }
        })
    }

    /// A's DNAT of the virtual address now picks B's `port` (as kube-proxy's random pick of
    /// another backend): connections already tracked keep theirs, new ones take this one.
    pub fn dnat_to(&self, port: u16) {
        let (vip_port, backend) = (VIP_PORT.to_string(), format!("{ADDR_B}:{port}"));
        let rule = ["-d", VIP, "-p", "tcp", "--dport", &vip_port, "-j", "DNAT", "--to-destination", &backend];
        sh(&[&["ip", "netns", "exec", &self.a, "iptables", "-t", "nat", "-R", "OUTPUT", "1"], &rule[..]].concat());
    }

    /// B's server on `port` for one connection: reads `req` bytes, answers `resp` and closes
    /// first, so the client's port is free again at once (no TIME_WAIT on A's side) while A's
    /// conntrack keeps the connection in TIME_WAIT.
    pub fn serve_once_closing_first(&self, port: u16, req: usize, resp: usize) -> std::thread::JoinHandle<()> {
        let listener = in_ns(&self.b, move || TcpListener::bind((ADDR_B, port)).unwrap()).join().unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            answer(&mut s, req, resp);
        })
    }

    /// From A's `local_port` (0: any), dials the virtual address, sends `req` bytes, reads `resp`
    /// and the server's close, closes. A port whose previous connection is still closing is
    /// tried again (bounded). Returns the local endpoint.
    pub fn dial_vip_from(&self, local_port: u16, req: usize, resp: usize) -> SocketAddr {
        in_ns(&self.a, move || {
            let vip: std::net::Ipv4Addr = VIP.parse().unwrap();
            let local: std::net::Ipv4Addr = ADDR_A.parse().unwrap();
            let sin = |ip: std::net::Ipv4Addr, port: u16| libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: port.to_be(),
                sin_addr: libc::in_addr { s_addr: u32::from(ip).to_be() },
                sin_zero: [0; 8],
            };
            let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            for _ in 0..100 {
                // SAFETY: plain socket calls on a descriptor this closure owns.
                let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
                assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
                let s = unsafe { TcpStream::from_raw_fd(fd) };
                let one: libc::c_int = 1;
                let (l, r) = (sin(local, local_port), sin(vip, VIP_PORT));
                let ok = unsafe {
                    libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, (&one as *const libc::c_int).cast(), 4) == 0
                        && libc::bind(fd, (&l as *const libc::sockaddr_in).cast(), len) == 0
                        && libc::connect(fd, (&r as *const libc::sockaddr_in).cast(), len) == 0
                };
                if !ok {
                    let e = std::io::Error::last_os_error();
                    assert!(matches!(e.raw_os_error(), Some(libc::EADDRINUSE | libc::EADDRNOTAVAIL)), "dial from {local_port}: {e}");
                    drop(s);
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                }
                let mut s = s;
                s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                s.write_all(&vec![1u8; req]).unwrap();
                let mut buf = vec![0u8; resp];
                s.read_exact(&mut buf).unwrap();
                let mut rest = Vec::new();
                s.read_to_end(&mut rest).unwrap();
                assert!(rest.is_empty(), "{} bytes after the answer", rest.len());
                return s.local_addr().unwrap();
            }
            panic!("port {local_port} of {ADDR_A} not free again within a second");
        })
        .join()
        .unwrap()
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
