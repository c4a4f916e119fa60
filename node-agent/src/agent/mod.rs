//! The agent's wiring: each stage started in its order (identity's pod metadata, capture, output,
//! the resource and cgroup samplers, the metrics endpoint, the power-cap control), the main
//! thread forwarding the capture to the output, and everything stopped in reverse at SIGINT or
//! SIGTERM. `--once` is in `once`; how the flags become each stage's options, in `options`.
use std::fmt::Display;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::capture::bpf::CaptureError;
use crate::capture::connections::{self, CaptureHandle, CaptureOptions, CaptureStats};
use crate::config::Config;
use crate::control::power_cap::outcome::PowerCapMode;
use crate::control::power_cap::metrics::BudgetMetrics;
use crate::control::power_cap::consumer;
use crate::metrics::{self, Renderer, Sources};
use crate::output::kafka::{EventProducer, KafkaStats};
use crate::output::pipeline::Pipeline;
use crate::output::Output;
use crate::resources::{cgroup_report, sampler, ResourceMetrics};
use crate::shared::clock::boot_to_unix_offset_ns;

mod once;
mod options;
mod scope;

pub use once::run_once;

const PROC_CACHE_ENTRIES: usize = 8192;
const FLUSH_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the main thread waits for a connection event before it looks at the rest.
const EVENT_WAIT: Duration = Duration::from_millis(200);

/// Says what failed at start and gives the exit code.
fn fail(code: i32, what: impl Display) -> i32 {
    eprintln!("wattgraph-agent: error: {what}");
    code
}

/// The kernel has BTF and every tracepoint this configuration attaches to (else exit code 4),
/// and the process every capability and write access its features need (else exit code 3);
/// one message naming what is missing.
pub fn check_host(cfg: &Config) -> Result<(), i32> {
    use crate::preflight::{check, check_capabilities, check_power_cap_writable, Privileged};
    if let Err(e) = check_capabilities(Privileged::of(cfg)) {
        return Err(fail(3, e));
    }
    if cfg.power_cap == PowerCapMode::On {
        if let Err(e) = check_power_cap_writable(&cfg.powercap_root) {
            return Err(fail(3, e));
        }
    }
    let mut required: Vec<&str> = connections::TRACEPOINTS.to_vec();
    if !cfg.no_resources {
        required.extend(crate::capture::sched::TRACEPOINTS);
    }
    match check(&required, &[]) {
        Ok(p) => {
            log::debug!("kernel {}: BTF and the tracepoints {} are present", p.release, required.join(", "));
            Ok(())
        }
        Err(e) => Err(fail(4, e)),
    }
}

/// Runs the agent until `stop` is set (or the capture thread ends); the exit code.
pub fn run(cfg: &Config, stop: Arc<AtomicBool>) -> i32 {
    let boot_to_unix = boot_to_unix_offset_ns();
    let mut pipeline = match Pipeline::new(&cfg.host_id, boot_to_unix, PROC_CACHE_ENTRIES) {
        Ok(p) => p,
        Err(e) => return fail(1, format_args!("{e:#}")),
    };
    // Before the capture: shedding priorities by pod name read the same pod metadata.
    let pods = match options::start_pod_metadata(cfg, stop.clone()) {
        Ok(p) => p,
        Err(e) => return fail(2, format_args!("{e:#}")),
    };
    let pod_dir = pods.as_ref().map(|(d, _)| d.clone());
    let owner = match options::owner_watch(cfg, stop.clone()) {
        Ok(w) => w,
        Err(e) => return fail(2, format_args!("{e:#}")),
    };
    let scope = match scope::resolve(cfg, &stop) {
        Ok(s) => s,
        Err(e) => return fail(1, format_args!("{e:#}")),
    };
    if cfg.node_scope.is_some() && scope.is_none() {
        return 0; // stopped while waiting for the node's pod CIDRs
    }
    let scope = scope.as_ref();
    let handle = match spawn_capture(options::capture(cfg, pod_dir.clone(), scope)) {
        Ok(h) => h,
        Err(code) => return code,
    };
    pipeline.use_kernel_cmdlines(handle.kernel_cmdlines().clone());
    let netns_desc = if let Some(n) = &cfg.node_scope {
        format!("node {n} (see node scope above)")
    } else if cfg.netns.is_empty() {
        "all network namespaces".to_string()
    } else {
        cfg.netns.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
    };
    log::info!(
        "{} tp_btf programs on {}; capturing {}; snapshot every {} bytes (a socket at most every {} ms) or {} ms; ring for {} closed sockets' transactions",
        if handle.reused { "reused pinned" } else { "attached" },
        handle.attached.join(", "),
        netns_desc,
        cfg.snapshot_bytes,
        cfg.snapshot_min_interval_ms,
        cfg.snapshot_interval_ms,
        cfg.map_entries
    );

    let kafka = match cfg.kafka_client() {
        Ok(k) => k,
        Err(e) => return fail(2, e),
    };
    kafka.warnings.iter().for_each(|w| log::warn!("{w}"));
    let producer = match EventProducer::with_client(&kafka, &cfg.topic, &format!("wattgraph-agent-{}", cfg.host_id), &options::spool(cfg)) {
        Ok(p) => p,
        Err(e) => return fail(1, format_args!("{e:#}")),
    };
    let output = Output::new(producer, options::topics(cfg), &cfg.host_id);
    let mut capture_out = match output.capture_outlet(pipeline, boot_to_unix) {
        Ok(o) => o,
        Err(e) => return fail(1, format_args!("{e:#}")),
    };

    let res_metrics = Arc::new(ResourceMetrics::default());
    let mut res_thread = None;
    if cfg.no_resources && cfg.pin_bpf {
        if let Err(e) = crate::capture::pins::unpin_object(&cfg.bpf_pin_dir, "sched") {
            return fail(1, format_args!("{e}"));
        }
    }
    if !cfg.no_resources {
        let outlet = match output.resource_outlet() {
            Ok(o) => o,
            Err(e) => return fail(1, format_args!("{e:#}")),
        };
        match sampler::spawn_sampler(options::sampler(cfg, None, pod_dir.clone(), scope), Box::new(outlet), res_metrics.clone(), stop.clone()) {
            Ok(t) => res_thread = Some(t),
            Err(e @ CaptureError::Permission(_)) => return fail(3, e),
            Err(e) => return fail(1, format_args!("cannot start CPU accounting: {e}")),
        }
        log::info!(
            "sched tp_btf programs on {}; ResourceSample every {} ms to topic {}",
            crate::capture::sched::TRACEPOINTS.join(", "),
            cfg.sample_interval_ms,
            cfg.resource_topic
        );
    }
    // High-frequency cgroup samples (--cgroup-sample-interval-ms): its own thread, no BPF.
    let mut cgroup_thread = None;
    if let Some(cg) = options::cgroups(cfg, None, pod_dir.clone(), scope) {
        let outlet = match output.cgroup_outlet() {
            Ok(o) => o,
            Err(e) => return fail(1, format_args!("{e:#}")),
        };
        log::info!(
            "cgroup sampler: {} hierarchy, tick every {} ms, CgroupStats every {} ms to topic {}",
            cgroup_report::hierarchy_label(&cg.hierarchy),
            cfg.cgroup_sample_interval_ms,
            cfg.sample_interval_ms,
            cfg.cgroup_topic
        );
        match cgroup_report::spawn(cg, Box::new(outlet), res_metrics.clone(), stop.clone()) {
            Ok(t) => cgroup_thread = Some(t),
            Err(e) => return fail(1, format_args!("cannot start the cgroup sampler thread: {e}")),
        }
    }
    let budget_metrics = Arc::new(BudgetMetrics::new(cfg.power_cap));
    if let Some(addr) = cfg.metrics_addr {
        let r = Arc::new(Renderer::new(Sources {
            capture: Some(handle.stats().clone()),
            kafka: Some(output.stats().clone()),
            resources: res_metrics.clone(),
            budget: Some(budget_metrics.clone()),
            pods: pod_dir.clone(),
        }));
        match metrics::serve(addr, r, stop.clone()) {
            Ok(a) => log::info!("Prometheus metrics on http://{a}/metrics"),
            Err(e) => return fail(1, format_args!("--metrics-addr '{addr}': {e}")),
        }
    }

    if let Some(path) = &cfg.ready_file {
        if let Err(e) = write_ready(path) {
            return fail(1, format_args!("cannot write --ready-file '{}': {e}", path.display()));
        }
    }
    // Power cap (--power-cap): started last, so no early exit leaves limits written.
    let budget_thread = match consumer::start(options::power_cap(cfg, kafka.clone()), budget_metrics.clone(), stop.clone()) {
        Ok(t) => t,
        Err(e) => return fail(1, format_args!("{e:#}")),
    };
    log::info!("producing to topic {} on {} as host {}", cfg.topic, kafka.describe(), cfg.host_id);
    if !cfg.no_transactions {
        log::info!("TransactionStats every {} ms to topic {}", cfg.transaction_interval_ms, cfg.transaction_topic);
        if cfg.http_routes > 0 && cfg!(not(target_arch = "x86_64")) {
            log::warn!("HTTP routes: request bytes are read from syscall arguments on x86_64 only; no routes on this architecture");
        }
    }

    let stats_every = Duration::from_secs(cfg.stats_interval_s);
    let mut next_stats = Instant::now() + stats_every;
    let mut code = 0;
    while !stop.load(Ordering::Relaxed) {
        if capture_out.forward(&handle, EVENT_WAIT).is_err() {
            log::error!("capture thread stopped unexpectedly");
            code = 1;
            break;
        }
        if Instant::now() >= next_stats {
            log_stats(handle.stats(), output.stats());
            next_stats = Instant::now() + stats_every;
        }
    }

    log::info!("shutting down: detaching BPF programs and flushing Kafka");
    stop.store(true, Ordering::Relaxed);
    if let Some(t) = res_thread {
        let _ = t.join();
    }
    if let Some(t) = cgroup_thread {
        let _ = t.join(); // at most ~1 s: it checks `stop` between chunks of ticks
    }
    if let Some(t) = budget_thread {
        let _ = t.join(); // restores the original power limits before it ends
    }
    if let Some((_, t)) = pods {
        let _ = t.join(); // at most one fetch (10 s timeout) and 100 ms
    }
    let stats = handle.stats().clone();
    let (events, txns) = handle.stop_and_drain_all();
    for ev in &events {
        capture_out.connection(ev);
    }
    for t in &txns {
        capture_out.transaction(t);
    }
    let left = output.flush(FLUSH_TIMEOUT);
    if left > 0 {
        log::warn!("{left} Kafka messages not delivered within {FLUSH_TIMEOUT:?}");
    }
    log_stats(&stats, output.stats());
    if let Some(w) = owner {
        unpin_if_uninstalled(cfg, &w);
    }
    if let Some(path) = &cfg.ready_file {
        let _ = std::fs::remove_file(path);
    }
    code
}

/// `--unpin`: removes the pins of --bpf-pin-dir; 1 when they cannot be removed.
pub fn unpin(cfg: &Config) -> i32 {
    match crate::capture::pins::unpin_all(&cfg.bpf_pin_dir) {
        Ok(n) => {
            log::info!("unpinned {n} BPF object(s) under {}", cfg.bpf_pin_dir.display());
            0
        }
        Err(e) => fail(1, format_args!("cannot unpin under --bpf-pin-dir '{}': {e}", cfg.bpf_pin_dir.display())),
    }
}

/// `--unpin-when-daemonset-gone`, after the capture's last drain: unpins when the DaemonSet is
/// gone, else says why the pins stay.
fn unpin_if_uninstalled(cfg: &Config, owner: &crate::capture::pin_owner::OwnerWatch) {
    match owner.decide() {
        Ok(why) => match crate::capture::pins::unpin_all(&cfg.bpf_pin_dir) {
            Ok(n) => log::info!("unpinned {n} BPF object(s) under {}: {why}", cfg.bpf_pin_dir.display()),
            Err(e) => log::error!("cannot unpin under --bpf-pin-dir '{}' ({why}): {e}", cfg.bpf_pin_dir.display()),
        },
        Err(why) => log::info!("keeping the BPF pins under {}: {why}", cfg.bpf_pin_dir.display()),
    }
}

/// Starts the BPF capture, or says why not and gives the exit code: 3 when BPF permission is
/// missing (the documented code), 1 for anything else.
fn spawn_capture(opts: CaptureOptions) -> Result<CaptureHandle, i32> {
    connections::spawn(opts).map_err(|e| match e {
        CaptureError::Permission(_) => fail(3, e),
        e => fail(1, format_args!("cannot start BPF capture: {e}")),
    })
}

fn write_ready(path: &std::path::Path) -> std::io::Result<()> {
    // Write then rename so a watcher never sees a half-written file.
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp)?;
    writeln!(f, "{}", std::process::id())?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}

fn log_stats(c: &CaptureStats, k: &KafkaStats) {
    let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
    log::info!(
        "stats: opened={} snapshot={} (swept={}) closed={} ringbuf_lost={} txn_records={} txn_map_full={} kafka_delivered={} kafka_errors={} kafka_dropped={} spool_memory={}/{}B spool_disk={}/{}B spilled={}",
        g(&c.opened),
        g(&c.snapshots),
        g(&c.sweep_snapshots),
        g(&c.closed),
        g(&c.ringbuf_drops),
        g(&c.txn_records),
        g(&c.txn_hist_full) + g(&c.txn_conn_full),
        g(&k.delivered),
        g(&k.delivery_errors),
        g(&k.dropped),
        k.memory_records(),
        k.memory_bytes(),
        g(&k.disk_records),
        g(&k.disk_bytes),
        g(&k.spilled)
    );
}
