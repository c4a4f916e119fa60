//! A fake kubelet / API server (tests/fixtures/fake_kubelet.py): GET /pods and the Service and
//! EndpointSlice lists over https with a test CA, bearer token required, answers taken from files
//! the test can rewrite, 503 on demand.
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const TOKEN: &str = "s3cret-token";

pub struct FakeKubelet {
    pub dir: PathBuf,
    pub port: u16,
    child: Child,
}

fn run(dir: &Path, args: &[&str]) -> Option<()> {
    match Command::new("openssl").args(args).current_dir(dir).stdout(Stdio::null()).stderr(Stdio::piped()).output() {
        Ok(o) if o.status.success() => Some(()),
        other => {
            if std::env::var("CI").as_deref() == Ok("true") {
                panic!("openssl {args:?} failed and CI=true: {other:?}");
            }
            eprintln!("SKIPPED: openssl unavailable ({other:?})");
            None
        }
    }
}

impl FakeKubelet {
    /// A CA, a serving certificate for 127.0.0.1 signed by it, the token and `pods_json`.
    /// None (skip) without openssl or python3 outside CI.
    pub fn start(dir: &Path, pods_json: &str) -> Option<FakeKubelet> {
        std::fs::create_dir_all(dir).unwrap();
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
        run(dir, &[&["req", "-x509"][..], &ec, &["-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=wattgraph-test-ca"]].concat())?;
        run(dir, &[&["req"][..], &ec, &["-keyout", "key.pem", "-out", "srv.csr", "-subj", "/CN=fake-kubelet"]].concat())?;
        std::fs::write(dir.join("ext.cnf"), "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n").unwrap();
        run(dir, &["x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "cert.pem", "-days", "2", "-extfile", "ext.cnf"])?;
        std::fs::write(dir.join("token"), format!("{TOKEN}\n")).unwrap();
        std::fs::write(dir.join("pods.json"), pods_json).unwrap();
        let _ = std::fs::remove_file(dir.join("port"));
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake_kubelet.py");
        let child = match Command::new("python3").arg(script).arg(dir).stdout(Stdio::null()).spawn() {
            Ok(c) => c,
            Err(e) => {
                if std::env::var("CI").as_deref() == Ok("true") {
                    panic!("python3 unavailable and CI=true: {e}");
                }
                eprintln!("SKIPPED: python3 unavailable ({e})");
                return None;
            }
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        let port = loop {
            if let Ok(p) = std::fs::read_to_string(dir.join("port")) {
                break p.trim().parse().unwrap();
            }
            assert!(Instant::now() < deadline, "fake kubelet did not start");
            std::thread::sleep(Duration::from_millis(20));
        };
        Some(FakeKubelet { dir: dir.to_path_buf(), port, child })
    }

    pub fn url(&self) -> String {
        format!("https://127.0.0.1:{}/pods", self.port)
    }

    pub fn ca(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }

    pub fn token_file(&self) -> PathBuf {
        self.dir.join("token")
    }

    pub fn set_pods(&self, json: &str) {
        self.set_file("pods.json", json);
    }

    /// Replaces a served file (fake_kubelet.py ROUTES) atomically.
    pub fn set_file(&self, name: &str, json: &str) {
        let tmp = self.dir.join(format!("{name}.tmp"));
        std::fs::write(&tmp, json).unwrap();
        std::fs::rename(tmp, self.dir.join(name)).unwrap();
    }

    /// Base URL, as an API server's.
    pub fn api_url(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }

    /// 503 for every request while down.
    pub fn set_down(&self, down: bool) {
        if down {
            std::fs::write(self.dir.join("down"), "").unwrap();
        } else {
            let _ = std::fs::remove_file(self.dir.join("down"));
        }
    }
}

impl Drop for FakeKubelet {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A PodList with one pod per (uid, name, namespace, labels as "k=v,k=v").
pub fn pod_list(pods: &[(&str, &str, &str, &str)]) -> String {
    let items: Vec<String> = pods
        .iter()
        .map(|(uid, name, ns, labels)| {
            let l: Vec<String> = labels.split(',').filter(|x| !x.is_empty()).map(|kv| {
                let (k, v) = kv.split_once('=').unwrap();
                format!("\"{k}\":\"{v}\"")
            }).collect();
            format!(
                r#"{{"metadata":{{"name":"{name}","namespace":"{ns}","uid":"{uid}","labels":{{{}}}}},"spec":{{"nodeName":"node-a"}},"status":{{"phase":"Running"}}}}"#,
                l.join(",")
            )
        })
        .collect();
    format!(r#"{{"kind":"PodList","apiVersion":"v1","metadata":{{"resourceVersion":"1"}},"items":[{}]}}"#, items.join(","))
}
