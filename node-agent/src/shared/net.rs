//! The endpoint vocabulary of connections shared by every stage: roles, 16-byte addresses
//! (IPv4 mapped into IPv6), the NAT tuple, and the canonical connection key of the records.
use std::fmt::Write as _;
use std::net::Ipv6Addr;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    Client,
    Server,
    Unknown,
}

impl Role {
    pub fn index(self) -> u32 {
        self as u32
    }
    pub fn from_index(i: u32) -> Option<Role> {
        [Role::Client, Role::Server, Role::Unknown].get(i as usize).copied()
    }
    pub fn symbol(self) -> &'static str {
        ["CLIENT", "SERVER", "UNKNOWN"][self as usize]
    }
    pub fn from_symbol(s: &str) -> Option<Role> {
        (0..3).map(|i| Role::from_index(i).unwrap()).find(|r| r.symbol() == s)
    }
}

/// A connection as its peer sees it past the NAT this host's kernel applied (conntrack's reply
/// tuple, reversed): local after SNAT, remote after DNAT.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NatTuple {
    pub local_addr: [u8; 16],
    pub local_port: u16,
    pub remote_addr: [u8; 16],
    pub remote_port: u16,
}

/// An address and port.
pub type Endpoint = ([u8; 16], u16);

/// The (local, remote) endpoints correlation uses: past the NAT when there was one (the socket's
/// own otherwise). Shared by connection events and transaction records.
pub fn past_nat(nat: Option<&NatTuple>, local: Endpoint, remote: Endpoint) -> (Endpoint, Endpoint) {
    match nat {
        Some(n) => ((n.local_addr, n.local_port), (n.remote_addr, n.remote_port)),
        None => (local, remote),
    }
}

/// 16-byte address (IPv4 as ::ffff:a.b.c.d) from std types.
pub fn addr16_from_ip(ip: std::net::IpAddr) -> [u8; 16] {
    match ip {
        std::net::IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
        std::net::IpAddr::V6(v6) => v6.octets(),
    }
}

/// Writes an address for humans and keys: IPv4-mapped as dotted quad, IPv6 in brackets
/// (so `ip:port` stays unambiguous).
pub fn write_endpoint(out: &mut String, addr: &[u8; 16], port: u16) {
    let v6 = Ipv6Addr::from(*addr);
    match v6.to_ipv4_mapped() {
        Some(v4) => {
            let _ = write!(out, "{}:{}", v4, port);
        }
        None => {
            let _ = write!(out, "[{}]:{}", v6, port);
        }
    }
}

/// Canonical connection key `clientIp:clientPort>serverIp:serverPort` (contracts.md);
/// for UNKNOWN the endpoints are sorted (address bytes, then port) so both ends agree.
/// Writes into `out` (cleared) so the caller can reuse the buffer.
pub fn canonical_key(
    out: &mut String,
    role: Role,
    local: (&[u8; 16], u16),
    remote: (&[u8; 16], u16),
) {
    out.clear();
    let (client, server) = match role {
        Role::Client => (local, remote),
        Role::Server => (remote, local),
        Role::Unknown => {
            if (local.0, local.1) <= (remote.0, remote.1) {
                (local, remote)
            } else {
                (remote, local)
            }
        }
    };
    write_endpoint(out, client.0, client.1);
    out.push('>');
    write_endpoint(out, server.0, server.1);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> [u8; 16] {
        addr16_from_ip(s.parse().unwrap())
    }

    #[test]
    fn key_client_server_unknown() {
        let mut k = String::new();
        let c = a("10.0.0.1");
        let s = a("10.0.0.2");
        canonical_key(&mut k, Role::Client, (&c, 40000), (&s, 80));
        assert_eq!(k, "10.0.0.1:40000>10.0.0.2:80");
        canonical_key(&mut k, Role::Server, (&s, 80), (&c, 40000));
        assert_eq!(k, "10.0.0.1:40000>10.0.0.2:80");
        // UNKNOWN: same key from either end.
        canonical_key(&mut k, Role::Unknown, (&s, 80), (&c, 40000));
        let k1 = k.clone();
        canonical_key(&mut k, Role::Unknown, (&c, 40000), (&s, 80));
        assert_eq!(k, k1);
        assert_eq!(k, "10.0.0.1:40000>10.0.0.2:80");
    }

    #[test]
    fn key_ipv6_bracketed_and_mapped_v4_dotted() {
        let mut k = String::new();
        canonical_key(&mut k, Role::Client, (&a("::1"), 5000), (&a("2001:db8::2"), 443));
        assert_eq!(k, "[::1]:5000>[2001:db8::2]:443");
        let mapped = a("::ffff:127.0.0.1");
        assert_eq!(mapped, a("127.0.0.1"));
        canonical_key(&mut k, Role::Server, (&mapped, 9092), (&mapped, 51000));
        assert_eq!(k, "127.0.0.1:51000>127.0.0.1:9092");
    }
}
