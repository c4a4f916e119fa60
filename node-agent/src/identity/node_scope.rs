//! `--node-scope NODE`: the node's pod CIDRs from the API server (`spec.podCIDRs` of its Node), so
//! that an agent sharing a kernel with other nodes counts only its own pods' sockets. The CPU
//! side (the node's kubelet cgroup root) is `node_cgroups`.
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use serde_json::Value as Json;

use crate::identity::kube_api::KubeClient;
use crate::shared::net::addr16_from_ip;

/// A Node object is a few KiB; anything larger is not one.
const MAX_BODY: u64 = 4 << 20;

/// One pod CIDR, as the kernel's trie takes it: 16 bytes (IPv4 as ::ffff:a.b.c.d, so it also
/// matches v4-mapped IPv6 sockets) and the prefix length in those 128 bits.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PodCidr {
    pub addr: [u8; 16],
    pub prefix: u8,
    /// As the API server wrote it, for logs.
    pub text: String,
}

impl PodCidr {
    /// `a.b.c.d/n` or `x:y::/n`; host bits below the prefix are cleared.
    pub fn parse(text: &str) -> Result<PodCidr> {
        let (ip, len) = text.split_once('/').ok_or_else(|| anyhow!("pod CIDR {text:?} has no /prefix"))?;
        let ip: IpAddr = ip.parse().map_err(|_| anyhow!("pod CIDR {text:?}: {ip:?} is not an IP address"))?;
        let max = if ip.is_ipv4() { 32 } else { 128 };
        let len: u8 = len.parse().ok().filter(|l| *l <= max).ok_or_else(|| anyhow!("pod CIDR {text:?}: prefix {len:?} is not 0..{max}"))?;
        let prefix = if ip.is_ipv4() { 96 + len } else { len };
        let mut addr = addr16_from_ip(ip);
        for (i, b) in addr.iter_mut().enumerate() {
            *b &= byte_mask(prefix, i);
        }
        Ok(PodCidr { addr, prefix, text: text.to_string() })
    }

    /// Whether a 16-byte address lies in this CIDR: what the kernel's trie answers (tests, fuzzing).
    pub fn contains(&self, addr: &[u8; 16]) -> bool {
        (0..16).all(|i| addr[i] & byte_mask(self.prefix, i) == self.addr[i])
    }
}

/// The bits of byte `i` of a 16-byte address that a prefix of `prefix` bits keeps.
fn byte_mask(prefix: u8, i: usize) -> u8 {
    let keep = (prefix as usize).saturating_sub(i * 8).min(8);
    !(0xffu16 >> keep) as u8
}

/// The pod CIDRs of a Node object (`spec.podCIDRs`, else the older `spec.podCIDR`); empty while
/// none is assigned yet. Anything that is not a Node named `node` is an error saying what it is.
pub fn parse_node_pod_cidrs(body: &[u8], node: &str) -> Result<Vec<PodCidr>> {
    let v: Json = serde_json::from_slice(body).context("not JSON")?;
    let kind = v.get("kind").and_then(Json::as_str).unwrap_or("");
    if kind != "Node" {
        bail!("expected a Node, got kind {kind:?}");
    }
    let name = v.pointer("/metadata/name").and_then(Json::as_str).unwrap_or("");
    if name != node {
        bail!("expected Node {node:?}, got {name:?}");
    }
    let spec = v.get("spec");
    let texts: Vec<&str> = match spec.and_then(|s| s.get("podCIDRs")) {
        None | Some(Json::Null) => spec.and_then(|s| s.get("podCIDR")).and_then(Json::as_str).filter(|s| !s.is_empty()).into_iter().collect(),
        Some(Json::Array(a)) => a.iter().map(|c| c.as_str().ok_or_else(|| anyhow!("spec.podCIDRs holds {c}, not a string"))).collect::<Result<_>>()?,
        Some(other) => bail!("spec.podCIDRs is {other}, not an array"),
    };
    let mut out: Vec<PodCidr> = texts.into_iter().map(PodCidr::parse).collect::<Result<_>>()?;
    out.sort();
    out.dedup_by(|a, b| a.addr == b.addr && a.prefix == b.prefix);
    Ok(out)
}

/// Scheme and authority of `url` (`https://host:port`), where the Node is asked for.
pub fn api_base(url: &str) -> Result<String> {
    let (scheme, rest) = url.split_once("://").ok_or_else(|| anyhow!("{url:?} is not an http(s) URL"))?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if !(scheme == "http" || scheme == "https") || authority.is_empty() {
        bail!("{url:?} is not an http(s) URL with a host");
    }
    Ok(format!("{scheme}://{authority}"))
}

/// The node's pod CIDRs: asks `<api>/api/v1/nodes/<node>` every second until it has some,
/// for at most `wait` (a node just registered gets its CIDR from the controller manager a
/// moment later); then an error naming the node, the URL and the last answer. None when `stop`.
pub fn wait_for_pod_cidrs(client: &KubeClient, api: &str, node: &str, wait: Duration, stop: &AtomicBool) -> Result<Option<Vec<PodCidr>>> {
    let url = format!("{api}/api/v1/nodes/{node}");
    let deadline = Instant::now() + wait;
    let mut said = false;
    loop {
        let last = match client.get(&url, MAX_BODY).and_then(|b| parse_node_pod_cidrs(&b, node).with_context(|| format!("GET {url}"))) {
            Ok(c) if !c.is_empty() => return Ok(Some(c)),
            Ok(_) => anyhow!("GET {url}: the Node has no spec.podCIDRs (nor spec.podCIDR) yet"),
            Err(e) => e,
        };
        if Instant::now() >= deadline {
            return Err(last.context(format!(
                "--node-scope '{node}': no pod CIDRs for the node within {} s (GET {url}, the API server of --pod-metadata-url; the agent needs get on nodes)",
                wait.as_secs()
            )));
        }
        if !said {
            log::info!("node scope: waiting up to {} s for the pod CIDRs of node {node} ({last:#})", wait.as_secs());
            said = true;
        }
        let until = Instant::now() + Duration::from_secs(1);
        while Instant::now() < until {
            if stop.load(Ordering::Relaxed) {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip16(s: &str) -> [u8; 16] {
        addr16_from_ip(s.parse().unwrap())
    }

    #[test]
    fn cidrs_in_the_kernels_form() {
        let v4 = PodCidr::parse("10.244.1.0/24").unwrap();
        assert_eq!((v4.addr, v4.prefix), (ip16("10.244.1.0"), 120), "IPv4 as ::ffff:a.b.c.d/96+n");
        assert!(v4.contains(&ip16("10.244.1.7")) && v4.contains(&ip16("::ffff:10.244.1.255")), "v4 and v4-mapped");
        assert!(!v4.contains(&ip16("10.244.2.1")) && !v4.contains(&ip16("10.244.1.7").map(|_| 0)));
        let host_bits = PodCidr::parse("10.244.1.77/23").unwrap();
        assert_eq!((host_bits.addr, host_bits.prefix), (ip16("10.244.0.0"), 119), "host bits cleared");
        let v6 = PodCidr::parse("fd00:10:244:1::/64").unwrap();
        assert_eq!((v6.addr, v6.prefix), (ip16("fd00:10:244:1::"), 64));
        assert!(v6.contains(&ip16("fd00:10:244:1::2a")) && !v6.contains(&ip16("fd00:10:244:2::2a")));
        assert_eq!(PodCidr::parse("0.0.0.0/0").unwrap().prefix, 96);
    }

    #[test]
    fn bad_cidrs_say_what_is_wrong() {
        for (text, want) in [
            ("10.244.1.0", "has no /prefix"),
            ("10.244.1/24", "is not an IP address"),
            ("10.244.1.0/33", "prefix \"33\" is not 0..32"),
            ("fd00::/129", "prefix \"129\" is not 0..128"),
            ("10.244.1.0/-1", "is not 0..32"),
            ("10.244.1.0/", "is not 0..32"),
        ] {
            let e = PodCidr::parse(text).unwrap_err().to_string();
            assert!(e.contains(want) && e.contains(text), "{text}: {e}");
        }
    }

    #[test]
    fn node_objects() {
        let node = |spec: &str| format!(r#"{{"kind":"Node","apiVersion":"v1","metadata":{{"name":"n2"}},"spec":{spec}}}"#);
        let c = parse_node_pod_cidrs(node(r#"{"podCIDR":"10.244.1.0/24","podCIDRs":["fd00:1::/64","10.244.1.0/24"]}"#).as_bytes(), "n2").unwrap();
        assert_eq!(c.iter().map(|c| c.text.as_str()).collect::<Vec<_>>(), ["10.244.1.0/24", "fd00:1::/64"]);
        let c = parse_node_pod_cidrs(node(r#"{"podCIDR":"10.244.3.0/24"}"#).as_bytes(), "n2").unwrap();
        assert_eq!(c.len(), 1, "the single-stack field when podCIDRs is absent");
        assert!(parse_node_pod_cidrs(node("{}").as_bytes(), "n2").unwrap().is_empty(), "not assigned yet");
        assert!(parse_node_pod_cidrs(node(r#"{"podCIDRs":null,"podCIDR":""}"#).as_bytes(), "n2").unwrap().is_empty());
        for (body, want) in [
            (node(r#"{"podCIDRs":["10.244.1.0/24","x/8"]}"#), "pod CIDR \"x/8\""),
            (node(r#"{"podCIDRs":"10.244.1.0/24"}"#), "spec.podCIDRs is \"10.244.1.0/24\", not an array"),
            (node(r#"{"podCIDRs":[24]}"#), "holds 24, not a string"),
            (r#"{"kind":"Status","code":404}"#.to_string(), "expected a Node, got kind \"Status\""),
            (node("{}").replace("n2", "n1"), "expected Node \"n2\", got \"n1\""),
            ("<html>".to_string(), "not JSON"),
        ] {
            let e = format!("{:#}", parse_node_pod_cidrs(body.as_bytes(), "n2").unwrap_err());
            assert!(e.contains(want), "{body}: {e}");
        }
    }

    #[test]
    fn the_api_server_of_a_pod_list_url() {
        assert_eq!(api_base("https://kubernetes.default.svc/api/v1/pods?fieldSelector=spec.nodeName=n").unwrap(), "https://kubernetes.default.svc");
        assert_eq!(api_base("http://127.0.0.1:8001?x").unwrap(), "http://127.0.0.1:8001");
        assert!(api_base("ftp://x/").is_err() && api_base("https:///pods").is_err() && api_base("kubernetes").is_err());
    }
}
