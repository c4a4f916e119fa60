//! Reads from the Kubernetes API server or a kubelet: https with a given CA bundle (or the Web
//! PKI roots, or no verification for kubelets that serve self-signed certificates), a bearer
//! token re-read at every request (projected service-account tokens rotate), bounded bodies.
use std::io::Read;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};

pub struct KubeClient {
    agent: ureq::Agent,
    token_file: Option<PathBuf>,
}

impl KubeClient {
    /// `ca_flag` names the flag the CA file came from, for errors.
    pub fn new(token_file: Option<PathBuf>, ca_file: Option<&PathBuf>, insecure_tls: bool, ca_flag: &str) -> Result<KubeClient> {
        let mut tls = ureq::tls::TlsConfig::builder().disable_verification(insecure_tls);
        if let Some(ca) = ca_file {
            let pem = std::fs::read(ca).with_context(|| format!("{ca_flag} {}", ca.display()))?;
            let certs: Vec<_> = ureq::tls::parse_pem(&pem)
                .filter_map(|item| match item {
                    Ok(ureq::tls::PemItem::Certificate(c)) => Some(Ok(c)),
                    Ok(_) => None,
                    Err(e) => Some(Err(e)),
                })
                .collect::<Result<_, _>>()
                .with_context(|| format!("{ca_flag} {}: bad PEM", ca.display()))?;
            if certs.is_empty() {
                bail!("{ca_flag} {}: no certificate in it", ca.display());
            }
            tls = tls.root_certs(ureq::tls::RootCerts::new_with_certs(&certs));
        }
        let config = ureq::Agent::config_builder()
            .tls_config(tls.build())
            .timeout_global(Some(Duration::from_secs(10)))
            .http_status_as_error(false)
            .build();
        Ok(KubeClient { agent: ureq::Agent::new_with_config(config), token_file })
    }

    /// GET `url` as JSON; a status other than 2xx (with the start of the server's answer, which
    /// says why: a Status of RBAC's refusal) or a body over `limit` bytes is an error naming the URL.
    pub fn get(&self, url: &str, limit: u64) -> Result<Vec<u8>> {
        let mut resp = self.request(url)?.call().with_context(|| format!("GET {url}"))?;
        let status = resp.status().as_u16();
        if !(200..300).contains(&status) {
            let mut said = Vec::new();
            let _ = resp.body_mut().as_reader().take(300).read_to_end(&mut said);
            bail!("GET {url}: HTTP {status}: {}", String::from_utf8_lossy(&said).trim());
        }
        resp.body_mut().with_config().limit(limit).read_to_vec().with_context(|| format!("reading {url}"))
    }

    /// GET `url` as a stream (a watch), open for at most `open_for`: its status and body reader.
    pub fn stream(&self, url: &str, open_for: Duration) -> Result<(u16, impl std::io::Read)> {
        let req = self.request(url)?.config().timeout_global(None).timeout_recv_body(Some(open_for)).build();
        let resp = req.call().with_context(|| format!("GET {url}"))?;
        Ok((resp.status().as_u16(), resp.into_body().into_reader()))
    }

    fn request(&self, url: &str) -> Result<ureq::RequestBuilder<ureq::typestate::WithoutBody>> {
        let mut req = self.agent.get(url).header("Accept", "application/json");
        if let Some(f) = &self.token_file {
            let token = std::fs::read_to_string(f).with_context(|| format!("token file {}", f.display()))?;
            req = req.header("Authorization", format!("Bearer {}", token.trim()));
        }
        Ok(req)
    }
}
