//! Linux capabilities of the calling thread: what preflight checks before loading and what the
//! capture's error tells apart (a capability missing, or the kernel's policy refusing).

/// A Linux capability: its name and bit (include/uapi/linux/capability.h).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capability {
    pub name: &'static str,
    bit: u32,
}

impl Capability {
    /// Whether the capability mask `set` holds it.
    pub fn in_set(self, set: u64) -> bool {
        set & (1u64 << self.bit) != 0
    }

    /// The mask of `caps`.
    pub fn mask(caps: &[Capability]) -> u64 {
        caps.iter().fold(0, |m, c| m | 1u64 << c.bit)
    }
}

pub const CAP_NET_ADMIN: Capability = Capability { name: "CAP_NET_ADMIN", bit: 12 };
pub const CAP_SYS_ADMIN: Capability = Capability { name: "CAP_SYS_ADMIN", bit: 21 };
pub const CAP_SYS_NICE: Capability = Capability { name: "CAP_SYS_NICE", bit: 23 };
pub const CAP_PERFMON: Capability = Capability { name: "CAP_PERFMON", bit: 38 };
pub const CAP_BPF: Capability = Capability { name: "CAP_BPF", bit: 39 };

/// Whether `effective` may load and attach the tracing programs: CAP_BPF and CAP_PERFMON, for
/// which CAP_SYS_ADMIN stands in, as in the kernel (bpf_capable, perfmon_capable).
pub fn bpf_capable(effective: u64) -> bool {
    CAP_SYS_ADMIN.in_set(effective) || (CAP_BPF.in_set(effective) && CAP_PERFMON.in_set(effective))
}

/// The CapEff mask of a /proc/<pid>/status text.
pub fn parse_cap_eff(status: &str) -> Option<u64> {
    let hex = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
    u64::from_str_radix(hex.trim(), 16).ok()
}

/// The calling thread's effective capabilities. Read from /proc rather than with the caps crate:
/// one hex field is all the checks need.
pub fn effective_capabilities() -> std::io::Result<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/status")?;
    parse_cap_eff(&text).ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidData, "no CapEff line in /proc/thread-self/status"))
}
