//! The shedding filter: applies a plan event by event, counting per domain what it kept and
//! what it dropped, so metrics built from the kept events are rescaled to estimates of totals.

use super::{Domain, ShedPlan};
use std::collections::HashMap;

/// What the filter saw of one domain in the current interval.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct DomainCounts {
    pub seen: u64,
    pub kept: u64,
    /// Fractional keep credit: deterministic sampling keeps exactly ⌊seen·p⌋ or ⌈seen·p⌉ events.
    credit_millionths: u64,
}

impl DomainCounts {
    pub fn dropped(&self) -> u64 {
        self.seen - self.kept
    }

    /// Estimate of a total from the value summed over the kept events only.
    /// Exact (and reported as not rescaled) when nothing was dropped.
    pub fn rescale(&self, kept_value: f64) -> (f64, bool) {
        if self.kept == self.seen {
            return (kept_value, false);
        }
        if self.kept == 0 {
            return (0.0, true);
        }
        (kept_value * self.seen as f64 / self.kept as f64, true)
    }
}

#[derive(Debug, Default)]
pub struct ShedFilter {
    plan: ShedPlan,
    counts: HashMap<Domain, DomainCounts>,
}

const ONE: u64 = 1_000_000;

impl ShedFilter {
    pub fn set_plan(&mut self, plan: &ShedPlan) {
        self.plan.clone_from(plan);
    }

    /// Whether to keep this event of `domain`; every call is counted.
    pub fn admit(&mut self, domain: Domain) -> bool {
        let keep = (self.plan.keep_probability(domain) * ONE as f64).round() as u64;
        let c = self.counts.entry(domain).or_default();
        c.seen += 1;
        c.credit_millionths += keep;
        if c.credit_millionths >= ONE {
            c.credit_millionths -= ONE;
            c.kept += 1;
            true
        } else {
            false
        }
    }

    pub fn counts(&self, domain: Domain) -> DomainCounts {
        self.counts.get(&domain).copied().unwrap_or_default()
    }

    /// Counts of the interval that ends, per domain; the map keeps its capacity for the next.
    pub fn drain_interval(&mut self, mut visit: impl FnMut(Domain, DomainCounts)) {
        for (d, c) in self.counts.iter_mut() {
            visit(*d, *c);
            c.seen = 0;
            c.kept = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{FairPolicy, SheddingPolicy};
    use super::*;

    #[test]
    fn nothing_planned_means_nothing_dropped_and_exact_metrics() {
        let mut f = ShedFilter::default();
        for _ in 0..1000 {
            assert!(f.admit(42));
        }
        let c = f.counts(42);
        assert_eq!((c.seen, c.kept, c.dropped()), (1000, 1000, 0));
        assert_eq!(c.rescale(12345.0), (12345.0, false));
    }

    #[test]
    fn keeps_the_planned_share_and_rescales_counts_exactly() {
        let mut plan = ShedPlan::default();
        FairPolicy.plan(300.0, &[(1, 100.0), (2, 1000.0)], &mut plan); // keep 1.0 and 0.2
        let mut f = ShedFilter::default();
        f.set_plan(&plan);
        let mut bytes_kept = 0.0;
        for i in 0..1000u64 {
            if f.admit(2) {
                bytes_kept += (i % 7) as f64 + 100.0;
            }
            if i < 100 {
                assert!(f.admit(1));
            }
        }
        let c = f.counts(2);
        assert_eq!(c.seen, 1000);
        assert_eq!(c.kept, 200);
        // Counts are exact: kept + dropped = seen.
        assert_eq!(c.kept + c.dropped(), 1000);
        let (estimate, rescaled) = c.rescale(bytes_kept);
        assert!(rescaled);
        let truth: f64 = (0..1000u64).map(|i| (i % 7) as f64 + 100.0).sum();
        assert!((estimate - truth).abs() / truth < 0.01, "estimate {estimate} truth {truth}");
        assert_eq!(f.counts(1).dropped(), 0);
    }

    #[test]
    fn drain_resets_counts_but_not_credit() {
        let mut f = ShedFilter::default();
        f.admit(1);
        let mut seen = Vec::new();
        f.drain_interval(|d, c| seen.push((d, c.seen)));
        assert_eq!(seen, vec![(1, 1)]);
        assert_eq!(f.counts(1).seen, 0);
    }
}
