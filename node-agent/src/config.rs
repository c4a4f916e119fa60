//! Command line (contracts.md "Agent command line") and its validation.
use std::path::PathBuf;

use clap::Parser;

#[derive(Parser, Debug, Clone)]
#[command(name = "wattgraph-agent", version, about = "Wattgraph node agent: TCP connections via eBPF -> Avro -> Kafka")]
pub struct Config {
    /// Configured identity of this host (hostId in every event).
    #[arg(long = "host-id", value_name = "ID")]
    pub host_id: String,

    /// Kafka bootstrap brokers, comma separated HOST:PORT.
    #[arg(long = "kafka-brokers", value_name = "HOST:PORT")]
    pub kafka_brokers: String,

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
        if self.kafka_brokers.trim().is_empty() {
            return Err("--kafka-brokers must not be empty".into());
        }
        for b in self.kafka_brokers.split(',') {
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
        let t = &self.topic;
        if t.is_empty() || t.len() > 249 || !t.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)) || t == "." || t == ".." {
            return Err(format!("--topic '{t}' is not a valid Kafka topic name ([a-zA-Z0-9._-], 1..249 chars)"));
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
