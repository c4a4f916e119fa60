//! The power cap's figures for `--metrics-addr`: what the budget thread last applied or refused.
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;

use super::outcome::{Ignored, PowerCapMode, Restore};

/// Figures exported on `--metrics-addr` (f64 values stored as bits).
#[derive(Debug)]
pub struct BudgetMetrics {
    mode: PowerCapMode,
    pub available: AtomicU64,
    pub active: AtomicU64,
    pub budget_watts_bits: AtomicU64,
    pub sequence: AtomicI64,
    pub applied_at_ns: AtomicI64,
    pub applied: AtomicU64,
    pub ignored: [AtomicU64; 6],
    pub restores: [AtomicU64; 5],
    /// 1 when the state file was refused (corrupt, unreadable, another host's): nothing capped.
    pub state_refused: AtomicU64,
    pub write_errors: AtomicU64,
    pub consumer_errors: AtomicU64,
    /// (socket, limit µW) in force per package zone (dry-run: the limit that would be).
    pub limits: Mutex<Vec<(u32, u64)>>,
}

impl BudgetMetrics {
    pub fn new(mode: PowerCapMode) -> BudgetMetrics {
        BudgetMetrics {
            mode,
            available: AtomicU64::new(0),
            active: AtomicU64::new(0),
            budget_watts_bits: AtomicU64::new(0f64.to_bits()),
            sequence: AtomicI64::new(0),
            applied_at_ns: AtomicI64::new(0),
            applied: AtomicU64::new(0),
            ignored: Default::default(),
            restores: Default::default(),
            state_refused: AtomicU64::new(0),
            write_errors: AtomicU64::new(0),
            consumer_errors: AtomicU64::new(0),
            limits: Mutex::new(Vec::new()),
        }
    }

    pub fn ignored_count(&self, why: Ignored) -> u64 {
        self.ignored[why as usize].load(Ordering::Relaxed)
    }

    pub fn restore_count(&self, why: Restore) -> u64 {
        self.restores[why as usize].load(Ordering::Relaxed)
    }

    /// Appends the Prometheus text of these metrics (same format as `metrics::Renderer`).
    pub fn render(&self, o: &mut String) {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let head = |o: &mut String, name: &str, kind: &str, help: &str| {
            let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} {kind}");
        };
        head(o, "wattgraph_agent_power_cap_mode", "gauge", "--power-cap: 1 for the configured mode.");
        for m in [PowerCapMode::Off, PowerCapMode::DryRun, PowerCapMode::On] {
            let _ = writeln!(o, "wattgraph_agent_power_cap_mode{{mode=\"{}\"}} {}", m.as_str(), (m == self.mode) as u8);
        }
        head(o, "wattgraph_agent_power_cap_available", "gauge", "1 when RAPL package zones were found under --powercap-root (and --power-cap is not off).");
        let _ = writeln!(o, "wattgraph_agent_power_cap_available {}", g(&self.available));
        head(o, "wattgraph_agent_power_budget_active", "gauge", "1 while a valid budget is in force (applied, or reported in dry-run).");
        let _ = writeln!(o, "wattgraph_agent_power_budget_active {}", g(&self.active));
        head(o, "wattgraph_agent_power_budget_watts", "gauge", "Host budget in force, W (0 when none).");
        let _ = writeln!(o, "wattgraph_agent_power_budget_watts {}", f64::from_bits(g(&self.budget_watts_bits)));
        head(o, "wattgraph_agent_power_cap_limit_watts", "gauge", "Package power limit in force per socket, W (read back; dry-run: the limit that would be written).");
        for (s, uw) in self.limits.lock().unwrap().iter() {
            let _ = writeln!(o, "wattgraph_agent_power_cap_limit_watts{{socket=\"{s}\"}} {}", *uw as f64 / 1e6);
        }
        head(o, "wattgraph_agent_power_budget_sequence", "gauge", "Sequence of the last applied budget (0 before the first).");
        let _ = writeln!(o, "wattgraph_agent_power_budget_sequence {}", self.sequence.load(Ordering::Relaxed));
        head(o, "wattgraph_agent_power_budget_applied_timestamp_seconds", "gauge", "Unix time the last budget was applied (0 before the first).");
        let _ = writeln!(o, "wattgraph_agent_power_budget_applied_timestamp_seconds {}", self.applied_at_ns.load(Ordering::Relaxed) as f64 / 1e9);
        head(o, "wattgraph_agent_power_budgets_applied_total", "counter", "Budgets applied (dry-run: reported).");
        let _ = writeln!(o, "wattgraph_agent_power_budgets_applied_total {}", g(&self.applied));
        head(o, "wattgraph_agent_power_budgets_ignored_total", "counter", "Budget records not applied, by reason (older, stale, invalid, decode, host, bounds).");
        for r in Ignored::ALL {
            let _ = writeln!(o, "wattgraph_agent_power_budgets_ignored_total{{reason=\"{}\"}} {}", r.label(), self.ignored_count(r));
        }
        head(o, "wattgraph_agent_power_cap_restores_total", "counter", "Original limits written back (dry-run: would be), by reason (expired, timeout, tombstone, shutdown, recovered: at start, left by an agent that did not stop cleanly).");
        for r in Restore::ALL {
            let _ = writeln!(o, "wattgraph_agent_power_cap_restores_total{{reason=\"{}\"}} {}", r.label(), self.restore_count(r));
        }
        head(o, "wattgraph_agent_power_cap_state_refused", "gauge", "1 when the power-cap state file was refused (corrupt, unreadable, another host's or tree's): nothing is capped until it is removed.");
        let _ = writeln!(o, "wattgraph_agent_power_cap_state_refused {}", g(&self.state_refused));
        head(o, "wattgraph_agent_power_cap_write_errors_total", "counter", "powercap writes (apply or restore) that failed.");
        let _ = writeln!(o, "wattgraph_agent_power_cap_write_errors_total {}", g(&self.write_errors));
        head(o, "wattgraph_agent_power_budget_consumer_errors_total", "counter", "Errors of the power budget Kafka consumer.");
        let _ = writeln!(o, "wattgraph_agent_power_budget_consumer_errors_total {}", g(&self.consumer_errors));
    }
}
