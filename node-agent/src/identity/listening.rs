//! Which endpoints listen, per network namespace, from `/proc/<pid>/net/tcp{,6}` of a process in
//! that namespace: a socket whose handshake the agent did not see (older than the agent) is the
//! server end when its local endpoint listens, and the client end of a connection inside the host
//! when its peer's endpoint listens there. Without this both ends of such a connection were UNKNOWN
//! and the stream job could only guess the direction from the address order.
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::shared::net::{Endpoint, Role};

/// A namespace's listeners are read again after this long (only while unknown sockets show up).
const MAX_AGE: Duration = Duration::from_secs(2);
const MAX_NAMESPACES: usize = 4096;
const TCP_LISTEN: &str = "0A";

pub struct Listening {
    proc_root: PathBuf,
    by_netns: HashMap<u32, (Instant, HashSet<Endpoint>)>,
}

impl Listening {
    pub fn new(proc_root: impl Into<PathBuf>) -> Listening {
        Listening { proc_root: proc_root.into(), by_netns: HashMap::new() }
    }

    /// The role of a socket of process `tgid` in namespace `netns` whose handshake was not seen:
    /// Server, Client, or Unknown when neither end is known to listen.
    pub fn role_of(&mut self, netns: u32, tgid: u32, local: Endpoint, remote: Endpoint) -> Role {
        if tgid == 0 {
            return Role::Unknown;
        }
        let fresh = self.by_netns.get(&netns).is_some_and(|(at, _)| at.elapsed() < MAX_AGE);
        if !fresh {
            if self.by_netns.len() >= MAX_NAMESPACES {
                self.by_netns.clear();
            }
            let set = self.read(tgid);
            self.by_netns.insert(netns, (Instant::now(), set));
        }
        let set = &self.by_netns[&netns].1;
        classify(set, local, remote)
    }

    fn read(&self, tgid: u32) -> HashSet<Endpoint> {
        let mut set = HashSet::new();
        for f in ["tcp", "tcp6"] {
            // A process gone meanwhile, or no IPv6: nothing listens as far as we can tell.
            if let Ok(text) = std::fs::read_to_string(self.proc_root.join(format!("{tgid}/net/{f}"))) {
                parse_listeners(&text, &mut set);
            }
        }
        set
    }
}

fn classify(set: &HashSet<Endpoint>, local: Endpoint, remote: Endpoint) -> Role {
    if listens(set, local) {
        Role::Server
    } else if inside_host(local.0, remote.0) && listens(set, remote) {
        Role::Client
    } else {
        Role::Unknown
    }
}

const V4_ANY: [u8; 16] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 0, 0];
const V6_ANY: [u8; 16] = [0; 16];

fn listens(set: &HashSet<Endpoint>, (addr, port): Endpoint) -> bool {
    set.contains(&(addr, port)) || set.contains(&(V6_ANY, port)) || (is_v4(&addr) && set.contains(&(V4_ANY, port)))
}

fn is_v4(a: &[u8; 16]) -> bool {
    a[..12] == V4_ANY[..12]
}

/// The peer is this host: loopback, or the socket's own address.
fn inside_host(local: [u8; 16], remote: [u8; 16]) -> bool {
    remote == local || (is_v4(&remote) && remote[12] == 127) || remote == std::net::Ipv6Addr::LOCALHOST.octets()
}

/// Adds the LISTEN entries of a `/proc/net/tcp` or `tcp6` text. Addresses are printed as the
/// 32-bit words of the network-order address in host byte order; ports in host order.
pub fn parse_listeners(text: &str, out: &mut HashSet<Endpoint>) {
    for line in text.lines().skip(1) {
        let mut f = line.split_whitespace();
        let (Some(_), Some(local), Some(_), Some(st)) = (f.next(), f.next(), f.next(), f.next()) else { continue };
        if st != TCP_LISTEN {
            continue;
        }
        let Some((addr, port)) = local.split_once(':') else { continue };
        let Ok(port) = u16::from_str_radix(port, 16) else { continue };
        let mut a = [0u8; 16];
        match addr.len() {
            8 => {
                let Ok(w) = u32::from_str_radix(addr, 16) else { continue };
                a[10] = 0xff;
                a[11] = 0xff;
                a[12..].copy_from_slice(&w.to_ne_bytes());
            }
            32 => {
                let mut ok = true;
                for i in 0..4 {
                    // get(): 32 bytes of a malformed line may split a multi-byte character.
                    match addr.get(i * 8..i * 8 + 8).map(|h| u32::from_str_radix(h, 16)) {
                        Some(Ok(w)) => a[i * 4..i * 4 + 4].copy_from_slice(&w.to_ne_bytes()),
                        _ => ok = false,
                    }
                }
                if !ok {
                    continue;
                }
            }
            _ => continue,
        }
        out.insert((a, port));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared::net::addr16_from_ip;

    /// Found by the proc_files fuzz target: a 32-byte address whose 8-byte words split a
    /// multi-byte character panicked (byte index not a char boundary); such a line is skipped.
    #[test]
    fn a_malformed_address_with_multibyte_characters_is_skipped() {
        let addr = format!("{}é{}", "0".repeat(7), "0".repeat(23));
        assert_eq!(addr.len(), 32);
        let text = format!("  sl  local_address rem_address   st\n   0: {addr}:1F90 00000000000000000000000000000000:0000 0A\n");
        let mut out = HashSet::new();
        parse_listeners(&text, &mut out);
        assert!(out.is_empty());
    }

    fn ep(ip: &str, port: u16) -> Endpoint {
        (addr16_from_ip(ip.parse().unwrap()), port)
    }

    // Lines as this kernel prints them (x86_64, little-endian): 127.0.0.1:8080 and 0.0.0.0:22
    // listening, one established connection; tcp6: [::]:9000 and [::1]:7000 listening.
    const TCP: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0
   1: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 100 0 0 10 0
   2: 0100007F:9C40 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 3 1 0000000000000000 20 4 30 10 -1
";
    const TCP6: &str = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:2328 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4 1 0000000000000000 100 0 0 10 0
   1: 00000000000000000000000001000000:1B58 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5 1 0000000000000000 100 0 0 10 0
";

    #[test]
    fn parses_listeners_of_both_families() {
        let mut set = HashSet::new();
        parse_listeners(TCP, &mut set);
        parse_listeners(TCP6, &mut set);
        let want: HashSet<Endpoint> =
            [ep("127.0.0.1", 8080), (V4_ANY, 22), ep("::", 9000), ep("::1", 7000)].into_iter().collect();
        assert_eq!(set, want);
    }

    #[test]
    fn server_when_the_local_end_listens_client_when_a_local_peer_does() {
        let mut set = HashSet::new();
        parse_listeners(TCP, &mut set);
        parse_listeners(TCP6, &mut set);
        // Accepted sockets share the listener's port.
        assert_eq!(classify(&set, ep("127.0.0.1", 8080), ep("127.0.0.1", 40000)), Role::Server);
        assert_eq!(classify(&set, ep("10.0.0.5", 22), ep("10.0.0.9", 51000)), Role::Server, "0.0.0.0 listener");
        assert_eq!(classify(&set, ep("10.0.0.5", 9000), ep("10.0.0.9", 51000)), Role::Server, ":: listener, IPv4 peer");
        // The dialling end of a connection inside the host.
        assert_eq!(classify(&set, ep("127.0.0.1", 40000), ep("127.0.0.1", 8080)), Role::Client);
        assert_eq!(classify(&set, ep("::1", 40000), ep("::1", 7000)), Role::Client);
        // A peer on another host listening on a port this host also listens on: not ours to say.
        assert_eq!(classify(&set, ep("10.0.0.5", 40000), ep("10.0.0.9", 22)), Role::Unknown);
        assert_eq!(classify(&set, ep("10.0.0.5", 40000), ep("10.0.0.9", 443)), Role::Unknown);
    }

    #[test]
    fn unknown_process_or_unreadable_proc_stays_unknown() {
        let mut l = Listening::new("/nonexistent-proc");
        assert_eq!(l.role_of(1, 0, ep("127.0.0.1", 8080), ep("127.0.0.1", 1)), Role::Unknown);
        assert_eq!(l.role_of(1, 4242, ep("127.0.0.1", 8080), ep("127.0.0.1", 1)), Role::Unknown);
    }
}
