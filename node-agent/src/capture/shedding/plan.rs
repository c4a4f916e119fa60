//! The Shedding Plan: keep probabilities per domain for the next interval, which the user-space
//! filter applies event by event (and the kernel map holds in kernel mode).
use std::collections::HashMap;

use super::Domain;

/// Keep probabilities per domain for the next interval (the Shedding Plan). Reused across
/// intervals so planning does not allocate once the domains are known.
#[derive(Debug, Default, Clone)]
/// The policies (`control::shedding`) fill it in place.
pub struct ShedPlan {
    pub(crate) keep: HashMap<Domain, f64>,
    /// The policies' working list, kept for its capacity.
    pub(crate) scratch: Vec<(Domain, f64, f64)>,
    /// Keep probability of domains not listed; None = 1 (keep everything).
    pub(crate) fallback: Option<f64>,
}

impl ShedPlan {
    /// Probability that an event of `domain` is kept; domains the plan does not know (new
    /// processes) keep everything, so they are visible from their first event.
    pub fn keep_probability(&self, domain: Domain) -> f64 {
        self.keep.get(&domain).copied().unwrap_or(self.fallback.unwrap_or(1.0))
    }

    /// A plan from explicit fractions, e.g. those the controller wrote to the kernel, with
    /// `fallback` for every domain not listed.
    pub fn set_fractions(&mut self, fractions: impl IntoIterator<Item = (Domain, f64)>, fallback: f64) {
        self.keep.clear();
        self.keep.extend(fractions.into_iter().map(|(d, p)| (d, p.clamp(0.0, 1.0))));
        self.fallback = Some(fallback.clamp(0.0, 1.0));
    }

    /// P(X_i), the probability that an event of `domain` is dropped.
    pub fn drop_probability(&self, domain: Domain) -> f64 {
        1.0 - self.keep_probability(domain)
    }

    pub fn domains(&self) -> impl Iterator<Item = (Domain, f64)> + '_ {
        self.keep.iter().map(|(d, p)| (*d, *p))
    }
}
