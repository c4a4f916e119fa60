//! Host power per interval: measured from RAPL (powercap `intel-rapl:*`: package, core, dram
//! per socket, counter wrap via `max_energy_range_uj`), or, where RAPL is absent, estimated
//! by a documented linear model. Also the attribution of PowerThesis Eq. 2.2/3.2.
//!
//! Split into idle and active power per socket:
//! - MEASURED: idle = `--idle-watts-per-socket` if set, else the lowest power this socket has
//!   shown so far (a running minimum; it converges to the idle floor once the host has been
//!   idle for one interval; until then it over-states idle). Active = measured - idle.
//! - ESTIMATED: idle = cpus × `--idle-watts-per-cpu`; active = busy CPUs (on-CPU ns / interval
//!   ns) × (`--max-watts-per-cpu` - `--idle-watts-per-cpu`).
//!
//! Active power is divided by weight (weighted cycles, or on-CPU ns without counters); idle
//! stays with the host; a socket with active power but no weight keeps it as "unattributed".
//! So per interval: Σ attributed + idle + unattributed = host power, exactly up to rounding.
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::capture::sched::MAX_SOCKETS;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PowerSource {
    Measured,
    Estimated,
}

impl PowerSource {
    pub fn index(self) -> u32 {
        self as u32
    }
    pub fn symbol(self) -> &'static str {
        ["MEASURED", "ESTIMATED"][self as usize]
    }
    pub fn from_symbol(s: &str) -> Option<PowerSource> {
        [PowerSource::Measured, PowerSource::Estimated].into_iter().find(|p| p.symbol() == s)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DomainKind {
    Package,
    Core,
    Dram,
    Other,
}

#[derive(Debug)]
pub struct RaplDomain {
    pub name: String,
    pub socket: u32,
    pub kind: DomainKind,
    energy_path: PathBuf,
    max_range_uj: u64,
    last_uj: Option<u64>,
}

impl RaplDomain {
    /// The powercap zone directory (where the constraint files of this domain live).
    pub fn zone_dir(&self) -> &Path {
        self.energy_path.parent().expect("energy_uj lives in its zone directory")
    }
}

/// Energy consumed between two readings of a counter that wraps at `max_range_uj`.
pub fn energy_delta_uj(prev: u64, now: u64, max_range_uj: u64) -> u64 {
    if now >= prev {
        now - prev
    } else {
        // Wrapped once (intervals are far shorter than a wrap period: ~60 s at 4 kW...).
        max_range_uj.saturating_sub(prev) + now
    }
}

fn read_u64(path: &Path) -> Option<u64> {
    // Stack buffer: no allocation per reading.
    let mut f = std::fs::File::open(path).ok()?;
    let mut buf = [0u8; 32];
    let n = f.read(&mut buf).ok()?;
    std::str::from_utf8(&buf[..n]).ok()?.trim().parse().ok()
}

/// RAPL domains found under a powercap root (normally /sys/class/powercap).
#[derive(Debug)]
pub struct Rapl {
    pub domains: Vec<RaplDomain>,
}

/// One interval's RAPL energy, joules per socket.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RaplInterval {
    pub package_j: [f64; MAX_SOCKETS],
    pub core_j: [f64; MAX_SOCKETS],
    pub dram_j: [f64; MAX_SOCKETS],
    pub has_core: bool,
    pub has_dram: bool,
}

impl Rapl {
    /// None when the root has no `intel-rapl:N` package zone.
    pub fn discover(root: &Path) -> Option<Rapl> {
        let mut zones: Vec<PathBuf> = Vec::new();
        let list = |dir: &Path| -> Vec<PathBuf> {
            std::fs::read_dir(dir)
                .map(|rd| {
                    rd.flatten()
                        .filter(|e| e.file_name().to_string_lossy().starts_with("intel-rapl:"))
                        .map(|e| e.path())
                        .collect()
                })
                .unwrap_or_default()
        };
        for z in list(root) {
            zones.extend(list(&z)); // nested subzones (the flat symlinks are listed too)
            zones.push(z);
        }
        let mut domains: Vec<RaplDomain> = Vec::new();
        for z in zones {
            let Some(zname) = z.file_name().map(|n| n.to_string_lossy().into_owned()) else { continue };
            if domains.iter().any(|d| d.energy_path.parent().and_then(|p| p.file_name()).map(|n| n.to_string_lossy() == zname) == Some(true)) {
                continue;
            }
            let ids: Vec<u32> = zname["intel-rapl:".len()..].split(':').filter_map(|x| x.parse().ok()).collect();
            let Some(&socket) = ids.first() else { continue };
            let name = std::fs::read_to_string(z.join("name")).unwrap_or_default().trim().to_string();
            let kind = if ids.len() == 1 && name.starts_with("package") {
                DomainKind::Package
            } else if name == "core" {
                DomainKind::Core
            } else if name == "dram" {
                DomainKind::Dram
            } else {
                DomainKind::Other
            };
            let energy_path = z.join("energy_uj");
            let Some(max_range_uj) = read_u64(&z.join("max_energy_range_uj")) else { continue };
            if read_u64(&energy_path).is_none() {
                continue; // unreadable (permissions on newer kernels)
            }
            domains.push(RaplDomain { name, socket: socket % MAX_SOCKETS as u32, kind, energy_path, max_range_uj, last_uj: None });
        }
        domains.sort_by(|a, b| (a.socket, a.name.as_str()).cmp(&(b.socket, b.name.as_str())));
        domains.iter().any(|d| d.kind == DomainKind::Package).then_some(Rapl { domains })
    }

    /// Energy since the previous call (the first call only primes the counters).
    pub fn read(&mut self) -> RaplInterval {
        let mut out = RaplInterval::default();
        for d in &mut self.domains {
            let Some(now) = read_u64(&d.energy_path) else { continue };
            let j = d.last_uj.map(|p| energy_delta_uj(p, now, d.max_range_uj) as f64 / 1e6).unwrap_or(0.0);
            d.last_uj = Some(now);
            let s = d.socket as usize;
            match d.kind {
                DomainKind::Package => out.package_j[s] += j,
                DomainKind::Core => {
                    out.core_j[s] += j;
                    out.has_core = true
                }
                DomainKind::Dram => {
                    out.dram_j[s] += j;
                    out.has_dram = true
                }
                DomainKind::Other => {}
            }
        }
        out
    }

    pub fn sockets(&self) -> usize {
        self.domains.iter().map(|d| d.socket as usize + 1).max().unwrap_or(0)
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelParams {
    pub idle_watts_per_cpu: f64,
    pub max_watts_per_cpu: f64,
}

impl Default for ModelParams {
    fn default() -> Self {
        ModelParams { idle_watts_per_cpu: 1.5, max_watts_per_cpu: 6.0 }
    }
}

/// Host power of one interval, per socket, split into idle and active.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostPower {
    pub source: PowerSource,
    /// Total power per socket (package + dram where measured).
    pub total_w: [f64; MAX_SOCKETS],
    pub idle_w: [f64; MAX_SOCKETS],
    pub package_w: Option<f64>,
    pub core_w: Option<f64>,
    pub dram_w: Option<f64>,
}

impl HostPower {
    pub fn active_w(&self, s: usize) -> f64 {
        (self.total_w[s] - self.idle_w[s]).max(0.0)
    }
    pub fn total(&self) -> f64 {
        self.total_w.iter().sum()
    }
    pub fn idle(&self) -> f64 {
        self.idle_w.iter().sum()
    }
}

pub enum Meter {
    Rapl { rapl: Rapl, idle_cfg: Option<f64>, min_seen: [f64; MAX_SOCKETS] },
    Model { params: ModelParams, cpus_per_socket: [u32; MAX_SOCKETS] },
}

impl Meter {
    /// RAPL under `powercap_root` when present, else the model (the caller logs once why).
    pub fn new(powercap_root: &Path, idle_cfg: Option<f64>, params: ModelParams, cpus_per_socket: [u32; MAX_SOCKETS]) -> Meter {
        match Rapl::discover(powercap_root) {
            Some(mut rapl) => {
                rapl.read();
                Meter::Rapl { rapl, idle_cfg, min_seen: [f64::INFINITY; MAX_SOCKETS] }
            }
            None => Meter::Model { params, cpus_per_socket },
        }
    }

    pub fn source(&self) -> PowerSource {
        match self {
            Meter::Rapl { .. } => PowerSource::Measured,
            Meter::Model { .. } => PowerSource::Estimated,
        }
    }

    /// Power over an interval of `dt_ns` in which the CPUs of each socket were busy for
    /// `busy_ns[s]` (sum over its CPUs).
    pub fn interval(&mut self, dt_ns: u64, busy_ns: &[u64; MAX_SOCKETS]) -> HostPower {
        let secs = (dt_ns as f64 / 1e9).max(1e-9);
        match self {
            Meter::Rapl { rapl, idle_cfg, min_seen } => {
                let r = rapl.read();
                let mut hp = HostPower {
                    source: PowerSource::Measured,
                    total_w: [0.0; MAX_SOCKETS],
                    idle_w: [0.0; MAX_SOCKETS],
                    package_w: Some(r.package_j.iter().sum::<f64>() / secs),
                    core_w: r.has_core.then(|| r.core_j.iter().sum::<f64>() / secs),
                    dram_w: r.has_dram.then(|| r.dram_j.iter().sum::<f64>() / secs),
                };
                for s in 0..MAX_SOCKETS {
                    let w = (r.package_j[s] + r.dram_j[s]) / secs;
                    hp.total_w[s] = w;
                    if w > 0.0 {
                        min_seen[s] = min_seen[s].min(w);
                    }
                    let idle = idle_cfg.unwrap_or(if min_seen[s].is_finite() { min_seen[s] } else { 0.0 });
                    hp.idle_w[s] = idle.min(w);
                }
                hp
            }
            Meter::Model { params, cpus_per_socket } => {
                let mut hp = HostPower {
                    source: PowerSource::Estimated,
                    total_w: [0.0; MAX_SOCKETS],
                    idle_w: [0.0; MAX_SOCKETS],
                    package_w: None,
                    core_w: None,
                    dram_w: None,
                };
                for s in 0..MAX_SOCKETS {
                    let n = cpus_per_socket[s] as f64;
                    let busy_cpus = (busy_ns[s] as f64 / dt_ns.max(1) as f64).min(n);
                    hp.idle_w[s] = n * params.idle_watts_per_cpu;
                    hp.total_w[s] = hp.idle_w[s] + busy_cpus * (params.max_watts_per_cpu - params.idle_watts_per_cpu).max(0.0);
                }
                hp
            }
        }
    }
}

/// PowerThesis Eq. 3.2 for one consumer: Σ_s active_s · w_s / W_s (W_s = total weight on socket s).
pub fn attributed_watts(hp: &HostPower, weight: &[f64; MAX_SOCKETS], total_weight: &[f64; MAX_SOCKETS]) -> f64 {
    (0..MAX_SOCKETS)
        .filter(|&s| total_weight[s] > 0.0)
        .map(|s| hp.active_w(s) * weight[s] / total_weight[s])
        .sum()
}

/// Active power on sockets where nothing carried weight (stays with the host).
pub fn unattributed_watts(hp: &HostPower, total_weight: &[f64; MAX_SOCKETS]) -> f64 {
    (0..MAX_SOCKETS).filter(|&s| total_weight[s] <= 0.0).map(|s| hp.active_w(s)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A temp dir laid out like /sys/class/powercap (nested zones plus flat symlinks).
    struct Fixture(PathBuf);
    impl Fixture {
        fn new(tag: &str) -> Fixture {
            let d = std::env::temp_dir().join(format!("wg-powercap-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            std::fs::create_dir_all(&d).unwrap();
            Fixture(d)
        }
        fn zone(&self, rel: &str, name: &str, max: u64, uj: u64) {
            let z = self.0.join(rel);
            std::fs::create_dir_all(&z).unwrap();
            std::fs::write(z.join("name"), format!("{name}\n")).unwrap();
            std::fs::write(z.join("max_energy_range_uj"), format!("{max}\n")).unwrap();
            std::fs::write(z.join("energy_uj"), format!("{uj}\n")).unwrap();
        }
        fn set(&self, rel: &str, uj: u64) {
            std::fs::write(self.0.join(rel).join("energy_uj"), format!("{uj}\n")).unwrap();
        }
    }
    impl Drop for Fixture {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn wrap_arithmetic() {
        assert_eq!(energy_delta_uj(100, 250, 1000), 150);
        assert_eq!(energy_delta_uj(900, 50, 1000), 150);
        assert_eq!(energy_delta_uj(5, 5, 1000), 0);
    }

    #[test]
    fn rapl_fixture_two_sockets_with_wrap() {
        let f = Fixture::new("rapl");
        const MAX: u64 = 262_143_328_850;
        f.zone("intel-rapl:0", "package-0", MAX, MAX - 10_000_000);
        f.zone("intel-rapl:0/intel-rapl:0:0", "core", MAX, 1_000_000);
        f.zone("intel-rapl:0/intel-rapl:0:1", "dram", MAX, 2_000_000);
        f.zone("intel-rapl:1", "package-1", MAX, 0);
        std::os::unix::fs::symlink(f.0.join("intel-rapl:0/intel-rapl:0:0"), f.0.join("intel-rapl:0:0")).unwrap();
        let mut m = Meter::new(&f.0, None, ModelParams::default(), [0; MAX_SOCKETS]);
        assert_eq!(m.source(), PowerSource::Measured);
        if let Meter::Rapl { rapl, .. } = &m {
            assert_eq!(rapl.domains.len(), 4, "symlinked subzone counted once: {:?}", rapl.domains);
            assert_eq!(rapl.sockets(), 2);
        }
        // 2 s: package-0 wraps (+10 J before the wrap, +30 J after = 40 J -> 20 W),
        // core 10 J (5 W), dram 4 J (2 W), package-1 60 J (30 W).
        f.set("intel-rapl:0", 30_000_000);
        f.set("intel-rapl:0/intel-rapl:0:0", 11_000_000);
        f.set("intel-rapl:0/intel-rapl:0:1", 6_000_000);
        f.set("intel-rapl:1", 60_000_000);
        let hp = m.interval(2_000_000_000, &[0; MAX_SOCKETS]);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(close(hp.package_w.unwrap(), 50.0), "{hp:?}");
        assert!(close(hp.core_w.unwrap(), 5.0) && close(hp.dram_w.unwrap(), 2.0), "{hp:?}");
        assert!(close(hp.total_w[0], 22.0) && close(hp.total_w[1], 30.0), "{hp:?}");
        // First interval: the running minimum is this interval, so all of it is idle.
        assert!(close(hp.idle(), hp.total()));
        // Busier interval: idle stays at the minimum, the rest is active.
        f.set("intel-rapl:0", 30_000_000 + 80_000_000);
        f.set("intel-rapl:1", 60_000_000 + 60_000_000);
        let hp = m.interval(2_000_000_000, &[0; MAX_SOCKETS]);
        assert!(close(hp.total_w[0], 40.0) && close(hp.idle_w[0], 22.0) && close(hp.active_w(0), 18.0), "{hp:?}");
        assert!(close(hp.active_w(1), 0.0));
    }

    #[test]
    fn configured_idle_and_attribution_sum_to_measured() {
        let f = Fixture::new("attr");
        f.zone("intel-rapl:0", "package-0", 1 << 40, 0);
        let mut m = Meter::new(&f.0, Some(10.0), ModelParams::default(), [0; MAX_SOCKETS]);
        f.set("intel-rapl:0", 35_000_000); // 35 J in 1 s
        let hp = m.interval(1_000_000_000, &[0; MAX_SOCKETS]);
        assert!((hp.active_w(0) - 25.0).abs() < 1e-9);
        // Three processes with on-CPU ns 600, 300, 100 on socket 0: 15, 7.5, 2.5 W.
        let w = [[600.0, 0.0, 0.0, 0.0], [300.0, 0.0, 0.0, 0.0], [100.0, 0.0, 0.0, 0.0]];
        let tot = [1000.0, 0.0, 0.0, 0.0];
        let p: Vec<f64> = w.iter().map(|x| attributed_watts(&hp, x, &tot)).collect();
        assert!((p[0] - 15.0).abs() < 1e-9 && (p[1] - 7.5).abs() < 1e-9 && (p[2] - 2.5).abs() < 1e-9);
        let sum: f64 = p.iter().sum::<f64>() + hp.idle() + unattributed_watts(&hp, &tot);
        assert!((sum - 35.0).abs() < 1e-9, "{sum}");
        // Nothing ran: the active power is the host's, unattributed.
        assert!((unattributed_watts(&hp, &[0.0; MAX_SOCKETS]) - 25.0).abs() < 1e-9);
    }

    #[test]
    fn model_when_rapl_absent() {
        let mut m = Meter::new(Path::new("/nonexistent/powercap"), None, ModelParams { idle_watts_per_cpu: 2.0, max_watts_per_cpu: 10.0 }, [2, 0, 0, 0]);
        assert_eq!(m.source(), PowerSource::Estimated);
        // 1.5 CPUs busy over 1 s on 2 CPUs: idle 4 W + 1.5 × 8 W = 16 W.
        let hp = m.interval(1_000_000_000, &[1_500_000_000, 0, 0, 0]);
        assert_eq!((hp.total(), hp.idle(), hp.active_w(0)), (16.0, 4.0, 12.0));
        assert!(hp.package_w.is_none());
        // Busy is capped at the CPU count.
        let hp = m.interval(1_000_000_000, &[9_000_000_000, 0, 0, 0]);
        assert_eq!(hp.total(), 20.0);
    }
}
