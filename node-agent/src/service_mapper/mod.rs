//! Kubernetes Service virtual addresses and their backends, for the stream job's VIP resolution
//! (its `vip` stage; topic in docs/contracts.md): Services and EndpointSlices are listed from the
//! API server, joined into one ServiceMapping (schemas/avro/ServiceMapping.avsc) per ClusterIP and
//! TCP port, and published to the compacted topic (key `vip:port`) when they change; a mapping
//! that disappeared gets a tombstone. Run by `wattgraph-service-mapper` (one per cluster).
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use anyhow::{anyhow, bail, Context, Result};
use serde_json::Value as Json;

use crate::identity::kube_api::KubeClient;
use crate::output::avro::service_mapping::{Backend, ServiceMapping};

mod publish;

pub use publish::{read_topic, MappingPublisher, PublisherOptions, Round};

/// One page of a list (the API server's `limit`); larger clusters are read in several pages.
const PAGE: usize = 500;
const MAX_PAGE_BYTES: u64 = 64 << 20;
/// Label of an EndpointSlice naming its Service.
const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

fn str_at<'a>(v: &'a Json, path: &str, what: &str) -> Result<&'a str> {
    v.pointer(path).and_then(Json::as_str).filter(|s| !s.is_empty()).ok_or_else(|| anyhow!("{what}{} missing or not a string", path.replace('/', ".")))
}

/// An array that may be absent or null (Go nil slices), else must be an array.
fn opt_array<'a>(v: &'a Json, path: &str, what: &str) -> Result<&'a [Json]> {
    match v.pointer(path) {
        None | Some(Json::Null) => Ok(&[]),
        Some(Json::Array(a)) => Ok(a),
        Some(_) => bail!("{what}{} is not an array", path.replace('/', ".")),
    }
}

fn port_at(v: &Json, path: &str, what: &str) -> Result<u16> {
    v.pointer(path)
        .and_then(Json::as_u64)
        .and_then(|p| u16::try_from(p).ok())
        .filter(|p| *p > 0)
        .ok_or_else(|| anyhow!("{what}{} missing or not a port", path.replace('/', ".")))
}

/// Checks `kind` and returns the items of a list (null items = empty).
fn items<'a>(v: &'a Json, kind: &str) -> Result<&'a [Json]> {
    let got = v.get("kind").and_then(Json::as_str).unwrap_or("");
    if got != kind {
        bail!("expected a {kind}, got kind {got:?}");
    }
    opt_array(v, "/items", "")
}

/// Joins a ServiceList and an EndpointSliceList (API server JSON) into mappings by key.
/// Skipped by design: headless Services (no ClusterIP), ExternalName, non-TCP ports, FQDN
/// slices, endpoints whose `ready` condition is false (nil counts as ready, as the API says).
/// Malformed items are errors naming the item and field.
pub fn build(services: &Json, slices: &Json) -> Result<BTreeMap<String, ServiceMapping>> {
    // (namespace, service, address family v6?, port name) -> backends
    let mut backends: BTreeMap<(String, String, bool, String), BTreeSet<Backend>> = BTreeMap::new();
    for (i, s) in items(slices, "EndpointSliceList")?.iter().enumerate() {
        let what = format!("EndpointSliceList items[{i}]");
        let ns = str_at(s, "/metadata/namespace", &what)?;
        let Some(svc) = s.pointer("/metadata/labels").and_then(|l| l.get(SERVICE_NAME_LABEL)).and_then(Json::as_str) else {
            continue; // not managed for a Service
        };
        let v6 = match str_at(s, "/addressType", &what)? {
            "IPv4" => false,
            "IPv6" => true,
            _ => continue, // FQDN
        };
        let ports = opt_array(s, "/ports", &what)?;
        for (e, ep) in opt_array(s, "/endpoints", &what)?.iter().enumerate() {
            let ewhat = format!("{what}.endpoints[{e}]");
            if ep.pointer("/conditions/ready").and_then(Json::as_bool) == Some(false) {
                continue;
            }
            let node = ep.get("nodeName").and_then(Json::as_str).map(str::to_string);
            for (a, addr) in opt_array(ep, "/addresses", &ewhat)?.iter().enumerate() {
                let text = addr.as_str().ok_or_else(|| anyhow!("{ewhat}.addresses[{a}] is not a string"))?;
                let ip: IpAddr = text.parse().map_err(|_| anyhow!("{ewhat}.addresses[{a}] '{text}' is not an IP address"))?;
                for (p, port) in ports.iter().enumerate() {
                    if port.get("protocol").and_then(Json::as_str).unwrap_or("TCP") != "TCP" {
                        continue;
                    }
                    let name = port.get("name").and_then(Json::as_str).unwrap_or("").to_string();
                    let number = port_at(port, "/port", &format!("{what}.ports[{p}]"))?;
                    backends
                        .entry((ns.to_string(), svc.to_string(), v6, name))
                        .or_default()
                        .insert(Backend { address: ip.to_string(), port: number, node_name: node.clone() });
                }
            }
        }
    }
    let mut out = BTreeMap::new();
    for (i, s) in items(services, "ServiceList")?.iter().enumerate() {
        let what = format!("ServiceList items[{i}]");
        let (ns, name) = (str_at(s, "/metadata/namespace", &what)?, str_at(s, "/metadata/name", &what)?);
        if s.pointer("/spec/type").and_then(Json::as_str) == Some("ExternalName") {
            continue;
        }
        // Dual-stack Services list every ClusterIP in clusterIPs; older ones only clusterIP.
        let mut ips: Vec<&str> = opt_array(s, "/spec/clusterIPs", &what)?.iter().filter_map(Json::as_str).collect();
        if ips.is_empty() {
            ips.extend(s.pointer("/spec/clusterIP").and_then(Json::as_str));
        }
        for ip_text in ips.into_iter().filter(|ip| !ip.is_empty() && *ip != "None") {
            let ip: IpAddr = ip_text.parse().map_err(|_| anyhow!("{what} ({ns}/{name}) clusterIP '{ip_text}' is not an IP address"))?;
            for (p, port) in opt_array(s, "/spec/ports", &what)?.iter().enumerate() {
                if port.get("protocol").and_then(Json::as_str).unwrap_or("TCP") != "TCP" {
                    continue;
                }
                let number = port_at(port, "/port", &format!("{what}.spec.ports[{p}]"))?;
                let pname = port.get("name").and_then(Json::as_str).unwrap_or("").to_string();
                let key = (ns.to_string(), name.to_string(), ip.is_ipv6(), pname);
                let m = ServiceMapping {
                    vip: ip.to_string(),
                    port: number,
                    namespace: Some(ns.to_string()),
                    service: Some(name.to_string()),
                    backends: backends.get(&key).map(|b| b.iter().cloned().collect()).unwrap_or_default(),
                };
                out.insert(m.key(), m);
            }
        }
    }
    Ok(out)
}

/// Lists a collection of the API server page by page (`limit` / `continue`), returning one
/// list object holding every item.
pub fn list_all(client: &KubeClient, url: &str) -> Result<Json> {
    let mut all: Vec<Json> = Vec::new();
    let mut cont: Option<String> = None;
    let kind = loop {
        let sep = if url.contains('?') { '&' } else { '?' };
        let page_url = match &cont {
            None => format!("{url}{sep}limit={PAGE}"),
            Some(c) => format!("{url}{sep}limit={PAGE}&continue={}", percent_encode(c)),
        };
        let body = client.get(&page_url, MAX_PAGE_BYTES)?;
        let mut v: Json = serde_json::from_slice(&body).with_context(|| format!("GET {page_url}: not JSON"))?;
        if let Some(Json::Array(items)) = v.get_mut("items").map(Json::take) {
            all.extend(items);
        }
        cont = v.pointer("/metadata/continue").and_then(Json::as_str).filter(|c| !c.is_empty()).map(str::to_string);
        if cont.is_none() {
            break v.get("kind").cloned().unwrap_or(Json::Null);
        }
    };
    Ok(serde_json::json!({ "kind": kind, "items": all }))
}

fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::avro::service_mapping::{decode_single_object, encode, schema, to_value};
    use apache_avro::GenericSingleObjectWriter;

    fn services() -> Json {
        serde_json::json!({"kind": "ServiceList", "apiVersion": "v1", "metadata": {}, "items": [
            {"metadata": {"name": "web", "namespace": "shop"},
             "spec": {"type": "ClusterIP", "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10", "fd00::a"],
                      "ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 8080},
                                {"name": "metrics", "port": 9090, "targetPort": "metrics"},
                                {"name": "dns", "protocol": "UDP", "port": 53}]}},
            {"metadata": {"name": "db", "namespace": "shop"},
             "spec": {"clusterIP": "10.96.0.20", "ports": [{"port": 5432}]}},
            {"metadata": {"name": "headless", "namespace": "shop"}, "spec": {"clusterIP": "None", "ports": [{"port": 80}]}},
            {"metadata": {"name": "ext", "namespace": "shop"}, "spec": {"type": "ExternalName", "externalName": "example.org"}},
            {"metadata": {"name": "empty", "namespace": "other"}, "spec": {"clusterIP": "10.96.0.30", "ports": [{"port": 81}]}}
        ]})
    }

    fn slices() -> Json {
        serde_json::json!({"kind": "EndpointSliceList", "items": [
            {"metadata": {"name": "web-abc", "namespace": "shop", "labels": {"kubernetes.io/service-name": "web"}},
             "addressType": "IPv4",
             "endpoints": [{"addresses": ["10.1.0.5"], "conditions": {"ready": true}, "nodeName": "node-a"},
                           {"addresses": ["10.1.1.7"], "conditions": {"ready": false}, "nodeName": "node-b"},
                           {"addresses": ["10.1.2.9"], "nodeName": "node-c"}],
             "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}, {"name": "metrics", "port": 9100}]},
            {"metadata": {"name": "web-def", "namespace": "shop", "labels": {"kubernetes.io/service-name": "web"}},
             "addressType": "IPv4",
             "endpoints": [{"addresses": ["10.1.0.5"], "conditions": {"ready": true}, "nodeName": "node-a"}],
             "ports": [{"name": "http", "port": 8080}]},
            {"metadata": {"name": "web-v6", "namespace": "shop", "labels": {"kubernetes.io/service-name": "web"}},
             "addressType": "IPv6",
             "endpoints": [{"addresses": ["fd00:1::5"], "conditions": {"ready": true}}],
             "ports": [{"name": "http", "port": 8080}]},
            {"metadata": {"name": "db-1", "namespace": "shop", "labels": {"kubernetes.io/service-name": "db"}},
             "addressType": "IPv4", "endpoints": [{"addresses": ["10.1.3.3"]}], "ports": [{"port": 5432}]},
            {"metadata": {"name": "db-other-ns", "namespace": "other", "labels": {"kubernetes.io/service-name": "db"}},
             "addressType": "IPv4", "endpoints": [{"addresses": ["10.9.9.9"]}], "ports": [{"port": 5432}]},
            {"metadata": {"name": "fqdn", "namespace": "shop", "labels": {"kubernetes.io/service-name": "web"}},
             "addressType": "FQDN", "endpoints": [{"addresses": ["a.example.org"]}], "ports": [{"name": "http", "port": 80}]},
            {"metadata": {"name": "unowned", "namespace": "shop"}, "addressType": "IPv4", "endpoints": null, "ports": null}
        ]})
    }

    fn b(a: &str, p: u16, n: Option<&str>) -> Backend {
        Backend { address: a.into(), port: p, node_name: n.map(str::to_string) }
    }

    #[test]
    fn services_and_slices_join_into_mappings() {
        let m = build(&services(), &slices()).unwrap();
        assert_eq!(m.keys().collect::<Vec<_>>(), vec!["10.96.0.10:80", "10.96.0.10:9090", "10.96.0.20:5432", "10.96.0.30:81", "[fd00::a]:80", "[fd00::a]:9090"]);
        let web = &m["10.96.0.10:80"];
        assert_eq!((web.namespace.as_deref(), web.service.as_deref()), (Some("shop"), Some("web")));
        // Ready (or unknown) endpoints of both slices, once each; the not-ready one is left out.
        assert_eq!(web.backends, vec![b("10.1.0.5", 8080, Some("node-a")), b("10.1.2.9", 8080, Some("node-c"))]);
        // Ports are matched by name: the target port is the slice's.
        assert_eq!(m["10.96.0.10:9090"].backends, vec![b("10.1.0.5", 9100, Some("node-a")), b("10.1.2.9", 9100, Some("node-c"))]);
        assert_eq!(m["[fd00::a]:80"].backends, vec![b("fd00:1::5", 8080, None)]);
        assert!(m["[fd00::a]:9090"].backends.is_empty(), "no IPv6 endpoint has the metrics port");
        assert_eq!(m["10.96.0.20:5432"].backends, vec![b("10.1.3.3", 5432, None)], "unnamed ports; another namespace's db is not ours");
        assert!(m["10.96.0.30:81"].backends.is_empty(), "a Service without endpoints still maps (to nothing)");
    }

    #[test]
    fn bad_lists_name_what_is_wrong() {
        let ok = slices();
        for (svc, want) in [
            (serde_json::json!({"kind": "Status"}), "expected a ServiceList, got kind \"Status\""),
            (serde_json::json!({"kind": "ServiceList", "items": {}}), ".items is not an array"),
            (serde_json::json!({"kind": "ServiceList", "items": [{"metadata": {"name": "a"}}]}), "ServiceList items[0].metadata.namespace missing"),
            (serde_json::json!({"kind": "ServiceList", "items": [{"metadata": {"name": "a", "namespace": "n"}, "spec": {"clusterIP": "10.0.0.300"}}]}),
             "ServiceList items[0] (n/a) clusterIP '10.0.0.300' is not an IP address"),
            (serde_json::json!({"kind": "ServiceList", "items": [{"metadata": {"name": "a", "namespace": "n"}, "spec": {"clusterIP": "10.0.0.3", "ports": [{"port": 70000}]}}]}),
             "ServiceList items[0].spec.ports[0].port missing or not a port"),
        ] {
            let e = format!("{:#}", build(&svc, &ok).unwrap_err());
            assert!(e.contains(want), "{e:?} should say {want:?}");
        }
        let bad = serde_json::json!({"kind": "EndpointSliceList", "items": [{"metadata": {"namespace": "n", "labels": {"kubernetes.io/service-name": "a"}},
            "addressType": "IPv4", "endpoints": [{"addresses": ["x"]}], "ports": [{"port": 1}]}]});
        let e = format!("{:#}", build(&services(), &bad).unwrap_err());
        assert!(e.contains("EndpointSliceList items[0].endpoints[0].addresses[0] 'x' is not an IP address"), "{e}");
    }

    #[test]
    fn encoder_matches_apache_avro_and_decodes() {
        let mut w = GenericSingleObjectWriter::new_with_capacity(schema(), 256).unwrap();
        for m in build(&services(), &slices()).unwrap().values().chain([&ServiceMapping {
            vip: "10.0.0.1".into(),
            port: 65535,
            namespace: None,
            service: None,
            backends: vec![b("ü", 1, None)],
        }]) {
            let mine = encode(m);
            let mut theirs = Vec::new();
            w.write_value_ref(&to_value(m), &mut theirs).unwrap();
            assert_eq!(mine, theirs, "{m:?}");
            assert_eq!(&decode_single_object(&mine).unwrap(), m);
        }
    }

    #[test]
    fn keys_as_the_job_parses_them() {
        let m = |vip: &str| ServiceMapping { vip: vip.into(), port: 443, namespace: None, service: None, backends: vec![] };
        assert_eq!(m("10.96.0.1").key(), "10.96.0.1:443");
        assert_eq!(m("fd00::1").key(), "[fd00::1]:443");
        assert_eq!(percent_encode("eyJ2Ijoi+/=="), "eyJ2Ijoi%2B%2F%3D%3D");
    }
}
