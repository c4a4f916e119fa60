//! Connection events as decoded from the kernel.
use crate::shared::net::{past_nat, Endpoint, NatTuple, Role};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Opened,
    Snapshot,
    Closed,
}

impl Kind {
    /// Index of the symbol in the Avro enum `ConnectionEventKind`.
    pub fn index(self) -> u32 {
        self as u32
    }
    pub fn from_index(i: u32) -> Option<Kind> {
        [Kind::Opened, Kind::Snapshot, Kind::Closed].get(i as usize).copied()
    }
    pub fn symbol(self) -> &'static str {
        ["OPENED", "SNAPSHOT", "CLOSED"][self as usize]
    }
    pub fn from_symbol(s: &str) -> Option<Kind> {
        (0..3).map(|i| Kind::from_index(i).unwrap()).find(|k| k.symbol() == s)
    }
}

/// One kernel observation; fixed size and `Copy` so the hot path never allocates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnEvent {
    pub kind: Kind,
    pub role: Role,
    /// CLOCK_BOOTTIME ns (converted to Unix time when encoding).
    pub ts_boot_ns: u64,
    pub cookie: u64,
    pub proc_start_ns: u64,
    pub cgroup_id: u64,
    pub bytes_sent: u64,
    pub bytes_recv: u64,
    pub pid: u32,
    pub tgid: u32,
    pub netns: u32,
    pub local_addr: [u8; 16],
    pub local_port: u16,
    pub remote_addr: [u8; 16],
    pub remote_port: u16,
    pub comm: [u8; 16],
    /// The connection past this host's NAT, on the socket that dialled it (`crate::capture::conntrack`).
    pub nat: Option<NatTuple>,
    /// Share of its domain's connections load shedding kept when this one was decided, fixed
    /// point (`KEEP_ONE`: not sampled; 0: shed, reported for its traffic).
    pub keep: u32,
}

/// Fixed point of keep fractions (`SHED_KEEP_ONE` in connections.h).
pub const KEEP_ONE: u32 = 1 << 24;

impl ConnEvent {
    /// `keep` as ConnectionEvent.keepProbability.
    pub fn keep_probability(&self) -> f64 {
        if self.keep >= KEEP_ONE {
            1.0
        } else {
            f64::from(self.keep) / f64::from(KEEP_ONE)
        }
    }

    /// The endpoints correlation uses: past the NAT when there was one.
    pub fn key_endpoints(&self) -> (Endpoint, Endpoint) {
        past_nat(self.nat.as_ref(), (self.local_addr, self.local_port), (self.remote_addr, self.remote_port))
    }

    /// The task name up to the first NUL (lossy only if the kernel gave non-UTF-8).
    pub fn comm_str(&self) -> &str {
        let end = self.comm.iter().position(|&b| b == 0).unwrap_or(16);
        std::str::from_utf8(&self.comm[..end]).unwrap_or("?")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enums_round_trip() {
        for i in 0..3 {
            let k = Kind::from_index(i).unwrap();
            assert_eq!(Kind::from_symbol(k.symbol()), Some(k));
            let r = Role::from_index(i).unwrap();
            assert_eq!(Role::from_symbol(r.symbol()), Some(r));
        }
        assert_eq!(Kind::from_index(3), None);
    }
}
