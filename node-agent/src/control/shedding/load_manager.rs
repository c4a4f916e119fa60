//! The Load Manager (Shedding Eq. 1-6): from the arrival rate, the served rate and the measured CPU
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
    /// Share of μ_max·e(t) applied when |e(t)| is within NOISE_BAND of the set-point.
    near_gain: f64,
    /// The agent's cost per computed event at the margin, fitted over recent intervals.
    fit: CostFit,
    /// The last marginal throughput the fit identified: held while μ_c stays steady (under
    /// control it barely varies, and then the slope cannot be told from noise).
    marginal: Option<f64>,
    use_fit: bool,
    /// Scale of the correction, halved each time a large error flips sign (the loop
    /// overshoots: its gain is too high for the agent's real cost), recovering otherwise.
    damping: f64,
    last_error: f64,
    use_damping: bool,
}

/// Intervals of the least-squares fit of U = a + b·μ_c (about half a minute at 1 s).
const FIT_INTERVALS: usize = 32;
/// The fit is used once μ_c varied by at least this coefficient of variation in its window.
const FIT_MIN_CV: f64 = 0.1;
/// Cap of the marginal throughput over Shedding Eq. 1's average one (a fixed cost of 2/3 of U).
const MAX_MARGINAL_RATIO: f64 = 3.0;
/// Only intervals with a utilisation in this range of the set-point enter the fit: the agent's
/// cost per event is lower at high rates (batching), so the burst at start, when everything is
/// kept, would make the margin near the set-point look several times cheaper than it is.
const FIT_RANGE: (f64, f64) = (0.5, 1.5);
/// Floor of `damping`.
const MIN_DAMPING: f64 = 0.25;

/// Least squares of the utilisation against the events computed, over the last
/// FIT_INTERVALS intervals. Shedding Eq. 1 divides U by μ_c as if the agent had no fixed cost; but the
/// agent's samplers, sweeps and Kafka client cost it 0.014–0.02 cores whatever it computes, so
/// at a set-point of 0.03 the average μ_c/U is a third of the true 1/b, and Shedding Eq. 5 corrects a
/// third of each error: too slow to follow load changes. The slope b is what the budget buys.
#[derive(Debug, Clone)]
struct CostFit {
    x: [f64; FIT_INTERVALS],
    y: [f64; FIT_INTERVALS],
    len: usize,
    next: usize,
}

impl Default for CostFit {
    fn default() -> Self {
        CostFit { x: [0.0; FIT_INTERVALS], y: [0.0; FIT_INTERVALS], len: 0, next: 0 }
    }
}

impl CostFit {
    fn push(&mut self, computed: f64, utilization: f64) {
        self.x[self.next] = computed;
        self.y[self.next] = utilization;
        self.next = (self.next + 1) % FIT_INTERVALS;
        self.len = (self.len + 1).min(FIT_INTERVALS);
    }

    /// 1/b, events per interval per core at the margin; None until μ_c varied enough in the
    /// window to tell the slope from noise, or when the slope is not positive.
    fn marginal_mu(&self) -> Option<f64> {
        if self.len < 4 {
            return None;
        }
        let n = self.len as f64;
        let (xs, ys) = (&self.x[..self.len], &self.y[..self.len]);
        let mx = xs.iter().sum::<f64>() / n;
        let my = ys.iter().sum::<f64>() / n;
        let (mut sxx, mut sxy) = (0.0, 0.0);
        for (x, y) in xs.iter().zip(ys) {
            sxx += (x - mx) * (x - mx);
            sxy += (x - mx) * (y - my);
        }
        if mx <= 0.0 || (sxx / n).sqrt() < FIT_MIN_CV * mx || sxy <= 0.0 {
            return None;
        }
        Some(sxx / sxy)
    }
}

/// Errors up to this share of the set-point are mostly measurement noise of a small process's
/// per-interval CPU (Kafka batches, periodic sweeps); correcting them fully (Shedding Eq. 5) turns that
/// noise into budget swings that show up as errors of the next interval.
const NOISE_BAND: f64 = 0.2;
/// Gain inside the band. For white noise of variance σ² an integral correction of gain g leaves
/// an error variance of σ²·2/(2-g): 2σ² at g = 1 (Shedding Eq. 5), 1.33σ² at g = 0.5.
const NEAR_GAIN: f64 = 0.5;

impl LoadManager {
    /// `setpoint` Ū is the utilisation to hold (share of one core); `initial_mu_max` seeds the
    /// estimate of the agent's maximum throughput before it has been measured.
    pub fn new(setpoint: f64, initial_mu_max: f64) -> Self {
        assert!(setpoint > 0.0 && setpoint.is_finite(), "set-point must be positive");
        assert!(initial_mu_max > 0.0, "initial maximum throughput must be positive");
        LoadManager {
            setpoint,
            mu_max: initial_mu_max,
            smoothing: 0.5,
            near_gain: NEAR_GAIN,
            fit: CostFit::default(),
            marginal: None,
            use_fit: true,
            damping: 1.0,
            last_error: 0.0,
            use_damping: true,
        }
    }

    pub fn setpoint(&self) -> f64 {
        self.setpoint
    }

    pub fn mu_max(&self) -> f64 {
        self.mu_max
    }

    /// The μ_max that scales the correction of Shedding Eq. 5: the fitted marginal one when the fit is
    /// identified (at least Shedding Eq. 1's average one, at most MAX_MARGINAL_RATIO times it), else
    /// Shedding Eq. 1's.
    pub fn mu_marginal(&self) -> f64 {
        match self.marginal {
            Some(m) if self.use_fit => m.clamp(self.mu_max, MAX_MARGINAL_RATIO * self.mu_max),
            _ => self.mu_max,
        }
    }

    /// Shedding Eq. 1 rearranged: with Q(t) the queue left over, U = (μ_c + Q)/μ_max. The measured pair
    /// (computed events, utilisation) gives a new estimate of μ_max when the agent did real work.
    fn learn_mu_max(&mut self, s: &IntervalStats) {
        if s.utilization > 0.01 && s.computed > 0.0 {
            let estimate = s.computed / s.utilization;
            self.mu_max = self.smoothing * estimate + (1.0 - self.smoothing) * self.mu_max;
        }
        let (lo, hi) = FIT_RANGE;
        if s.utilization >= lo * self.setpoint && s.utilization <= hi * self.setpoint {
            self.fit.push(s.computed, s.utilization);
        }
        if let Some(m) = self.fit.marginal_mu() {
            self.marginal = Some(m);
        }
    }

    /// The budget μ_c(t+1) of events to compute next interval.
    ///
    /// Shedding Eq. 4: e(t) = U(t) - Ū. Shedding Eq. 5: μ(t+1) = λ(t) + μ_max·e(t), the throughput (computed plus
    /// dropped) that brings the utilisation back to Ū. Shedding Eq. 6: μ(t+1) = μ_c(t) + μ_d(t+1), so the
    /// drop rate is μ_d(t+1) = μ(t+1) - μ_c(t), and with arrivals steady (λ(t+1) ≈ λ(t)) what is
    /// left to compute is λ(t) - μ_d(t+1). Beyond Shedding, errors within the noise band are
    /// corrected by half (`NEAR_GAIN`); larger ones, a real change of load, in full; and the
    /// correction is scaled by the marginal throughput (`mu_marginal`), not the average one.
    pub fn next_budget(&mut self, s: &IntervalStats) -> f64 {
        self.learn_mu_max(s);
        let error = s.utilization - self.setpoint;
        let band = NOISE_BAND * self.setpoint;
        let gain = if error.abs() <= band { self.near_gain } else { 1.0 };
        if self.use_damping {
            let flipped = error.abs() > band && self.last_error.abs() > band && error.signum() != self.last_error.signum();
            self.damping = if flipped { (self.damping * 0.5).max(MIN_DAMPING) } else { (self.damping * 1.25).min(1.0) };
        }
        self.last_error = error;
        let throughput = s.arrived + gain * self.damping * self.mu_marginal() * error;
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
        // e=0.15 > 0.2·Ū=0.1: full gain. μ=70k+15k=85k, μ_d=85k-60k=25k, budget=70k-25k=45k.
        let mut m = manager(0.5, 100_000.0);
        let b = m.next_budget(&IntervalStats { arrived: 70_000.0, computed: 60_000.0, utilization: 0.65 });
        assert!((b - 45_000.0).abs() < 1e-6, "{b}");
    }

    #[test]
    fn errors_within_the_noise_band_are_corrected_by_half() {
        // e=0.05 ≤ 0.1: gain 0.5. μ=70k+0.5·5k=72.5k, μ_d=72.5k-60k=12.5k, budget=57.5k.
        let mut m = manager(0.5, 100_000.0);
        let b = m.next_budget(&IntervalStats { arrived: 70_000.0, computed: 60_000.0, utilization: 0.55 });
        assert!((b - 57_500.0).abs() < 1e-6, "{b}");
        // Below the set-point by 0.1 (the band's edge, inclusive): +0.5·10k over μ_c.
        let b = m.next_budget(&IntervalStats { arrived: 70_000.0, computed: 60_000.0, utilization: 0.4 });
        assert!((b - 65_000.0).abs() < 1e-6, "{b}");
    }

    /// Mean absolute error of a simulated agent whose utilisation carries a fixed cost and
    /// noise (a deterministic pseudo-random sequence), under a given near-band gain.
    fn simulated_mape(near_gain: f64) -> f64 {
        let (setpoint, fixed, per_event, arrived) = (0.05, 0.014, 1.0 / 10_000.0, 20_000.0);
        let mut m = LoadManager::new(setpoint, 5_000.0);
        m.near_gain = near_gain;
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut noise = move || {
            // xorshift64*, then the sum of 4 uniforms: roughly normal, σ ≈ 0.0025 (5 % of Ū).
            let mut acc = 0.0;
            for _ in 0..4 {
                seed ^= seed >> 12;
                seed ^= seed << 25;
                seed ^= seed >> 27;
                acc += (seed.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
            }
            acc * 0.0043
        };
        let (mut budget, mut err, mut n) = (arrived, 0.0, 0);
        for i in 0..2_000 {
            let computed = budget;
            let u = fixed + computed * per_event + noise();
            if i >= 50 {
                err += (u - setpoint).abs() / setpoint;
                n += 1;
            }
            budget = m.next_budget(&IntervalStats { arrived, computed, utilization: u });
        }
        err / n as f64
    }

    /// Intervals a simulated agent with a fixed cost of 0.02 cores (set-point 0.03) needs to get
    /// back within 2 % of the set-point after its fixed cost falls to 0.017.
    fn intervals_to_recover(use_fit: bool) -> usize {
        let (setpoint, per_event, arrived) = (0.03, 1.0 / 10_000.0, 20_000.0);
        let mut m = LoadManager::new(setpoint, 5_000.0);
        m.use_fit = use_fit;
        let mut budget = arrived;
        // From keeping everything (the agent's start) to the set-point: the fit sees that range.
        for _ in 0..40 {
            let u = 0.02 + budget * per_event;
            budget = m.next_budget(&IntervalStats { arrived, computed: budget, utilization: u });
        }
        assert!((0.02 + budget * per_event - setpoint).abs() < 1e-4, "settled before the step");
        for i in 0..100 {
            let u = 0.017 + budget * per_event;
            if (u - setpoint).abs() < 0.02 * setpoint {
                return i;
            }
            budget = m.next_budget(&IntervalStats { arrived, computed: budget, utilization: u });
        }
        100
    }

    #[test]
    fn the_fitted_marginal_cost_follows_a_step_faster_than_eq1s_average() {
        let (fitted, average) = (intervals_to_recover(true), intervals_to_recover(false));
        eprintln!("intervals to recover: fitted marginal cost {fitted}, Eq. 1 average {average}");
        assert!(fitted * 2 <= average, "fitted {fitted}, average {average}");
    }

    /// Utilisation error (share of Ū) after 60 intervals of an agent without fixed cost whose
    /// marginal throughput was believed 3x too high (the cap): the loop's gain is 3.
    fn error_with_too_high_a_gain(use_damping: bool) -> f64 {
        let (setpoint, per_event, arrived) = (0.05, 1.0 / 10_000.0, 20_000.0);
        let mut m = manager(setpoint, 10_000.0);
        m.use_damping = use_damping;
        let mut budget = 1_000.0;
        let mut u = 0.0;
        for _ in 0..60 {
            u = budget * per_event;
            m.marginal = Some(1e12); // believed throughout, whatever the fit finds
            budget = m.next_budget(&IntervalStats { arrived, computed: budget, utilization: u });
        }
        (u - setpoint).abs() / setpoint
    }

    #[test]
    fn overshooting_errors_damp_the_correction_until_the_loop_settles() {
        let (damped, undamped) = (error_with_too_high_a_gain(true), error_with_too_high_a_gain(false));
        assert!(damped < 0.01, "damped: {damped}");
        assert!(undamped > 0.5, "without damping a gain of 3 oscillates: {undamped}");
    }

    #[test]
    fn the_fit_needs_variation_and_a_positive_slope() {
        let mut f = CostFit::default();
        for _ in 0..10 {
            f.push(1_000.0, 0.05);
        }
        assert_eq!(f.marginal_mu(), None, "constant μ_c: slope unidentified");
        let mut f = CostFit::default();
        for i in 0..8 {
            let x = 1_000.0 + 200.0 * i as f64;
            f.push(x, 0.01 + x / 20_000.0);
        }
        assert!((f.marginal_mu().unwrap() - 20_000.0).abs() < 1e-6);
        let mut f = CostFit::default();
        for i in 0..8 {
            let x = 1_000.0 + 200.0 * i as f64;
            f.push(x, 0.2 - x / 20_000.0);
        }
        assert_eq!(f.marginal_mu(), None, "a negative slope is not a cost");
    }

    #[test]
    fn half_gain_near_the_setpoint_amplifies_noise_less_than_eq5() {
        let (eq5, damped) = (simulated_mape(1.0), simulated_mape(NEAR_GAIN));
        eprintln!("simulated MAPE: Eq. 5 in full {:.2} %, near-band gain {NEAR_GAIN} {:.2} %", eq5 * 100.0, damped * 100.0);
        // Theory for white noise: sqrt(2/(2-g)) of the noise alone, 1.41 at g = 1 and 1.15 at 0.5.
        assert!(damped < eq5 * 0.9, "near-band gain {NEAR_GAIN}: MAPE {damped:.4}, Eq. 5 in full: {eq5:.4}");
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
