//! Pod metadata from a fake kubelet over https (tests/fixtures/fake_kubelet.py, a CA of the
//! test's own): the token and CA are used, failures say what failed, an outage keeps the last
//! list and is counted, a changed list is picked up.
use crate::common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::kubelet::{pod_list, FakeKubelet};
use wattgraph_agent::identity::pod_metadata::{PodDirectory, PodSource, PodSourceOptions};

const UID: &str = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

fn opts(k: &FakeKubelet) -> PodSourceOptions {
    PodSourceOptions {
        url: k.url(),
        token_file: Some(k.token_file()),
        ca_file: Some(k.ca()),
        insecure_tls: false,
        interval: Duration::from_millis(200),
        labels: vec!["app".into()],
    }
}

fn kubelet(name: &str, pods: &str) -> Option<FakeKubelet> {
    FakeKubelet::start(&common::agent::tmp("pod-metadata", name), pods)
}

#[test]
fn fetch_with_token_and_ca() {
    let Some(k) = kubelet("ok", &pod_list(&[(UID, "web-1", "shop", "app=web,tier=front")])) else { return };
    let pods = PodSource::new(opts(&k)).unwrap().fetch().unwrap();
    let p = &pods[UID];
    assert_eq!((p.name.as_str(), p.namespace.as_str()), ("web-1", "shop"));
    assert_eq!(p.labels, vec![("app".to_string(), "web".to_string())]);
}

#[test]
fn failures_say_what_failed() {
    let Some(k) = kubelet("errors", &pod_list(&[(UID, "web-1", "shop", "")])) else { return };
    let wrong = k.dir.join("wrong-token");
    std::fs::write(&wrong, "nope").unwrap();
    let e = format!("{:#}", PodSource::new(PodSourceOptions { token_file: Some(wrong), ..opts(&k) }).unwrap().fetch().unwrap_err());
    assert!(e.contains("HTTP 401") && e.contains(&k.url()), "{e}");
    // The Web PKI roots do not know the test CA.
    let e = format!("{:#}", PodSource::new(PodSourceOptions { ca_file: None, ..opts(&k) }).unwrap().fetch().unwrap_err());
    assert!(e.contains(&k.url()) && e.to_lowercase().contains("certificate"), "{e}");
    // ... unless verification is off, as some kubelet setups need.
    assert_eq!(PodSource::new(PodSourceOptions { ca_file: None, insecure_tls: true, ..opts(&k) }).unwrap().fetch().unwrap().len(), 1);
    let e = format!("{:#}", PodSource::new(PodSourceOptions { url: k.url().replace("/pods", "/healthz"), ..opts(&k) }).unwrap().fetch().unwrap_err());
    assert!(e.contains("HTTP 404"), "{e}");
    let bad_ca = k.dir.join("bad-ca.pem");
    std::fs::write(&bad_ca, "not a certificate\n").unwrap();
    let e = format!("{:#}", PodSource::new(PodSourceOptions { ca_file: Some(bad_ca), ..opts(&k) }).err().unwrap());
    assert!(e.contains("--pod-metadata-ca-file") && e.contains("bad-ca.pem"), "{e}");
    k.set_pods(r#"{"kind":"PodList","items":[{"metadata":{"name":"x"}}]}"#);
    let e = format!("{:#}", PodSource::new(opts(&k)).unwrap().fetch().unwrap_err());
    assert!(e.contains("items[0].metadata.uid missing"), "{e}");
}

fn wait(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn refresher_keeps_the_last_list_through_an_outage() {
    let Some(k) = kubelet("refresh", &pod_list(&[(UID, "web-1", "shop", "app=web")])) else { return };
    let dir = Arc::new(PodDirectory::default());
    let stop = Arc::new(AtomicBool::new(false));
    let t = PodSource::new(opts(&k)).unwrap().spawn(dir.clone(), stop.clone());
    wait("the first list", || dir.get(UID).is_some());
    assert!(dir.stats.last_success_unix.load(Ordering::Relaxed) > 0);
    k.set_down(true);
    let errors = dir.stats.errors.load(Ordering::Relaxed);
    wait("failed fetches", || dir.stats.errors.load(Ordering::Relaxed) >= errors + 2);
    assert_eq!(dir.get(UID).unwrap().name, "web-1", "the last good list stays through the outage");
    k.set_pods(&pod_list(&[("11111111-2222-3333-4444-555555555555", "api-0", "shop", "")]));
    k.set_down(false);
    wait("the new list", || dir.get("11111111-2222-3333-4444-555555555555").is_some());
    assert!(dir.get(UID).is_none(), "a pod the new list lacks is gone");
    assert_eq!(dir.stats.pods.load(Ordering::Relaxed), 1);
    stop.store(true, Ordering::Relaxed);
    t.join().unwrap();
}
