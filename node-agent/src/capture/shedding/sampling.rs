//! Which connections a keep fraction keeps: a hash of the client endpoint below the fraction.
//! Both agents of a connection hash the same endpoint, so they keep the same connections when
//! they keep the same share, and the correlator can pair the kept ends and rescale by the smaller
//! share. Mirrors `shed_hash` / `shed_conn_hash` in src/capture/connections/connections.h (the kernel decides
//! there in kernel mode; tests/shedding_hash.rs compiles those natively and compares).

use crate::capture::event::KEEP_ONE;
use crate::shared::net::Role;

/// murmur3 (32-bit) of an endpoint, in [0, KEEP_ONE).
pub fn endpoint_hash(addr: &[u8; 16], port: u16) -> u32 {
    let mut h: u32 = 0x5748 ^ u32::from(port);
    for w in addr.chunks_exact(4) {
        let mut k = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
        k = k.wrapping_mul(0xcc9e_2d51).rotate_left(15).wrapping_mul(0x1b87_3593);
        h ^= k;
        h = h.rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64);
    }
    h ^= 18;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    h & (KEEP_ONE - 1)
}

/// The sampling hash of a connection: of its client endpoint; with the role unknown, of the
/// endpoint with the higher port (both hashes combined on equal ports).
pub fn connection_hash(role: Role, local: (&[u8; 16], u16), remote: (&[u8; 16], u16)) -> u32 {
    match role {
        Role::Client => endpoint_hash(local.0, local.1),
        Role::Server => endpoint_hash(remote.0, remote.1),
        Role::Unknown if local.1 > remote.1 => endpoint_hash(local.0, local.1),
        Role::Unknown if local.1 < remote.1 => endpoint_hash(remote.0, remote.1),
        Role::Unknown => endpoint_hash(local.0, local.1) ^ endpoint_hash(remote.0, remote.1),
    }
}

/// A keep fraction in the fixed point of the kernel map and of `ConnEvent::keep`.
pub fn keep_fixed(keep: f64) -> u32 {
    (keep.clamp(0.0, 1.0) * f64::from(KEEP_ONE)).round() as u32
}

/// Whether a connection with this hash is kept at this fixed-point keep fraction.
pub fn kept(hash: u32, keep: u32) -> bool {
    keep >= KEEP_ONE || hash < keep
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared::net::addr16_from_ip;

    fn a(s: &str) -> [u8; 16] {
        addr16_from_ip(s.parse().unwrap())
    }

    #[test]
    fn both_ends_of_a_connection_hash_alike() {
        let (c, s) = (a("10.0.0.1"), a("10.0.0.2"));
        for port in [32768u16, 40000, 60999] {
            let client = connection_hash(Role::Client, (&c, port), (&s, 8080));
            assert_eq!(client, connection_hash(Role::Server, (&s, 8080), (&c, port)));
            // Handshake unseen: the higher (ephemeral) port is taken as the client's.
            assert_eq!(client, connection_hash(Role::Unknown, (&s, 8080), (&c, port)));
            assert_eq!(client, connection_hash(Role::Unknown, (&c, port), (&s, 8080)));
        }
        let same = connection_hash(Role::Unknown, (&c, 5000), (&s, 5000));
        assert_eq!(same, connection_hash(Role::Unknown, (&s, 5000), (&c, 5000)));
    }

    #[test]
    fn consecutive_ports_spread_over_the_range() {
        let c = a("10.1.2.3");
        let keep = KEEP_ONE / 10;
        let n = 20_000u16;
        let kept_n = (30_000..30_000 + n).filter(|p| kept(endpoint_hash(&c, *p), keep)).count();
        // A tenth of them, within a few binomial standard deviations (sd ~ 42).
        assert!((1_800..=2_200).contains(&kept_n), "kept {kept_n} of {n} at 0.1");
        assert!(kept(endpoint_hash(&c, 1), KEEP_ONE));
        assert!(!kept(endpoint_hash(&c, 1), 0));
    }
}
