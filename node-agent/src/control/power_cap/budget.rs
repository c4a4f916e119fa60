//! The power budget state machine: takes the PowerBudget records graph-service
//! publishes for this host (`consumer` feeds them from Kafka) and drives the
//! `PowerCapActuator`.
//!
//! - A record is applied only if it is for this host, its `sequence` is higher than the last
//!   applied one, its `validUntilNs` has not passed, its budget is a positive number of watts and
//!   lies within the record's own host bounds `[minWatts, maxWatts]`. Anything else never reaches
//!   sysfs: it is logged with what came in and counted by reason (`older`, `stale`, `invalid`,
//!   `decode`, `host`, `bounds`).
//! - The budget is **lost** when `validUntilNs` passes without a newer record (`expired`), when no
//!   valid budget arrived for `--budget-timeout-s` (`timeout`, a guard against a far-future
//!   `validUntilNs` or a wrong wall clock), on a tombstone for this host (`tombstone`) and at
//!   shutdown (`shutdown`): the original limits are written back, once, and counted. At start,
//!   originals left in the state file by an agent that did not stop cleanly are written back at
//!   once (`recovered`, `state`).
//! - `on` writes the powercap limits (split over the package zones, clamped to the floor and the
//!   hardware range, read back); `dry-run` computes and reports the same and writes nothing;
//!   without a RAPL package zone the budgets are still received, logged and exported, but nothing
//!   is actuated (said once at start).
//!
//! Time is passed in (Unix ns for `validUntilNs`, a monotonic instant for the timeout) so tests
//! drive it without sleeping.
//!
//! Length: about 350 lines of code; the rest are its unit tests, kept beside the state machine they
//! drive.
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::output::avro::budget::{decode_single_object, PowerBudget};
use crate::control::power_cap::actuator::{ActuatorError, Applied, Clamp, PowerCapActuator};
use crate::control::power_cap::metrics::BudgetMetrics;
use crate::control::power_cap::outcome::{Ignored, Outcome, PowerCapMode, Restore};

/// The budget in force.
#[derive(Debug, Clone, Copy)]
struct InForce {
    sequence: i64,
    valid_until_ns: i64,
    received: Instant,
    budget_watts: f64,
}

pub struct BudgetController {
    host_id: String,
    mode: PowerCapMode,
    actuator: Option<PowerCapActuator>,
    timeout: Duration,
    metrics: Arc<BudgetMetrics>,
    last_seq: Option<i64>,
    current: Option<InForce>,
    /// Limits last applied (or reported), to log changes at info and repeats at debug.
    last_limits: Vec<(u32, u64)>,
}

fn watts(uw: u64) -> f64 {
    uw as f64 / 1e6
}

fn list_limits(l: &[(u32, u64)]) -> String {
    l.iter().map(|(s, uw)| format!("socket {s} {:.2} W", watts(*uw))).collect::<Vec<_>>().join(", ")
}

fn describe(applied: &[Applied]) -> String {
    applied
        .iter()
        .map(|a| {
            let clamp = match a.clamp {
                None => "",
                Some(Clamp::Floor) => " (floor)",
                Some(Clamp::HardwareMin) => " (hardware minimum)",
                Some(Clamp::HardwareMax) => " (hardware maximum)",
            };
            format!("socket {} {:.2} W{clamp}", a.socket, watts(a.applied_uw))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

impl BudgetController {
    /// Finds the package zones under `powercap_root` (unless `mode` is off). Without a usable
    /// zone the controller still tracks and reports budgets but actuates nothing; the reason is
    /// logged here, once.
    pub fn new(
        host_id: &str,
        mode: PowerCapMode,
        powercap_root: &Path,
        state_file: &Path,
        floor_w: f64,
        timeout: Duration,
        metrics: Arc<BudgetMetrics>,
    ) -> BudgetController {
        let actuator = match mode {
            PowerCapMode::Off => None,
            _ => match PowerCapActuator::discover(host_id, powercap_root, state_file, floor_w, mode == PowerCapMode::DryRun, timeout) {
                Ok(a) => {
                    log::info!(
                        "power cap: --power-cap {}: {} package zone(s) under {}, original limits {}{}; floor {floor_w} W, budget timeout {} s",
                        mode.as_str(),
                        a.sockets(),
                        powercap_root.display(),
                        list_limits(&a.originals()),
                        if a.recovered() { " (from the state file)" } else { "" },
                        timeout.as_secs()
                    );
                    Some(a)
                }
                Err(e @ ActuatorError::StateRefused(..)) => {
                    metrics.state_refused.store(1, Ordering::Relaxed);
                    log::error!("power cap: --power-cap {}: {e}; budgets are received and reported", mode.as_str());
                    None
                }
                Err(e) => {
                    log::warn!(
                        "power cap: --power-cap {} but {e}; budgets are received and reported, nothing is actuated",
                        mode.as_str()
                    );
                    None
                }
            },
        };
        metrics.available.store(actuator.is_some() as u64, Ordering::Relaxed);
        let mut actuator = actuator;
        if let Some(a) = actuator.as_mut() {
            if a.recovered() {
                // The agent before did not stop cleanly: its cap may still be in force.
                metrics.restores[Restore::Recovered as usize].fetch_add(1, Ordering::Relaxed);
                match a.restore() {
                    Ok(()) => log::warn!(
                        "power cap: {} was left by an agent that did not stop cleanly (killed, or crashed) while it capped this host: restored the original limits {} it records; they stay the originals",
                        a.state_file().display(),
                        list_limits(&a.originals())
                    ),
                    Err(e) => {
                        metrics.write_errors.fetch_add(1, Ordering::Relaxed);
                        log::error!("power cap: restoring the original limits recorded in {} failed: {e}", a.state_file().display());
                    }
                }
            }
            *metrics.limits.lock().unwrap() = a.originals();
        }
        BudgetController {
            host_id: host_id.to_string(),
            mode,
            actuator,
            timeout,
            metrics,
            last_seq: None,
            current: None,
            last_limits: Vec::new(),
        }
    }

    pub fn metrics(&self) -> &Arc<BudgetMetrics> {
        &self.metrics
    }

    /// Sequence of the last applied budget.
    pub fn last_sequence(&self) -> Option<i64> {
        self.last_seq
    }

    /// True while a budget is in force.
    pub fn active(&self) -> bool {
        self.current.is_some()
    }

    fn ignore(&self, why: Ignored, msg: std::fmt::Arguments<'_>) -> Outcome {
        self.metrics.ignored[why as usize].fetch_add(1, Ordering::Relaxed);
        match why {
            Ignored::Older => log::debug!("power cap: ignored budget ({}): {msg}", why.label()),
            Ignored::Stale => log::info!("power cap: ignored budget ({}): {msg}", why.label()),
            _ => log::warn!("power cap: ignored budget ({}): {msg}", why.label()),
        }
        Outcome::Ignored(why)
    }

    /// One Kafka record value for this host (`None` = tombstone).
    pub fn on_payload(&mut self, payload: Option<&[u8]>, now_ns: i64, now: Instant) -> Outcome {
        match payload {
            None => match self.current {
                Some(c) => {
                    let msg = format!("tombstone for host {}", self.host_id);
                    self.lose(Restore::Tombstone, format_args!("{msg}"), c)
                }
                None => Outcome::Nothing,
            },
            Some(bytes) => match decode_single_object(bytes) {
                Ok(b) => self.on_budget(&b, now_ns, now),
                Err(e) => self.ignore(Ignored::Decode, format_args!("{e:#} ({} bytes)", bytes.len())),
            },
        }
    }

    pub fn on_budget(&mut self, b: &PowerBudget, now_ns: i64, now: Instant) -> Outcome {
        if b.host_id != self.host_id {
            return self.ignore(Ignored::Host, format_args!("seq {} is for host '{}', not '{}'", b.sequence, b.host_id, self.host_id));
        }
        if let Some(last) = self.last_seq {
            if b.sequence <= last {
                return self.ignore(Ignored::Older, format_args!("seq {} is not newer than the applied seq {last}", b.sequence));
            }
        }
        if b.valid_until_ns <= now_ns {
            return self.ignore(
                Ignored::Stale,
                format_args!("seq {} was valid until {} ({:.1} s ago)", b.sequence, b.valid_until_ns, (now_ns as f64 - b.valid_until_ns as f64) / 1e9),
            );
        }
        if !b.budget_watts.is_finite() || b.budget_watts <= 0.0 {
            return self.ignore(Ignored::Invalid, format_args!("seq {} has budget {} W", b.sequence, b.budget_watts));
        }
        if !(b.min_watts.is_finite() && b.max_watts.is_finite() && 0.0 <= b.min_watts && b.min_watts <= b.max_watts) {
            return self.ignore(
                Ignored::Invalid,
                format_args!("seq {} has host bounds [{}, {}] W (budget {} W)", b.sequence, b.min_watts, b.max_watts, b.budget_watts),
            );
        }
        if !(b.min_watts..=b.max_watts).contains(&b.budget_watts) {
            return self.ignore(
                Ignored::Bounds,
                format_args!(
                    "seq {} ({}) has budget {} W outside its host bounds [{}, {}] W; reason given: {}",
                    b.sequence,
                    b.policy.symbol(),
                    b.budget_watts,
                    b.min_watts,
                    b.max_watts,
                    b.reason
                ),
            );
        }
        let was_active = self.current.is_some();
        let prev_watts = self.current.map(|c| c.budget_watts);
        self.last_seq = Some(b.sequence);
        self.current = Some(InForce { sequence: b.sequence, valid_until_ns: b.valid_until_ns, received: now, budget_watts: b.budget_watts });
        let m = &self.metrics;
        m.active.store(1, Ordering::Relaxed);
        m.budget_watts_bits.store(b.budget_watts.to_bits(), Ordering::Relaxed);
        m.sequence.store(b.sequence, Ordering::Relaxed);
        m.applied_at_ns.store(now_ns, Ordering::Relaxed);
        m.applied.fetch_add(1, Ordering::Relaxed);
        let valid_s = (b.valid_until_ns as f64 - now_ns as f64) / 1e9;
        let head = format!(
            "budget {:.2} W (seq {}, {}, valid for {:.1} s)",
            b.budget_watts,
            b.sequence,
            b.policy.symbol(),
            valid_s
        );
        let Some(act) = self.actuator.as_mut() else {
            if prev_watts != Some(b.budget_watts) {
                log::info!("power cap: {head} received, not actuated (no RAPL package zone); reason: {}", b.reason);
            } else {
                log::debug!("power cap: {head} received, not actuated (no RAPL package zone)");
            }
            return Outcome::Applied;
        };
        match act.apply(b.budget_watts, now) {
            Ok(applied) => {
                let limits: Vec<(u32, u64)> = applied.iter().map(|a| (a.socket, a.applied_uw)).collect();
                let changed = !was_active || limits != self.last_limits;
                let (verb, tail) = match self.mode {
                    PowerCapMode::DryRun => ("dry-run: would apply", "; nothing written"),
                    _ => ("applied", ""),
                };
                if changed {
                    log::info!("power cap: {verb} {head} -> {}{tail}; reason: {}", describe(&applied), b.reason);
                } else {
                    log::debug!("power cap: {verb} {head} -> unchanged limits {}{tail}", describe(&applied));
                }
                *m.limits.lock().unwrap() = limits.clone();
                self.last_limits = limits;
            }
            Err(e) => {
                m.write_errors.fetch_add(1, Ordering::Relaxed);
                log::error!("power cap: applying {head} failed: {e}");
                self.last_limits.clear();
            }
        }
        Outcome::Applied
    }

    /// Called periodically: loses the budget once `validUntilNs` passed or nothing valid
    /// arrived for the timeout.
    pub fn tick(&mut self, now_ns: i64, now: Instant) -> Outcome {
        let Some(c) = self.current else { return Outcome::Nothing };
        if now_ns >= c.valid_until_ns {
            let ago = (now_ns as f64 - c.valid_until_ns as f64) / 1e9;
            return self.lose(Restore::Expired, format_args!("validUntilNs {} passed {ago:.1} s ago without a newer budget", c.valid_until_ns), c);
        }
        if now.saturating_duration_since(c.received) > self.timeout {
            return self.lose(Restore::Timeout, format_args!("no valid budget for more than --budget-timeout-s {}", self.timeout.as_secs()), c);
        }
        Outcome::Nothing
    }

    /// At shutdown: writes the original limits back if a budget is in force, then removes the
    /// state file (kept if they could not be written back: the next start restores them).
    pub fn shutdown(&mut self) -> Outcome {
        let out = match self.current {
            Some(c) => self.lose(Restore::Shutdown, format_args!("agent shutting down"), c),
            None => Outcome::Nothing,
        };
        if let Some(a) = self.actuator.as_mut() {
            if let Err(e) = a.release() {
                self.metrics.write_errors.fetch_add(1, Ordering::Relaxed);
                log::error!("power cap: at shutdown: {e}; {} is kept, the next start restores from it", a.state_file().display());
            }
        }
        out
    }

    fn lose(&mut self, why: Restore, msg: std::fmt::Arguments<'_>, c: InForce) -> Outcome {
        self.current = None;
        self.last_limits.clear();
        let m = &self.metrics;
        m.active.store(0, Ordering::Relaxed);
        m.budget_watts_bits.store(0f64.to_bits(), Ordering::Relaxed);
        m.restores[why as usize].fetch_add(1, Ordering::Relaxed);
        let what = format!("budget {:.2} W (seq {}) lost: {msg}", c.budget_watts, c.sequence);
        match self.actuator.as_mut() {
            None => log::info!("power cap: {what}; nothing to restore (not actuated)"),
            Some(a) => {
                let originals = a.originals();
                if self.mode == PowerCapMode::DryRun {
                    log::info!("power cap: dry-run: {what}; would restore the original limits {}; nothing written", list_limits(&originals));
                    *m.limits.lock().unwrap() = originals;
                } else {
                    match a.restore() {
                        Ok(()) => {
                            log::info!("power cap: {what}; restored the original limits {}", list_limits(&originals));
                            *m.limits.lock().unwrap() = originals;
                        }
                        Err(e) => {
                            m.write_errors.fetch_add(1, Ordering::Relaxed);
                            log::error!("power cap: {what}; restoring the original limits failed: {e}");
                        }
                    }
                }
            }
        }
        Outcome::Restored(why)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::avro::budget::{encode, Policy};
    use crate::control::power_cap::actuator::tests::Fixture;

    const T0: i64 = 1_763_870_000_000_000_000;
    const S: i64 = 1_000_000_000;

    fn budget(seq: i64, watts: f64, valid_until_ns: i64) -> PowerBudget {
        PowerBudget {
            host_id: "h1".into(),
            sequence: seq,
            policy: Policy::Hyppo,
            computed_at_ns: seq,
            valid_until_ns,
            budget_watts: watts,
            min_watts: 10.0,
            max_watts: 400.0,
            previous_watts: None,
            reason: format!("test budget {watts} W"),
        }
    }

    fn controller(f: &Fixture, mode: PowerCapMode, floor_w: f64) -> BudgetController {
        let m = Arc::new(BudgetMetrics::new(mode));
        BudgetController::new("h1", mode, &f.0, &f.state_file(), floor_w, Duration::from_secs(60), m)
    }

    fn limits(f: &Fixture) -> (u64, u64) {
        (f.limit(0), f.limit(1))
    }

    #[test]
    fn applies_a_newer_budget_and_ignores_older_or_equal_sequences() {
        let f = Fixture::new("bud-older", true);
        let mut c = controller(&f, PowerCapMode::On, 0.0);
        let t = Instant::now();
        assert_eq!(c.on_budget(&budget(T0, 150.0, T0 + 30 * S), T0, t), Outcome::Applied);
        assert_eq!(limits(&f), (75_000_000, 75_000_000));
        assert_eq!(c.on_budget(&budget(T0, 100.0, T0 + 30 * S), T0, t), Outcome::Ignored(Ignored::Older));
        assert_eq!(c.on_budget(&budget(T0 - 1, 100.0, T0 + 30 * S), T0, t), Outcome::Ignored(Ignored::Older));
        assert_eq!(limits(&f), (75_000_000, 75_000_000), "older records change nothing");
        assert_eq!(c.on_budget(&budget(T0 + 1, 120.0, T0 + 30 * S), T0 + 1, t), Outcome::Applied);
        assert_eq!(limits(&f), (60_000_000, 60_000_000));
        let m = c.metrics().clone();
        assert_eq!(m.ignored_count(Ignored::Older), 2);
        assert_eq!(m.applied.load(Ordering::Relaxed), 2);
        assert_eq!(m.sequence.load(Ordering::Relaxed), T0 + 1);
        assert_eq!(f64::from_bits(m.budget_watts_bits.load(Ordering::Relaxed)), 120.0);
        assert_eq!(*m.limits.lock().unwrap(), vec![(0, 60_000_000), (1, 60_000_000)]);
    }

    #[test]
    fn expiry_restores_the_original_limits_once_and_a_newer_budget_caps_again() {
        let f = Fixture::new("bud-expiry", true);
        let mut c = controller(&f, PowerCapMode::On, 0.0);
        let t = Instant::now();
        c.on_budget(&budget(T0, 100.0, T0 + 30 * S), T0, t);
        assert_eq!(c.tick(T0 + 29 * S, t), Outcome::Nothing);
        assert_eq!(limits(&f), (50_000_000, 50_000_000));
        assert_eq!(c.tick(T0 + 30 * S, t), Outcome::Restored(Restore::Expired));
        assert_eq!(limits(&f), (165_000_000, 165_000_000));
        assert_eq!(c.tick(T0 + 40 * S, t), Outcome::Nothing, "restores once");
        assert!(!c.active());
        // The same record again (replay) is not newer: still ignored after the loss.
        assert_eq!(c.on_budget(&budget(T0, 100.0, T0 + 90 * S), T0 + 41 * S, t), Outcome::Ignored(Ignored::Older));
        assert_eq!(c.on_budget(&budget(T0 + 41 * S, 90.0, T0 + 90 * S), T0 + 41 * S, t), Outcome::Applied);
        assert_eq!(limits(&f), (45_000_000, 45_000_000));
        let m = c.metrics();
        assert_eq!(m.restore_count(Restore::Expired), 1);
        assert_eq!(m.active.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn a_stale_record_is_not_applied() {
        let f = Fixture::new("bud-stale", true);
        let mut c = controller(&f, PowerCapMode::On, 0.0);
        assert_eq!(c.on_budget(&budget(T0, 100.0, T0 + 30 * S), T0 + 30 * S, Instant::now()), Outcome::Ignored(Ignored::Stale));
        assert_eq!(limits(&f), (165_000_000, 165_000_000));
        assert_eq!(c.last_sequence(), None);
        assert_eq!(c.metrics().ignored_count(Ignored::Stale), 1);
    }

    #[test]
    fn timeout_restores_when_nothing_valid_arrives() {
        let f = Fixture::new("bud-timeout", true);
        let mut c = controller(&f, PowerCapMode::On, 0.0);
        let t = Instant::now();
        // validUntilNs far away: only the agent's own timeout (60 s here) ends the budget.
        c.on_budget(&budget(T0, 100.0, i64::MAX), T0, t);
        assert_eq!(c.tick(T0 + 59 * S, t + Duration::from_secs(59)), Outcome::Nothing);
        assert_eq!(c.tick(T0 + 61 * S, t + Duration::from_secs(61)), Outcome::Restored(Restore::Timeout));
        assert_eq!(limits(&f), (165_000_000, 165_000_000));
        assert_eq!(c.metrics().restore_count(Restore::Timeout), 1);
    }

    #[test]
    fn dry_run_writes_nothing_and_reports() {
        let f = Fixture::new("bud-dry", true);
        let mut c = controller(&f, PowerCapMode::DryRun, 0.0);
        let t = Instant::now();
        assert_eq!(c.on_budget(&budget(T0, 100.0, T0 + 30 * S), T0, t), Outcome::Applied);
        assert_eq!(limits(&f), (165_000_000, 165_000_000), "nothing written");
        let m = c.metrics().clone();
        assert_eq!(*m.limits.lock().unwrap(), vec![(0, 50_000_000), (1, 50_000_000)], "reports what it would write");
        assert_eq!(c.tick(T0 + 31 * S, t), Outcome::Restored(Restore::Expired));
        assert_eq!(limits(&f), (165_000_000, 165_000_000));
        assert_eq!(*m.limits.lock().unwrap(), vec![(0, 165_000_000), (1, 165_000_000)]);
        c.on_budget(&budget(T0 + 32 * S, 80.0, T0 + 60 * S), T0 + 32 * S, t);
        assert_eq!(c.shutdown(), Outcome::Restored(Restore::Shutdown));
        assert_eq!(limits(&f), (165_000_000, 165_000_000));
    }

    #[test]
    fn the_floor_is_respected() {
        let f = Fixture::new("bud-floor", true);
        let mut c = controller(&f, PowerCapMode::On, 120.0);
        c.on_budget(&budget(T0, 20.0, T0 + 30 * S), T0, Instant::now());
        assert_eq!(limits(&f), (60_000_000, 60_000_000), "host floor 120 W split over two sockets");
    }

    #[test]
    fn shutdown_and_tombstone_restore() {
        let f = Fixture::new("bud-shutdown", true);
        let mut c = controller(&f, PowerCapMode::On, 0.0);
        let t = Instant::now();
        let bytes = encode(&budget(T0, 100.0, T0 + 30 * S)).unwrap();
        assert_eq!(c.on_payload(Some(&bytes), T0, t), Outcome::Applied);
        assert_eq!(limits(&f), (50_000_000, 50_000_000));
        assert_eq!(c.on_payload(None, T0, t), Outcome::Restored(Restore::Tombstone));
        assert_eq!(limits(&f), (165_000_000, 165_000_000));
        assert_eq!(c.on_payload(None, T0, t), Outcome::Nothing);
        let bytes = encode(&budget(T0 + 1, 110.0, T0 + 30 * S)).unwrap();
        c.on_payload(Some(&bytes), T0, t);
        assert_eq!(limits(&f), (55_000_000, 55_000_000));
        assert_eq!(c.shutdown(), Outcome::Restored(Restore::Shutdown));
        assert_eq!(limits(&f), (165_000_000, 165_000_000));
        assert_eq!(c.shutdown(), Outcome::Nothing);
        let m = c.metrics();
        assert_eq!((m.restore_count(Restore::Tombstone), m.restore_count(Restore::Shutdown)), (1, 1));
    }

    #[test]
    fn garbage_other_hosts_and_nonsense_budgets_are_counted_not_applied() {
        let f = Fixture::new("bud-bad", true);
        let mut c = controller(&f, PowerCapMode::On, 0.0);
        let t = Instant::now();
        assert_eq!(c.on_payload(Some(b"not avro"), T0, t), Outcome::Ignored(Ignored::Decode));
        let mut other = budget(T0, 100.0, T0 + 30 * S);
        other.host_id = "h2".into();
        assert_eq!(c.on_budget(&other, T0, t), Outcome::Ignored(Ignored::Host));
        for w in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert_eq!(c.on_budget(&budget(T0, w, T0 + 30 * S), T0, t), Outcome::Ignored(Ignored::Invalid));
        }
        assert_eq!(limits(&f), (165_000_000, 165_000_000));
        let m = c.metrics();
        assert_eq!((m.ignored_count(Ignored::Decode), m.ignored_count(Ignored::Host), m.ignored_count(Ignored::Invalid)), (1, 1, 4));
        assert_eq!(c.last_sequence(), None);
    }

    #[test]
    fn budgets_outside_their_host_bounds_or_with_nonsense_bounds_never_reach_sysfs() {
        let f = Fixture::new("bud-bounds", true);
        let mut c = controller(&f, PowerCapMode::On, 0.0);
        let t = Instant::now();
        let with = |watts: f64, min: f64, max: f64| PowerBudget { min_watts: min, max_watts: max, ..budget(T0, watts, T0 + 30 * S) };
        // A budget below its own minimum (a host starved to 1 W), above its maximum.
        for b in [with(1.0, 10.0, 400.0), with(500.0, 10.0, 400.0), with(9.99, 10.0, 10.0)] {
            assert_eq!(c.on_budget(&b, T0, t), Outcome::Ignored(Ignored::Bounds), "{b:?}");
        }
        for b in [with(50.0, f64::NAN, 400.0), with(50.0, 10.0, f64::INFINITY), with(50.0, -1.0, 400.0), with(50.0, 60.0, 40.0)] {
            assert_eq!(c.on_budget(&b, T0, t), Outcome::Ignored(Ignored::Invalid), "{b:?}");
        }
        assert_eq!(limits(&f), (165_000_000, 165_000_000));
        assert!(!f.state_file().exists(), "nothing capped, nothing recorded");
        let m = c.metrics().clone();
        assert_eq!((m.ignored_count(Ignored::Bounds), m.ignored_count(Ignored::Invalid)), (3, 4));
        assert_eq!(c.last_sequence(), None);
        // The bounds themselves are inclusive.
        assert_eq!(c.on_budget(&with(10.0, 10.0, 400.0), T0, t), Outcome::Applied);
        assert_eq!(limits(&f), (5_000_000, 5_000_000));
        let mut o = String::new();
        m.render(&mut o);
        assert!(o.contains("wattgraph_agent_power_budgets_ignored_total{reason=\"bounds\"} 3"), "{o}");
    }

    #[test]
    fn a_killed_agents_cap_is_restored_at_start_and_a_refused_state_file_caps_nothing() {
        let f = Fixture::new("bud-recover", true);
        let t = Instant::now();
        let mut c = controller(&f, PowerCapMode::On, 0.0);
        c.on_budget(&budget(T0, 100.0, T0 + 30 * S), T0, t);
        std::mem::forget(c); // killed: nothing restored
        assert_eq!(limits(&f), (50_000_000, 50_000_000));
        let mut c = controller(&f, PowerCapMode::On, 0.0);
        assert_eq!(limits(&f), (165_000_000, 165_000_000), "restored at start");
        let m = c.metrics().clone();
        assert_eq!(m.restore_count(Restore::Recovered), 1);
        assert_eq!(*m.limits.lock().unwrap(), vec![(0, 165_000_000), (1, 165_000_000)]);
        assert_eq!(c.shutdown(), Outcome::Nothing);
        assert!(!f.state_file().exists(), "removed at the clean stop");
        // A corrupt state file: said, counted, nothing written even when a budget comes.
        std::fs::write(f.state_file(), "version 1\nzone 0 intel-rapl:0 1\n").unwrap();
        let mut c = controller(&f, PowerCapMode::On, 0.0);
        let m = c.metrics().clone();
        assert_eq!((m.available.load(Ordering::Relaxed), m.state_refused.load(Ordering::Relaxed)), (0, 1));
        assert_eq!(c.on_budget(&budget(T0, 100.0, T0 + 30 * S), T0, t), Outcome::Applied);
        assert_eq!(limits(&f), (165_000_000, 165_000_000));
        c.shutdown();
        assert!(f.state_file().exists(), "left for the operator");
    }

    #[test]
    fn without_a_package_zone_budgets_are_tracked_but_nothing_is_written() {
        let empty = std::env::temp_dir().join(format!("wattgraph-capfix-bud-none-{}", std::process::id()));
        std::fs::create_dir_all(&empty).unwrap();
        let m = Arc::new(BudgetMetrics::new(PowerCapMode::On));
        let mut c = BudgetController::new("h1", PowerCapMode::On, &empty, &empty.join("state"), 0.0, Duration::from_secs(60), m.clone());
        assert_eq!(m.available.load(Ordering::Relaxed), 0);
        let t = Instant::now();
        assert_eq!(c.on_budget(&budget(T0, 100.0, T0 + 30 * S), T0, t), Outcome::Applied);
        assert_eq!(c.tick(T0 + 31 * S, t), Outcome::Restored(Restore::Expired));
        assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0, "nothing written");
        let _ = std::fs::remove_dir_all(&empty);
    }

    #[test]
    fn renders_prometheus_text() {
        let f = Fixture::new("bud-render", true);
        let mut c = controller(&f, PowerCapMode::On, 0.0);
        let t = Instant::now();
        c.on_budget(&budget(T0, 150.0, T0 + 30 * S), T0, t);
        c.on_budget(&budget(T0, 150.0, T0 + 30 * S), T0, t);
        let mut o = String::new();
        c.metrics().render(&mut o);
        for needle in [
            "wattgraph_agent_power_cap_mode{mode=\"on\"} 1",
            "wattgraph_agent_power_cap_mode{mode=\"off\"} 0",
            "wattgraph_agent_power_cap_available 1",
            "wattgraph_agent_power_budget_active 1",
            "wattgraph_agent_power_budget_watts 150",
            "wattgraph_agent_power_cap_limit_watts{socket=\"1\"} 75",
            "wattgraph_agent_power_budget_sequence 1763870000000000000",
            "wattgraph_agent_power_budget_applied_timestamp_seconds 1763870000",
            "wattgraph_agent_power_budgets_applied_total 1",
            "wattgraph_agent_power_budgets_ignored_total{reason=\"older\"} 1",
            "wattgraph_agent_power_cap_restores_total{reason=\"expired\"} 0",
            "# TYPE wattgraph_agent_power_cap_restores_total counter",
        ] {
            assert!(o.contains(needle), "missing {needle}:\n{o}");
        }
    }
}
