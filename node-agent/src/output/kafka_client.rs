//! Where and how the agent's and the service mapper's librdkafka clients connect: the brokers plus
//! librdkafka's own properties (e.g. `security.protocol=SASL_SSL`, `sasl.mechanisms=SCRAM-SHA-512`,
//! `sasl.username`, `sasl.password`, `ssl.ca.location`) from `--kafka-config FILE` and repeatable
//! `--kafka-option KEY=VALUE`. Keys the clients set themselves for their guarantees are refused,
//! secrets only come from the file, and the whole set is checked by librdkafka at start.
use std::path::Path;

use rdkafka::config::{ClientConfig, RDKafkaLogLevel};
use rdkafka::error::KafkaError;
use rdkafka::producer::{BaseProducer, DeliveryResult, ProducerContext};
use rdkafka::ClientContext;

/// Keys the clients set themselves, with why an operator may not change them.
const RESERVED: &[(&str, &str)] = &[
    ("bootstrap.servers", "the brokers come from --kafka-brokers"),
    ("metadata.broker.list", "the brokers come from --kafka-brokers"),
    ("enable.idempotence", "the producers are idempotent (no duplicate or reordered record on a retry)"),
    ("acks", "a record counts as delivered once all in-sync replicas have it (acks=all)"),
    ("request.required.acks", "a record counts as delivered once all in-sync replicas have it (acks=all)"),
    ("message.timeout.ms", "queued records never expire in the agent: the spool bounds an outage"),
    ("delivery.timeout.ms", "queued records never expire in the agent: the spool bounds an outage"),
    ("queue.buffering.max.messages", "the memory spool is set with --spool-memory-messages"),
    ("transactional.id", "the producers are not transactional"),
    ("group.id", "the budget consumer reads every partition itself, without a group"),
    ("enable.auto.commit", "the budget consumer commits nothing"),
    ("enable.auto.offset.store", "the budget consumer commits nothing"),
    ("enable.partition.eof", "the budget consumer's catch-up waits for each partition's end"),
    ("auto.offset.reset", "the budget consumer reads from the beginning"),
];

/// Keys whose value is a secret: never on a command line, never in a message.
pub fn is_secret(key: &str) -> bool {
    key.contains("password") || key.contains("secret") || matches!(key, "ssl.key.pem" | "ssl_key" | "sasl.oauthbearer.config")
}

/// Brokers and the operator's librdkafka properties, checked.
#[derive(Clone, Debug, Default)]
pub struct KafkaClient {
    brokers: String,
    properties: Vec<(String, String)>,
    /// Said once at start (e.g. a secret in a file other users can read).
    pub warnings: Vec<String>,
}

impl KafkaClient {
    /// PLAINTEXT to `brokers`, librdkafka's defaults otherwise.
    pub fn plain(brokers: &str) -> KafkaClient {
        KafkaClient { brokers: brokers.to_string(), ..Default::default() }
    }

    /// The properties of `config_file` (librdkafka's `key=value` lines, `#` comments), then those
    /// of `options` (`KEY=VALUE`, a later one wins). Every message starts with the flag and names
    /// the key, never a secret's value.
    pub fn load(brokers: &str, config_file: Option<&Path>, options: &[String]) -> Result<KafkaClient, String> {
        let mut c = KafkaClient::plain(brokers);
        if let Some(path) = config_file {
            let text = std::fs::read_to_string(path).map_err(|e| format!("--kafka-config '{}' cannot be read: {e}", path.display()))?;
            for (i, line) in text.lines().enumerate() {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let at = format!("--kafka-config '{}' line {}", path.display(), i + 1);
                let (k, v) = line.split_once('=').ok_or_else(|| format!("{at}: expected KEY=VALUE"))?;
                let (k, v) = (k.trim(), v.trim());
                if c.properties.iter().any(|(p, _)| p == k) {
                    return Err(format!("{at}: key '{k}' given twice"));
                }
                c.add(&at, k, v)?;
            }
            if c.properties.iter().any(|(k, _)| is_secret(k)) {
                use std::os::unix::fs::PermissionsExt;
                let mode = std::fs::metadata(path).map(|m| m.permissions().mode()).unwrap_or(0);
                if mode & 0o044 != 0 {
                    c.warnings.push(format!(
                        "--kafka-config '{}' holds a secret and other users may read it (mode {:o}); chmod 600 it",
                        path.display(),
                        mode & 0o777
                    ));
                }
            }
        }
        for o in options {
            let (k, v) = o.split_once('=').map(|(k, v)| (k.trim(), v.trim())).unwrap_or((o.trim(), ""));
            if is_secret(k) {
                return Err(format!(
                    "--kafka-option key '{k}' holds a secret: put it in the --kafka-config file (a command line is readable by every user of the host)"
                ));
            }
            if !o.contains('=') || k.is_empty() {
                return Err(format!("--kafka-option '{o}' must be KEY=VALUE (a librdkafka property)"));
            }
            c.properties.retain(|(p, _)| p != k);
            c.add(&format!("--kafka-option '{o}'"), k, v)?;
        }
        for (k, off) in [("enable.ssl.certificate.verification", "false"), ("ssl.endpoint.identification.algorithm", "none")] {
            if c.properties.iter().any(|(p, v)| p == k && v == off) {
                c.warnings.push(format!("{k}={off}: the broker's certificate is not fully checked, so a man in the middle can read and change records"));
            }
        }
        let origin = match config_file {
            Some(p) if options.is_empty() => format!("--kafka-config '{}'", p.display()),
            Some(p) => format!("--kafka-config '{}' with --kafka-option", p.display()),
            None => "--kafka-option".to_string(),
        };
        c.check_together(&origin)?;
        Ok(c)
    }

    /// One property: not reserved, and a name and value librdkafka takes.
    fn add(&mut self, at: &str, key: &str, value: &str) -> Result<(), String> {
        if let Some((_, why)) = RESERVED.iter().find(|(r, _)| *r == key) {
            return Err(format!("{at}: key '{key}' cannot be set: {why}"));
        }
        // librdkafka's own message for these does not name the file.
        if key.ends_with(".location") && value != "probe" {
            if let Err(e) = std::fs::metadata(value) {
                return Err(format!("{at}: key '{key}': '{value}' cannot be read: {e}"));
            }
        }
        if let Err(e) = ClientConfig::new().set(key, value).create_native_config() {
            let why = match e {
                KafkaError::ClientConfig(_, desc, _, _) => desc,
                e => e.to_string(),
            };
            let why = if is_secret(key) && !value.is_empty() { why.replace(value, "…") } else { why };
            return Err(format!("{at}: key '{key}': {why}"));
        }
        self.properties.push((key.to_string(), value.to_string()));
        Ok(())
    }

    /// What librdkafka checks only when a client is made (e.g. SASL without a username, an
    /// unreadable `ssl.ca.location`): a client without brokers, which connects nowhere.
    fn check_together(&self, origin: &str) -> Result<(), String> {
        if self.properties.is_empty() {
            return Ok(());
        }
        let mut cfg = ClientConfig::new();
        cfg.extend(self.properties.iter().cloned());
        match cfg.create_with_context::<_, BaseProducer<Quiet>>(Quiet) {
            Ok(_) => Ok(()),
            Err(e) => {
                let mut msg = e.to_string();
                for (k, v) in self.properties.iter().filter(|(k, v)| is_secret(k) && !v.is_empty()) {
                    msg = msg.replace(v.as_str(), &format!("<{k}>"));
                }
                Err(format!("{origin}: librdkafka refuses the properties together: {msg}"))
            }
        }
    }

    pub fn brokers(&self) -> &str {
        &self.brokers
    }

    /// For the start-up log: the security settings in force, without secrets.
    pub fn describe(&self) -> String {
        let get = |k: &str| self.properties.iter().rev().find(|(p, _)| p == k).map(|(_, v)| v.as_str());
        let mut s = format!("{} ({}", self.brokers, get("security.protocol").unwrap_or("plaintext"));
        if let Some(m) = get("sasl.mechanisms").or_else(|| get("sasl.mechanism")) {
            s.push_str(&format!(", {m} as {}", get("sasl.username").unwrap_or("?")));
        }
        s.push(')');
        s
    }
}

/// The check's client says nothing (it has no brokers on purpose).
struct Quiet;

impl ClientContext for Quiet {
    fn log(&self, _: RDKafkaLogLevel, _: &str, _: &str) {}
    fn error(&self, _: KafkaError, _: &str) {}
}

impl ProducerContext for Quiet {
    type DeliveryOpaque = ();
    fn delivery(&self, _: &DeliveryResult<'_>, _: ()) {}
}

/// Sets the brokers and the operator's properties on a librdkafka configuration. Called after
/// the client's own settings, so a property the operator gave (e.g. `linger.ms`) wins over a
/// default of the client; the keys a client relies on are refused by `KafkaClient::load`.
pub trait WithKafkaClient {
    fn with_client(&mut self, client: &KafkaClient) -> &mut Self;
}

impl WithKafkaClient for ClientConfig {
    fn with_client(&mut self, client: &KafkaClient) -> &mut Self {
        self.set("bootstrap.servers", &client.brokers);
        for (k, v) in &client.properties {
            self.set(k, v);
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, text: &str, mode: u32) -> std::path::PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let d = std::env::temp_dir().join(format!("wg-kafka-client-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let p = d.join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p
    }

    fn opts(o: &[&str]) -> Vec<String> {
        o.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn file_then_options_reach_the_client_config() {
        let f = file(
            "ok.properties",
            "# SCRAM over TLS\nsecurity.protocol = SASL_SSL\nsasl.mechanisms=SCRAM-SHA-512\nsasl.username=agent\nsasl.password=s3cr=t\n\nlinger.ms=5\n",
            0o600,
        );
        let c = KafkaClient::load("k:9093", Some(&f), &opts(&["linger.ms=7", "client.id=x"])).unwrap();
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        let mut cfg = ClientConfig::new();
        cfg.set("linger.ms", "50").with_client(&c);
        assert_eq!(cfg.get("bootstrap.servers"), Some("k:9093"));
        assert_eq!(cfg.get("security.protocol"), Some("SASL_SSL"));
        assert_eq!(cfg.get("sasl.password"), Some("s3cr=t"), "only the first '=' splits");
        assert_eq!(cfg.get("linger.ms"), Some("7"), "an option overrides the file, both override the client's default");
        assert_eq!(c.describe(), "k:9093 (SASL_SSL, SCRAM-SHA-512 as agent)");
        assert_eq!(KafkaClient::plain("k:1").describe(), "k:1 (plaintext)");
    }

    #[test]
    fn refusals_name_the_flag_and_key_and_hide_secrets() {
        let cases: &[(&[&str], &str)] = &[
            (&["acks=1"], "--kafka-option 'acks=1': key 'acks' cannot be set: a record counts as delivered once all in-sync replicas"),
            (&["enable.idempotence=false"], "key 'enable.idempotence' cannot be set"),
            (&["bootstrap.servers=evil:9092"], "key 'bootstrap.servers' cannot be set: the brokers come from --kafka-brokers"),
            (&["message.timeout.ms=1000"], "key 'message.timeout.ms' cannot be set"),
            (&["group.id=g"], "key 'group.id' cannot be set"),
            (&["no.such.property=1"], "--kafka-option 'no.such.property=1': key 'no.such.property': No such configuration property"),
            (&["security.protocol=SASL_SSLX"], "key 'security.protocol': Invalid value \"SASL_SSLX\""),
            (&["linger.ms"], "--kafka-option 'linger.ms' must be KEY=VALUE"),
            (&["=5"], "--kafka-option '=5' must be KEY=VALUE"),
            (&["sasl.password=hunter2"], "--kafka-option key 'sasl.password' holds a secret: put it in the --kafka-config file"),
            (&["ssl.key.password=hunter2"], "--kafka-option key 'ssl.key.password' holds a secret"),
            (&["security.protocol=SASL_SSL", "sasl.mechanisms=SCRAM-SHA-512"], "librdkafka refuses the properties together"),
            (&["ssl.ca.location=/nonexistent/ca.pem"], "key 'ssl.ca.location': '/nonexistent/ca.pem' cannot be read"),
            (&["ssl.ca.location=/etc/hostname", "security.protocol=SSL"], "ssl.ca.location failed"),
        ];
        for (o, needle) in cases {
            let e = KafkaClient::load("k:1", None, &opts(o)).unwrap_err();
            assert!(e.contains(needle), "{o:?}: {e}");
            assert!(!e.contains("hunter2"), "{o:?}: a secret in the message: {e}");
        }
        let f = file("bad.properties", "security.protocol=SASL_SSL\nacks=0\n", 0o600);
        let e = KafkaClient::load("k:1", Some(&f), &[]).unwrap_err();
        assert!(e.contains(&format!("--kafka-config '{}' line 2: key 'acks' cannot be set", f.display())), "{e}");
        let f = file("twice.properties", "linger.ms=1\nlinger.ms=2\n", 0o600);
        assert!(KafkaClient::load("k:1", Some(&f), &[]).unwrap_err().contains("line 2: key 'linger.ms' given twice"));
        let f = file("noeq.properties", "security.protocol SASL_SSL\n", 0o600);
        assert!(KafkaClient::load("k:1", Some(&f), &[]).unwrap_err().contains("line 1: expected KEY=VALUE"));
        // A wrong SASL password is not librdkafka's to judge; a missing username is (and hides the password).
        let f = file("nouser.properties", "security.protocol=SASL_SSL\nsasl.mechanisms=SCRAM-SHA-512\nsasl.password=hunter2\n", 0o600);
        let e = KafkaClient::load("k:1", Some(&f), &[]).unwrap_err();
        assert!(e.contains("refuses the properties together") && !e.contains("hunter2"), "{e}");
        let missing = std::env::temp_dir().join("wg-no-such-kafka.properties");
        assert!(KafkaClient::load("k:1", Some(&missing), &[]).unwrap_err().contains("cannot be read"));
    }

    #[test]
    fn a_readable_secret_and_unchecked_certificates_are_warned_about() {
        let text = "security.protocol=SASL_SSL\nsasl.mechanisms=SCRAM-SHA-512\nsasl.username=a\nsasl.password=p\n";
        let c = KafkaClient::load("k:1", Some(&file("open.properties", text, 0o644)), &[]).unwrap();
        assert_eq!(c.warnings.len(), 1);
        assert!(c.warnings[0].contains("chmod 600") && c.warnings[0].contains("644"), "{:?}", c.warnings);
        let c = KafkaClient::load("k:1", Some(&file("nosecret.properties", "linger.ms=5\n", 0o644)), &[]).unwrap();
        assert!(c.warnings.is_empty());
        let c = KafkaClient::load("k:1", None, &opts(&["enable.ssl.certificate.verification=false"])).unwrap();
        assert!(c.warnings[0].contains("not fully checked"), "{:?}", c.warnings);
    }
}
