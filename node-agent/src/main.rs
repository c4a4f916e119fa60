//! wattgraph-agent: eBPF TCP connection capture -> Avro ConnectionEvent -> Kafka.
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;

use wattgraph_agent::capture::{self, CaptureError, CaptureOptions, CaptureStats};
use wattgraph_agent::config::Config;
use wattgraph_agent::kafka::{EventProducer, KafkaStats};
use wattgraph_agent::pipeline::Pipeline;

const PROC_CACHE_ENTRIES: usize = 8192;
const FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

fn main() {
    std::process::exit(run());
}

fn run() -> i32 {
    let cfg = Config::parse();
    if let Err(msg) = cfg.validate() {
        eprintln!("wattgraph-agent: error: {msg}");
        return 2;
    }
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

    let mut pipeline = match Pipeline::new(&cfg.host_id, capture::boot_to_unix_offset_ns(), PROC_CACHE_ENTRIES) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("wattgraph-agent: error: {e:#}");
            return 1;
        }
    };

    let opts = CaptureOptions {
        snapshot_bytes: cfg.snapshot_bytes,
        snapshot_interval: Duration::from_millis(cfg.snapshot_interval_ms),
        netns: cfg.netns.clone(),
        map_entries: cfg.map_entries,
        ignore_self: !cfg.include_self,
        ..Default::default()
    };
    let handle = match capture::spawn(opts) {
        Ok(h) => h,
        Err(e @ CaptureError::Permission(_)) => {
            eprintln!("wattgraph-agent: error: {e}");
            return 3;
        }
        Err(e) => {
            eprintln!("wattgraph-agent: error: cannot start BPF capture: {e}");
            return 1;
        }
    };
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

    let producer = match EventProducer::new(&cfg.kafka_brokers, &cfg.topic, &format!("wattgraph-agent-{}", cfg.host_id)) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("wattgraph-agent: error: {e:#}");
            return 1;
        }
    };

    if let Some(path) = &cfg.ready_file {
        if let Err(e) = write_ready(path) {
            eprintln!("wattgraph-agent: error: cannot write --ready-file '{}': {e}", path.display());
            return 1;
        }
    }
    log::info!("producing to topic {} on {} as host {}", cfg.topic, cfg.kafka_brokers, cfg.host_id);

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
        if Instant::now() >= next_stats {
            log_stats(handle.stats(), producer.stats());
            next_stats = Instant::now() + stats_every;
        }
    }

    log::info!("shutting down: detaching BPF programs and flushing Kafka");
    let stats = handle.stats().clone();
    for ev in handle.stop_and_drain() {
        let (key, payload) = pipeline.process(&ev);
        producer.send(key, payload);
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
        "stats: opened={} snapshot={} (swept={}) closed={} ringbuf_lost={} kafka_delivered={} kafka_errors={} kafka_dropped={}",
        g(&c.opened),
        g(&c.snapshots),
        g(&c.sweep_snapshots),
        g(&c.closed),
        g(&c.ringbuf_drops),
        g(&k.delivered),
        g(&k.delivery_errors),
        g(&k.dropped)
    );
}
