//! The Load Manager (Eq. 1-6): from the arrival rate, the served rate and the measured CPU
//! utilisation of the agent, the number of events it may compute next interval so that its
//! utilisation returns to the set-point.

/// What the agent observed over the last interval (rates are per interval).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IntervalStats {
    /// λ(t): events that arrived.
    pub arrived: f64,
    /// μ_c(t): events computed (not dropped).
    pub computed: f64,
    /// U(t): the agent's CPU utilisation, as a share of one core (0.25 = a quarter core).
    pub utilization: f64,
}

#[derive(Debug, Clone)]
pub struct LoadManager {
    setpoint: f64,
    /// μ_max: events per interval the agent computes at a utilisation of 1, estimated online.
    mu_max: f64,
    /// Weight of the newest estimate of μ_max (exponential smoothing).
    smoothing: f64,
}

impl LoadManager {
    /// `setpoint` Ū is the utilisation to hold (share of one core); `initial_mu_max` seeds the
    /// estimate of the agent's maximum throughput before it has been measured.
    pub fn new(setpoint: f64, initial_mu_max: f64) -> Self {
        assert!(setpoint > 0.0 && setpoint.is_finite(), "set-point must be positive");
        assert!(initial_mu_max > 0.0, "initial maximum throughput must be positive");
        LoadManager { setpoint, mu_max: initial_mu_max, smoothing: 0.5 }
    }

    pub fn setpoint(&self) -> f64 {
        self.setpoint
    }

    pub fn mu_max(&self) -> f64 {
        self.mu_max
    }

    /// Eq. 1 rearranged: with Q(t) the queue left over, U = (μ_c + Q)/μ_max. The measured pair
    /// (computed events, utilisation) gives a new estimate of μ_max when the agent did real work.
    fn learn_mu_max(&mut self, s: &IntervalStats) {
        if s.utilization > 0.01 && s.computed > 0.0 {
            let estimate = s.computed / s.utilization;
            self.mu_max = self.smoothing * estimate + (1.0 - self.smoothing) * self.mu_max;
        }
    }

    /// The budget μ_c(t+1) of events to compute next interval.
    ///
    /// Eq. 4: e(t) = U(t) - Ū. Eq. 5: μ(t+1) = λ(t) + μ_max·e(t), the throughput (computed plus
    /// dropped) that brings the utilisation back to Ū. Eq. 6: μ(t+1) = μ_c(t) + μ_d(t+1), so the
    /// drop rate is μ_d(t+1) = μ(t+1) - μ_c(t), and with arrivals steady (λ(t+1) ≈ λ(t)) what is
    /// left to compute is λ(t) - μ_d(t+1).
    pub fn next_budget(&mut self, s: &IntervalStats) -> f64 {
        self.learn_mu_max(s);
        let error = s.utilization - self.setpoint;
        let throughput = s.arrived + self.mu_max * error;
        let drop = (throughput - s.computed).max(0.0);
        (s.arrived - drop).clamp(0.0, s.arrived)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manager(setpoint: f64, mu_max: f64) -> LoadManager {
        let mut m = LoadManager::new(setpoint, mu_max);
        m.smoothing = 0.0; // hand-computed cases keep μ_max fixed
        m
    }

    #[test]
    fn overload_halves_the_budget_to_reach_the_setpoint() {
        // λ=200k, agent saturated (U=1) computing 100k: μ_max=100k. e=0.5,
        // μ=200k+50k=250k, μ_d=250k-100k=150k, budget=200k-150k=50k → U=50k/100k=Ū.
        let mut m = manager(0.5, 100_000.0);
        let b = m.next_budget(&IntervalStats { arrived: 200_000.0, computed: 100_000.0, utilization: 1.0 });
        assert_eq!(b, 50_000.0);
    }

    #[test]
    fn below_setpoint_nothing_is_dropped() {
        // e=-0.3, μ=20k-30k<μ_c: no drop, the whole input is computed.
        let mut m = manager(0.5, 100_000.0);
        let b = m.next_budget(&IntervalStats { arrived: 20_000.0, computed: 20_000.0, utilization: 0.2 });
        assert_eq!(b, 20_000.0);
    }

    #[test]
    fn slight_overload_trims_by_the_error() {
        // e=0.1, μ=70k+10k=80k, μ_d=80k-60k=20k, budget=70k-20k=50k.
        let mut m = manager(0.5, 100_000.0);
        let b = m.next_budget(&IntervalStats { arrived: 70_000.0, computed: 60_000.0, utilization: 0.6 });
        assert!((b - 50_000.0).abs() < 1e-6, "{b}");
    }

    #[test]
    fn converges_on_a_simulated_agent() {
        // An agent whose true cost is 1/120k CPU per event, fed 300k events per interval.
        let true_mu_max = 120_000.0;
        let mut m = LoadManager::new(0.3, 10_000.0);
        let mut budget = 300_000.0;
        let mut last_u = 0.0;
        for _ in 0..30 {
            let computed: f64 = budget;
            let u = computed / true_mu_max;
            budget = m.next_budget(&IntervalStats { arrived: 300_000.0, computed, utilization: u });
            last_u = budget / true_mu_max;
        }
        assert!((last_u - 0.3).abs() < 1e-3, "utilisation settles at the set-point, got {last_u}");
        assert!((m.mu_max() - true_mu_max).abs() / true_mu_max < 1e-3);
    }
}
