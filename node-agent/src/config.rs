//! Command line (contracts.md "Agent command line") and its validation.
use std::path::PathBuf;

use clap::Parser;

#[derive(Parser, Debug, Clone)]
#[command(name = "wattgraph-agent", version, about = "Wattgraph node agent: TCP connections via eBPF -> Avro -> Kafka")]
pub struct Config {
    /// Configured identity of this host (hostId in every event).
    #[arg(long = "host-id", value_name = "ID")]
    pub host_id: String,

    /// Kafka bootstrap brokers, comma separated HOST:PORT (not needed with --once).
    #[arg(long = "kafka-brokers", value_name = "HOST:PORT", required_unless_present = "once")]
    pub kafka_brokers: Option<String>,

    /// Kafka topic for ConnectionEvent records.
    #[arg(long, default_value = "wattgraph.connections")]
    pub topic: String,

    /// Only sockets in these network namespaces (nsfs path, e.g. /run/netns/wg-a). Repeatable.
    #[arg(long = "netns", value_name = "PATH")]
    pub netns: Vec<PathBuf>,

    /// Report a SNAPSHOT at most this long after the previous report of a socket with new bytes.
    #[arg(long = "snapshot-interval-ms", default_value_t = 5000)]
    pub snapshot_interval_ms: u64,

    /// Report a SNAPSHOT when this many bytes accumulated since the previous report.
    #[arg(long = "snapshot-bytes", default_value_t = 1_048_576)]
    pub snapshot_bytes: u64,

    /// Written once the BPF programs are attached.
    #[arg(long = "ready-file", value_name = "PATH")]
    pub ready_file: Option<PathBuf>,

    /// Maximum tracked sockets (in-kernel LRU map size).
    #[arg(long = "map-entries", default_value_t = 65536)]
    pub map_entries: u32,

    /// Log level when RUST_LOG is not set (error, warn, info, debug, trace).
    #[arg(long = "log-level", default_value = "info")]
    pub log_level: String,

    /// Seconds between stats lines on stderr.
    #[arg(long = "stats-interval-s", default_value_t = 30)]
    pub stats_interval_s: u64,

    /// Also capture the agent's own sockets (normally ignored in the kernel).
    #[arg(long = "include-self")]
    pub include_self: bool,

    /// Kafka topic for ResourceSample records (CPU and power per host, group, process).
    #[arg(long = "resource-topic", default_value = "wattgraph.resources")]
    pub resource_topic: String,

    /// Length of a CPU/power sampling interval.
    #[arg(long = "sample-interval-ms", default_value_t = 1000)]
    pub sample_interval_ms: u64,

    /// Do not load the sched_switch programs nor emit ResourceSample records.
    #[arg(long = "no-resources")]
    pub no_resources: bool,

    /// Maximum tracked threads (in-kernel LRU map size).
    #[arg(long = "thread-entries", default_value_t = 32768)]
    pub thread_entries: u32,

    /// Root of the powercap sysfs tree holding intel-rapl:* zones.
    #[arg(long = "powercap-root", value_name = "PATH", default_value = "/sys/class/powercap")]
    pub powercap_root: PathBuf,

    /// RAPL: idle power per socket in watts (kept as the host's); default: the lowest
    /// power measured so far.
    #[arg(long = "idle-watts-per-socket", value_name = "W")]
    pub idle_watts_per_socket: Option<f64>,

    /// Estimation model (no RAPL): watts of one idle CPU.
    #[arg(long = "idle-watts-per-cpu", value_name = "W", default_value_t = 1.5)]
    pub idle_watts_per_cpu: f64,

    /// Estimation model (no RAPL): watts of one fully busy CPU.
    #[arg(long = "max-watts-per-cpu", value_name = "W", default_value_t = 6.0)]
    pub max_watts_per_cpu: f64,

    /// HT_r of Eq. 3.1: power of two hyper-threads on one core relative to one.
    #[arg(long = "ht-ratio", default_value_t = 1.1)]
    pub ht_ratio: f64,

    /// Do not open hardware counters (on-CPU time becomes the attribution weight).
    #[arg(long = "no-hw-counters")]
    pub no_hw_counters: bool,

    /// cgroup v2 mount used to resolve cgroup ids (default: /sys/fs/cgroup/unified on
    /// hybrid hosts, else /sys/fs/cgroup).
    #[arg(long = "cgroup-root", value_name = "PATH")]
    pub cgroup_root: Option<PathBuf>,

    /// Interval between ticks of the high-frequency cgroup sampler (CPU, throttling, memory,
    /// I/O, pids of every container); one CgroupStats per container every --sample-interval-ms.
    /// 0 disables it; otherwise 10..1000 (shutdown waits for the current tick).
    #[arg(long = "cgroup-sample-interval-ms", value_name = "MS", default_value_t = 100)]
    pub cgroup_sample_interval_ms: u64,

    /// Kafka topic for CgroupStats records (key = host id).
    #[arg(long = "cgroup-topic", default_value = "wattgraph.cgroups")]
    pub cgroup_topic: String,

    /// Run the cgroup sampler thread SCHED_FIFO (priority 10) so busy containers cannot delay
    /// its ticks; needs CAP_SYS_NICE (if refused, the agent says so and continues).
    #[arg(long = "cgroup-sampler-realtime")]
    pub cgroup_sampler_realtime: bool,

    /// Root of the cgroup v1 controller mounts (cpuacct, cpu, memory, blkio, pids), used by the
    /// cgroup sampler when the v2 root (--cgroup-root) offers no cpu controller.
    #[arg(long = "cgroup-root-v1", value_name = "PATH", default_value = "/sys/fs/cgroup")]
    pub cgroup_root_v1: PathBuf,

    /// Serve Prometheus text metrics on this address (e.g. 127.0.0.1:9400).
    #[arg(long = "metrics-addr", value_name = "ADDR")]
    pub metrics_addr: Option<std::net::SocketAddr>,

    /// Kafka topic for TransactionStats records (request/response latency histograms).
    #[arg(long = "transaction-topic", default_value = "wattgraph.transactions")]
    pub transaction_topic: String,

    /// Interval of TransactionStats records (one per connection with transactions).
    #[arg(long = "transaction-interval-ms", default_value_t = 1000)]
    pub transaction_interval_ms: u64,

    /// Histogram cells (connection, kind, bucket) the kernel can hold (in-kernel hash map).
    #[arg(long = "transaction-hist-entries", default_value_t = 65536)]
    pub transaction_hist_entries: u32,

    /// Do not track transactions (kernel) nor publish TransactionStats.
    #[arg(long = "no-transactions")]
    pub no_transactions: bool,

    /// Diagnostic: watch one sampling interval, print connections, top processes by CPU
    /// and the power source, then exit (no Kafka).
    #[arg(long = "once")]
    pub once: bool,

    /// Load shedding of connection lifecycle events to hold the agent's CPU near
    /// --cpu-setpoint: off, kernel-drop (the paper's domain-blind baseline, in the kernel),
    /// user (read, then dropped in user space), kernel (per-domain plan applied in the kernel).
    #[arg(long = "shed-mode", value_name = "MODE", default_value = "off")]
    pub shed_mode: String,

    /// How the kept connections are shared over domains: fair or priority (--shed-priority).
    #[arg(long = "shed-policy", value_name = "POLICY", default_value = "fair")]
    pub shed_policy: String,

    /// Agent CPU to hold, in cores (CPU seconds per second): 0.05 = 5 % of one core
    /// (= 2.5 % of a 2-core host). Required with --shed-mode other than off.
    #[arg(long = "cpu-setpoint", value_name = "CORES")]
    pub cpu_setpoint: Option<f64>,

    /// Priority of a domain for --shed-policy priority: NAME is a process name (comm) or, with
    /// --shed-domain cgroup, a cgroup path or path component; LEVEL 1..1000 (others: 1). Repeatable.
    #[arg(long = "shed-priority", value_name = "NAME=LEVEL")]
    pub shed_priority: Vec<String>,

    /// Accounting domain of the shedder: process (tgid) or cgroup (cgroup v2 id).
    #[arg(long = "shed-domain", value_name = "DOMAIN", default_value = "process")]
    pub shed_domain: String,

    /// Length of a load-shedding control interval.
    #[arg(long = "shed-interval-ms", default_value_t = 1000)]
    pub shed_interval_ms: u64,

    /// Power capping from the budgets graph-service publishes: off (no consumer), dry-run
    /// (consume, compute and report the limits, write nothing) or on (write the RAPL package
    /// limits under --powercap-root).
    #[arg(long = "power-cap", value_enum, value_name = "MODE", default_value_t = crate::budget::PowerCapMode::Off)]
    pub power_cap: crate::budget::PowerCapMode,

    /// Compacted Kafka topic of PowerBudget records (key = host id), read from the beginning.
    #[arg(long = "power-budget-topic", default_value = "wattgraph.power-budgets")]
    pub power_budget_topic: String,

    /// Never cap the host below this many watts (split over the package zones like the budget).
    #[arg(long = "power-floor-watts", value_name = "W", default_value_t = 0.0)]
    pub power_floor_watts: f64,

    /// Restore the original limits when no valid budget arrived for longer than this.
    #[arg(long = "budget-timeout-s", value_name = "S", default_value_t = 90)]
    pub budget_timeout_s: u64,
}

impl Config {
    /// Checks values clap cannot; each message names the offending value.
    pub fn validate(&self) -> Result<(), String> {
        if self.host_id.trim().is_empty() {
            return Err("--host-id must not be empty".into());
        }
        if self.host_id.contains('/') {
            return Err(format!("--host-id '{}' must not contain '/' (it is part of process ids)", self.host_id));
        }
        let brokers = self.kafka_brokers.as_deref().unwrap_or("");
        if brokers.trim().is_empty() && !self.once {
            return Err("--kafka-brokers must not be empty".into());
        }
        for b in brokers.split(',').filter(|_| !brokers.trim().is_empty()) {
            let b = b.trim();
            let (host, port) = b
                .rsplit_once(':')
                .ok_or_else(|| format!("--kafka-brokers entry '{b}' is not HOST:PORT"))?;
            if host.is_empty() {
                return Err(format!("--kafka-brokers entry '{b}' has an empty host"));
            }
            match port.parse::<u16>() {
                Ok(p) if p > 0 => {}
                _ => return Err(format!("--kafka-brokers entry '{b}' has an invalid port '{port}'")),
            }
        }
        for (flag, t) in [
            ("--topic", &self.topic),
            ("--resource-topic", &self.resource_topic),
            ("--transaction-topic", &self.transaction_topic),
            ("--cgroup-topic", &self.cgroup_topic),
            ("--power-budget-topic", &self.power_budget_topic),
        ] {
            if t.is_empty() || t.len() > 249 || !t.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)) || t == "." || t == ".." {
                return Err(format!("{flag} '{t}' is not a valid Kafka topic name ([a-zA-Z0-9._-], 1..249 chars)"));
            }
        }
        if !(10..=3_600_000).contains(&self.sample_interval_ms) {
            return Err(format!("--sample-interval-ms '{}' must be between 10 and 3600000", self.sample_interval_ms));
        }
        if !(10..=3_600_000).contains(&self.transaction_interval_ms) {
            return Err(format!("--transaction-interval-ms '{}' must be between 10 and 3600000", self.transaction_interval_ms));
        }
        if !(1024..=16_777_216).contains(&self.transaction_hist_entries) {
            return Err(format!("--transaction-hist-entries '{}' must be between 1024 and 16777216", self.transaction_hist_entries));
        }
        if !(64..=4_194_304).contains(&self.thread_entries) {
            return Err(format!("--thread-entries '{}' must be between 64 and 4194304", self.thread_entries));
        }
        if !(1.0..=2.0).contains(&self.ht_ratio) {
            return Err(format!("--ht-ratio '{}' must be between 1.0 and 2.0", self.ht_ratio));
        }
        let w_ok = |w: f64| w.is_finite() && (0.0..=10_000.0).contains(&w);
        if let Some(w) = self.idle_watts_per_socket {
            if !w_ok(w) {
                return Err(format!("--idle-watts-per-socket '{w}' must be between 0 and 10000"));
            }
        }
        if !w_ok(self.idle_watts_per_cpu) {
            return Err(format!("--idle-watts-per-cpu '{}' must be between 0 and 10000", self.idle_watts_per_cpu));
        }
        if !w_ok(self.max_watts_per_cpu) || self.max_watts_per_cpu < self.idle_watts_per_cpu {
            return Err(format!(
                "--max-watts-per-cpu '{}' must be between --idle-watts-per-cpu ({}) and 10000",
                self.max_watts_per_cpu, self.idle_watts_per_cpu
            ));
        }
        if !w_ok(self.power_floor_watts) {
            return Err(format!("--power-floor-watts '{}' must be between 0 and 10000", self.power_floor_watts));
        }
        if !(1..=86_400).contains(&self.budget_timeout_s) {
            return Err(format!("--budget-timeout-s '{}' must be between 1 and 86400", self.budget_timeout_s));
        }
        if self.cgroup_sample_interval_ms != 0 && !(10..=1000).contains(&self.cgroup_sample_interval_ms) {
            return Err(format!(
                "--cgroup-sample-interval-ms '{}' must be 0 (off) or between 10 and 1000",
                self.cgroup_sample_interval_ms
            ));
        }
        if self.cgroup_sample_interval_ms != 0 && !self.cgroup_root_v1.is_dir() {
            return Err(format!("--cgroup-root-v1 '{}' is not a directory", self.cgroup_root_v1.display()));
        }
        if let Some(p) = &self.cgroup_root {
            if !p.is_dir() {
                return Err(format!("--cgroup-root '{}' is not a directory", p.display()));
            }
        }
        if self.snapshot_interval_ms == 0 {
            return Err("--snapshot-interval-ms '0' must be at least 1".into());
        }
        if self.snapshot_interval_ms > 86_400_000 {
            return Err(format!("--snapshot-interval-ms '{}' is more than a day", self.snapshot_interval_ms));
        }
        if self.snapshot_bytes == 0 {
            return Err("--snapshot-bytes '0' must be at least 1".into());
        }
        if !(64..=16_777_216).contains(&self.map_entries) {
            return Err(format!("--map-entries '{}' must be between 64 and 16777216", self.map_entries));
        }
        if !["error", "warn", "info", "debug", "trace", "off"].contains(&self.log_level.as_str()) {
            return Err(format!("--log-level '{}' must be one of error, warn, info, debug, trace, off", self.log_level));
        }
        if self.stats_interval_s == 0 {
            return Err("--stats-interval-s '0' must be at least 1".into());
        }
        self.shed_options()?;
        for p in &self.netns {
            if !p.exists() {
                return Err(format!("--netns '{}' does not exist", p.display()));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(extra: &[&str]) -> Result<Config, String> {
        let mut args = vec!["wattgraph-agent", "--host-id", "h1", "--kafka-brokers", "127.0.0.1:9092"];
        args.extend_from_slice(extra);
        let c = Config::try_parse_from(args).map_err(|e| e.to_string())?;
        c.validate()?;
        Ok(c)
    }

    #[test]
    fn defaults() {
        let c = parse(&[]).unwrap();
        assert_eq!(c.topic, "wattgraph.connections");
        assert_eq!(c.snapshot_interval_ms, 5000);
        assert_eq!(c.snapshot_bytes, 1_048_576);
        assert_eq!(c.map_entries, 65536);
        assert!(c.netns.is_empty() && c.ready_file.is_none() && !c.include_self);
        assert_eq!((c.sample_interval_ms, c.resource_topic.as_str(), c.ht_ratio), (1000, "wattgraph.resources", 1.1));
        assert!(c.metrics_addr.is_none() && !c.once && !c.no_resources);
        assert_eq!((c.transaction_topic.as_str(), c.transaction_interval_ms, c.transaction_hist_entries), ("wattgraph.transactions", 1000, 65536));
        assert!(!c.no_transactions);
    }

    #[test]
    fn cgroup_sampler_flags() {
        let c = parse(&[]).unwrap();
        assert_eq!((c.cgroup_sample_interval_ms, c.cgroup_topic.as_str()), (100, "wattgraph.cgroups"));
        assert!(!c.cgroup_sampler_realtime);
        assert_eq!(c.cgroup_root_v1, PathBuf::from("/sys/fs/cgroup"));
        let c = parse(&["--cgroup-sample-interval-ms", "0", "--cgroup-root-v1", "/nonexistent"]).unwrap();
        assert_eq!(c.cgroup_sample_interval_ms, 0, "0 disables the sampler (and its root is not needed)");
        let c = parse(&["--cgroup-sample-interval-ms", "10", "--cgroup-topic", "c", "--cgroup-sampler-realtime", "--cgroup-root-v1", "/tmp"]).unwrap();
        assert_eq!((c.cgroup_sample_interval_ms, c.cgroup_topic.as_str(), c.cgroup_sampler_realtime), (10, "c", true));
        for (args, needle) in [
            (&["--cgroup-sample-interval-ms", "9"][..], "--cgroup-sample-interval-ms '9'"),
            (&["--cgroup-sample-interval-ms", "1001"][..], "--cgroup-sample-interval-ms '1001'"),
            (&["--cgroup-topic", "a b"][..], "--cgroup-topic 'a b'"),
            (&["--cgroup-root-v1", "/nonexistent/v1"][..], "--cgroup-root-v1 '/nonexistent/v1'"),
        ] {
            let err = parse(args).unwrap_err();
            assert!(err.contains(needle), "{args:?}: {err}");
        }
    }

    #[test]
    fn power_cap_flags() {
        use crate::budget::PowerCapMode;
        let c = parse(&[]).unwrap();
        assert_eq!((c.power_cap, c.power_budget_topic.as_str()), (PowerCapMode::Off, "wattgraph.power-budgets"));
        assert_eq!((c.power_floor_watts, c.budget_timeout_s), (0.0, 90));
        let c = parse(&["--power-cap", "dry-run", "--power-floor-watts", "80.5", "--budget-timeout-s", "30", "--power-budget-topic", "b"]).unwrap();
        assert_eq!((c.power_cap, c.power_floor_watts, c.budget_timeout_s), (PowerCapMode::DryRun, 80.5, 30));
        assert_eq!(parse(&["--power-cap", "on"]).unwrap().power_cap, PowerCapMode::On);
    }

    #[test]
    fn resource_flags_and_once() {
        let c = parse(&[
            "--sample-interval-ms", "10", "--powercap-root", "/tmp/pc", "--idle-watts-per-socket", "12.5",
            "--idle-watts-per-cpu", "2", "--max-watts-per-cpu", "9", "--ht-ratio", "1.15", "--no-hw-counters",
            "--metrics-addr", "127.0.0.1:9400", "--thread-entries", "1024",
        ])
        .unwrap();
        assert_eq!(c.idle_watts_per_socket, Some(12.5));
        assert_eq!(c.metrics_addr.unwrap().port(), 9400);
        let once = Config::try_parse_from(["x", "--host-id", "h", "--once"]).unwrap();
        assert!(once.validate().is_ok() && once.kafka_brokers.is_none());
    }

    #[test]
    fn full_command_line() {
        let c = parse(&[
            "--topic", "t1", "--netns", "/proc/self/ns/net", "--netns", "/proc/thread-self/ns/net",
            "--snapshot-interval-ms", "100", "--snapshot-bytes", "4096", "--ready-file", "/tmp/r",
            "--map-entries", "1024", "--log-level", "debug",
        ])
        .unwrap();
        assert_eq!(c.netns.len(), 2);
        assert_eq!(c.snapshot_bytes, 4096);
        assert_eq!(c.ready_file.unwrap().to_str(), Some("/tmp/r"));
    }

    #[test]
    fn errors_name_the_value() {
        let cases: &[(&[&str], &str)] = &[
            (&["--snapshot-bytes", "0"], "--snapshot-bytes '0'"),
            (&["--snapshot-interval-ms", "0"], "--snapshot-interval-ms '0'"),
            (&["--map-entries", "3"], "--map-entries '3'"),
            (&["--topic", "bad topic"], "--topic 'bad topic'"),
            (&["--log-level", "loud"], "--log-level 'loud'"),
            (&["--netns", "/nonexistent/ns"], "/nonexistent/ns"),
            (&["--snapshot-bytes", "lots"], "lots"),
            (&["--sample-interval-ms", "5"], "--sample-interval-ms '5'"),
            (&["--ht-ratio", "3"], "--ht-ratio '3'"),
            (&["--max-watts-per-cpu", "1"], "--max-watts-per-cpu '1'"),
            (&["--idle-watts-per-socket=-1"], "--idle-watts-per-socket '-1'"),
            (&["--resource-topic", "a b"], "--resource-topic 'a b'"),
            (&["--thread-entries", "1"], "--thread-entries '1'"),
            (&["--metrics-addr", "nowhere"], "nowhere"),
            (&["--transaction-topic", "a/b"], "--transaction-topic 'a/b'"),
            (&["--transaction-interval-ms", "1"], "--transaction-interval-ms '1'"),
            (&["--transaction-hist-entries", "10"], "--transaction-hist-entries '10'"),
            (&["--power-cap", "maybe"], "'maybe'"),
            (&["--power-budget-topic", "a b"], "--power-budget-topic 'a b'"),
            (&["--power-floor-watts=-5"], "--power-floor-watts '-5'"),
            (&["--power-floor-watts", "NaN"], "--power-floor-watts 'NaN'"),
            (&["--budget-timeout-s", "0"], "--budget-timeout-s '0'"),
        ];
        for (args, needle) in cases {
            let err = parse(args).unwrap_err();
            assert!(err.contains(needle), "{args:?}: {err}");
        }
        let bad_broker = Config::try_parse_from(["x", "--host-id", "h", "--kafka-brokers", "localhost"]).unwrap();
        assert!(bad_broker.validate().unwrap_err().contains("'localhost'"));
        let bad_port = Config::try_parse_from(["x", "--host-id", "h", "--kafka-brokers", "k:99999"]).unwrap();
        assert!(bad_port.validate().unwrap_err().contains("'99999'"));
        assert!(Config::try_parse_from(["x", "--kafka-brokers", "k:1"]).is_err(), "--host-id is required");
    }
}
