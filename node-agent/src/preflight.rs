//! Start-up checks of what the agent needs from the kernel, so a node that cannot run it gets
//! one message naming what is missing instead of a libbpf error: kernel BTF (CO-RE and tp_btf),
//! a kernel at least `MIN_KERNEL`, and every tracepoint the programs attach to (looked up as
//! `btf_trace_<event>` in the kernel's BTF, which is what tp_btf attaches to).
use std::fmt;
use std::path::Path;

use crate::capture::bpf::KernelBtf;

/// sock:sock_send_length / sock_recv_length, the byte path, arrived in Linux 6.3.
pub const MIN_KERNEL: (u32, u32) = (6, 3);
const VMLINUX_BTF: &str = "/sys/kernel/btf/vmlinux";

/// "6.18.44-fc-v782" -> (6, 18).
pub fn parse_release(release: &str) -> Option<(u32, u32)> {
    let mut it = release.trim().split(|c: char| !c.is_ascii_digit());
    let major = it.next()?.parse().ok()?;
    let minor = it.next()?.parse().ok()?;
    Some((major, minor))
}

/// "6.18.44-fc-v782" -> (6, 18, 44); a missing patch level is 0.
pub fn parse_release_patch(release: &str) -> Option<(u32, u32, u32)> {
    let (major, minor) = parse_release(release)?;
    let patch = release.trim().split(|c: char| !c.is_ascii_digit()).nth(2).and_then(|p| p.parse().ok()).unwrap_or(0);
    Some((major, minor, patch))
}

/// Kernel versions whose TCP socket iterator (`iter/tcp`, the agent's per-namespace walk) can
/// take a reference on a socket already being freed while connections are being opened
/// (CVE-2026-74714, "bpf: tcp: Fix use-after-free in bpf_iter_tcp_established_batch()"): each
/// affected range, from its first version to the first one fixed.
const TCP_ITER_UAF: [((u32, u32, u32), (u32, u32, u32)); 5] =
    [((5, 15, 0), (6, 1, 183)), ((6, 2, 0), (6, 6, 152)), ((6, 7, 0), (6, 12, 104)), ((6, 13, 0), (6, 18, 45)), ((6, 19, 0), (7, 1, 9))];

/// Whether kernel `release` is in an affected range by its version (a distribution kernel may
/// carry the fix without the version saying so).
pub fn tcp_iter_use_after_free(release: &str) -> bool {
    parse_release_patch(release).is_some_and(|v| TCP_ITER_UAF.iter().any(|(from, fixed)| v >= *from && v < *fixed))
}

/// `uname -r` of the running kernel.
pub fn kernel_release() -> String {
    // SAFETY: uname fills the zeroed struct; release is NUL-terminated.
    unsafe {
        let mut u: libc::utsname = std::mem::zeroed();
        if libc::uname(&mut u) != 0 {
            return String::new();
        }
        std::ffi::CStr::from_ptr(u.release.as_ptr()).to_string_lossy().into_owned()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PreflightError {
    NoBtf,
    MissingTracepoints { release: String, missing: Vec<String> },
}

impl fmt::Display for PreflightError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PreflightError::NoBtf => write!(
                f,
                "kernel BTF missing ({VMLINUX_BTF}): the agent needs a kernel built with CONFIG_DEBUG_INFO_BTF=y"
            ),
            PreflightError::MissingTracepoints { release, missing } => {
                write!(f, "kernel {release} lacks the tracepoint(s) {}", missing.join(", "))?;
                match parse_release(release) {
                    Some(v) if v < MIN_KERNEL => {
                        write!(f, "; the agent needs Linux {}.{} or newer", MIN_KERNEL.0, MIN_KERNEL.1)
                    }
                    _ => Ok(()),
                }
            }
        }
    }
}

/// What the kernel offers: tracepoints that are there and optional ones that are not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preflight {
    pub release: String,
    pub missing_optional: Vec<String>,
}

/// Checks BTF and that every `required` tracepoint exists; lists absent `optional` ones.
pub fn check(required: &[&str], optional: &[&str]) -> Result<Preflight, PreflightError> {
    let release = kernel_release();
    if !Path::new(VMLINUX_BTF).exists() {
        return Err(PreflightError::NoBtf);
    }
    let btf = KernelBtf::load().ok_or(PreflightError::NoBtf)?;
    let missing: Vec<String> = required.iter().filter(|t| !btf.has_tracepoint(t)).map(|t| t.to_string()).collect();
    if !missing.is_empty() {
        return Err(PreflightError::MissingTracepoints { release, missing });
    }
    let missing_optional = optional.iter().filter(|t| !btf.has_tracepoint(t)).map(|t| t.to_string()).collect();
    Ok(Preflight { release, missing_optional })
}

pub use crate::shared::caps::{effective_capabilities, parse_cap_eff, Capability, CAP_BPF, CAP_NET_ADMIN, CAP_PERFMON, CAP_SYS_ADMIN, CAP_SYS_NICE};

/// A capability one enabled feature needs, and what for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Need {
    pub cap: Capability,
    pub what_for: &'static str,
}

/// The features of a configuration that need a capability (capture and CPU accounting always
/// load BPF; the others are optional).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Privileged {
    /// Conntrack is read (--nat-entries above 0).
    pub nat: bool,
    /// ... in a network namespace other than the agent's own (--nat-netns, else --netns).
    pub nat_other_netns: bool,
    /// The cgroup sampler thread asks for SCHED_FIFO and RLIMIT_RTPRIO does not allow it.
    pub realtime: bool,
}

impl Privileged {
    /// The features `cfg` turns on.
    pub fn of(cfg: &crate::config::Config) -> Privileged {
        let conntrack_netns = if cfg.nat_netns.is_empty() { &cfg.netns } else { &cfg.nat_netns };
        Privileged {
            nat: cfg.nat_entries > 0,
            nat_other_netns: conntrack_netns.iter().any(|p| !crate::capture::conntrack::is_own_netns(p)),
            realtime: cfg.cgroup_sampler_realtime
                && cfg.cgroup_sample_interval_ms > 0
                && !rtprio_allows(crate::resources::cgroup_report::REALTIME_PRIORITY),
        }
    }
}

/// What `p` needs, in the order the messages name it.
pub fn needs(p: Privileged) -> Vec<Need> {
    let mut v = vec![
        Need { cap: CAP_BPF, what_for: "load the eBPF programs and create their maps" },
        Need { cap: CAP_PERFMON, what_for: "attach them to tracepoints (tp_btf) and read kernel memory in them" },
    ];
    if p.nat {
        v.push(Need { cap: CAP_NET_ADMIN, what_for: "read conntrack over netlink for connections past NAT; --nat-entries 0 turns NAT off" });
    }
    if p.nat && p.nat_other_netns {
        v.push(Need { cap: CAP_SYS_ADMIN, what_for: "enter the --nat-netns/--netns network namespaces (setns) to read their conntrack" });
    }
    if p.realtime {
        v.push(Need { cap: CAP_SYS_NICE, what_for: "run the cgroup sampler thread SCHED_FIFO (--cgroup-sampler-realtime)" });
    }
    v
}

/// The needs `effective` lacks. CAP_SYS_ADMIN stands in for CAP_BPF and CAP_PERFMON, as in the
/// kernel (bpf_capable, perfmon_capable).
pub fn missing(needs: &[Need], effective: u64) -> Vec<Need> {
    let has = |c: Capability| c.in_set(effective);
    needs
        .iter()
        .filter(|n| !has(n.cap) && !((n.cap == CAP_BPF || n.cap == CAP_PERFMON) && has(CAP_SYS_ADMIN)))
        .copied()
        .collect()
}

/// Capabilities the configuration needs and the process lacks; one line naming each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingCapabilities(pub Vec<Need>);

impl fmt::Display for MissingCapabilities {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The first words stay what scripts and tests look for since before the check.
        if self.0.iter().any(|n| n.cap == CAP_BPF || n.cap == CAP_PERFMON) {
            write!(f, "BPF permission missing: ")?;
        }
        write!(f, "capabilities not in the effective set: ")?;
        for (i, n) in self.0.iter().enumerate() {
            write!(f, "{}{} ({})", if i > 0 { ", " } else { "" }, n.cap.name, n.what_for)?;
        }
        write!(f, "; run as root or grant them (node-agent/README.md, \"Capabilities\")")
    }
}

/// Whether RLIMIT_RTPRIO lets the process take SCHED_FIFO `priority` without CAP_SYS_NICE.
pub fn rtprio_allows(priority: i32) -> bool {
    let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit fills the struct.
    unsafe { libc::getrlimit(libc::RLIMIT_RTPRIO, &mut r) == 0 && r.rlim_cur >= priority as libc::rlim_t }
}

/// Checks the effective set against `needs(p)`.
pub fn check_capabilities(p: Privileged) -> Result<(), MissingCapabilities> {
    let eff = effective_capabilities().unwrap_or(0);
    let m = missing(&needs(p), eff);
    if m.is_empty() {
        Ok(())
    } else {
        Err(MissingCapabilities(m))
    }
}

/// With `--power-cap on` the package zones' limit files under `powercap_root` must open for
/// writing: root (or CAP_DAC_OVERRIDE) on the root-owned sysfs files, and a writable mount.
/// No zone is not an error here (the power cap says so and stays idle).
pub fn check_power_cap_writable(powercap_root: &Path) -> Result<(), String> {
    let Some(rapl) = crate::resources::power::Rapl::discover(powercap_root) else { return Ok(()) };
    for d in rapl.domains.iter().filter(|d| d.kind == crate::resources::power::DomainKind::Package) {
        let f = d.zone_dir().join(crate::control::power_cap::actuator::LIMIT);
        if let Err(e) = std::fs::OpenOptions::new().write(true).open(&f) {
            return Err(format!(
                "--power-cap on cannot write {} ({e}): it needs root or CAP_DAC_OVERRIDE on the powercap files and a writable mount; --power-cap dry-run needs neither",
                f.display()
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases() {
        assert_eq!(parse_release("6.18.44-fc-v782"), Some((6, 18)));
        assert_eq!(parse_release("5.15.0-91-generic\n"), Some((5, 15)));
        assert_eq!(parse_release("6.3"), Some((6, 3)));
        assert_eq!(parse_release("garbage"), None);
        assert!(parse_release("6.2.9").unwrap() < MIN_KERNEL);
        assert!(parse_release("6.10.1").unwrap() >= MIN_KERNEL);
    }

    #[test]
    fn the_tcp_iterator_use_after_free_is_told_by_version() {
        for affected in ["6.18.44-fc-v782", "6.13", "5.15.0-91-generic", "6.1.182", "6.6.151", "6.12.103", "6.19.0", "7.1.8"] {
            assert!(tcp_iter_use_after_free(affected), "{affected}");
        }
        for fixed in ["6.18.45", "6.1.183", "6.6.152", "6.12.104", "7.1.9", "7.2.0-rc6", "5.10.200", "garbage"] {
            assert!(!tcp_iter_use_after_free(fixed), "{fixed}");
        }
    }

    #[test]
    fn missing_tracepoints_are_named_with_the_minimum_kernel_when_older() {
        let e = PreflightError::MissingTracepoints {
            release: "5.15.0-91-generic".into(),
            missing: vec!["sock:sock_send_length".into(), "sock:sock_recv_length".into()],
        };
        assert_eq!(
            e.to_string(),
            "kernel 5.15.0-91-generic lacks the tracepoint(s) sock:sock_send_length, sock:sock_recv_length; the agent needs Linux 6.3 or newer"
        );
        let e = PreflightError::MissingTracepoints { release: "6.8.0".into(), missing: vec!["tcp:x".into()] };
        assert_eq!(e.to_string(), "kernel 6.8.0 lacks the tracepoint(s) tcp:x");
    }

    fn mask(caps: &[Capability]) -> u64 {
        Capability::mask(caps)
    }

    #[test]
    fn cap_eff_from_status_text() {
        let text = "Name:\tx\nCapInh:\t0000000000000000\nCapPrm:\t000000c000001000\nCapEff:\t000000c000001000\n";
        assert_eq!(parse_cap_eff(text), Some(mask(&[CAP_BPF, CAP_PERFMON, CAP_NET_ADMIN])));
        assert_eq!(parse_cap_eff("CapEff:\tzz\n"), None);
        assert_eq!(parse_cap_eff("Name: x\n"), None);
    }

    #[test]
    fn each_feature_adds_its_capability() {
        let names = |p: Privileged| needs(p).iter().map(|n| n.cap.name).collect::<Vec<_>>();
        assert_eq!(names(Privileged::default()), ["CAP_BPF", "CAP_PERFMON"]);
        assert_eq!(names(Privileged { nat: true, ..Default::default() }), ["CAP_BPF", "CAP_PERFMON", "CAP_NET_ADMIN"]);
        // Another namespace only matters when conntrack is read at all.
        assert_eq!(names(Privileged { nat_other_netns: true, ..Default::default() }), ["CAP_BPF", "CAP_PERFMON"]);
        assert_eq!(
            names(Privileged { nat: true, nat_other_netns: true, realtime: true }),
            ["CAP_BPF", "CAP_PERFMON", "CAP_NET_ADMIN", "CAP_SYS_ADMIN", "CAP_SYS_NICE"]
        );
    }

    #[test]
    fn missing_names_what_lacks_and_sys_admin_stands_in_for_bpf_and_perfmon() {
        let all = needs(Privileged { nat: true, nat_other_netns: false, realtime: true });
        let names = |m: Vec<Need>| m.iter().map(|n| n.cap.name).collect::<Vec<_>>();
        assert!(missing(&all, mask(&[CAP_BPF, CAP_PERFMON, CAP_NET_ADMIN, CAP_SYS_NICE])).is_empty());
        assert_eq!(names(missing(&all, mask(&[CAP_BPF, CAP_PERFMON, CAP_SYS_NICE]))), ["CAP_NET_ADMIN"]);
        assert_eq!(names(missing(&all, mask(&[CAP_SYS_ADMIN, CAP_NET_ADMIN, CAP_SYS_NICE]))), Vec::<&str>::new());
        assert_eq!(names(missing(&all, 0)), ["CAP_BPF", "CAP_PERFMON", "CAP_NET_ADMIN", "CAP_SYS_NICE"]);
    }

    #[test]
    fn the_message_names_each_missing_capability_and_what_it_is_for() {
        let all = needs(Privileged { nat: true, ..Default::default() });
        let e = MissingCapabilities(missing(&all, mask(&[CAP_PERFMON])));
        assert_eq!(
            e.to_string(),
            "BPF permission missing: capabilities not in the effective set: CAP_BPF (load the eBPF programs and create their maps), \
             CAP_NET_ADMIN (read conntrack over netlink for connections past NAT; --nat-entries 0 turns NAT off); \
             run as root or grant them (node-agent/README.md, \"Capabilities\")"
        );
        let e = MissingCapabilities(missing(&all, mask(&[CAP_BPF, CAP_PERFMON])));
        assert!(e.to_string().starts_with("capabilities not in the effective set: CAP_NET_ADMIN ("), "{e}");
    }

    #[test]
    fn power_cap_needs_writable_limit_files() {
        let root = std::env::temp_dir().join(format!("wg-preflight-powercap-{}", std::process::id()));
        let z = root.join("intel-rapl:0");
        std::fs::create_dir_all(&z).unwrap();
        for (f, v) in [("name", "package-0"), ("energy_uj", "1"), ("max_energy_range_uj", "100"), (crate::control::power_cap::actuator::LIMIT, "1")] {
            std::fs::write(z.join(f), v).unwrap();
        }
        assert_eq!(check_power_cap_writable(&root), Ok(()));
        assert_eq!(check_power_cap_writable(&root.join("none")), Ok(()), "no zone: nothing to check");
        let limit = z.join(crate::control::power_cap::actuator::LIMIT);
        // A directory where the file should be: open for writing fails whoever runs the test.
        std::fs::remove_file(&limit).unwrap();
        std::fs::create_dir(&limit).unwrap();
        let e = check_power_cap_writable(&root).unwrap_err();
        assert!(e.starts_with(&format!("--power-cap on cannot write {} (", limit.display())), "{e}");
        assert!(e.contains("--power-cap dry-run needs neither"), "{e}");
        let _ = std::fs::remove_dir_all(&root);
    }

    /// On the machine the tests run on (CI: this kind of machine, kernel >= 6.3 with BTF).
    #[test]
    fn this_kernel_has_what_the_agent_attaches_to() {
        let required: Vec<&str> = crate::capture::connections::TRACEPOINTS.iter().chain(crate::capture::sched::TRACEPOINTS.iter()).copied().collect();
        match check(&required, &["sock:no_such_event_wattgraph"]) {
            Ok(p) => {
                assert_eq!(p.missing_optional, vec!["sock:no_such_event_wattgraph".to_string()]);
                assert!(parse_release(&p.release).unwrap() >= MIN_KERNEL, "{}", p.release);
            }
            Err(e) => panic!("{e}"),
        }
        let e = check(&["sock:sock_send_length", "sock:no_such_event_wattgraph"], &[]).unwrap_err();
        assert!(e.to_string().contains("lacks the tracepoint(s) sock:no_such_event_wattgraph"), "{e}");
    }
}
