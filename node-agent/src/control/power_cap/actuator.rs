//! Power-cap actuation (PowerThesis §4.3.3, §5.3.4): applies the host's power
//! budget to the RAPL package zones through powercap (`constraint_0_power_limit_uw`, one zone per
//! socket), within the hardware's range and never below a configured floor. The original limits
//! are restored when the actuator stops or when the budget source has been silent for longer than
//! allowed. Dry-run reports what it would write and writes nothing.
//!
//! The originals are the limits found at start, recorded in the state file (`state`)
//! before the first write; if that file is left from an agent that did not stop cleanly, its
//! limits are the originals instead (restored by the caller at once, see `recovered`).

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::resources::power::{DomainKind, Rapl};
use crate::control::power_cap::state::{boot_id, CapState, Found, ZoneLimit};

pub const LIMIT: &str = "constraint_0_power_limit_uw";

#[derive(Debug)]
struct Zone {
    socket: u32,
    dir: PathBuf,
    original_uw: u64,
    min_uw: u64,
    max_uw: u64,
}

/// Why a socket's cap differs from its share of the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clamp {
    Floor,
    HardwareMin,
    HardwareMax,
}

/// What was applied (or, in dry run, would have been) to one socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub socket: u32,
    pub requested_uw: u64,
    pub applied_uw: u64,
    pub clamp: Option<Clamp>,
    pub written: bool,
}

#[derive(Debug)]
pub enum ActuatorError {
    NoPackageZone(PathBuf),
    Unreadable(PathBuf, String),
    InvalidBudget(f64),
    Write(PathBuf, std::io::Error),
    /// The state file is corrupt, unreadable or another host's: nothing is written.
    StateRefused(PathBuf, String),
    /// The originals could not be recorded before the first cap: nothing was written.
    StateWrite(PathBuf, std::io::Error),
}

impl fmt::Display for ActuatorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ActuatorError::NoPackageZone(root) => write!(
                f,
                "no RAPL package zone (intel-rapl:N with a package name) under {}: power capping is unavailable on this host",
                root.display()
            ),
            ActuatorError::Unreadable(p, why) => write!(f, "cannot read {}: {why}", p.display()),
            ActuatorError::InvalidBudget(w) => {
                write!(f, "power budget must be a positive number of watts, got {w}")
            }
            ActuatorError::Write(p, e) => write!(f, "cannot write {}: {e}", p.display()),
            ActuatorError::StateRefused(p, why) => write!(
                f,
                "the power-cap state file {} is refused ({why}): its limits are not written and nothing is capped; check the package limits, then remove the file",
                p.display()
            ),
            ActuatorError::StateWrite(p, e) => {
                write!(f, "cannot record the original limits in {} ({e}): nothing written", p.display())
            }
        }
    }
}

impl std::error::Error for ActuatorError {}

pub struct PowerCapActuator {
    zones: Vec<Zone>,
    floor_w: f64,
    dry_run: bool,
    source_timeout: Duration,
    last_budget: Option<Instant>,
    capped: bool,
    /// The originals as the state file records them.
    state: CapState,
    state_file: PathBuf,
    /// The state file holds `state` (written before the first cap, or left by a killed agent).
    state_saved: bool,
    recovered: bool,
}

fn read_uw(p: &Path) -> Result<u64, ActuatorError> {
    let s = std::fs::read_to_string(p).map_err(|e| ActuatorError::Unreadable(p.to_path_buf(), e.to_string()))?;
    s.trim().parse().map_err(|e| ActuatorError::Unreadable(p.to_path_buf(), format!("{e}: '{}'", s.trim())))
}

impl PowerCapActuator {
    /// Finds the package zones under `powercap_root` (normally /sys/class/powercap) and their
    /// original limits, to be restored later: those in `state_file` when an agent of this host
    /// and boot left it (see `recovered`), else the current ones.
    pub fn discover(
        host_id: &str,
        powercap_root: &Path,
        state_file: &Path,
        floor_w: f64,
        dry_run: bool,
        source_timeout: Duration,
    ) -> Result<Self, ActuatorError> {
        let rapl = Rapl::discover(powercap_root).ok_or_else(|| ActuatorError::NoPackageZone(powercap_root.to_path_buf()))?;
        let mut zones = Vec::new();
        for d in rapl.domains.iter().filter(|d| d.kind == DomainKind::Package) {
            let dir = d.zone_dir().to_path_buf();
            let original_uw = read_uw(&dir.join(LIMIT))?;
            // The constraint's own maximum when the kernel exposes it, else the zone's range.
            let max_uw = read_uw(&dir.join("constraint_0_max_power_uw"))
                .or_else(|_| read_uw(&dir.join("max_power_range_uw")))?;
            let min_uw = read_uw(&dir.join("constraint_0_min_power_uw")).unwrap_or(0);
            zones.push(Zone { socket: d.socket, dir, original_uw, min_uw, max_uw });
        }
        if zones.is_empty() {
            return Err(ActuatorError::NoPackageZone(powercap_root.to_path_buf()));
        }
        let zone_limit = |z: &Zone| ZoneLimit {
            socket: z.socket,
            zone: z.dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            limit_uw: z.original_uw,
        };
        let root = std::fs::canonicalize(powercap_root).unwrap_or_else(|_| powercap_root.to_path_buf());
        let mut state = CapState { host_id: host_id.to_string(), boot_id: boot_id(), root, zones: zones.iter().map(zone_limit).collect() };
        let refused = |why: String| ActuatorError::StateRefused(state_file.to_path_buf(), why);
        let (mut state_saved, mut recovered) = (false, false);
        match CapState::load(state_file, &state).map_err(refused)? {
            Found::Nothing => {}
            Found::OtherBoot(then) => {
                log::warn!(
                    "power cap: the state file {} was written in boot {then}, this is boot {}: a reboot sets the limits back to the firmware's, so its limits are not written; the limits found now are the originals",
                    state_file.display(),
                    state.boot_id
                );
                CapState::remove(state_file).map_err(|e| refused(format!("stale, and cannot be removed: {e}")))?;
            }
            Found::Recovered(st) => {
                for (z, o) in zones.iter_mut().zip(&st.zones) {
                    z.original_uw = o.limit_uw;
                }
                state = st;
                (state_saved, recovered) = (true, true);
            }
        }
        Ok(PowerCapActuator {
            zones,
            floor_w,
            dry_run,
            source_timeout,
            last_budget: None,
            // A killed agent's cap may be in force: restore writes the originals.
            capped: recovered,
            state,
            state_file: state_file.to_path_buf(),
            state_saved,
            recovered,
        })
    }

    /// The originals came from a state file an agent of this host and boot left behind (it did
    /// not stop cleanly, so its cap may still be in force): the caller restores them at once.
    pub fn recovered(&self) -> bool {
        self.recovered
    }

    pub fn state_file(&self) -> &Path {
        &self.state_file
    }

    pub fn sockets(&self) -> usize {
        self.zones.len()
    }

    /// (socket, limit in µW) of every package zone as found at start (what `restore` writes).
    pub fn originals(&self) -> Vec<(u32, u64)> {
        self.zones.iter().map(|z| (z.socket, z.original_uw)).collect()
    }

    /// Applies a host budget, split evenly over the sockets; each share is clamped to the
    /// per-socket floor and to the hardware's range, and read back after writing.
    pub fn apply(&mut self, host_budget_w: f64, now: Instant) -> Result<Vec<Applied>, ActuatorError> {
        if !host_budget_w.is_finite() || host_budget_w <= 0.0 {
            return Err(ActuatorError::InvalidBudget(host_budget_w));
        }
        self.last_budget = Some(now);
        let n = self.zones.len() as f64;
        let share_uw = (host_budget_w / n * 1e6).round() as u64;
        let floor_uw = (self.floor_w / n * 1e6).round() as u64;
        let mut out = Vec::with_capacity(self.zones.len());
        for z in &self.zones {
            let (mut uw, mut clamp) = (share_uw, None);
            if uw < floor_uw {
                (uw, clamp) = (floor_uw, Some(Clamp::Floor));
            }
            if uw < z.min_uw {
                (uw, clamp) = (z.min_uw, Some(Clamp::HardwareMin));
            }
            if uw > z.max_uw {
                (uw, clamp) = (z.max_uw, Some(Clamp::HardwareMax));
            }
            let mut applied = uw;
            if !self.dry_run {
                if !self.state_saved {
                    // Durable before the first cap, so a killed agent's successor finds it.
                    self.state.save(&self.state_file).map_err(|e| ActuatorError::StateWrite(self.state_file.clone(), e))?;
                    self.state_saved = true;
                }
                let path = z.dir.join(LIMIT);
                std::fs::write(&path, format!("{uw}\n")).map_err(|e| ActuatorError::Write(path.clone(), e))?;
                // The kernel may round to the hardware's power unit: report what it holds.
                applied = read_uw(&path)?;
                self.capped = true;
            }
            out.push(Applied { socket: z.socket, requested_uw: share_uw, applied_uw: applied, clamp, written: !self.dry_run });
        }
        Ok(out)
    }

    /// Called periodically: restores the original limits once the budget source has been
    /// silent for longer than the timeout. Returns true when it restored.
    pub fn check_source(&mut self, now: Instant) -> Result<bool, ActuatorError> {
        match self.last_budget {
            Some(t) if self.capped && now.duration_since(t) > self.source_timeout => {
                self.restore()?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Writes back the original limits.
    pub fn restore(&mut self) -> Result<(), ActuatorError> {
        if !self.capped {
            return Ok(());
        }
        for z in &self.zones {
            let path = z.dir.join(LIMIT);
            std::fs::write(&path, format!("{}\n", z.original_uw)).map_err(|e| ActuatorError::Write(path.clone(), e))?;
        }
        self.capped = false;
        Ok(())
    }

    /// At a clean stop: restores the originals, then removes the state file (kept if the
    /// restore failed, so the next start restores them).
    pub fn release(&mut self) -> Result<(), ActuatorError> {
        self.restore()?;
        if self.state_saved {
            CapState::remove(&self.state_file).map_err(|e| ActuatorError::Write(self.state_file.clone(), e))?;
            self.state_saved = false;
        }
        Ok(())
    }
}

impl Drop for PowerCapActuator {
    fn drop(&mut self) {
        if let Err(e) = self.release() {
            log::error!("power cap: restoring the original limits failed: {e}");
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A powercap tree laid out like /sys/class/powercap on a two-socket Intel server (also
    /// used by the budget controller's tests).
    pub(crate) struct Fixture(pub(crate) PathBuf);

    impl Fixture {
        pub(crate) fn new(tag: &str, with_constraint_max: bool) -> Fixture {
            let root = std::env::temp_dir().join(format!("wattgraph-capfix-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&root);
            for s in 0..2 {
                let z = root.join(format!("intel-rapl:{s}"));
                std::fs::create_dir_all(&z).unwrap();
                let w = |f: &str, v: &str| std::fs::write(z.join(f), format!("{v}\n")).unwrap();
                w("name", &format!("package-{s}"));
                w("energy_uj", "1000");
                w("max_energy_range_uj", "262143328850");
                w("constraint_0_name", "long_term");
                w(LIMIT, "165000000");
                w("max_power_range_uw", "200000000");
                if with_constraint_max {
                    w("constraint_0_max_power_uw", "165000000");
                }
                let core = z.join(format!("intel-rapl:{s}:0"));
                std::fs::create_dir_all(&core).unwrap();
                std::fs::write(core.join("name"), "core\n").unwrap();
                std::fs::write(core.join("energy_uj"), "10\n").unwrap();
                std::fs::write(core.join("max_energy_range_uj"), "262143328850\n").unwrap();
            }
            Fixture(root)
        }

        pub(crate) fn limit(&self, s: u32) -> u64 {
            read_uw(&self.0.join(format!("intel-rapl:{s}")).join(LIMIT)).unwrap()
        }

        pub(crate) fn set_limit(&self, s: u32, uw: u64) {
            std::fs::write(self.0.join(format!("intel-rapl:{s}")).join(LIMIT), format!("{uw}\n")).unwrap();
        }

        /// The state file of the agents run on this tree (beside it, not in it).
        pub(crate) fn state_file(&self) -> PathBuf {
            let mut p = self.0.clone().into_os_string();
            p.push(".state");
            PathBuf::from(p)
        }
    }

    impl Drop for Fixture {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
            let _ = std::fs::remove_file(self.state_file());
        }
    }

    fn actuator(f: &Fixture, floor_w: f64, dry_run: bool) -> PowerCapActuator {
        PowerCapActuator::discover("h1", &f.0, &f.state_file(), floor_w, dry_run, Duration::from_secs(30)).unwrap()
    }

    #[test]
    fn splits_the_budget_over_the_package_zones() {
        let f = Fixture::new("split", true);
        let mut a = actuator(&f, 40.0, false);
        assert_eq!(a.sockets(), 2);
        let applied = a.apply(150.0, Instant::now()).unwrap();
        assert_eq!(applied.iter().map(|x| x.applied_uw).collect::<Vec<_>>(), vec![75_000_000, 75_000_000]);
        assert!(applied.iter().all(|x| x.clamp.is_none() && x.written));
        assert_eq!((f.limit(0), f.limit(1)), (75_000_000, 75_000_000));
    }

    #[test]
    fn never_below_the_floor_nor_above_the_hardware() {
        let f = Fixture::new("bounds", true);
        let mut a = actuator(&f, 100.0, false);
        let low = a.apply(20.0, Instant::now()).unwrap();
        assert_eq!(low[0].applied_uw, 50_000_000);
        assert_eq!(low[0].clamp, Some(Clamp::Floor));
        let high = a.apply(1000.0, Instant::now()).unwrap();
        assert_eq!(high[1].applied_uw, 165_000_000);
        assert_eq!(high[1].clamp, Some(Clamp::HardwareMax));
    }

    #[test]
    fn falls_back_to_the_zone_range_without_a_constraint_maximum() {
        let f = Fixture::new("range", false);
        let mut a = actuator(&f, 0.0, false);
        let high = a.apply(1000.0, Instant::now()).unwrap();
        assert_eq!(high[0].applied_uw, 200_000_000);
    }

    #[test]
    fn dry_run_reports_and_writes_nothing() {
        let f = Fixture::new("dry", true);
        let mut a = actuator(&f, 0.0, true);
        let applied = a.apply(100.0, Instant::now()).unwrap();
        assert_eq!(applied[0].applied_uw, 50_000_000);
        assert!(!applied[0].written);
        assert_eq!(f.limit(0), 165_000_000);
    }

    #[test]
    fn restores_the_original_limits_when_dropped() {
        let f = Fixture::new("restore", true);
        {
            let mut a = actuator(&f, 0.0, false);
            a.apply(100.0, Instant::now()).unwrap();
            assert_eq!(f.limit(0), 50_000_000);
        }
        assert_eq!((f.limit(0), f.limit(1)), (165_000_000, 165_000_000));
    }

    #[test]
    fn restores_when_the_budget_source_goes_silent_and_recaps_when_it_returns() {
        let f = Fixture::new("silent", true);
        let mut a = actuator(&f, 0.0, false);
        let t0 = Instant::now();
        a.apply(100.0, t0).unwrap();
        assert!(!a.check_source(t0 + Duration::from_secs(10)).unwrap());
        assert_eq!(f.limit(0), 50_000_000);
        assert!(a.check_source(t0 + Duration::from_secs(31)).unwrap());
        assert_eq!(f.limit(0), 165_000_000);
        assert!(!a.check_source(t0 + Duration::from_secs(60)).unwrap(), "restores once");
        a.apply(120.0, t0 + Duration::from_secs(61)).unwrap();
        assert_eq!(f.limit(1), 60_000_000);
    }

    #[test]
    fn refuses_a_nonsense_budget_and_a_host_without_rapl() {
        let f = Fixture::new("bad", true);
        let mut a = actuator(&f, 0.0, false);
        for bad in [f64::NAN, -5.0, 0.0, f64::INFINITY] {
            let e = a.apply(bad, Instant::now()).unwrap_err();
            assert!(e.to_string().contains("positive number of watts"), "{e}");
        }
        assert_eq!(f.limit(0), 165_000_000);
        let empty = std::env::temp_dir().join(format!("wattgraph-capfix-none-{}", std::process::id()));
        std::fs::create_dir_all(&empty).unwrap();
        let e = PowerCapActuator::discover("h1", &empty, &empty.join("state"), 0.0, false, Duration::from_secs(1)).err().unwrap();
        assert!(e.to_string().contains("no RAPL package zone"), "{e}");
        let _ = std::fs::remove_dir_all(&empty);
    }

    #[test]
    fn the_originals_are_recorded_before_the_first_cap_and_removed_at_a_clean_stop() {
        let f = Fixture::new("state", true);
        let mut a = actuator(&f, 0.0, false);
        assert!(!f.state_file().exists(), "nothing recorded before a cap");
        a.apply(100.0, Instant::now()).unwrap();
        let text = std::fs::read_to_string(f.state_file()).unwrap();
        assert!(text.contains("zone 0 intel-rapl:0 165000000") && text.contains("host h1"), "{text}");
        // A killed agent: no restore, no release. The next one takes the file's limits.
        std::mem::forget(a);
        assert_eq!(f.limit(0), 50_000_000);
        let mut b = actuator(&f, 0.0, false);
        assert!(b.recovered());
        assert_eq!(b.originals(), vec![(0, 165_000_000), (1, 165_000_000)]);
        b.restore().unwrap();
        assert_eq!((f.limit(0), f.limit(1)), (165_000_000, 165_000_000));
        b.apply(80.0, Instant::now()).unwrap();
        assert_eq!(std::fs::read_to_string(f.state_file()).unwrap(), text, "kept as the originals");
        drop(b);
        assert_eq!((f.limit(0), f.limit(1)), (165_000_000, 165_000_000));
        assert!(!f.state_file().exists(), "removed once the originals are back");
        // Dry-run records nothing.
        actuator(&f, 0.0, true).apply(100.0, Instant::now()).unwrap();
        assert!(!f.state_file().exists());
    }

    #[test]
    fn a_state_file_that_cannot_be_written_stops_the_cap() {
        let f = Fixture::new("state-unwritable", true);
        // A directory that cannot be created (not even by root): the state cannot be recorded.
        let state = Path::new("/proc/wattgraph-no-such-dir/state");
        let mut a = PowerCapActuator::discover("h1", &f.0, state, 0.0, false, Duration::from_secs(30)).unwrap();
        let e = a.apply(100.0, Instant::now()).unwrap_err();
        assert!(e.to_string().contains("cannot record the original limits in /proc/wattgraph-no-such-dir/state"), "{e}");
        assert_eq!((f.limit(0), f.limit(1)), (165_000_000, 165_000_000), "nothing written");
    }

    #[test]
    fn a_state_file_of_another_tree_is_refused_and_one_of_another_boot_dropped() {
        let f = Fixture::new("state-foreign", true);
        let other = Fixture::new("state-other", true);
        // Left by a killed agent on another tree, at the path this one uses.
        let mut a = PowerCapActuator::discover("h1", &other.0, &f.state_file(), 0.0, false, Duration::from_secs(30)).unwrap();
        a.apply(100.0, Instant::now()).unwrap();
        std::mem::forget(a);
        let e = PowerCapActuator::discover("h1", &f.0, &f.state_file(), 0.0, false, Duration::from_secs(30)).err().unwrap();
        assert!(e.to_string().contains("is refused (written for powercap root"), "{e}");
        assert!(f.state_file().exists(), "left for the operator");
        // The same tree, written in another boot: not applied, removed, the current limits kept.
        let mut text = std::fs::read_to_string(f.state_file()).unwrap();
        let canonical = |p: &Path| std::fs::canonicalize(p).unwrap().display().to_string();
        text = text.replace(&canonical(&other.0), &canonical(&f.0));
        let boot = boot_id();
        text = text.replace(&boot, "00000000-0000-0000-0000-000000000000").replace("165000000", "1000000");
        let body = &text[..text.rfind("crc32").unwrap()];
        let text = format!("{body}crc32 {:08x}\n", crate::shared::durable::crc32(body.as_bytes()));
        std::fs::write(f.state_file(), text).unwrap();
        f.set_limit(0, 120_000_000);
        let a = PowerCapActuator::discover("h1", &f.0, &f.state_file(), 0.0, false, Duration::from_secs(30)).unwrap();
        assert!(!a.recovered() && !f.state_file().exists());
        assert_eq!(a.originals(), vec![(0, 120_000_000), (1, 165_000_000)]);
    }
}
