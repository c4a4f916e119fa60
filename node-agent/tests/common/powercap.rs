//! A fixture powercap tree and PowerBudgets produced to a Kafka topic, for the agent binary's
//! power-cap tests.
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use wattgraph_agent::output::avro::budget::{encode, Policy, PowerBudget};

pub const BUDGET_TOPIC: &str = "wattgraph.power-budgets";
/// Each package zone's long-term limit before any budget.
pub const ORIGINAL_UW: u64 = 165_000_000;

/// A two-socket powercap tree (package zones with a 165 W long-term limit, 200 W range).
pub fn fixture(root: &Path) {
    for s in 0..2 {
        let z = root.join(format!("intel-rapl:{s}"));
        std::fs::create_dir_all(&z).unwrap();
        for (f, v) in [
            ("name", format!("package-{s}")),
            ("energy_uj", "1000".into()),
            ("max_energy_range_uj", "262143328850".into()),
            ("constraint_0_name", "long_term".into()),
            ("constraint_0_power_limit_uw", ORIGINAL_UW.to_string()),
            ("constraint_0_max_power_uw", ORIGINAL_UW.to_string()),
            ("max_power_range_uw", "200000000".into()),
        ] {
            std::fs::write(z.join(f), format!("{v}\n")).unwrap();
        }
    }
}

/// The two zones' limits in force, µW.
pub fn limits(root: &Path) -> Vec<u64> {
    (0..2)
        .map(|s| {
            let p = root.join(format!("intel-rapl:{s}/constraint_0_power_limit_uw"));
            // A fixture file is truncated, then written (sysfs is not): read past that moment.
            (0..100)
                .find_map(|_| std::fs::read_to_string(&p).unwrap().trim().parse().ok().or_else(|| {
                    std::thread::sleep(Duration::from_millis(10));
                    None
                }))
                .expect("a number")
        })
        .collect()
}

fn unix_ns() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as i64
}

/// A MANUAL budget of `watts` for `host`, valid for `valid_for` from now.
pub fn budget(host: &str, seq: i64, watts: f64, valid_for: Duration) -> PowerBudget {
    let now = unix_ns();
    PowerBudget {
        host_id: host.into(),
        sequence: seq,
        policy: Policy::Manual,
        computed_at_ns: now,
        valid_until_ns: now + valid_for.as_nanos() as i64,
        budget_watts: watts,
        min_watts: 10.0,
        max_watts: 400.0,
        previous_watts: None,
        reason: format!("test budget {seq}: {watts} W"),
    }
}

/// Produces `b` with `key` to BUDGET_TOPIC and waits until it is delivered.
pub fn send(p: &BaseProducer, key: &str, b: &PowerBudget) {
    let bytes = encode(b).unwrap();
    p.send(BaseRecord::to(BUDGET_TOPIC).key(key).payload(&bytes)).map_err(|(e, _)| e).unwrap();
    p.flush(Duration::from_secs(10)).unwrap();
}
