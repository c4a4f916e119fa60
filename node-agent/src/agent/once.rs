//! `--once`: one sampling interval of every stage, printed for a person checking the node; no
//! Kafka. The records are collected from the samplers' threads and printed at the end.
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use super::{fail, options, spawn_capture};
use crate::capture::bpf::CaptureError;
use crate::capture::connections::transactions::{bucket_mid, ConnTxn, Histogram, TxnRole};
use crate::capture::event::Kind;
use crate::config::Config;
use crate::identity::pod_metadata::PodDirectory;
use crate::resources::record::{CgroupStatsRecord, OwnedCgroupStats, ResourceRecord, Scope};
use crate::resources::{cgroup_report, sampler, ResourceMetrics};
use crate::shared::net::{canonical_key, write_endpoint};

/// Transactions of the interval, and the HTTP routes by count with their latency.
fn once_transactions(out: &mut String, txns: &[ConnTxn]) {
    let n = |role: TxnRole| txns.iter().filter(|t| t.role == role).map(|t| t.transactions).sum::<u64>();
    let _ = writeln!(out, "transactions: {} as client, {} as server", n(TxnRole::Client), n(TxnRole::Server));
    let mut routes: std::collections::BTreeMap<(&str, &str, &str), Histogram> = std::collections::BTreeMap::new();
    for t in txns {
        for r in &t.routes {
            let role = if t.role == TxnRole::Client { "client" } else { "server" };
            routes.entry((role, r.route.method, r.route.path.as_str())).or_default().merge(&r.latency);
        }
    }
    let mut rows: Vec<_> = routes.into_iter().collect();
    rows.sort_by_key(|(_, h)| std::cmp::Reverse(h.total()));
    let ms = |h: &Histogram, q: f64| h.percentile_bucket(q).map_or(0.0, |b| bucket_mid(b) as f64 / 1e6);
    for ((role, method, path), h) in rows.iter().take(10) {
        let _ = writeln!(out, "  {role:<6} {method} {path}  n {}  p50 {:.3} ms  p99 {:.3} ms", h.total(), ms(h, 0.5), ms(h, 0.99));
    }
    if rows.len() > 10 {
        let _ = writeln!(out, "  ... {} more routes", rows.len() - 10);
    }
}

/// `--once`: one sampling interval, printed for a person checking the node; no Kafka.
pub fn run_once(cfg: &Config) -> i32 {
    // One synchronous fetch: the printout names pods when the source answers.
    let once_pods = match options::pod_source(cfg) {
        Ok(None) => None,
        Ok(Some(src)) => {
            let d = Arc::new(PodDirectory::default());
            match src.fetch() {
                Ok(p) => d.replace(p),
                Err(e) => eprintln!("pod metadata: {e:#} (pods shown by UID)"),
            }
            Some(d)
        }
        Err(e) => return fail(2, format_args!("{e:#}")),
    };
    let scope = match super::scope::resolve(cfg, &AtomicBool::new(false)) {
        Ok(s) => s,
        Err(e) => return fail(1, format_args!("{e:#}")),
    };
    let scope = scope.as_ref();
    let handle = match spawn_capture(options::capture_once(cfg, scope)) {
        Ok(h) => h,
        Err(code) => return code,
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let sink = Box::new(move |recs: &[ResourceRecord]| {
        let _ = tx.send(recs.to_vec());
    });
    let stop = Arc::new(AtomicBool::new(false));
    let t = match sampler::spawn_sampler(options::sampler(cfg, Some(1), once_pods.clone(), scope), sink, Arc::new(ResourceMetrics::default()), stop) {
        Ok(t) => t,
        Err(e @ CaptureError::Permission(_)) => return fail(3, e),
        Err(e) => return fail(1, format_args!("cannot start CPU accounting: {e}")),
    };
    // The cgroup sampler over the same interval, in parallel (its first tick is the baseline).
    let (cg_tx, cg_rx) = std::sync::mpsc::channel::<OwnedCgroupStats>();
    let cg = options::cgroups(cfg, Some(1), once_pods.clone(), scope).map(|c| {
        let label = cgroup_report::hierarchy_label(&c.hierarchy);
        let metrics = Arc::new(ResourceMetrics::default());
        let sink = Box::new(move |r: &CgroupStatsRecord<'_>| {
            let _ = cg_tx.send(r.to_owned());
        });
        let t = cgroup_report::spawn(c, sink, metrics.clone(), Arc::new(AtomicBool::new(false)));
        (label, metrics, t)
    });
    let recs = rx.recv().unwrap_or_default();
    let _ = t.join();
    let cg = cg.map(|(label, m, t)| {
        if let Ok(t) = t {
            let _ = t.join();
        }
        (label, m, cg_rx.try_iter().collect::<Vec<_>>())
    });
    let nat_stats = handle.stats().nat.clone();
    let (events, txns) = handle.stop_and_drain_all();
    let mut out = String::new();
    let _ = writeln!(out, "wattgraph-agent --once: host {}, interval {} ms", cfg.host_id, cfg.sample_interval_ms);
    let count = |k: Kind| events.iter().filter(|e| e.kind == k).count();
    let _ = writeln!(
        out,
        "connections: {} events (opened {}, snapshot {}, closed {})",
        events.len(),
        count(Kind::Opened),
        count(Kind::Snapshot),
        count(Kind::Closed)
    );
    let translated = events.iter().filter(|e| e.nat.is_some()).count();
    let _ = writeln!(
        out,
        "nat: {translated} events past NAT; conntrack {}",
        if nat_stats.available.load(Ordering::Relaxed) == 1 { "read" } else { "not read (--nat-entries 0 or unavailable)" }
    );
    let mut seen = std::collections::BTreeMap::new();
    let mut key = String::new();
    for e in &events {
        let ((la, lp), (ra, rp)) = e.key_endpoints();
        canonical_key(&mut key, e.role, (&la, lp), (&ra, rp));
        let v = seen.entry(key.clone()).or_insert((e.tgid, e.comm_str().to_string(), e.role, 0u64, 0u64, String::new()));
        v.3 = v.3.max(e.bytes_sent);
        v.4 = v.4.max(e.bytes_recv);
        if e.nat.is_some() && v.5.is_empty() {
            v.5.push_str(" dialled ");
            write_endpoint(&mut v.5, &e.remote_addr, e.remote_port);
        }
    }
    for (k, (tgid, comm, role, s, r, via)) in seen.iter().take(20) {
        let _ = writeln!(out, "  {k:<48} {:<7} {comm}[{tgid}] sent {s} recv {r}{via}", role.symbol());
    }
    if seen.len() > 20 {
        let _ = writeln!(out, "  ... {} more", seen.len() - 20);
    }
    once_transactions(&mut out, &txns);
    if let Some(h) = recs.first() {
        let _ = writeln!(
            out,
            "power: {:.2} W {} (idle {:.2} W kept by the host, unattributed {:.2} W); weight {}",
            h.power_watts,
            h.power_source.symbol(),
            h.idle_power_watts,
            h.unattributed_power_watts,
            h.weight_kind.symbol()
        );
        if let (Some(p), c, d) = (h.package_watts, h.core_watts, h.dram_watts) {
            let _ = writeln!(out, "  RAPL package {p:.2} W, core {:?} W, dram {:?} W", c, d);
        }
        let _ = writeln!(out, "cpu: {:.3} CPU-seconds busy in {} processes", h.cpu_time_ns as f64 / 1e9, h.processes);
    }
    let _ = writeln!(out, "top processes by CPU:");
    for r in recs.iter().filter(|r| r.scope == Scope::Process).take(10) {
        let _ = writeln!(
            out,
            "  {:>8} {:<16} {:>8.3} ms  {:>7.3} W  group {}",
            r.tgid,
            r.comm,
            r.cpu_time_ns as f64 / 1e6,
            r.power_watts,
            if r.group_id.len() > 12 { &r.group_id[..12] } else { &r.group_id }
        );
    }
    let groups: Vec<&ResourceRecord> = recs.iter().filter(|r| r.scope == Scope::Group).collect();
    let _ = writeln!(out, "groups: {}", groups.len());
    for g in groups.iter().take(10) {
        let _ = writeln!(
            out,
            "  {:<16} {:<10} {:>8.3} ms  {:>7.3} W{}",
            if g.group_id.len() > 12 { &g.group_id[..12] } else { &g.group_id },
            g.runtime.symbol(),
            g.cpu_time_ns as f64 / 1e6,
            g.power_watts,
            match (&g.pod.namespace, &g.pod.name, &g.pod_uid) {
                (Some(ns), Some(n), _) => format!("  pod {ns}/{n}"),
                (_, _, Some(uid)) => format!("  pod {uid}"),
                _ => String::new(),
            }
        );
    }
    if let Some((label, m, cgs)) = &cg {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let _ = writeln!(
            out,
            "cgroups ({label}): {} containers, {} ticks every {} ms, largest gap {:.3} ms",
            g(&m.cgroups_sampled),
            g(&m.cgroup_ticks),
            cfg.cgroup_sample_interval_ms,
            g(&m.cgroup_max_tick_gap_ns) as f64 / 1e6
        );
        for c in cgs.iter().take(10) {
            let _ = writeln!(
                out,
                "  {:<16} {:<10} mean {:>6.3} peak {:>6.3} cores  throttled {} ({:.3} ms)  mem {} (peak {}) B  io r {} w {} B  pids {}",
                if c.group_id.len() > 12 { &c.group_id[..12] } else { &c.group_id },
                c.runtime,
                c.cpu_mean_cores,
                c.cpu_peak_cores,
                c.throttled_periods,
                c.throttled_ns as f64 / 1e6,
                c.memory_bytes,
                c.memory_peak_bytes,
                c.io_read_bytes,
                c.io_write_bytes,
                c.pids
            );
        }
        if cgs.len() > 10 {
            let _ = writeln!(out, "  ... {} more", cgs.len() - 10);
        }
    }
    print!("{out}");
    0
}

