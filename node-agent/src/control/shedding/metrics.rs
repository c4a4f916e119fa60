//! Prometheus series of the shedder (rendered by the metrics endpoint when shedding is on). Label
//! cardinality is bounded: at most TOP_DOMAINS domains plus `other`.

use std::sync::atomic::Ordering;

use crate::capture::shedding::ShedStats;

const MODES: [&str; 4] = ["off", "kernel-drop", "user", "kernel"];

/// Appends the shedding series through `metric(name, type, help, samples)`; nothing while
/// shedding is off or before its first interval.
pub fn render_metrics(s: &ShedStats, metric: &mut dyn FnMut(&str, &str, &str, &[(&str, f64)])) {
    let mode = s.mode.load(Ordering::Relaxed) as usize;
    if mode == 0 || mode >= MODES.len() {
        return;
    }
    let f = ShedStats::f;
    let mode_label = format!("mode=\"{}\"", MODES[mode]);
    metric("wattgraph_agent_shed_mode", "gauge", "1 for the load-shedding mode in use.", &[(&mode_label, 1.0)]);
    metric(
        "wattgraph_agent_shed_cpu_setpoint_cores",
        "gauge",
        "Agent CPU the shedder holds, in cores (CPU seconds per second).",
        &[("", f(&s.setpoint_bits))],
    );
    metric(
        "wattgraph_agent_shed_cpu_utilization_cores",
        "gauge",
        "Agent CPU measured over the last control interval (getrusage), in cores.",
        &[("", f(&s.utilization_bits))],
    );
    metric(
        "wattgraph_agent_shed_budget_connections",
        "gauge",
        "Connections per interval the Load Manager lets through next (Shedding Eq. 5-6).",
        &[("", f(&s.budget_bits))],
    );
    metric(
        "wattgraph_agent_shed_mu_max_connections",
        "gauge",
        "Estimated connections per interval the agent handles at one full core (online).",
        &[("", f(&s.mu_max_bits))],
    );
    metric("wattgraph_agent_shed_intervals_total", "counter", "Load-shedding control intervals.", &[("", s.intervals.load(Ordering::Relaxed) as f64)]);
    let rows = s.domains.lock().unwrap().clone();
    let mut keep = vec![(String::from("domain=\"default\""), f(&s.default_keep_bits))];
    let mut counts = Vec::new();
    let mut bytes = Vec::new();
    let mut est = Vec::new();
    for r in &rows {
        let d = format!("domain=\"{}\"", r.label);
        if r.label != "other" {
            keep.push((d.clone(), r.keep));
        }
        counts.push((format!("{d},outcome=\"kept\""), r.kept as f64));
        counts.push((format!("{d},outcome=\"shed\""), r.shed as f64));
        bytes.push((format!("{d},direction=\"sent\""), r.shed_bytes_sent as f64));
        bytes.push((format!("{d},direction=\"received\""), r.shed_bytes_recv as f64));
        est.push((format!("{d},rescaled=\"{}\"", r.rescaled), r.estimated));
    }
    metric(
        "wattgraph_agent_shed_keep_fraction",
        "gauge",
        "Share of connections whose lifecycle events are kept, per domain (default: domains without their own).",
        &as_ref(&keep),
    );
    metric(
        "wattgraph_agent_shed_connections_total",
        "counter",
        "Connections decided by the shedder per domain (exact counts), by outcome.",
        &as_ref(&counts),
    );
    metric(
        "wattgraph_agent_shed_unreported_bytes_total",
        "counter",
        "Payload bytes of shed connections that closed without any event, per domain.",
        &as_ref(&bytes),
    );
    metric(
        "wattgraph_agent_shed_connections_estimated_total",
        "counter",
        "Connections per domain as reported after shedding: kept + shed from the per-domain counters (kernel-drop: surviving OPENED events x global seen/kept); rescaled=\"true\" once anything of the domain was shed.",
        &as_ref(&est),
    );
}

fn as_ref(x: &[(String, f64)]) -> Vec<(&str, f64)> {
    x.iter().map(|(l, v)| (l.as_str(), *v)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::shedding::DomainRow;

    fn rendered(s: &ShedStats) -> Vec<String> {
        let mut out = Vec::new();
        render_metrics(s, &mut |name, _, _, samples| {
            for (labels, v) in samples {
                out.push(if labels.is_empty() { format!("{name} {v}") } else { format!("{name}{{{labels}}} {v}") });
            }
        });
        out
    }

    #[test]
    fn the_shed_counts_are_exported_per_domain_and_outcome_while_shedding() {
        let s = ShedStats::default();
        assert!(rendered(&s).is_empty(), "shedding off: no series");
        s.mode.store(3, Ordering::Relaxed);
        s.domains.lock().unwrap().push(DomainRow {
            label: "pod:web".into(),
            keep: 0.25,
            kept: 30,
            shed: 90,
            shed_bytes_sent: 4096,
            shed_bytes_recv: 512,
            estimated: 120.0,
            rescaled: true,
        });
        let out = rendered(&s);
        for line in [
            "wattgraph_agent_shed_mode{mode=\"kernel\"} 1",
            "wattgraph_agent_shed_connections_total{domain=\"pod:web\",outcome=\"kept\"} 30",
            "wattgraph_agent_shed_connections_total{domain=\"pod:web\",outcome=\"shed\"} 90",
            "wattgraph_agent_shed_unreported_bytes_total{domain=\"pod:web\",direction=\"sent\"} 4096",
            "wattgraph_agent_shed_unreported_bytes_total{domain=\"pod:web\",direction=\"received\"} 512",
            "wattgraph_agent_shed_connections_estimated_total{domain=\"pod:web\",rescaled=\"true\"} 120",
        ] {
            assert!(out.iter().any(|l| l == line), "{line} missing from {out:#?}");
        }
    }
}
