//! The agent's own metrics in Prometheus text format (`--metrics-addr`), served by a tiny
//! HTTP/1.0 responder on its own thread. Label cardinality is fixed (kinds, not entities).
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::capture::connections::CaptureStats;
use crate::shared::process::{self_cpu_seconds, self_rss_bytes};
use crate::control::power_cap::metrics::BudgetMetrics;
use crate::output::kafka::KafkaStats;
use crate::resources::ResourceMetrics;

pub struct Sources {
    pub capture: Option<Arc<CaptureStats>>,
    pub kafka: Option<Arc<KafkaStats>>,
    pub resources: Arc<ResourceMetrics>,
    /// Power cap (budget consumer and actuator); None leaves its metrics out.
    pub budget: Option<Arc<BudgetMetrics>>,
    /// Pod metadata source (--pod-metadata-url); None leaves its metrics out.
    pub pods: Option<Arc<crate::identity::pod_metadata::PodDirectory>>,
}

struct RateState {
    at: Instant,
    counts: [u64; 3],
    rates: [f64; 3],
}

pub struct Renderer {
    src: Sources,
    rate: Mutex<RateState>,
}

impl Renderer {
    pub fn new(src: Sources) -> Renderer {
        Renderer { src, rate: Mutex::new(RateState { at: Instant::now(), counts: [0; 3], rates: [0.0; 3] }) }
    }

    pub fn render(&self) -> String {
        let mut o = String::with_capacity(4096);
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut metric = |name: &str, kind: &str, help: &str, samples: &[(&str, f64)]| {
            let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} {kind}");
            for (labels, v) in samples {
                if labels.is_empty() {
                    let _ = writeln!(o, "{name} {v}");
                } else {
                    let _ = writeln!(o, "{name}{{{labels}}} {v}");
                }
            }
        };
        if let Some(c) = &self.src.capture {
            let counts = [g(&c.opened), g(&c.snapshots), g(&c.closed)];
            let rates = {
                let mut st = self.rate.lock().unwrap();
                let dt = st.at.elapsed().as_secs_f64();
                if dt >= 1.0 {
                    for i in 0..3 {
                        st.rates[i] = counts[i].saturating_sub(st.counts[i]) as f64 / dt;
                    }
                    st.counts = counts;
                    st.at = Instant::now();
                }
                st.rates
            };
            metric(
                "wattgraph_agent_connection_events_total",
                "counter",
                "ConnectionEvents produced, by kind.",
                &[("kind=\"OPENED\"", counts[0] as f64), ("kind=\"SNAPSHOT\"", counts[1] as f64), ("kind=\"CLOSED\"", counts[2] as f64)],
            );
            metric(
                "wattgraph_agent_connection_events_per_second",
                "gauge",
                "ConnectionEvents per second since the previous scrape (at least 1 s), by kind.",
                &[("kind=\"OPENED\"", rates[0]), ("kind=\"SNAPSHOT\"", rates[1]), ("kind=\"CLOSED\"", rates[2])],
            );
            metric(
                "wattgraph_agent_ringbuf_lost_total",
                "counter",
                "Events the kernel could not put in a ring buffer, by program.",
                &[
                    ("program=\"connections\"", g(&c.ringbuf_drops) as f64),
                    ("program=\"sched\"", g(&self.src.resources.sched_ringbuf_drops) as f64),
                ],
            );
            metric(
                "wattgraph_agent_transaction_records_total",
                "counter",
                "TransactionStats records produced (one per connection per interval with transactions, or per masked group of short-lived connections).",
                &[("", g(&c.txn_records) as f64)],
            );
            metric(
                "wattgraph_agent_transaction_masked_connections_total",
                "counter",
                "Short-lived connections reported merged with their client port masked (--mask-client-port-below).",
                &[("", g(&c.txn_masked_connections) as f64)],
            );
            metric("wattgraph_agent_nat_available", "gauge", "1 when the connection tracking (conntrack) is read to report dialled virtual addresses past their NAT (--nat-entries).", &[("", g(&c.nat.available) as f64)]);
            metric("wattgraph_agent_nat_entries", "gauge", "Translated connections known from conntrack (bounded by --nat-entries).", &[("", g(&c.nat.entries) as f64)]);
            metric(
                "wattgraph_agent_nat_translated_total",
                "counter",
                "Connection events and transaction records reported with the connection past its NAT.",
                &[("", g(&c.nat.translated) as f64)],
            );
            metric(
                "wattgraph_agent_nat_lost_total",
                "counter",
                "Conntrack reading trouble, by reason: event socket overrun (the table is read again) or table full (that connection goes untranslated).",
                &[("reason=\"overrun\"", g(&c.nat.overruns) as f64), ("reason=\"table_full\"", g(&c.nat.table_full) as f64)],
            );
            metric(
                "wattgraph_agent_transaction_map_full_total",
                "counter",
                "Transactions not recorded because an in-kernel transaction map was full, by map (connection: the closed connections' ring, --map-entries).",
                &[("map=\"histogram\"", g(&c.txn_hist_full) as f64), ("map=\"connection\"", g(&c.txn_conn_full) as f64)],
            );
            metric("wattgraph_agent_http_routes", "gauge", "HTTP/1.x routes named and in use (bounded by --http-routes).", &[("", g(&c.http_routes) as f64)]);
            metric(
                "wattgraph_agent_http_routes_pruned_total",
                "counter",
                "Routes removed from the route table after --http-route-idle-s without a transaction.",
                &[("", g(&c.http_routes_pruned) as f64)],
            );
            metric(
                "wattgraph_agent_http_requests_unrouted_total",
                "counter",
                "Request starts without a route, by reason: route map full (filed as OTHER) or request bytes not visible (io_uring, sendfile, kernel threads).",
                &[("reason=\"routes_full\"", g(&c.http_routes_full) as f64), ("reason=\"no_buffer\"", g(&c.http_unread) as f64)],
            );
            metric("wattgraph_agent_socket_map_entries", "gauge", "Sockets with in-kernel state (socket-local storage) at the last sweep.", &[("", g(&c.socket_map_entries) as f64)]);
            metric(
                "wattgraph_agent_socket_storage_refused_total",
                "counter",
                "Times the kernel refused a socket's state (its net.core.optmem_max, or no memory); the socket's next call tries again.",
                &[("", g(&c.socket_storage_refused) as f64)],
            );
            metric(
                "wattgraph_agent_bpf_recursion_misses_total",
                "counter",
                "Socket-program calls the kernel skipped (same program already running on that CPU) and nothing handled: events not seen.",
                &[("program=\"connections\"", g(&c.prog_misses) as f64)],
            );
            metric(
                "wattgraph_agent_nested_state_changes_total",
                "counter",
                "TCP state changes in a softirq that interrupted the state-change program, handled by its nested twin.",
                &[("", g(&c.set_state_nested) as f64)],
            );
            metric(
                "wattgraph_agent_cmdlines_not_copied_total",
                "counter",
                "Processes whose command line the kernel could not copy (ring full, argv not resident): read from /proc instead, lost if the process already exited.",
                &[("", g(&c.cmdlines_not_copied) as f64)],
            );
            crate::control::shedding::render_metrics(&c.shed, &mut metric);
        }
        let r = &self.src.resources;
        // First, with Acquire: the interval's figures (stored before it was counted) are then current.
        let intervals = r.intervals.load(Ordering::Acquire) as f64;
        let entries = g(&r.thread_map_entries) as f64;
        let cap = g(&r.thread_map_capacity) as f64;
        metric("wattgraph_agent_sample_intervals_total", "counter", "Resource sampling intervals completed.", &[("", intervals)]);
        metric("wattgraph_agent_resource_records_total", "counter", "ResourceSample records produced.", &[("", g(&r.records) as f64)]);
        metric("wattgraph_agent_sched_switches_total", "counter", "sched_switch events handled in the kernel.", &[("", g(&r.sched_switches) as f64)]);
        metric("wattgraph_agent_thread_exits_total", "counter", "Thread exits flushed by the kernel.", &[("", g(&r.thread_exits) as f64)]);
        metric("wattgraph_agent_thread_map_entries", "gauge", "Threads in the in-kernel thread map.", &[("", entries)]);
        metric(
            "wattgraph_agent_thread_map_fill_ratio",
            "gauge",
            "Thread map entries over its capacity.",
            &[("", if cap > 0.0 { entries / cap } else { 0.0 })],
        );
        metric(
            "wattgraph_agent_thread_map_evictions_total",
            "counter",
            "Live threads the full LRU thread map evicted (their CPU time so far is lost; lower bound). Raise --thread-entries.",
            &[("", g(&r.thread_map_evictions) as f64)],
        );
        metric(
            "wattgraph_agent_host_power_watts",
            "gauge",
            "Host power of the last interval; source MEASURED (RAPL) or ESTIMATED (model).",
            &[(
                if g(&r.power_measured) == 1 { "source=\"MEASURED\"" } else { "source=\"ESTIMATED\"" },
                f64::from_bits(g(&r.host_power_watts_bits)),
            )],
        );
        metric("wattgraph_agent_hw_counters", "gauge", "1 when hardware cycle counters weight the attribution.", &[("", g(&r.hw_counters) as f64)]);
        metric("wattgraph_agent_cgroups_sampled", "gauge", "Container cgroups the high-frequency sampler follows.", &[("", g(&r.cgroups_sampled) as f64)]);
        metric("wattgraph_agent_cgroup_ticks_total", "counter", "High-frequency cgroup sampler ticks.", &[("", g(&r.cgroup_ticks) as f64)]);
        metric(
            "wattgraph_agent_cgroup_max_tick_gap_seconds",
            "gauge",
            "Largest gap between two cgroup sampler ticks in the last reporting interval.",
            &[("", g(&r.cgroup_max_tick_gap_ns) as f64 / 1e9)],
        );
        metric("wattgraph_agent_cgroup_records_total", "counter", "CgroupStats records produced.", &[("", g(&r.cgroup_records) as f64)]);
        if let Some(k) = &self.src.kafka {
            metric("wattgraph_agent_kafka_delivered_total", "counter", "Kafka messages acknowledged.", &[("", g(&k.delivered) as f64)]);
            metric("wattgraph_agent_kafka_delivery_errors_total", "counter", "Kafka messages that failed delivery.", &[("", g(&k.delivery_errors) as f64)]);
            metric(
                "wattgraph_agent_kafka_rescued_total",
                "counter",
                "Records librdkafka still held at a stop, written back to the disk spool (sent at the next start).",
                &[("", g(&k.rescued) as f64)],
            );
            metric(
                "wattgraph_agent_kafka_dropped_total",
                "counter",
                "Records dropped: beyond the spool's bound (memory and --spool-max-bytes), a spool disk error, or refused by the producer.",
                &[("", g(&k.dropped) as f64)],
            );
            metric(
                "wattgraph_agent_spool_records",
                "gauge",
                "Records waiting for Kafka, by tier (memory: librdkafka's queue and in flight; disk: --spool-dir).",
                &[("tier=\"memory\"", k.memory_records() as f64), ("tier=\"disk\"", g(&k.disk_records) as f64)],
            );
            metric(
                "wattgraph_agent_spool_bytes",
                "gauge",
                "Bytes waiting for Kafka, by tier (memory: keys and payloads; disk: segment files).",
                &[("tier=\"memory\"", k.memory_bytes() as f64), ("tier=\"disk\"", g(&k.disk_bytes) as f64)],
            );
            metric("wattgraph_agent_spool_spilled_total", "counter", "Records written to the disk spool (memory tier full).", &[("", g(&k.spilled) as f64)]);
            metric(
                "wattgraph_agent_spool_memory_only_total",
                "counter",
                "Records taken by the memory tier without their journal copy on disk (the disk tier refused it, or no --spool-dir): a kill of the agent loses those not yet delivered.",
                &[("", g(&k.memory_only) as f64)],
            );
            metric(
                "wattgraph_agent_spool_replayed_records",
                "gauge",
                "Records a previous run left in the disk spool unconfirmed by Kafka, found at start and sent again.",
                &[("", g(&k.replayed) as f64)],
            );
            metric("wattgraph_agent_spool_disk_errors_total", "counter", "Disk spool read/write/delete errors.", &[("", g(&k.disk_errors) as f64)]);
            metric(
                "wattgraph_agent_spool_lost_total",
                "counter",
                "Records accepted on disk that could not be read back (rest of a damaged segment; also in kafka_dropped_total).",
                &[("", g(&k.disk_lost) as f64)],
            );
            metric(
                "wattgraph_agent_spool_torn_bytes",
                "gauge",
                "Bytes cut off torn or corrupt disk spool segments at start.",
                &[("", g(&k.disk_torn_bytes) as f64)],
            );
        }
        metric("wattgraph_agent_cpu_seconds_total", "counter", "CPU time (user + system) the agent used.", &[("", self_cpu_seconds())]);
        metric("wattgraph_agent_resident_memory_bytes", "gauge", "Agent resident set size.", &[("", self_rss_bytes() as f64)]);
        if let Some(p) = &self.src.pods {
            let s = &p.stats;
            metric("wattgraph_agent_pod_metadata_pods", "gauge", "Pods in the last PodList fetched.", &[("", g(&s.pods) as f64)]);
            metric("wattgraph_agent_pod_metadata_fetches_total", "counter", "PodList fetches tried.", &[("", g(&s.fetches) as f64)]);
            metric("wattgraph_agent_pod_metadata_errors_total", "counter", "PodList fetches that failed (the last good list is kept).", &[("", g(&s.errors) as f64)]);
            metric(
                "wattgraph_agent_pod_metadata_last_success_seconds",
                "gauge",
                "Unix time of the last successful PodList fetch (0: none yet).",
                &[("", g(&s.last_success_unix) as f64)],
            );
        }
        if let Some(b) = &self.src.budget {
            b.render(&mut o);
        }
        o
    }
}

/// Serves `GET /metrics` (any path) until `stop` is set. Returns the bound address.
pub fn serve(addr: SocketAddr, renderer: Arc<Renderer>, stop: Arc<AtomicBool>) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr)?;
    listener.set_nonblocking(true)?;
    let bound = listener.local_addr()?;
    std::thread::Builder::new().name("wg-metrics".into()).spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            match listener.accept() {
                Ok((mut s, _)) => {
                    let _ = s.set_nonblocking(false);
                    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                    let mut buf = [0u8; 2048];
                    let _ = s.read(&mut buf);
                    let body = renderer.render();
                    let _ = write!(
                        s,
                        "HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
                        body.len(),
                        body
                    );
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(50)),
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    })?;
    Ok(bound)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serves_prometheus_text() {
        let res = Arc::new(ResourceMetrics::default());
        res.host_power_watts_bits.store(12.5f64.to_bits(), Ordering::Relaxed);
        res.thread_map_entries.store(10, Ordering::Relaxed);
        res.thread_map_capacity.store(40, Ordering::Relaxed);
        let cap = Arc::new(CaptureStats::default());
        cap.opened.store(3, Ordering::Relaxed);
        let r = Arc::new(Renderer::new(Sources {
            capture: Some(cap),
            kafka: Some(Arc::new(KafkaStats::default())),
            resources: res,
            budget: Some(Arc::new(BudgetMetrics::new(crate::control::power_cap::outcome::PowerCapMode::DryRun))),
            pods: Some(Arc::new(crate::identity::pod_metadata::PodDirectory::default())),
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let addr = serve("127.0.0.1:0".parse().unwrap(), r, stop.clone()).unwrap();
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        stop.store(true, Ordering::Relaxed);
        assert!(text.starts_with("HTTP/1.0 200 OK"), "{text}");
        for needle in [
            "wattgraph_agent_connection_events_total{kind=\"OPENED\"} 3",
            "wattgraph_agent_thread_map_fill_ratio 0.25",
            "wattgraph_agent_socket_storage_refused_total 0",
            "wattgraph_agent_pod_metadata_pods 0",
            "wattgraph_agent_host_power_watts{source=\"ESTIMATED\"} 12.5",
            "wattgraph_agent_kafka_delivery_errors_total 0",
            "wattgraph_agent_spool_records{tier=\"disk\"} 0",
            "wattgraph_agent_spool_bytes{tier=\"memory\"} 0",
            "wattgraph_agent_ringbuf_lost_total{program=\"sched\"} 0",
            "# TYPE wattgraph_agent_cpu_seconds_total counter",
            "wattgraph_agent_power_cap_mode{mode=\"dry-run\"} 1",
            "wattgraph_agent_power_budgets_ignored_total{reason=\"stale\"} 0",
        ] {
            assert!(text.contains(needle), "missing {needle}:\n{text}");
        }
    }
}
