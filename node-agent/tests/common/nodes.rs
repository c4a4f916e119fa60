//! Two Kubernetes-like "nodes" on this kernel, each a network namespace with one pod namespace
//! behind it: node A (10.252.0.1) with pod A (10.252.1.2 and fd77:1::2, pod CIDRs 10.252.1.0/24
//! and fd77:1::/64), node B (10.252.0.2) with pod B (10.252.2.2, CIDR 10.252.2.0/24); the nodes
//! route each other's pod CIDR, as a CNI does. Names carry the test's pid; every namespace goes
//! on drop. Needs root and iproute2.
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Command;
use std::time::Duration;

use super::nat_hosts::{answer, in_ns, sh};

pub const NODE_A: &str = "10.252.0.1";
pub const NODE_B: &str = "10.252.0.2";
pub const POD_A: &str = "10.252.1.2";
pub const POD_A6: &str = "fd77:1::2";
pub const POD_B: &str = "10.252.2.2";
pub const BRIDGE_B: &str = "10.252.2.1";
pub const CIDRS_A: [&str; 2] = ["10.252.1.0/24", "fd77:1::/64"];

pub struct Nodes {
    /// Network namespace names (under /run/netns).
    pub node_a: String,
    pub node_b: String,
    pub pod_a: String,
    pub pod_b: String,
}

impl Nodes {
    pub fn new() -> Nodes {
        let pid = std::process::id();
        let n = |x: &str| format!("wg-scope-{x}-{pid}");
        let t = Nodes { node_a: n("na"), node_b: n("nb"), pod_a: n("pa"), pod_b: n("pb") };
        t.remove();
        for ns in t.all() {
            sh(&["ip", "netns", "add", ns]);
            sh(&["ip", "-n", ns, "link", "set", "lo", "up"]);
        }
        let (na, nb, pa, pb) = (t.node_a.as_str(), t.node_b.as_str(), t.pod_a.as_str(), t.pod_b.as_str());
        // Made inside the namespaces: the names cannot collide with anyone's.
        sh(&["ip", "link", "add", "wgsa", "netns", na, "type", "veth", "peer", "name", "wgsb", "netns", nb]);
        sh(&["ip", "link", "add", "wgpa", "netns", na, "type", "veth", "peer", "name", "eth0", "netns", pa]);
        sh(&["ip", "link", "add", "wgpb", "netns", nb, "type", "veth", "peer", "name", "eth0", "netns", pb]);
        for (ns, dev, addr) in [
            (na, "wgsa", format!("{NODE_A}/24")),
            (nb, "wgsb", format!("{NODE_B}/24")),
            (na, "wgpa", "10.252.1.1/24".to_string()),
            (pa, "eth0", format!("{POD_A}/24")),
            (nb, "wgpb", format!("{BRIDGE_B}/24")),
            (pb, "eth0", format!("{POD_B}/24")),
        ] {
            sh(&["ip", "-n", ns, "addr", "add", &addr, "dev", dev]);
            sh(&["ip", "-n", ns, "link", "set", dev, "up"]);
        }
        sh(&["ip", "-n", pa, "-6", "addr", "add", &format!("{POD_A6}/64"), "dev", "eth0", "nodad"]);
        sh(&["ip", "-n", pa, "route", "add", "default", "via", "10.252.1.1"]);
        sh(&["ip", "-n", pb, "route", "add", "default", "via", BRIDGE_B]);
        sh(&["ip", "-n", na, "route", "add", "10.252.2.0/24", "via", NODE_B]);
        sh(&["ip", "-n", nb, "route", "add", "10.252.1.0/24", "via", NODE_A]);
        for ns in [na, nb] {
            sh(&["ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv4.ip_forward=1"]);
        }
        t
    }

    fn all(&self) -> [&String; 4] {
        [&self.node_a, &self.node_b, &self.pod_a, &self.pod_b]
    }

    fn remove(&self) {
        for ns in self.all() {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
        }
    }
}

impl Drop for Nodes {
    fn drop(&mut self) {
        self.remove();
    }
}

/// One TCP exchange: a server in `server_ns` on `listen` accepts one connection, reads `req`
/// bytes, answers `resp` and reads to the client's close; a client in `client_ns` dials `to`,
/// sends `req`, reads `resp` and closes. Returns the client's local endpoint.
pub fn exchange(server_ns: &str, listen: &str, client_ns: &str, to: &str, req: usize, resp: usize) -> SocketAddr {
    let listen: SocketAddr = listen.parse().unwrap();
    let listener = in_ns(server_ns, move || TcpListener::bind(listen).unwrap()).join().unwrap();
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        answer(&mut s, req, resp);
        let mut rest = Vec::new();
        s.read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty());
    });
    let to: SocketAddr = to.parse().unwrap();
    let local = in_ns(client_ns, move || {
        let mut s = TcpStream::connect_timeout(&to, Duration::from_secs(5)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(&vec![1u8; req]).unwrap();
        let mut buf = vec![0u8; resp];
        s.read_exact(&mut buf).unwrap();
        s.local_addr().unwrap()
    })
    .join()
    .unwrap();
    server.join().unwrap();
    local
}
