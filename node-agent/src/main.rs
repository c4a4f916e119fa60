//! wattgraph-agent: eBPF TCP connection capture -> Avro ConnectionEvent -> Kafka.
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::Arc;
use std::time::{Duration, Instant};

use wattgraph_agent::control::power_cap::budget::BudgetMetrics;
use wattgraph_agent::control::power_cap::consumer as budget_consumer;
use wattgraph_agent::control::shedding::ShedController;
use wattgraph_agent::capture::bpf::CaptureError;
use wattgraph_agent::capture::connections::{self as capture, CaptureOptions, CaptureStats};
use wattgraph_agent::output::avro::cgroup::CgroupStatsEncoder;
use wattgraph_agent::resources::record::OwnedCgroupStats;
use wattgraph_agent::resources::cgroup_report::{self, CgroupThread};
use wattgraph_agent::resources::cgroup_sampler::Hierarchy;
use wattgraph_agent::config::{Config, ConfigError};
use wattgraph_agent::output::kafka::{EventProducer, KafkaStats, SpoolOptions};
use wattgraph_agent::metrics::{self, Renderer, Sources};
use wattgraph_agent::resources::ResourceMetrics;
use wattgraph_agent::output::pipeline::Pipeline;
use wattgraph_agent::identity::pod_metadata::{PodDirectory, PodSource, PodSourceOptions};
use wattgraph_agent::resources::power::ModelParams;
use wattgraph_agent::output::avro::resource::ResourceEncoder;
use wattgraph_agent::resources::record::{ResourceRecord, Scope};
use wattgraph_agent::resources::sampler::{self as resources, ResourceOptions, SamplerThread};
use wattgraph_agent::capture::sched::SchedOptions;
use wattgraph_agent::capture::connections::transactions::ConnTxn;
use wattgraph_agent::output::avro::transaction::{TxnEncoder, TxnRecord};

const PROC_CACHE_ENTRIES: usize = 8192;
const FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

fn main() {
    std::process::exit(run());
}

fn run() -> i32 {
    // Before anything decodes Avro (power budgets from Kafka): the decoders' allocation bound.
    wattgraph_agent::output::avro::limit_decoder_allocations();
    let cfg = match Config::load(std::env::args_os()) {
        Ok(c) => c,
        Err(ConfigError::Clap(e)) => e.exit(), // exit 2 (0 for --help / --version)
        Err(ConfigError::Invalid(msg)) => {
            eprintln!("wattgraph-agent: error: {msg}");
            return 2;
        }
    };
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(&cfg.log_level))
        .target(env_logger::Target::Stderr)
        .init();

    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        if let Err(e) = signal_hook::flag::register(sig, stop.clone()) {
            eprintln!("wattgraph-agent: error: cannot install signal handler: {e}");
            return 1;
        }
    }

    if let Err(code) = preflight_checks(&cfg) {
        return code;
    }

    if cfg.once {
        return run_once(&cfg);
    }

    let mut pipeline = match Pipeline::new(&cfg.host_id, wattgraph_agent::shared::clock::boot_to_unix_offset_ns(), PROC_CACHE_ENTRIES) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("wattgraph-agent: error: {e:#}");
            return 1;
        }
    };

    let pods = match start_pod_metadata(&cfg, stop.clone()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("wattgraph-agent: error: {e:#}");
            return 2;
        }
    };
    // Before the capture: shedding priorities by pod name read the same pod metadata.
    let pod_dir = pods.as_ref().map(|(d, _)| d.clone());
    let opts = CaptureOptions {
        snapshot_bytes: cfg.snapshot_bytes,
        snapshot_interval: Duration::from_millis(cfg.snapshot_interval_ms),
        netns: cfg.netns.clone(),
        map_entries: cfg.map_entries,
        ignore_self: !cfg.include_self,
        transaction_interval: (!cfg.no_transactions).then(|| Duration::from_millis(cfg.transaction_interval_ms)),
        txn_hist_entries: cfg.transaction_hist_entries,
        http_routes: cfg.http_routes,
        http_route_idle: Duration::from_secs(cfg.http_route_idle_s),
        mask_client_port_below: cfg.mask_client_port_below,
        nat_entries: cfg.nat_entries as usize,
        nat_netns: cfg.nat_netns.clone(),
        shed: cfg.shed_options().unwrap_or(None).map(|o| ShedController::boxed(o, pod_dir.clone())),
        ..Default::default()
    };
    let txn_encoder = match TxnEncoder::new() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("wattgraph-agent: error: {e:#}");
            return 1;
        }
    };
    let handle = match spawn_capture(opts) {
        Ok(h) => h,
        Err(code) => return code,
    };
    pipeline.use_kernel_cmdlines(handle.kernel_cmdlines().clone());
    let netns_desc = if cfg.netns.is_empty() {
        "all network namespaces".to_string()
    } else {
        cfg.netns.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
    };
    log::info!(
        "attached tp_btf programs to {}; capturing {}; snapshot every {} bytes or {} ms; map {} sockets",
        handle.attached.join(", "),
        netns_desc,
        cfg.snapshot_bytes,
        cfg.snapshot_interval_ms,
        cfg.map_entries
    );

    let kafka = match cfg.kafka_client() {
        Ok(k) => k,
        Err(e) => {
            eprintln!("wattgraph-agent: error: {e}");
            return 2;
        }
    };
    kafka.warnings.iter().for_each(|w| log::warn!("{w}"));
    let spool = SpoolOptions { memory_messages: cfg.spool_memory_messages, dir: cfg.spool_dir.clone(), max_bytes: cfg.spool_max_bytes };
    let producer = match EventProducer::with_client(&kafka, &cfg.topic, &format!("wattgraph-agent-{}", cfg.host_id), &spool) {
        Ok(p) => Arc::new(p),
        Err(e) => {
            eprintln!("wattgraph-agent: error: {e:#}");
            return 1;
        }
    };

    let res_metrics = Arc::new(ResourceMetrics::default());
    let mut res_thread = None;
    if !cfg.no_resources {
        let enc = match ResourceEncoder::new() {
            Ok(e) => e,
            Err(e) => {
                eprintln!("wattgraph-agent: error: {e:#}");
                return 1;
            }
        };
        let (prod, topic, key) = (producer.clone(), cfg.resource_topic.clone(), cfg.host_id.clone());
        let mut buf = Vec::with_capacity(1024);
        let sink = Box::new(move |recs: &[ResourceRecord]| {
            for r in recs {
                enc.encode(r, &mut buf);
                prod.send_to(&topic, key.as_bytes(), &buf);
            }
        });
        match resources::spawn_sampler(sampler_config(&cfg, None, pod_dir.clone()), sink, res_metrics.clone(), stop.clone()) {
            Ok(t) => res_thread = Some(t),
            Err(e @ CaptureError::Permission(_)) => {
                eprintln!("wattgraph-agent: error: {e}");
                return 3;
            }
            Err(e) => {
                eprintln!("wattgraph-agent: error: cannot start CPU accounting: {e}");
                return 1;
            }
        }
        log::info!(
            "attached tp_btf programs to {}; ResourceSample every {} ms to topic {}",
            wattgraph_agent::capture::sched::TRACEPOINTS.join(", "),
            cfg.sample_interval_ms,
            cfg.resource_topic
        );
    }
    // High-frequency cgroup samples (--cgroup-sample-interval-ms): its own thread, no BPF.
    let mut cgroup_thread = None;
    if let Some(cg) = cgroup_config(&cfg, None, pod_dir.clone()) {
        let enc = match CgroupStatsEncoder::new() {
            Ok(e) => e,
            Err(e) => {
                eprintln!("wattgraph-agent: error: {e:#}");
                return 1;
            }
        };
        let (prod, topic, key) = (producer.clone(), cfg.cgroup_topic.clone(), cfg.host_id.clone());
        let mut buf = Vec::with_capacity(512);
        let sink = Box::new(move |r: &wattgraph_agent::resources::record::CgroupStatsRecord<'_>| {
            enc.encode(r, &mut buf);
            prod.send_to(&topic, key.as_bytes(), &buf);
        });
        log::info!(
            "cgroup sampler: {} hierarchy, tick every {} ms, CgroupStats every {} ms to topic {}",
            cgroup_report::hierarchy_label(&cg.hierarchy),
            cfg.cgroup_sample_interval_ms,
            cfg.sample_interval_ms,
            cfg.cgroup_topic
        );
        match cgroup_report::spawn(cg, sink, res_metrics.clone(), stop.clone()) {
            Ok(t) => cgroup_thread = Some(t),
            Err(e) => {
                eprintln!("wattgraph-agent: error: cannot start the cgroup sampler thread: {e}");
                return 1;
            }
        }
    }
    let budget_metrics = Arc::new(BudgetMetrics::new(cfg.power_cap));
    if let Some(addr) = cfg.metrics_addr {
        let r = Arc::new(Renderer::new(Sources {
            capture: Some(handle.stats().clone()),
            kafka: Some(producer.stats().clone()),
            resources: res_metrics.clone(),
            socket_map_capacity: cfg.map_entries as u64,
            budget: Some(budget_metrics.clone()),
            pods: pods.as_ref().map(|(d, _)| d.clone()),
        }));
        match metrics::serve(addr, r, stop.clone()) {
            Ok(a) => log::info!("Prometheus metrics on http://{a}/metrics"),
            Err(e) => {
                eprintln!("wattgraph-agent: error: --metrics-addr '{addr}': {e}");
                return 1;
            }
        }
    }

    if let Some(path) = &cfg.ready_file {
        if let Err(e) = write_ready(path) {
            eprintln!("wattgraph-agent: error: cannot write --ready-file '{}': {e}", path.display());
            return 1;
        }
    }
    // Power cap (--power-cap): started last, so no early exit leaves limits written.
    let budget_thread = match budget_consumer::start(&cfg, budget_metrics.clone(), stop.clone()) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("wattgraph-agent: error: {e:#}");
            return 1;
        }
    };
    log::info!("producing to topic {} on {} as host {}", cfg.topic, kafka.describe(), cfg.host_id);
    if !cfg.no_transactions {
        log::info!("TransactionStats every {} ms to topic {}", cfg.transaction_interval_ms, cfg.transaction_topic);
        if cfg.http_routes > 0 && cfg!(not(target_arch = "x86_64")) {
            log::warn!("HTTP routes: request bytes are read from syscall arguments on x86_64 only; no routes on this architecture");
        }
    }
    let boot_to_unix = wattgraph_agent::shared::clock::boot_to_unix_offset_ns();
    let mut txn_out = TxnOut { rec: TxnRecord::default(), key: String::with_capacity(128), buf: Vec::with_capacity(1024) };

    let stats_every = Duration::from_secs(cfg.stats_interval_s);
    let mut next_stats = Instant::now() + stats_every;
    let mut code = 0;
    while !stop.load(Ordering::Relaxed) {
        match handle.events().recv_timeout(Duration::from_millis(200)) {
            Ok(ev) => {
                let (key, payload) = pipeline.process(&ev);
                producer.send(key, payload);
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                log::error!("capture thread stopped unexpectedly");
                code = 1;
                break;
            }
        }
        while let Ok(t) = handle.transactions().try_recv() {
            txn_out.send(&t, &cfg, boot_to_unix, &txn_encoder, &producer);
        }
        if Instant::now() >= next_stats {
            log_stats(handle.stats(), producer.stats());
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
    for ev in events {
        let (key, payload) = pipeline.process(&ev);
        producer.send(key, payload);
    }
    for t in &txns {
        txn_out.send(t, &cfg, boot_to_unix, &txn_encoder, &producer);
    }
    let left = producer.flush(FLUSH_TIMEOUT);
    if left > 0 {
        log::warn!("{left} Kafka messages not delivered within {FLUSH_TIMEOUT:?}");
    }
    log_stats(&stats, producer.stats());
    if let Some(path) = &cfg.ready_file {
        let _ = std::fs::remove_file(path);
    }
    code
}

/// The cgroup sampler thread's options, None when --cgroup-sample-interval-ms is 0.
const SA_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// The pod metadata refresher of --pod-metadata-url, with the pod's service account token and
/// CA as defaults when the agent runs in a pod. A source that cannot be set up is an error;
/// one that is down at start only delays the names.
fn start_pod_metadata(cfg: &Config, stop: Arc<AtomicBool>) -> anyhow::Result<Option<(Arc<PodDirectory>, std::thread::JoinHandle<()>)>> {
    let Some(source) = pod_source(cfg)? else { return Ok(None) };
    let dir = Arc::new(PodDirectory::default());
    log::info!("pod metadata: PodList from {} every {} ms", cfg.pod_metadata_url.as_deref().unwrap_or(""), cfg.pod_metadata_interval_ms);
    let t = source.spawn(dir.clone(), stop);
    Ok(Some((dir, t)))
}

fn pod_source(cfg: &Config) -> anyhow::Result<Option<PodSource>> {
    let Some(url) = &cfg.pod_metadata_url else { return Ok(None) };
    let sa = |f: &str| {
        let p = std::path::Path::new(SA_DIR).join(f);
        (url.starts_with("https://") && p.is_file()).then_some(p)
    };
    let opts = PodSourceOptions {
        url: url.clone(),
        token_file: cfg.pod_metadata_token_file.clone().or_else(|| sa("token")),
        ca_file: cfg.pod_metadata_ca_file.clone().or_else(|| sa("ca.crt")),
        insecure_tls: cfg.pod_metadata_insecure_tls,
        interval: Duration::from_millis(cfg.pod_metadata_interval_ms),
        labels: cfg.pod_labels.clone(),
    };
    Ok(Some(PodSource::new(opts)?))
}

fn cgroup_config(cfg: &Config, max_intervals: Option<u64>, pods: Option<Arc<PodDirectory>>) -> Option<CgroupThread> {
    if cfg.cgroup_sample_interval_ms == 0 {
        return None;
    }
    let v2 = cfg.cgroup_root.clone().unwrap_or_else(wattgraph_agent::identity::cgroup::default_v2_root);
    Some(CgroupThread {
        host_id: cfg.host_id.clone(),
        hierarchy: Hierarchy::detect(&v2, &cfg.cgroup_root_v1),
        tick_interval_ns: cfg.cgroup_sample_interval_ms * 1_000_000,
        report_interval_ns: cfg.sample_interval_ms * 1_000_000,
        realtime: cfg.cgroup_sampler_realtime,
        max_intervals,
        pods,
    })
}

fn sampler_config(cfg: &Config, max_intervals: Option<u64>, pods: Option<Arc<PodDirectory>>) -> SamplerThread {
    let mut opts = ResourceOptions::new(&cfg.host_id);
    opts.pods = pods;
    opts.sched = SchedOptions {
        thread_entries: cfg.thread_entries,
        ht_ratio: cfg.ht_ratio,
        use_counters: !cfg.no_hw_counters,
        ..SchedOptions::default()
    };
    opts.powercap_root = cfg.powercap_root.clone();
    opts.idle_watts_per_socket = cfg.idle_watts_per_socket;
    opts.model = ModelParams { idle_watts_per_cpu: cfg.idle_watts_per_cpu, max_watts_per_cpu: cfg.max_watts_per_cpu };
    if let Some(r) = &cfg.cgroup_root {
        opts.cgroup_root = r.clone();
    }
    SamplerThread { opts, interval: Duration::from_millis(cfg.sample_interval_ms), max_intervals }
}

/// `--once`: one sampling interval, printed for a person checking the node; no Kafka.
/// `--once`: transactions of the interval, and the HTTP routes by count with their latency.
fn once_transactions(out: &mut String, txns: &[ConnTxn]) {
    use std::fmt::Write as _;
    use wattgraph_agent::capture::connections::transactions::{bucket_mid, Histogram, TxnRole};
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

fn run_once(cfg: &Config) -> i32 {
    // One synchronous fetch: the printout names pods when the source answers.
    let once_pods = match pod_source(cfg) {
        Ok(None) => None,
        Ok(Some(src)) => {
            let d = Arc::new(PodDirectory::default());
            match src.fetch() {
                Ok(p) => d.replace(p),
                Err(e) => eprintln!("pod metadata: {e:#} (pods shown by UID)"),
            }
            Some(d)
        }
        Err(e) => {
            eprintln!("wattgraph-agent: error: {e:#}");
            return 2;
        }
    };
    let opts = CaptureOptions {
        netns: cfg.netns.clone(),
        map_entries: cfg.map_entries,
        ignore_self: !cfg.include_self,
        snapshot_interval: Duration::from_millis(cfg.sample_interval_ms.max(100)),
        shed: cfg.shed_options().unwrap_or(None).map(|o| ShedController::boxed(o, None)),
        transaction_interval: (!cfg.no_transactions).then(|| Duration::from_millis(cfg.sample_interval_ms.max(100))),
        txn_hist_entries: cfg.transaction_hist_entries,
        http_routes: cfg.http_routes,
        http_route_idle: Duration::from_secs(cfg.http_route_idle_s),
        mask_client_port_below: cfg.mask_client_port_below,
        nat_entries: cfg.nat_entries as usize,
        nat_netns: cfg.nat_netns.clone(),
        ..Default::default()
    };
    let handle = match spawn_capture(opts) {
        Ok(h) => h,
        Err(code) => return code,
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let sink = Box::new(move |recs: &[ResourceRecord]| {
        let _ = tx.send(recs.to_vec());
    });
    let stop = Arc::new(AtomicBool::new(false));
    let t = match resources::spawn_sampler(sampler_config(cfg, Some(1), once_pods.clone()), sink, Arc::new(ResourceMetrics::default()), stop) {
        Ok(t) => t,
        Err(e @ CaptureError::Permission(_)) => {
            eprintln!("wattgraph-agent: error: {e}");
            return 3;
        }
        Err(e) => {
            eprintln!("wattgraph-agent: error: cannot start CPU accounting: {e}");
            return 1;
        }
    };
    // The cgroup sampler over the same interval, in parallel (its first tick is the baseline).
    let (cg_tx, cg_rx) = std::sync::mpsc::channel::<OwnedCgroupStats>();
    let cg = cgroup_config(cfg, Some(1), once_pods.clone()).map(|c| {
        let label = cgroup_report::hierarchy_label(&c.hierarchy);
        let metrics = Arc::new(ResourceMetrics::default());
        let sink = Box::new(move |r: &wattgraph_agent::resources::record::CgroupStatsRecord<'_>| {
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
    use std::fmt::Write as _;
    let _ = writeln!(out, "wattgraph-agent --once: host {}, interval {} ms", cfg.host_id, cfg.sample_interval_ms);
    let count = |k: wattgraph_agent::capture::event::Kind| events.iter().filter(|e| e.kind == k).count();
    use wattgraph_agent::capture::event::Kind;
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
        if nat_stats.available.load(std::sync::atomic::Ordering::Relaxed) == 1 { "read" } else { "not read (--nat-entries 0 or unavailable)" }
    );
    let mut seen = std::collections::BTreeMap::new();
    let mut key = String::new();
    for e in &events {
        let ((la, lp), (ra, rp)) = e.key_endpoints();
        wattgraph_agent::shared::net::canonical_key(&mut key, e.role, (&la, lp), (&ra, rp));
        let v = seen.entry(key.clone()).or_insert((e.tgid, e.comm_str().to_string(), e.role, 0u64, 0u64, String::new()));
        v.3 = v.3.max(e.bytes_sent);
        v.4 = v.4.max(e.bytes_recv);
        if e.nat.is_some() && v.5.is_empty() {
            v.5.push_str(" dialled ");
            wattgraph_agent::shared::net::write_endpoint(&mut v.5, &e.remote_addr, e.remote_port);
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
        let g = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
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

/// Reused buffers for TransactionStats (no allocation per record once grown).
struct TxnOut {
    rec: TxnRecord,
    key: String,
    buf: Vec<u8>,
}

impl TxnOut {
    fn send(&mut self, t: &ConnTxn, cfg: &Config, boot_to_unix: i64, enc: &TxnEncoder, producer: &EventProducer) {
        t.fill_record(&cfg.host_id, boot_to_unix, &mut self.rec, &mut self.key);
        enc.encode(&self.rec, &mut self.buf);
        producer.send_to(&cfg.transaction_topic, self.key.as_bytes(), &self.buf);
    }
}

/// The kernel has BTF and every tracepoint this configuration attaches to (else exit code 4),
/// and the process every capability and write access its features need (else exit code 3);
/// one message naming what is missing.
fn preflight_checks(cfg: &Config) -> Result<(), i32> {
    use wattgraph_agent::preflight::{check_capabilities, check_power_cap_writable, Privileged};
    if let Err(e) = check_capabilities(Privileged::of(cfg)) {
        eprintln!("wattgraph-agent: error: {e}");
        return Err(3);
    }
    if cfg.power_cap == wattgraph_agent::control::power_cap::budget::PowerCapMode::On {
        if let Err(e) = check_power_cap_writable(&cfg.powercap_root) {
            eprintln!("wattgraph-agent: error: {e}");
            return Err(3);
        }
    }
    let mut required: Vec<&str> = capture::TRACEPOINTS.to_vec();
    if !cfg.no_resources {
        required.extend(wattgraph_agent::capture::sched::TRACEPOINTS);
    }
    match wattgraph_agent::preflight::check(&required, &[]) {
        Ok(p) => {
            log::debug!("kernel {}: BTF and the tracepoints {} are present", p.release, required.join(", "));
            Ok(())
        }
        Err(e) => {
            eprintln!("wattgraph-agent: error: {e}");
            Err(4)
        }
    }
}

/// Starts the BPF capture, or says why not and gives the exit code: 3 when BPF permission is
/// missing (the documented code), 1 for anything else.
fn spawn_capture(opts: CaptureOptions) -> Result<capture::CaptureHandle, i32> {
    capture::spawn(opts).map_err(|e| match e {
        CaptureError::Permission(_) => {
            eprintln!("wattgraph-agent: error: {e}");
            3
        }
        e => {
            eprintln!("wattgraph-agent: error: cannot start BPF capture: {e}");
            1
        }
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
    let g = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
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
