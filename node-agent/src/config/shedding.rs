//! `--shed-*` and `--cpu-setpoint` flags (declared in `config`) turned into `ShedOptions`.

use std::time::Duration;

use super::Config;
use crate::capture::shedding::ShedMode;
use crate::control::shedding::{Control, PodKey, PolicyKind, ShedOptions};

impl Config {
    /// The load-shedding options, None when `--shed-mode off`; each error names the flag and
    /// the offending value.
    pub fn shed_options(&self) -> Result<Option<ShedOptions>, String> {
        let mode = ShedMode::parse(&self.shed_mode)
            .ok_or_else(|| format!("--shed-mode '{}' must be one of off, kernel-drop, user, kernel", self.shed_mode))?;
        let policy = match self.shed_policy.as_str() {
            "fair" => PolicyKind::Fair,
            "priority" => PolicyKind::Priority,
            p => return Err(format!("--shed-policy '{p}' must be fair or priority")),
        };
        let by_cgroup = match self.shed_domain.as_str() {
            "process" => false,
            "cgroup" => true,
            d => return Err(format!("--shed-domain '{d}' must be process or cgroup")),
        };
        if !(100..=60_000).contains(&self.shed_interval_ms) {
            return Err(format!("--shed-interval-ms '{}' must be between 100 and 60000", self.shed_interval_ms));
        }
        if !(0.0..=0.5).contains(&self.shed_min_keep) {
            return Err(format!("--shed-min-keep '{}' must be between 0 and 0.5", self.shed_min_keep));
        }
        let mut priorities = Vec::new();
        for p in &self.shed_priority {
            let (name, level) = p.rsplit_once('=').ok_or_else(|| format!("--shed-priority '{p}' is not NAME=LEVEL"))?;
            let level: u32 = level
                .parse()
                .ok()
                .filter(|l| (1..=1000).contains(l))
                .ok_or_else(|| format!("--shed-priority '{p}': LEVEL must be an integer between 1 and 1000"))?;
            if let Some(key) = PodKey::parse(name) {
                if !by_cgroup {
                    return Err(format!("--shed-priority '{p}': pod and namespace priorities need --shed-domain cgroup"));
                }
                if key.key().is_empty() {
                    return Err(format!("--shed-priority '{p}': empty pod or namespace"));
                }
                // A pod UID is in the cgroup path; names come from the pod metadata.
                if !key.is_uid() && self.pod_metadata_url.is_none() {
                    return Err(format!("--shed-priority '{p}': pod names and namespaces need --pod-metadata-url"));
                }
            } else if name.is_empty() || (!by_cgroup && name.len() > 15) {
                return Err(format!("--shed-priority '{p}': NAME must be a process name of 1..15 bytes (comm)"));
            }
            priorities.push((name.to_string(), level));
        }
        if !priorities.is_empty() && policy != PolicyKind::Priority {
            return Err(format!("--shed-priority '{}' needs --shed-policy priority", self.shed_priority[0]));
        }
        if mode == ShedMode::Off {
            return Ok(None);
        }
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) as f64;
        let setpoint = self.cpu_setpoint.ok_or_else(|| format!("--shed-mode {} needs --cpu-setpoint", self.shed_mode))?;
        if !setpoint.is_finite() || setpoint <= 0.0 || setpoint > cores {
            return Err(format!("--cpu-setpoint '{setpoint}' must be above 0 and at most {cores} (cores of this host)"));
        }
        if policy == PolicyKind::Priority && mode == ShedMode::KernelDrop {
            return Err("--shed-policy priority does not apply to --shed-mode kernel-drop (domain-blind)".into());
        }
        Ok(Some(ShedOptions {
            mode,
            control: Control::Auto { setpoint, policy, priorities },
            by_cgroup,
            interval: Duration::from_millis(self.shed_interval_ms),
            min_keep: self.shed_min_keep,
        }))
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    fn parse(extra: &[&str]) -> Result<Option<ShedOptions>, String> {
        let mut args = vec!["wattgraph-agent", "--host-id", "h1", "--kafka-brokers", "127.0.0.1:9092"];
        args.extend_from_slice(extra);
        let c = Config::try_parse_from(args).map_err(|e| e.to_string())?;
        c.validate()?;
        c.shed_options()
    }

    #[test]
    fn off_by_default() {
        assert_eq!(parse(&[]).unwrap(), None);
    }

    #[test]
    fn kernel_priority_with_levels() {
        let o = parse(&[
            "--shed-mode", "kernel", "--shed-policy", "priority", "--cpu-setpoint", "0.05", "--shed-priority", "nginx=5",
            "--shed-priority", "redis-server=2", "--shed-interval-ms", "500",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(o.mode, ShedMode::Kernel);
        assert!(!o.by_cgroup);
        assert_eq!(o.interval, Duration::from_millis(500));
        assert_eq!(
            o.control,
            Control::Auto {
                setpoint: 0.05,
                policy: PolicyKind::Priority,
                priorities: vec![("nginx".into(), 5), ("redis-server".into(), 2)]
            }
        );
        let u = parse(&["--shed-mode", "user", "--cpu-setpoint", "0.1", "--shed-domain", "cgroup"]).unwrap().unwrap();
        assert!(u.by_cgroup && u.mode == ShedMode::User);
        assert_eq!(parse(&["--shed-mode", "kernel-drop", "--cpu-setpoint", "0.1"]).unwrap().unwrap().mode, ShedMode::KernelDrop);
    }

    #[test]
    fn pod_and_namespace_priorities_on_cgroup_domains() {
        let uid = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
        let base = ["--shed-mode", "kernel", "--shed-policy", "priority", "--cpu-setpoint", "0.05", "--shed-domain", "cgroup"];
        // A pod UID needs no metadata: it is in the cgroup path.
        let by_uid = format!("pod:{uid}=9");
        let o = parse(&[&base[..], &["--shed-priority", &by_uid]].concat()).unwrap().unwrap();
        assert!(matches!(&o.control, Control::Auto { priorities, .. } if priorities == &vec![(format!("pod:{uid}"), 9)]));
        let names = ["--pod-metadata-url", "https://127.0.0.1:10250/pods", "--shed-priority", "pod:shop/web-0=7", "--shed-priority", "namespace:shop=3"];
        let o = parse(&[&base[..], &names[..]].concat()).unwrap().unwrap();
        assert!(matches!(&o.control, Control::Auto { priorities, .. } if priorities.len() == 2));
    }

    #[test]
    fn errors_name_the_value() {
        let cases: &[(&[&str], &str)] = &[
            (&["--shed-mode", "fast"], "--shed-mode 'fast'"),
            (&["--shed-mode", "kernel"], "needs --cpu-setpoint"),
            (&["--shed-mode", "kernel", "--cpu-setpoint", "0"], "--cpu-setpoint '0'"),
            (&["--shed-mode", "kernel", "--cpu-setpoint", "10000"], "--cpu-setpoint '10000'"),
            (&["--shed-policy", "random"], "--shed-policy 'random'"),
            (&["--shed-domain", "pod"], "--shed-domain 'pod'"),
            (&["--shed-interval-ms", "5"], "--shed-interval-ms '5'"),
            (&["--shed-policy", "priority", "--shed-priority", "nginx"], "--shed-priority 'nginx'"),
            (&["--shed-policy", "priority", "--shed-priority", "nginx=0"], "--shed-priority 'nginx=0'"),
            (&["--shed-priority", "nginx=3"], "needs --shed-policy priority"),
            (&["--shed-mode", "kernel-drop", "--shed-policy", "priority", "--cpu-setpoint", "0.1"], "kernel-drop"),
            (&["--shed-policy", "priority", "--shed-priority", "pod:web-0=5"], "need --shed-domain cgroup"),
            (&["--shed-policy", "priority", "--shed-domain", "cgroup", "--shed-priority", "namespace:shop=5"], "need --pod-metadata-url"),
            (&["--shed-policy", "priority", "--shed-domain", "cgroup", "--shed-priority", "pod:=5"], "empty pod"),
        ];
        for (args, needle) in cases {
            let err = parse(args).unwrap_err();
            assert!(err.contains(needle), "{args:?}: {err}");
        }
    }
}
