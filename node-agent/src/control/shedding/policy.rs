//! Shedding policies (Shedding Eq. 7-13): split the Load Manager's budget of computed events over the
//! accounting domains, giving each a probability of keeping its events.

use std::collections::HashMap;

use crate::capture::shedding::{Domain, ShedPlan};

pub trait SheddingPolicy {
    /// Fills `plan` for a budget of `budget` computed events, given each domain's expected
    /// events μ_i(t+1) in `rates`.
    fn plan(&self, budget: f64, rates: &[(Domain, f64)], plan: &mut ShedPlan);
}

/// Shedding Eq. 7-9: every domain gets an equal share of the budget, and what small domains do not use
/// goes to the bigger ones. Small processes keep full visibility; big ones are sampled.
#[derive(Debug, Default, Clone, Copy)]
pub struct FairPolicy;

/// Shedding Eq. 10-13: shares in proportion to configured priorities (w_i = p_i / Σp); domains without
/// one get `default_priority` (best effort). Unused shares are reassigned by weight.
#[derive(Debug, Clone)]
pub struct PriorityPolicy {
    priorities: HashMap<Domain, u32>,
    default_priority: u32,
}

impl PriorityPolicy {
    pub fn new(priorities: HashMap<Domain, u32>, default_priority: u32) -> Self {
        assert!(default_priority > 0, "priorities are positive");
        assert!(priorities.values().all(|p| *p > 0), "priorities are positive");
        PriorityPolicy { priorities, default_priority }
    }

    fn priority(&self, d: Domain) -> f64 {
        f64::from(*self.priorities.get(&d).unwrap_or(&self.default_priority))
    }
}

impl SheddingPolicy for FairPolicy {
    fn plan(&self, budget: f64, rates: &[(Domain, f64)], plan: &mut ShedPlan) {
        water_fill(budget, rates, |_| 1.0, plan);
    }
}

impl SheddingPolicy for PriorityPolicy {
    fn plan(&self, budget: f64, rates: &[(Domain, f64)], plan: &mut ShedPlan) {
        water_fill(budget, rates, |d| self.priority(d), plan);
    }
}

/// Weighted water-filling: μ_ci = min(w_i·μ_c, μ_i) (Shedding Eq. 9/13), visiting domains in the order
/// in which they saturate (μ_i / w_i ascending) and handing what they leave to the rest, in
/// proportion to the remaining weights. With equal weights this is exactly the fair policy.
fn water_fill(budget: f64, rates: &[(Domain, f64)], weight: impl Fn(Domain) -> f64, plan: &mut ShedPlan) {
    plan.keep.clear();
    plan.fallback = None;
    plan.scratch.clear();
    plan.scratch.extend(rates.iter().map(|&(d, mu)| (d, mu.max(0.0), weight(d))));
    plan.scratch.sort_by(|a, b| (a.1 / a.2).total_cmp(&(b.1 / b.2)));
    let mut remaining = budget.max(0.0);
    let mut weight_left: f64 = plan.scratch.iter().map(|e| e.2).sum();
    for &(d, mu, w) in &plan.scratch {
        let share = if weight_left > 0.0 { remaining * w / weight_left } else { 0.0 };
        let computed = share.min(mu);
        remaining -= computed;
        weight_left -= w;
        let keep = if mu > 0.0 { computed / mu } else { 1.0 };
        plan.keep.insert(d, keep.clamp(0.0, 1.0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::event::KEEP_ONE;
    use crate::capture::shedding::{endpoint_hash, ShedFilter};

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn fair_gives_small_processes_everything_and_samples_big_ones() {
        // Budget 600 over rates 100, 200, 1000. Equal share 200: A (100) keeps all and leaves
        // 100; the remaining 500 split over B and C gives 250 each: B (200) keeps all, leaving
        // 50 for C: C computes 300 of 1000.
        let mut plan = ShedPlan::default();
        FairPolicy.plan(600.0, &[(1, 100.0), (2, 200.0), (3, 1000.0)], &mut plan);
        assert!(close(plan.keep_probability(1), 1.0));
        assert!(close(plan.keep_probability(2), 1.0));
        assert!(close(plan.keep_probability(3), 0.3));
        assert!(close(plan.drop_probability(3), 0.7));
    }

    #[test]
    fn fair_when_everyone_is_big_is_eq_8() {
        // Shedding Eq. 8: P(X_i) = 1 - μ_c / (|H| μ_i): budget 300, three domains of 500 → keep 0.2 each.
        let mut plan = ShedPlan::default();
        FairPolicy.plan(300.0, &[(1, 500.0), (2, 500.0), (3, 500.0)], &mut plan);
        for d in 1..=3 {
            assert!(close(plan.keep_probability(d), 0.2));
        }
    }

    #[test]
    fn priority_follows_eq_10_to_13() {
        // Priorities 3, 1 (default), budget 400, both domains produce 1000.
        // w = 3/4, 1/4 → μ_c = 300, 100 → keep 0.3, 0.1.
        let policy = PriorityPolicy::new(HashMap::from([(7, 3)]), 1);
        let mut plan = ShedPlan::default();
        policy.plan(400.0, &[(7, 1000.0), (8, 1000.0)], &mut plan);
        assert!(close(plan.keep_probability(7), 0.3));
        assert!(close(plan.keep_probability(8), 0.1));
    }

    #[test]
    fn priority_reassigns_what_a_small_high_priority_domain_does_not_use() {
        // Priority 3 domain only produces 100 of its 300 share: the other 200 go to the
        // best-effort domain, which then computes 100 + 200 = 300 of 1000.
        let policy = PriorityPolicy::new(HashMap::from([(7, 3)]), 1);
        let mut plan = ShedPlan::default();
        policy.plan(400.0, &[(7, 100.0), (8, 1000.0)], &mut plan);
        assert!(close(plan.keep_probability(7), 1.0));
        assert!(close(plan.keep_probability(8), 0.3));
    }

    #[test]
    fn budget_above_input_keeps_everything_and_unknown_domains_are_kept() {
        let mut plan = ShedPlan::default();
        FairPolicy.plan(10_000.0, &[(1, 10.0), (2, 20.0)], &mut plan);
        assert!(close(plan.keep_probability(1), 1.0));
        assert!(close(plan.keep_probability(2), 1.0));
        assert!(close(plan.keep_probability(99), 1.0));
    }

    #[test]
    fn planned_budget_is_spent_exactly() {
        let rates = [(1, 5.0), (2, 50.0), (3, 500.0), (4, 5000.0)];
        let mut plan = ShedPlan::default();
        let policy = PriorityPolicy::new(HashMap::from([(2, 4), (4, 2)]), 1);
        policy.plan(1234.0, &rates, &mut plan);
        let spent: f64 = rates.iter().map(|(d, mu)| plan.keep_probability(*d) * mu).sum();
        assert!((spent - 1234.0).abs() < 1e-6, "{spent}");
    }

    /// The user-space filter applying a fair plan (capture::shedding::ShedFilter).
    #[test]
    fn keeps_the_connections_hashed_below_the_planned_share_and_rescales() {
        let mut plan = ShedPlan::default();
        FairPolicy.plan(300.0, &[(1, 100.0), (2, 1000.0)], &mut plan); // keep 1.0 and 0.2
        let mut f = ShedFilter::default();
        f.set_plan(&plan);
        assert_eq!(f.keep_of(2), KEEP_ONE / 5);
        let client = crate::shared::net::addr16_from_ip("10.0.0.7".parse().unwrap());
        let mut bytes_kept = 0.0;
        let mut expected_kept = 0;
        for i in 0..1000u16 {
            let h = endpoint_hash(&client, 40_000 + i);
            let (admit, keep) = f.admit(2, h);
            assert_eq!(keep, KEEP_ONE / 5);
            assert_eq!(admit, h < KEEP_ONE / 5, "decided by the hash alone");
            if admit {
                expected_kept += 1;
                bytes_kept += f64::from(i % 7) + 100.0;
            }
            if i < 100 {
                assert_eq!(f.admit(1, h), (true, KEEP_ONE));
            }
        }
        let c = f.counts(2);
        assert_eq!((c.seen, c.kept), (1000, expected_kept));
        assert!((170..=230).contains(&c.kept), "about a fifth kept: {}", c.kept);
        let (estimate, rescaled) = c.rescale(bytes_kept);
        assert!(rescaled);
        let truth: f64 = (0..1000u16).map(|i| f64::from(i % 7) + 100.0).sum();
        assert!((estimate - truth).abs() / truth < 0.01, "estimate {estimate} truth {truth}");
        assert_eq!(f.counts(1).dropped(), 0);
    }
}
