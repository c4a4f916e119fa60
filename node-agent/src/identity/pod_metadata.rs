//! Pod names, namespaces and labels from the cluster (optional): the cgroup path only gives a
//! pod's UID. A background thread polls a PodList — the kubelet's `/pods` or the API server's
//! `/api/v1/pods?fieldSelector=spec.nodeName=<node>` — and keeps the last good one, so an
//! outage of the source leaves the names as they were (counted, never fatal). Each running
//! container's resource requests are kept by container id (from the pod's status), so a cgroup
//! finds its own.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, bail, Context, Result};
use serde_json::Value as Json;

use crate::identity::kube_api::KubeClient;
use crate::identity::quantity;

/// Label keys kept when none are configured: the well-known application labels.
pub const DEFAULT_LABELS: [&str; 5] = ["app", "app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/component", "k8s-app"];
/// A PodList larger than this is refused (a node runs at most a few hundred pods).
const MAX_BODY: u64 = 64 << 20;

#[derive(Debug, Clone, PartialEq)]
pub struct PodMeta {
    pub name: String,
    pub namespace: String,
    /// Only the configured keys, sorted by key.
    pub labels: Vec<(String, String)>,
    /// The containers with a container id in the pod's status: its regular containers and
    /// sidecars (init containers with restartPolicy Always), not the run-to-completion init
    /// containers nor ephemeral ones, which the scheduler does not count either.
    pub containers: Vec<ContainerRequests>,
}

/// A container's `resources.requests`; None where it has no request of that resource.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ContainerRequests {
    /// The runtime's container id without its scheme (containerd://, cri-o://, docker://).
    pub id: String,
    pub cpu_cores: Option<f64>,
    pub memory_bytes: Option<i64>,
}

impl PodMeta {
    /// The requests of the container with this id (a cgroup's group id).
    pub fn container(&self, id: &str) -> Option<&ContainerRequests> {
        self.containers.iter().find(|c| c.id == id)
    }
}

/// Pods by UID, shared between the refresher and the record builders.
#[derive(Default, Debug)]
pub struct PodDirectory {
    pods: RwLock<HashMap<String, Arc<PodMeta>>>,
    pub stats: PodMetadataStats,
}

#[derive(Default, Debug)]
pub struct PodMetadataStats {
    pub fetches: AtomicU64,
    pub errors: AtomicU64,
    pub pods: AtomicU64,
    /// Unix seconds of the last successful fetch; 0 = never.
    pub last_success_unix: AtomicU64,
}

impl PodDirectory {
    pub fn get(&self, uid: &str) -> Option<Arc<PodMeta>> {
        self.pods.read().unwrap_or_else(|e| e.into_inner()).get(uid).cloned()
    }

    pub fn replace(&self, pods: HashMap<String, Arc<PodMeta>>) {
        self.stats.pods.store(pods.len() as u64, Ordering::Relaxed);
        *self.pods.write().unwrap_or_else(|e| e.into_inner()) = pods;
    }
}

/// Reads a PodList (kubelet or API server JSON), keeping the labels in `keep`. An item without
/// a UID, name or namespace is an error naming it: a source that says something else is not
/// taken for an empty node.
pub fn parse_pod_list(body: &[u8], keep: &[String]) -> Result<HashMap<String, Arc<PodMeta>>> {
    let v: Json = serde_json::from_slice::<Json>(body).context("pod list is not JSON")?;
    let kind = v.get("kind").and_then(Json::as_str).unwrap_or("");
    if kind != "PodList" {
        bail!("expected a PodList, got kind {kind:?}");
    }
    // A Go nil slice serialises as null: an empty node.
    let items = match v.get("items") {
        None | Some(Json::Null) => None,
        Some(i) => Some(i.as_array().ok_or_else(|| anyhow!("items is not an array"))?),
    };
    let mut out = HashMap::new();
    for (i, item) in items.map(Vec::as_slice).unwrap_or_default().iter().enumerate() {
        let md = item.get("metadata").ok_or_else(|| anyhow!("items[{i}].metadata missing"))?;
        let field = |k: &str| -> Result<String> {
            md.get(k).and_then(Json::as_str).filter(|s| !s.is_empty()).map(str::to_string).ok_or_else(|| anyhow!("items[{i}].metadata.{k} missing or not a string"))
        };
        let (uid, name, namespace) = (field("uid")?, field("name")?, field("namespace")?);
        let mut labels: Vec<(String, String)> = match md.get("labels") {
            None | Some(Json::Null) => Vec::new(),
            Some(Json::Object(m)) => m
                .iter()
                .filter(|(k, _)| keep.iter().any(|x| x == *k))
                .map(|(k, v)| Ok((k.clone(), v.as_str().ok_or_else(|| anyhow!("items[{i}].metadata.labels.{k} is not a string"))?.to_string())))
                .collect::<Result<_>>()?,
            Some(_) => bail!("items[{i}].metadata.labels is not an object"),
        };
        labels.sort();
        let containers = container_requests(item, i)?;
        out.insert(uid, Arc::new(PodMeta { name, namespace, labels, containers }));
    }
    Ok(out)
}

/// `parent.key`, an optional JSON array (a Go nil slice is null or absent); `at` names it.
fn array<'a>(parent: Option<&'a Json>, key: &str, i: usize, at: &str) -> Result<&'a [Json]> {
    match parent.and_then(|p| p.get(key)) {
        None | Some(Json::Null) => Ok(&[]),
        Some(Json::Array(a)) => Ok(a),
        Some(_) => bail!("items[{i}].{at}.{key} is not an array"),
    }
}

/// Requests of the containers of `item` that have a container id in its status. Errors name
/// the item, container and value.
fn container_requests(item: &Json, i: usize) -> Result<Vec<ContainerRequests>> {
    let spec = item.get("spec");
    let status = item.get("status");
    let sidecars = array(spec, "initContainers", i, "spec")?.iter().filter(|c| c.get("restartPolicy").and_then(Json::as_str) == Some("Always"));
    let specs: Vec<&Json> = array(spec, "containers", i, "spec")?.iter().chain(sidecars).collect();
    let statuses = array(status, "containerStatuses", i, "status")?.iter().chain(array(status, "initContainerStatuses", i, "status")?);
    let mut out = Vec::new();
    for st in statuses {
        let (Some(name), Some(cid)) = (st.get("name").and_then(Json::as_str), st.get("containerID").and_then(Json::as_str)) else { continue };
        // A run-to-completion init container has a status but is not among `specs`.
        let Some(c) = specs.iter().find(|c| c.get("name").and_then(Json::as_str) == Some(name)) else { continue };
        let id = cid.split_once("://").map_or(cid, |(_, id)| id);
        if id.is_empty() {
            continue;
        }
        let req = c.get("resources").and_then(|r| r.get("requests"));
        let at = |k: &str| -> Result<Option<&str>> {
            match req.and_then(|r| r.get(k)) {
                None | Some(Json::Null) => Ok(None),
                Some(Json::String(s)) => Ok(Some(s)),
                Some(_) => bail!("items[{i}] container {name:?}: resources.requests.{k} is not a string"),
            }
        };
        let ctx = |k: &str| format!("items[{i}] container {name:?}: resources.requests.{k}");
        let cpu_cores = at("cpu")?.map(quantity::cpu_cores).transpose().with_context(|| ctx("cpu"))?;
        let memory_bytes = at("memory")?.map(quantity::bytes).transpose().with_context(|| ctx("memory"))?;
        out.push(ContainerRequests { id: id.to_string(), cpu_cores, memory_bytes });
    }
    Ok(out)
}

/// The pod fields of a ResourceSample / CgroupStats record (podName, podNamespace, podLabels).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PodFields {
    pub name: Option<String>,
    pub namespace: Option<String>,
    /// Sorted by key.
    pub labels: Vec<(String, String)>,
}

/// Borrowed form, for the allocation-free encoders.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PodRef<'a> {
    pub name: Option<&'a str>,
    pub namespace: Option<&'a str>,
    pub labels: &'a [(String, String)],
}

impl PodFields {
    pub fn of(meta: Option<&PodMeta>) -> PodFields {
        PodRef::of(meta).to_owned()
    }

    pub fn as_ref(&self) -> PodRef<'_> {
        PodRef { name: self.name.as_deref(), namespace: self.namespace.as_deref(), labels: &self.labels }
    }
}

impl<'a> PodRef<'a> {
    pub fn of(meta: Option<&'a PodMeta>) -> PodRef<'a> {
        match meta {
            None => PodRef::default(),
            Some(m) => PodRef { name: Some(&m.name), namespace: Some(&m.namespace), labels: &m.labels },
        }
    }

    pub fn to_owned(&self) -> PodFields {
        PodFields { name: self.name.map(str::to_string), namespace: self.namespace.map(str::to_string), labels: self.labels.to_vec() }
    }
}

#[derive(Debug, Clone)]
pub struct PodSourceOptions {
    /// http(s) URL of a PodList.
    pub url: String,
    /// Bearer token file, read at every fetch (projected tokens rotate).
    pub token_file: Option<PathBuf>,
    /// PEM CA bundle for https; None = the Web PKI roots.
    pub ca_file: Option<PathBuf>,
    /// Accept any server certificate (kubelets often serve a self-signed one).
    pub insecure_tls: bool,
    pub interval: Duration,
    pub labels: Vec<String>,
}

pub struct PodSource {
    opts: PodSourceOptions,
    client: KubeClient,
}

impl PodSource {
    pub fn new(opts: PodSourceOptions) -> Result<PodSource> {
        let client = KubeClient::new(opts.token_file.clone(), opts.ca_file.as_ref(), opts.insecure_tls, "--pod-metadata-ca-file")?;
        Ok(PodSource { opts, client })
    }

    /// One fetch and parse.
    pub fn fetch(&self) -> Result<HashMap<String, Arc<PodMeta>>> {
        let body = self.client.get(&self.opts.url, MAX_BODY)?;
        parse_pod_list(&body, &self.opts.labels).with_context(|| format!("GET {}", self.opts.url))
    }

    /// Fetches now, then every interval until `stop`, into `dir`. Errors are logged (at most
    /// once a minute after the first) and counted; the last good list stays.
    pub fn spawn(self, dir: Arc<PodDirectory>, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
        std::thread::Builder::new()
            .name("wg-pods".into())
            .spawn(move || {
                let mut last_warn: Option<Instant> = None;
                while !stop.load(Ordering::Relaxed) {
                    dir.stats.fetches.fetch_add(1, Ordering::Relaxed);
                    match self.fetch() {
                        Ok(pods) => {
                            if last_warn.take().is_some() {
                                log::info!("pod metadata: {} pods from {} again", pods.len(), self.opts.url);
                            }
                            dir.replace(pods);
                            let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
                            dir.stats.last_success_unix.store(now, Ordering::Relaxed);
                        }
                        Err(e) => {
                            dir.stats.errors.fetch_add(1, Ordering::Relaxed);
                            if last_warn.is_none_or(|t| t.elapsed() >= Duration::from_secs(60)) {
                                log::warn!("pod metadata: {e:#} (keeping the last list)");
                                last_warn = Some(Instant::now());
                            }
                        }
                    }
                    let until = Instant::now() + self.opts.interval;
                    while !stop.load(Ordering::Relaxed) && Instant::now() < until {
                        std::thread::sleep(Duration::from_millis(100).min(self.opts.interval));
                    }
                }
            })
            .expect("spawn pod metadata thread")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keep() -> Vec<String> {
        DEFAULT_LABELS.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn kubelet_pod_list() {
        let body = br#"{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[
          {"metadata":{"name":"web-7d4b9","namespace":"shop","uid":"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
            "labels":{"app":"web","pod-template-hash":"7d4b9","app.kubernetes.io/component":"frontend"}},
           "spec":{"nodeName":"node-a","containers":[{"name":"web","image":"nginx"}]},
           "status":{"phase":"Running","containerStatuses":[{"containerID":"containerd://abc"}]}},
          {"metadata":{"name":"coredns-1","namespace":"kube-system","uid":"11111111-2222-3333-4444-555555555555"}}]}"#;
        let pods = parse_pod_list(body, &keep()).unwrap();
        assert_eq!(pods.len(), 2);
        let web = &pods["0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"];
        assert_eq!((web.name.as_str(), web.namespace.as_str()), ("web-7d4b9", "shop"));
        assert_eq!(web.labels, vec![("app".into(), "web".into()), ("app.kubernetes.io/component".into(), "frontend".into())], "pod-template-hash is not kept");
        assert!(pods["11111111-2222-3333-4444-555555555555"].labels.is_empty());
        assert!(parse_pod_list(br#"{"kind":"PodList","items":null}"#, &keep()).unwrap().is_empty());
    }

    const A: &str = "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1";
    const B: &str = "b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2";
    const I: &str = "c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3";
    const S: &str = "d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4";

    /// A kubelet PodList item: `web` (requests), `log` (none), an init container `migrate`
    /// (requests, ran to completion), a sidecar `proxy` (init, restartPolicy Always), `late`
    /// (requests, not started: no container id).
    fn pod_with_requests(web_cpu: &str, web_mem: &str) -> String {
        format!(
            r#"{{"kind":"PodList","items":[{{"metadata":{{"name":"web-0","namespace":"shop","uid":"u1"}},
              "spec":{{"initContainers":[
                  {{"name":"migrate","resources":{{"requests":{{"cpu":"2","memory":"1Gi"}}}}}},
                  {{"name":"proxy","restartPolicy":"Always","resources":{{"requests":{{"cpu":"100m","memory":"64Mi"}},"limits":{{"cpu":"1"}}}}}}],
                "containers":[
                  {{"name":"web","resources":{{"requests":{{"cpu":{web_cpu},"memory":{web_mem}}},"limits":{{"memory":"1Gi"}}}}}},
                  {{"name":"log","resources":{{}}}},
                  {{"name":"late","resources":{{"requests":{{"cpu":"3"}}}}}}]}},
              "status":{{"initContainerStatuses":[
                  {{"name":"migrate","containerID":"containerd://{I}"}},
                  {{"name":"proxy","containerID":"containerd://{S}"}}],
                "containerStatuses":[
                  {{"name":"web","containerID":"containerd://{A}"}},
                  {{"name":"log","containerID":"cri-o://{B}"}},
                  {{"name":"late"}}]}}}}]}}"#
        )
    }

    #[test]
    fn container_requests_by_container_id() {
        let pods = parse_pod_list(pod_with_requests(r#""250m""#, r#""128Mi""#).as_bytes(), &[]).unwrap();
        let p = &pods["u1"];
        assert_eq!(p.container(A), Some(&ContainerRequests { id: A.into(), cpu_cores: Some(0.25), memory_bytes: Some(128 << 20) }));
        assert_eq!(p.container(B), Some(&ContainerRequests { id: B.into(), cpu_cores: None, memory_bytes: None }), "no requests: absent, not 0");
        assert_eq!(p.container(S), Some(&ContainerRequests { id: S.into(), cpu_cores: Some(0.1), memory_bytes: Some(64 << 20) }), "a sidecar counts");
        assert_eq!(p.container(I), None, "a run-to-completion init container does not count");
        assert_eq!(p.containers.len(), 3, "a container without an id yet is left out");
        let pods = parse_pod_list(pod_with_requests(r#""1.5""#, r#"null"#).as_bytes(), &[]).unwrap();
        assert_eq!(pods["u1"].container(A), Some(&ContainerRequests { id: A.into(), cpu_cores: Some(1.5), memory_bytes: None }));
        // The kubelet fixture pods of the integration tests carry no requests.
        let pods = parse_pod_list(br#"{"kind":"PodList","items":[{"metadata":{"uid":"u","name":"a","namespace":"b"},"spec":{"containers":[{"name":"c"}]},"status":{"containerStatuses":[{"name":"c","containerID":"docker://e5"}]}}]}"#, &[]).unwrap();
        assert_eq!(pods["u"].containers, vec![ContainerRequests { id: "e5".into(), cpu_cores: None, memory_bytes: None }]);
    }

    #[test]
    fn bad_requests_name_the_container_and_value() {
        for (cpu, mem, want) in [
            (r#""250x""#, r#""1Gi""#, r#"items[0] container "web": resources.requests.cpu: quantity "250x": unknown suffix "x""#),
            (r#""1""#, r#""12 Mi""#, r#"items[0] container "web": resources.requests.memory: quantity "12 Mi""#),
            (r#""1""#, r#""-1Gi""#, r#"quantity "-1Gi": negative"#),
            (r#"0.5"#, r#""1Gi""#, r#"items[0] container "web": resources.requests.cpu is not a string"#),
        ] {
            let e = format!("{:#}", parse_pod_list(pod_with_requests(cpu, mem).as_bytes(), &[]).unwrap_err());
            assert!(e.contains(want), "{e:?} should say {want:?}");
        }
        let e = format!("{:#}", parse_pod_list(br#"{"kind":"PodList","items":[{"metadata":{"uid":"u","name":"a","namespace":"b"},"spec":{"containers":{}}}]}"#, &[]).unwrap_err());
        assert!(e.contains("items[0].spec.containers is not an array"), "{e}");
    }

    #[test]
    fn bad_lists_name_what_is_wrong() {
        for (body, want) in [
            (&b"<html>"[..], "not JSON"),
            (br#"{"kind":"Status","status":"Failure"}"#, "expected a PodList, got kind \"Status\""),
            (br#"{"kind":"PodList","items":{}}"#, "items is not an array"),
            (br#"{"kind":"PodList","items":[{"metadata":{"name":"a","namespace":"b"}}]}"#, "items[0].metadata.uid missing"),
            (br#"{"kind":"PodList","items":[{"metadata":{"uid":"u","name":"a","namespace":"b"}},{"spec":{}}]}"#, "items[1].metadata missing"),
            (br#"{"kind":"PodList","items":[{"metadata":{"uid":"u","name":"a","namespace":"b","labels":{"app":1}}}]}"#, "items[0].metadata.labels.app is not a string"),
        ] {
            let e = format!("{:#}", parse_pod_list(body, &keep()).unwrap_err());
            assert!(e.contains(want), "{e:?} should say {want:?}");
        }
    }

    #[test]
    fn directory_replaces_whole_lists() {
        let d = PodDirectory::default();
        let one = parse_pod_list(br#"{"kind":"PodList","items":[{"metadata":{"uid":"u1","name":"a","namespace":"n"}}]}"#, &[]).unwrap();
        d.replace(one);
        assert_eq!(d.get("u1").unwrap().name, "a");
        d.replace(HashMap::new());
        assert!(d.get("u1").is_none(), "a pod gone from the list is gone");
        assert_eq!(d.stats.pods.load(Ordering::Relaxed), 0);
    }
}
