//! The shedding filter: applies a plan event by event, counting per domain what it kept and
//! what it dropped, so metrics built from the kept events are rescaled to estimates of totals.

use super::{keep_fixed, kept, Domain, ShedPlan};
use std::collections::HashMap;

/// What the filter saw of one domain in the current interval.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct DomainCounts {
    pub seen: u64,
    pub kept: u64,
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

impl ShedFilter {
    pub fn set_plan(&mut self, plan: &ShedPlan) {
        self.plan.clone_from(plan);
    }

    /// The fixed-point keep fraction of a domain under the current plan.
    pub fn keep_of(&self, domain: Domain) -> u32 {
        keep_fixed(self.plan.keep_probability(domain))
    }

    /// Whether to keep the connection of `domain` whose sampling hash is `hash`
    /// (`sampling::connection_hash`), and the keep fraction it was decided at; every call is
    /// counted.
    pub fn admit(&mut self, domain: Domain, hash: u32) -> (bool, u32) {
        let keep = self.keep_of(domain);
        let admit = kept(hash, keep);
        let c = self.counts.entry(domain).or_default();
        c.seen += 1;
        c.kept += u64::from(admit);
        (admit, keep)
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
    use super::*;

    #[test]
    fn nothing_planned_means_nothing_dropped_and_exact_metrics() {
        let mut f = ShedFilter::default();
        for h in 0..1000 {
            assert!(f.admit(42, h * 16_000).0);
        }
        let c = f.counts(42);
        assert_eq!((c.seen, c.kept, c.dropped()), (1000, 1000, 0));
        assert_eq!(c.rescale(12345.0), (12345.0, false));
    }

    #[test]
    fn drain_resets_counts() {
        let mut f = ShedFilter::default();
        f.admit(1, 0);
        let mut seen = Vec::new();
        f.drain_interval(|d, c| seen.push((d, c.seen)));
        assert_eq!(seen, vec![(1, 1)]);
        assert_eq!(f.counts(1).seen, 0);
    }
}
