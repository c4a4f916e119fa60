//! The running shedder: once per interval it turns what the kernel (or the user-space filter)
//! counted per accounting domain and the agent's own CPU use into keep fractions for the next
//! interval (Load Manager, Shedding Eq. 1-6, then the fair or priority planner, Shedding Eq. 7-13, or Shedding's
//! kernel-drop baseline), and rescales the connection counts built from surviving events.
//!
//! What is shed: the lifecycle events (OPENED, CLOSED) of whole connections, decided once per
//! connection where its OPENED would be emitted. The unit of λ, μ_c, budgets and counts is a
//! connection (one decision). Everything else is never shed (node-agent/README.md "Guarantees").
//!
//! Pure computation: the capture thread feeds it counter readings and applies its output to the
//! BPF maps (`capture::connections::shed`), so the same code runs in the tests without BPF.
//!
//! Length: about 420 lines of code; the rest are its unit tests, kept beside the controller they
//! drive.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::{Control, FairPolicy, IntervalStats, KernelDropBaseline, LoadManager, PolicyKind, PriorityPolicy, SheddingPolicy, ShedOptions};
use crate::capture::shedding::{Domain, DomainRow, KeepUpdate, ShedControl, ShedCount, ShedMode, ShedPlan, ShedStats, DOMAIN_DEFAULT, DOMAIN_OTHER, KERNEL_DOMAINS};
use crate::identity::cgroup::{default_v2_root, CgroupResolver};
use super::priority::priority_of;
use crate::identity::pod_metadata::PodDirectory;

/// Domains with their own metric labels; the rest are summed under `other`.
pub const TOP_DOMAINS: usize = 16;

#[derive(Debug, Default, Clone)]
struct DomainState {
    last: ShedCount,
    total: ShedCount,
    /// Surviving OPENED events seen by user space in the current interval.
    survived: u64,
    estimated: f64,
    rescaled: bool,
    keep: Option<f64>,
    idle: u32,
    name: Option<String>,
    /// Kept and shed in the interval just read.
    d_kept: u64,
    d_shed: u64,
    /// Connections expected next interval (see `predict_rate`).
    rate: f64,
}

/// The rate a domain is planned with: the last interval's, or more if it just fell (half way
/// back to the previous expectation per interval). A generator that stalls for an interval and
/// resumes would otherwise be planned with the stalled rate and, kept at the fraction that fits
/// it, spend a multiple of the budget; falling slowly costs only some visibility, since the
/// budget's correction gives the unused share back the next interval.
fn predict_rate(previous: f64, last: f64) -> f64 {
    last.max(0.5 * previous + 0.5 * last)
}

/// Idle intervals after which a domain's kernel counters may be forgotten.
const FORGET_AFTER: u32 = 10;

pub struct ShedController {
    opts: ShedOptions,
    lm: Option<LoadManager>,
    baseline: Option<KernelDropBaseline>,
    plan: ShedPlan,
    domains: HashMap<Domain, DomainState>,
    rates: Vec<(Domain, f64)>,
    default_keep: f64,
    last_cpu_s: Option<f64>,
    ticks: u64,
    /// Pod names and namespaces for `pod:` / `namespace:` priorities.
    pods: Option<Arc<PodDirectory>>,
}

/// Seed of μ_max (connections per interval at one full core) before it is measured.
const INITIAL_MU_MAX: f64 = 20_000.0;

impl ShedController {
    pub fn new(opts: ShedOptions) -> ShedController {
        let (lm, baseline) = match &opts.control {
            Control::Auto { setpoint, .. } if opts.mode == ShedMode::KernelDrop => (None, Some(KernelDropBaseline::new(*setpoint))),
            Control::Auto { setpoint, .. } => {
                let per_interval = INITIAL_MU_MAX * opts.interval.as_secs_f64();
                (Some(LoadManager::new(*setpoint, per_interval.max(1.0))), None)
            }
            Control::Manual => (None, None),
        };
        ShedController {
            opts,
            lm,
            baseline,
            plan: ShedPlan::default(),
            domains: HashMap::new(),
            rates: Vec::new(),
            default_keep: 1.0,
            last_cpu_s: None,
            ticks: 0,
            pods: None,
        }
    }

    /// The controller a capture runs (`CaptureOptions::shed`), with the pod metadata that
    /// `pod:` and `namespace:` priorities are resolved with.
    pub fn boxed(opts: ShedOptions, pods: Option<Arc<PodDirectory>>) -> Box<dyn ShedControl> {
        let mut c = ShedController::new(opts);
        c.pods = pods;
        Box::new(c)
    }

    pub fn options(&self) -> &ShedOptions {
        &self.opts
    }

    /// The pod metadata `pod:NAME` and `namespace:NS` priorities are resolved with.
    pub fn use_pods(&mut self, pods: Arc<PodDirectory>) {
        self.pods = Some(pods);
    }

    /// One control interval. `counts`: cumulative kernel (or filter) counts per domain;
    /// `utilization`: the agent's CPU over the interval (share of one core); `queued`:
    /// connections kept but not yet read by user space. `name` resolves a domain's name for
    /// priorities and labels (called once per domain).
    pub fn tick(
        &mut self,
        counts: &HashMap<Domain, ShedCount>,
        utilization: f64,
        queued: f64,
        stats: &ShedStats,
        mut name: impl FnMut(Domain) -> Option<String>,
    ) -> KeepUpdate {
        // 1. Differences of the interval, per domain.
        let (mut arrived, mut computed) = (0.0, 0.0);
        let (mut total_seen, mut total_kept) = (0u64, 0u64);
        self.rates.clear();
        let mut new_rate = 0.0;
        for st in self.domains.values_mut() {
            st.d_kept = 0;
            st.d_shed = 0;
        }
        for (&d, &c) in counts {
            let st = self.domains.entry(d).or_default();
            let dk = c.kept.saturating_sub(st.last.kept);
            let ds = c.shed.saturating_sub(st.last.shed);
            st.d_kept = dk;
            st.d_shed = ds;
            st.total.kept += dk;
            st.total.shed += ds;
            st.total.shed_bytes_sent += c.shed_bytes_sent.saturating_sub(st.last.shed_bytes_sent);
            st.total.shed_bytes_recv += c.shed_bytes_recv.saturating_sub(st.last.shed_bytes_recv);
            st.last = c;
            arrived += (dk + ds) as f64;
            computed += dk as f64;
            total_seen += dk + ds;
            total_kept += dk;
            if dk + ds > 0 {
                st.idle = 0;
                st.rate = predict_rate(st.rate, (dk + ds) as f64);
                if d != DOMAIN_OTHER {
                    if st.keep.is_some() {
                        self.rates.push((d, st.rate));
                    } else {
                        new_rate += (dk + ds) as f64;
                    }
                }
            } else {
                st.idle = st.idle.saturating_add(1);
                st.rate = 0.0;
            }
        }
        // 2. Connection counts per domain. Where the domain is counted (kernel, user modes) the
        //    surviving OPENED events rescaled by the domain's seen/kept equal its exact count
        //    kept + shed; that is used directly, so an interval in which a domain kept nothing
        //    (no survivor to rescale) is not lost, and events of one interval read in the next
        //    do not skew it. Kernel-drop counts only globally: survivors × global seen/kept,
        //    Shedding's baseline reconstruction (a domain without survivors is missed).
        let blind = self.opts.mode == ShedMode::KernelDrop;
        let global = if total_kept > 0 { total_seen as f64 / total_kept as f64 } else { 1.0 };
        for (&d, st) in self.domains.iter_mut() {
            let survived = std::mem::take(&mut st.survived);
            if blind {
                if survived > 0 {
                    st.estimated += survived as f64 * global;
                    st.rescaled |= total_seen != total_kept;
                }
            } else if d != DOMAIN_OTHER {
                st.estimated += (st.d_kept + st.d_shed) as f64;
                st.rescaled |= st.d_shed > 0;
            }
        }

        // 3. The plan. The first interval is not planned from: its CPU is the agent's start
        //    (Kafka metadata, first sweeps), not its load, and planning from it shed everything
        //    and then took ten intervals to climb back.
        let warming_up = self.ticks == 0;
        self.ticks += 1;
        let mut update = KeepUpdate::default();
        match (&self.opts.control, self.opts.mode) {
            (Control::Manual, _) | (_, ShedMode::Off) => {}
            (Control::Auto { .. }, _) if warming_up => {}
            (Control::Auto { .. }, ShedMode::KernelDrop) => {
                let b = self.baseline.as_mut().expect("baseline");
                b.update(utilization);
                self.default_keep = b.keep_fraction();
                stats.budget_bits.store((arrived * self.default_keep).to_bits(), Ordering::Relaxed);
            }
            (Control::Auto { policy, priorities, .. }, _) => {
                let lm = self.lm.as_mut().expect("load manager");
                let budget = (lm.next_budget(&IntervalStats { arrived, computed, utilization }) - queued.max(0.0)).max(0.0);
                stats.budget_bits.store(budget.to_bits(), Ordering::Relaxed);
                stats.mu_max_bits.store(lm.mu_max().to_bits(), Ordering::Relaxed);
                log::debug!(
                    "shed: arrived {arrived} computed {computed} utilization {utilization:.4} queued {queued} budget {budget:.0} mu_max {:.0} marginal {:.0}",
                    lm.mu_max(),
                    lm.mu_marginal()
                );
                // Domains without an entry of their own share the default as one pseudo-domain.
                if new_rate > 0.0 {
                    self.rates.push((DOMAIN_DEFAULT, new_rate));
                }
                match policy {
                    PolicyKind::Fair => FairPolicy.plan(budget, &self.rates, &mut self.plan),
                    PolicyKind::Priority => {
                        let mut prio = HashMap::new();
                        for &(d, _) in &self.rates {
                            if d == DOMAIN_DEFAULT {
                                continue;
                            }
                            let st = self.domains.get_mut(&d).unwrap();
                            if st.name.is_none() {
                                st.name = Some(name(d).unwrap_or_default());
                            }
                            prio.insert(d, priority_of(st.name.as_deref().unwrap_or(""), priorities, self.opts.by_cgroup, self.pods.as_deref()));
                        }
                        PriorityPolicy::new(prio, 1).plan(budget, &self.rates, &mut self.plan);
                    }
                }
                // Never below the floor: a domain kept at 0 would have no event to stand for it.
                let floor = self.opts.min_keep;
                self.default_keep = self.plan.keep_probability(DOMAIN_DEFAULT).max(floor);
                // Active domains get (or keep) their own entry: planned ones their plan, new
                // ones the default they were sampled with; idle ones fall back to the default.
                for (&d, st) in self.domains.iter_mut() {
                    if d == DOMAIN_OTHER {
                        continue;
                    }
                    if st.idle == 0 {
                        let k = if st.keep.is_some() { self.plan.keep_probability(d).max(floor) } else { self.default_keep };
                        st.keep = Some(k);
                        update.set.push((d, k));
                    } else if st.keep.take().is_some() {
                        update.remove.push(d);
                    }
                }
            }
        }
        update.default_keep = self.default_keep;
        // 4. Idle domains' kernel counters are forgotten once the counter map is half full.
        if counts.len() > KERNEL_DOMAINS / 2 {
            for (&d, st) in self.domains.iter_mut() {
                if st.idle > FORGET_AFTER && d != DOMAIN_OTHER && counts.contains_key(&d) {
                    update.forget.push(d);
                    st.last = ShedCount::default();
                }
            }
        }
        // 5. Metrics.
        stats.utilization_bits.store(utilization.to_bits(), Ordering::Relaxed);
        stats.default_keep_bits.store(self.default_keep.to_bits(), Ordering::Relaxed);
        if let Control::Auto { setpoint, .. } = &self.opts.control {
            stats.setpoint_bits.store(setpoint.to_bits(), Ordering::Relaxed);
        }
        stats.mode.store(
            match self.opts.mode {
                ShedMode::Off => 0,
                ShedMode::KernelDrop => 1,
                ShedMode::User => 2,
                ShedMode::Kernel => 3,
            },
            Ordering::Relaxed,
        );
        stats.intervals.fetch_add(1, Ordering::Relaxed);
        self.publish(stats, &mut name);
        update
    }

    fn publish(&mut self, stats: &ShedStats, name: &mut impl FnMut(Domain) -> Option<String>) {
        let mut order: Vec<(Domain, u64, f64)> = self
            .domains
            .iter()
            .map(|(d, s)| (*d, s.total.seen(), s.estimated))
            .filter(|(_, seen, est)| *seen > 0 || *est > 0.0)
            .collect();
        order.sort_by(|a, b| b.1.cmp(&a.1).then(b.2.total_cmp(&a.2)).then(a.0.cmp(&b.0)));
        let mut rows = Vec::with_capacity(TOP_DOMAINS + 1);
        let mut other = DomainRow { label: "other".into(), keep: self.default_keep, ..Default::default() };
        for (i, (d, _, _)) in order.iter().enumerate() {
            let keep = self.keep_of(*d);
            let by_cgroup = self.opts.by_cgroup;
            let st = self.domains.get_mut(d).unwrap();
            if i < TOP_DOMAINS && *d != DOMAIN_OTHER {
                if st.name.is_none() {
                    st.name = Some(name(*d).unwrap_or_default());
                }
                rows.push(DomainRow {
                    label: label(*d, st.name.as_deref().unwrap_or(""), by_cgroup),
                    keep,
                    kept: st.total.kept,
                    shed: st.total.shed,
                    shed_bytes_sent: st.total.shed_bytes_sent,
                    shed_bytes_recv: st.total.shed_bytes_recv,
                    estimated: st.estimated,
                    rescaled: st.rescaled,
                });
            } else {
                other.kept += st.total.kept;
                other.shed += st.total.shed;
                other.shed_bytes_sent += st.total.shed_bytes_sent;
                other.shed_bytes_recv += st.total.shed_bytes_recv;
                other.estimated += st.estimated;
                other.rescaled |= st.rescaled;
            }
        }
        rows.push(other);
        *stats.domains.lock().unwrap() = rows;
    }
}

/// What the capture thread asks of its controller (`capture::shedding::ShedControl`).
impl ShedControl for ShedController {
    fn mode(&self) -> ShedMode {
        self.opts.mode
    }

    fn by_cgroup(&self) -> bool {
        self.opts.by_cgroup
    }

    fn interval(&self) -> Duration {
        self.opts.interval
    }

    fn manual(&self) -> bool {
        matches!(self.opts.control, Control::Manual)
    }

    fn domain_of(&self, tgid: u32, cgroup_id: u64) -> Domain {
        if self.opts.mode == ShedMode::KernelDrop {
            DOMAIN_OTHER
        } else if self.opts.by_cgroup {
            cgroup_id
        } else {
            u64::from(tgid)
        }
    }

    fn label_domain_of(&self, tgid: u32, cgroup_id: u64) -> Domain {
        if self.opts.by_cgroup {
            cgroup_id
        } else {
            u64::from(tgid)
        }
    }

    fn survived(&mut self, domain: Domain) {
        self.domains.entry(domain).or_default().survived += 1;
    }

    fn keep_of(&self, domain: Domain) -> f64 {
        if self.opts.mode == ShedMode::KernelDrop {
            return self.default_keep;
        }
        self.domains.get(&domain).and_then(|d| d.keep).unwrap_or(self.default_keep)
    }

    fn set_manual(&mut self, domain: Domain, keep: f64) {
        if domain == DOMAIN_DEFAULT {
            self.default_keep = keep;
        } else {
            self.domains.entry(domain).or_default().keep = Some(keep);
        }
    }

    fn manual_fractions(&self) -> Vec<(Domain, f64)> {
        self.domains.iter().filter_map(|(d, s)| s.keep.map(|k| (*d, k))).collect()
    }

    fn utilization(&mut self, cpu_seconds_total: f64, wall_s: f64) -> f64 {
        let u = match self.last_cpu_s {
            Some(prev) if wall_s > 0.0 => ((cpu_seconds_total - prev) / wall_s).max(0.0),
            _ => 0.0,
        };
        self.last_cpu_s = Some(cpu_seconds_total);
        u
    }

    /// Names domains for priorities and labels: a cgroup's path, or a process's comm.
    fn tick(&mut self, counts: &HashMap<Domain, ShedCount>, utilization: f64, queued: f64, stats: &ShedStats) -> KeepUpdate {
        let by_cgroup = self.opts.by_cgroup;
        let mut cgroups: Option<CgroupResolver> = None;
        ShedController::tick(self, counts, utilization, queued, stats, |dom| {
            if by_cgroup {
                let r = cgroups.get_or_insert_with(|| CgroupResolver::new(default_v2_root()));
                r.path(dom).map(str::to_string)
            } else {
                std::fs::read_to_string(format!("/proc/{dom}/comm")).ok().map(|s| s.trim_end().to_string())
            }
        })
    }
}

fn label(d: Domain, name: &str, by_cgroup: bool) -> String {
    let clean: String = name.chars().filter(|c| !c.is_control() && *c != '"' && *c != '\\').take(64).collect();
    if by_cgroup {
        format!("cgroup:{d}:{clean}")
    } else {
        format!("pid:{d}:{clean}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn ctrl(mode: ShedMode, setpoint: f64, policy: PolicyKind, priorities: Vec<(String, u32)>) -> ShedController {
        ShedController::new(ShedOptions {
            mode,
            control: Control::Auto { setpoint, policy, priorities },
            by_cgroup: false,
            interval: Duration::from_secs(1),
            min_keep: 0.0,
        })
    }

    /// Applies keep fractions to the true arrivals of an interval exactly as the kernel would
    /// on average (kept = round(n·keep)), accumulating cumulative counts.
    fn arrive(c: &ShedController, counts: &mut HashMap<Domain, ShedCount>, arrivals: &[(Domain, u64)]) -> u64 {
        let mut kept_all = 0;
        for &(d, n) in arrivals {
            let kept = (n as f64 * c.keep_of(d)).round() as u64;
            let e = counts.entry(d).or_default();
            e.kept += kept;
            e.shed += n - kept;
            kept_all += kept;
        }
        kept_all
    }

    #[test]
    fn nothing_shed_below_setpoint_and_estimates_are_exact() {
        let mut c = ctrl(ShedMode::Kernel, 0.5, PolicyKind::Fair, vec![]);
        let stats = ShedStats::default();
        let mut counts = HashMap::new();
        for _ in 0..5 {
            arrive(&c, &mut counts, &[(10, 100), (11, 7)]);
            for _ in 0..100 {
                c.survived(10);
            }
            for _ in 0..7 {
                c.survived(11);
            }
            let up = c.tick(&counts, 0.1, 0.0, &stats, |_| None);
            assert_eq!(up.default_keep, 1.0);
            assert!(up.set.iter().all(|(_, k)| *k == 1.0), "{up:?}");
        }
        let rows = stats.domains.lock().unwrap().clone();
        let r10 = rows.iter().find(|r| r.label.starts_with("pid:10:")).unwrap();
        assert_eq!((r10.kept, r10.shed, r10.estimated, r10.rescaled), (500, 0, 500.0, false));
        assert_eq!(rows.last().unwrap().label, "other");
    }

    #[test]
    fn rescales_by_the_domains_own_ratio() {
        let mut c = ctrl(ShedMode::Kernel, 0.5, PolicyKind::Fair, vec![]);
        let stats = ShedStats::default();
        let mut counts = HashMap::from([(7, ShedCount { kept: 25, shed: 75, ..Default::default() })]);
        for _ in 0..25 {
            c.survived(7);
        }
        c.tick(&counts, 0.1, 0.0, &stats, |_| Some("gen".into()));
        counts.get_mut(&7).unwrap().kept += 10; // next interval: 10 kept of 10
        for _ in 0..10 {
            c.survived(7);
        }
        c.tick(&counts, 0.1, 0.0, &stats, |_| Some("gen".into()));
        let row = stats.domains.lock().unwrap()[0].clone();
        assert_eq!(row.label, "pid:7:gen");
        assert_eq!((row.kept, row.shed), (35, 75));
        assert_eq!(row.estimated, 110.0, "25 × 100/25 + 10 × 1");
        assert!(row.rescaled);
    }

    #[test]
    fn holds_a_simulated_agent_at_the_setpoint_and_spares_small_domains() {
        // The agent costs 1/10000 core per kept connection plus 0.02 core of base load.
        let mut c = ctrl(ShedMode::Kernel, 0.3, PolicyKind::Fair, vec![]);
        let stats = ShedStats::default();
        let mut counts = HashMap::new();
        let arrivals = [(1, 20_000), (2, 5_000), (3, 200)];
        let mut u = 0.0;
        for _ in 0..40 {
            let kept = arrive(&c, &mut counts, &arrivals);
            u = 0.02 + kept as f64 / 10_000.0;
            c.tick(&counts, u, 0.0, &stats, |_| None);
        }
        assert!((u - 0.3).abs() < 0.01, "utilisation settles near the set-point: {u}");
        assert_eq!(c.keep_of(3), 1.0, "the small domain keeps everything");
        assert!(c.keep_of(1) < c.keep_of(2) || c.keep_of(2) == 1.0, "the biggest is sampled most");
    }

    #[test]
    fn a_domain_that_stalls_for_an_interval_does_not_blow_the_budget_when_it_resumes() {
        // 1/10000 core per kept connection; domain 1 floods, 2 is steady.
        let mut c = ctrl(ShedMode::Kernel, 0.1, PolicyKind::Fair, vec![]);
        let stats = ShedStats::default();
        let mut counts = HashMap::new();
        let mut settled = 0;
        for _ in 0..40 {
            settled = arrive(&c, &mut counts, &[(1, 20_000), (2, 5_000)]);
            c.tick(&counts, settled as f64 / 10_000.0, 0.0, &stats, |_| None);
        }
        assert!((settled as f64 - 1_000.0).abs() < 20.0, "settled at the set-point: {settled}");
        // One interval at a quarter of its rate, then back.
        let stalled = arrive(&c, &mut counts, &[(1, 5_000), (2, 5_000)]);
        c.tick(&counts, stalled as f64 / 10_000.0, 0.0, &stats, |_| None);
        let resumed = arrive(&c, &mut counts, &[(1, 20_000), (2, 5_000)]);
        // Planned with the stalled rate, domain 1 would keep 4x its share (about 2.1x the
        // budget in all); planned with 12,500 (half way back), at most 1.6x its share.
        assert!(resumed <= 1_700, "kept {resumed} after the stall, {settled} before");
    }

    #[test]
    fn a_setpoint_below_the_agents_floor_keeps_the_minimum_share_not_nothing() {
        // 0.05 core of base load against a 0.03 set-point: no budget is ever enough. Without a
        // floor the plan keeps nothing and no event stands for the domains' connections.
        let stats = ShedStats::default();
        for (floor, want) in [(0.0, 0.0), (0.01, 0.01)] {
            let mut c = ctrl(ShedMode::Kernel, 0.03, PolicyKind::Fair, vec![]);
            c.opts.min_keep = floor;
            let mut counts = HashMap::new();
            for _ in 0..30 {
                let kept = arrive(&c, &mut counts, &[(1, 20_000), (2, 300)]);
                c.tick(&counts, 0.05 + kept as f64 / 100_000.0, 0.0, &stats, |_| None);
            }
            assert_eq!(c.keep_of(1), want, "floor {floor}: the flood is kept at the floor");
            assert!(c.keep_of(2) >= want, "floor {floor}: {}", c.keep_of(2));
        }
    }

    #[test]
    fn predicted_rate_follows_rises_at_once_and_falls_half_way() {
        assert_eq!(predict_rate(0.0, 800.0), 800.0);
        assert_eq!(predict_rate(800.0, 1_200.0), 1_200.0);
        assert_eq!(predict_rate(1_200.0, 400.0), 800.0);
        assert_eq!(predict_rate(800.0, 400.0), 600.0);
    }

    #[test]
    fn priority_protects_the_named_process() {
        let mut c = ctrl(ShedMode::Kernel, 0.2, PolicyKind::Priority, vec![("db".into(), 9)]);
        let stats = ShedStats::default();
        let mut counts = HashMap::new();
        let arrivals = [(1, 10_000), (2, 10_000)];
        for _ in 0..30 {
            let kept = arrive(&c, &mut counts, &arrivals);
            c.tick(&counts, kept as f64 / 10_000.0, 0.0, &stats, |d| Some(if d == 1 { "db".into() } else { "web".into() }));
        }
        // Budget ≈ 2000 per interval: db gets 9/10 of it.
        assert!(c.keep_of(1) > 5.0 * c.keep_of(2), "db {} web {}", c.keep_of(1), c.keep_of(2));
    }

    #[test]
    fn kernel_drop_halves_the_default_blindly() {
        let mut c = ctrl(ShedMode::KernelDrop, 0.1, PolicyKind::Fair, vec![]);
        let stats = ShedStats::default();
        assert_eq!(c.domain_of(42, 7), DOMAIN_OTHER);
        let counts = HashMap::from([(DOMAIN_OTHER, ShedCount { kept: 1000, ..Default::default() })]);
        let up = c.tick(&counts, 0.5, 0.0, &stats, |_| None);
        assert_eq!(up.default_keep, 1.0, "the first interval (the agent's start) is not planned from");
        let counts = HashMap::from([(DOMAIN_OTHER, ShedCount { kept: 2000, ..Default::default() })]);
        let up = c.tick(&counts, 0.5, 0.0, &stats, |_| None);
        assert_eq!(up.default_keep, 0.5);
        assert!(up.set.is_empty());
        assert_eq!(c.keep_of(42), 0.5);
    }

    #[test]
    fn new_domains_share_the_default_then_get_their_own_entry() {
        let mut c = ctrl(ShedMode::Kernel, 0.1, PolicyKind::Fair, vec![]);
        let stats = ShedStats::default();
        let up = c.tick(&HashMap::new(), 0.9, 0.0, &stats, |_| None);
        assert_eq!((up.default_keep, up.set.len()), (1.0, 0), "start: not planned from");
        let counts = HashMap::from([(5, ShedCount { kept: 1000, ..Default::default() })]);
        let up = c.tick(&counts, 0.2, 0.0, &stats, |_| None);
        // Over the set-point: the unplanned traffic (all in the default) is sampled.
        assert!(up.default_keep < 1.0, "{up:?}");
        assert_eq!(up.set, vec![(5, up.default_keep)]);
        // Idle next interval: its entry is removed.
        let up2 = c.tick(&counts, 0.0, 0.0, &stats, |_| None);
        assert_eq!(up2.remove, vec![5]);
    }
}
