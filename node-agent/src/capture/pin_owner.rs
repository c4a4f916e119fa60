//! `--unpin-when-daemonset-gone NS/NAME`: whether a clean stop of a pinning agent is an uninstall
//! (its DaemonSet gone or being deleted: unpin) or a restart (anything else: keep the pins).
//! A watch on the DaemonSet runs from the start, because an uninstall also deletes the agent's
//! service account and RBAC, often before the pod's SIGTERM: an established watch still hears the
//! deletion, a question asked at the stop may only get 401 or 403 (docs/architecture.md "pins").
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use serde_json::Value as Json;

use crate::identity::kube_api::KubeClient;

/// A DaemonSetList of one name is a few KiB; a watch connection reads at most this much.
const MAX_BODY: u64 = 16 << 20;
/// The API server closes the watch after this long; the watcher lists and watches again.
const WATCH_S: u64 = 300;
const RETRY: Duration = Duration::from_secs(5);

/// What the API server said about the DaemonSet.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Seen {
    Exists,
    /// Has a deletionTimestamp (foreground deletion: its pods go first).
    Deleting,
    Absent,
}

/// `NS/NAME`, both as Kubernetes accepts them (a DNS label, a DNS subdomain).
pub fn parse_ref(s: &str) -> Result<(String, String), String> {
    let bad = |why: &str| format!("--unpin-when-daemonset-gone '{s}' {why}");
    let (ns, name) = s.split_once('/').ok_or_else(|| bad("is not NAMESPACE/NAME"))?;
    let dns = |v: &str, dots: bool, max: usize| {
        !v.is_empty()
            && v.len() <= max
            && v.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || (dots && b == b'.'))
            && v.starts_with(|c: char| c.is_ascii_alphanumeric())
            && v.ends_with(|c: char| c.is_ascii_alphanumeric())
    };
    if !dns(ns, false, 63) {
        return Err(bad("has no valid namespace (a DNS label: a-z, 0-9, '-', at most 63)"));
    }
    if !dns(name, true, 253) {
        return Err(bad("has no valid DaemonSet name (a DNS subdomain: a-z, 0-9, '-', '.', at most 253)"));
    }
    Ok((ns.to_string(), name.to_string()))
}

/// A DaemonSetList (or one watch event's object) for `name`: what it says and its resourceVersion.
fn parse_list(body: &[u8], name: &str) -> Result<(Seen, String)> {
    let v: Json = serde_json::from_slice(body).context("not JSON")?;
    let kind = v.get("kind").and_then(Json::as_str).unwrap_or("");
    if kind != "DaemonSetList" {
        bail!("expected a DaemonSetList, got kind {kind:?}");
    }
    let rv = v.pointer("/metadata/resourceVersion").and_then(Json::as_str).unwrap_or("").to_string();
    let items = match v.get("items") {
        None | Some(Json::Null) => &[][..],
        Some(Json::Array(a)) => a,
        Some(_) => bail!("items is not an array"),
    };
    let mut seen = Seen::Absent;
    for item in items {
        if let Some(s) = state_of(item, name)? {
            seen = s;
        }
    }
    Ok((seen, rv))
}

/// A DaemonSet object: None when it is another one.
fn state_of(obj: &Json, name: &str) -> Result<Option<Seen>> {
    let md = obj.get("metadata").ok_or_else(|| anyhow!("a DaemonSet without metadata"))?;
    if md.get("name").and_then(Json::as_str) != Some(name) {
        return Ok(None);
    }
    Ok(Some(if md.get("deletionTimestamp").is_some_and(|t| !t.is_null()) { Seen::Deleting } else { Seen::Exists }))
}

#[derive(Default)]
struct Known {
    /// The watch's last word; None until the first answer.
    last: Option<Seen>,
    ever_existed: bool,
}

/// The agent's DaemonSet, watched from the start (clones share the client and what is known).
#[derive(Clone)]
pub struct OwnerWatch {
    client: Arc<KubeClient>,
    list_url: String,
    what: String,
    name: String,
    known: Arc<Mutex<Known>>,
}

impl OwnerWatch {
    /// Starts watching `ns/name` on the API server at `api` (https://host:port); the thread ends
    /// with the process (a watch blocks up to WATCH_S, nothing waits for it).
    pub fn start(client: KubeClient, api: &str, ns: &str, name: &str, stop: Arc<AtomicBool>) -> OwnerWatch {
        let w = OwnerWatch {
            client: Arc::new(client),
            list_url: format!("{}/apis/apps/v1/namespaces/{ns}/daemonsets?fieldSelector=metadata.name%3D{name}", api.trim_end_matches('/')),
            what: format!("DaemonSet {ns}/{name}"),
            name: name.to_string(),
            known: Arc::default(),
        };
        let t = w.clone();
        std::thread::Builder::new().name("wg-owner".into()).spawn(move || t.run(&stop)).expect("spawn DaemonSet watch thread");
        w
    }

    /// Lists the DaemonSet now.
    fn list(&self) -> Result<(Seen, String)> {
        let body = self.client.get(&self.list_url, MAX_BODY)?;
        parse_list(&body, &self.name).with_context(|| format!("GET {}", self.list_url))
    }

    fn record(&self, seen: Seen) {
        let mut k = self.known.lock().unwrap_or_else(|e| e.into_inner());
        if k.last != Some(seen) {
            log::info!("{}: {}", self.what, describe(seen));
        }
        k.last = Some(seen);
        k.ever_existed |= seen == Seen::Exists;
    }

    fn run(&self, stop: &AtomicBool) {
        let mut last_warn: Option<Instant> = None;
        while !stop.load(Ordering::Relaxed) {
            let opened = Instant::now();
            let r = self.list().and_then(|(seen, rv)| {
                self.record(seen);
                self.watch(&rv, stop)
            });
            if let Err(e) = &r {
                if last_warn.is_none_or(|t| t.elapsed() >= Duration::from_secs(60)) {
                    log::warn!("{}: {e:#} (its last known state stays)", self.what);
                    last_warn = Some(Instant::now());
                }
            }
            // A watch the server ended at once must not turn into a loop of requests.
            if r.is_err() || opened.elapsed() < Duration::from_secs(1) {
                let until = Instant::now() + RETRY;
                while !stop.load(Ordering::Relaxed) && Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
    }

    /// Watches from `rv` until the API server ends the watch; every event recorded.
    fn watch(&self, rv: &str, stop: &AtomicBool) -> Result<()> {
        let url = format!("{}&watch=true&resourceVersion={rv}&timeoutSeconds={WATCH_S}", self.list_url);
        let (status, body) = self.client.stream(&url, Duration::from_secs(WATCH_S + 30))?;
        if status != 200 {
            bail!("GET {url}: HTTP {status}");
        }
        for ev in serde_json::Deserializer::from_reader(body.take(MAX_BODY)).into_iter::<Json>() {
            let ev = ev.with_context(|| format!("reading the watch {url}"))?;
            let obj = ev.get("object").unwrap_or(&Json::Null);
            match ev.get("type").and_then(Json::as_str) {
                Some("ADDED" | "MODIFIED") => {
                    if let Some(s) = state_of(obj, &self.name)? {
                        self.record(s);
                    }
                }
                Some("DELETED") if state_of(obj, &self.name)?.is_some() => self.record(Seen::Absent),
                Some("ERROR") => return Ok(()), // e.g. 410 Gone: list again
                _ => {}
            }
            if stop.load(Ordering::Relaxed) {
                break;
            }
        }
        Ok(())
    }

    /// At a clean stop: Ok(why) to unpin, Err(why) to keep the pins. The API server's answer now
    /// if it gives one, else the watch's last word; never unpins for a DaemonSet this agent did
    /// not see exist (a wrong flag must not cost every restart its pins).
    pub fn decide(&self) -> Result<String, String> {
        let now = self.list();
        let k = self.known.lock().unwrap_or_else(|e| e.into_inner());
        let gone = |s: Seen| matches!(s, Seen::Absent | Seen::Deleting);
        match now {
            Ok((Seen::Exists, _)) => Err(format!("the {} exists (a restart)", self.what)),
            Ok((s, _)) if !k.ever_existed => Err(format!("the {} {}, but this agent never saw it exist (is the flag right?)", self.what, describe(s))),
            Ok((s, _)) => Ok(format!("the {} {} (an uninstall)", self.what, describe(s))),
            Err(e) => match k.last {
                Some(s) if gone(s) && k.ever_existed => Ok(format!("the watch saw the {} {} (an uninstall; the API server now answers: {e:#})", self.what, describe(s))),
                _ => Err(format!("cannot tell whether the {} is gone: {e:#}", self.what)),
            },
        }
    }
}

fn describe(s: Seen) -> &'static str {
    match s {
        Seen::Exists => "exists",
        Seen::Deleting => "is being deleted",
        Seen::Absent => "is gone",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_are_checked() {
        assert_eq!(parse_ref("wattgraph/node-agent"), Ok(("wattgraph".into(), "node-agent".into())));
        assert_eq!(parse_ref("a/b.c-1"), Ok(("a".into(), "b.c-1".into())));
        for (bad, want) in [
            ("node-agent", "is not NAMESPACE/NAME"),
            ("/node-agent", "no valid namespace"),
            ("Wattgraph/x", "no valid namespace"),
            ("a.b/x", "no valid namespace"),
            ("ns/", "no valid DaemonSet name"),
            ("ns/x/y", "no valid DaemonSet name"),
            ("ns/x%2Fy", "no valid DaemonSet name"),
            ("ns/x&watch=true", "no valid DaemonSet name"),
            ("ns/-x", "no valid DaemonSet name"),
        ] {
            let e = parse_ref(bad).unwrap_err();
            assert!(e.contains(want) && e.contains(bad), "{bad}: {e}");
        }
        assert!(parse_ref(&format!("{}/x", "a".repeat(64))).is_err());
    }

    #[test]
    fn lists_say_exists_deleting_or_absent() {
        let list = |items: &str| format!(r#"{{"kind":"DaemonSetList","metadata":{{"resourceVersion":"42"}},"items":[{items}]}}"#);
        assert_eq!(parse_list(list(r#"{"metadata":{"name":"node-agent"}}"#).as_bytes(), "node-agent").unwrap(), (Seen::Exists, "42".into()));
        let deleting = r#"{"metadata":{"name":"node-agent","deletionTimestamp":"2026-11-27T17:00:00Z"}}"#;
        assert_eq!(parse_list(list(deleting).as_bytes(), "node-agent").unwrap().0, Seen::Deleting);
        assert_eq!(parse_list(list("").as_bytes(), "node-agent").unwrap().0, Seen::Absent);
        assert_eq!(parse_list(br#"{"kind":"DaemonSetList","items":null}"#, "node-agent").unwrap().0, Seen::Absent);
        // Only its own name counts, whatever else a server sends.
        assert_eq!(parse_list(list(r#"{"metadata":{"name":"other"}}"#).as_bytes(), "node-agent").unwrap().0, Seen::Absent);
        for (body, want) in [
            (&b"<html>"[..], "not JSON"),
            (br#"{"kind":"Status","code":403}"#, "expected a DaemonSetList, got kind \"Status\""),
            (br#"{"kind":"DaemonSetList","items":{}}"#, "items is not an array"),
            (br#"{"kind":"DaemonSetList","items":[{}]}"#, "without metadata"),
        ] {
            let e = format!("{:#}", parse_list(body, "node-agent").unwrap_err());
            assert!(e.contains(want), "{e:?} should say {want:?}");
        }
    }
}
