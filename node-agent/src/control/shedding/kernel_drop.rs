//! Shedding's kernel-drop baseline (Shedding §4.3): halve the input each interval while the agent is
//! over its set-point, double it back while under. Drops are blind to domains, so metrics cannot
//! be rescaled per process: it is kept for comparison in the benchmark, not for use.

#[derive(Debug, Clone)]
pub struct KernelDropBaseline {
    setpoint: f64,
    keep_fraction: f64,
    credit: f64,
}

impl KernelDropBaseline {
    pub fn new(setpoint: f64) -> Self {
        KernelDropBaseline { setpoint, keep_fraction: 1.0, credit: 0.0 }
    }

    pub fn keep_fraction(&self) -> f64 {
        self.keep_fraction
    }

    /// Called once per interval with the agent's measured utilisation.
    pub fn update(&mut self, utilization: f64) {
        if utilization > self.setpoint {
            self.keep_fraction /= 2.0;
        } else {
            self.keep_fraction = (self.keep_fraction * 2.0).min(1.0);
        }
    }

    pub fn admit(&mut self) -> bool {
        self.credit += self.keep_fraction;
        if self.credit >= 1.0 {
            self.credit -= 1.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_while_over_and_recovers_while_under() {
        let mut k = KernelDropBaseline::new(0.5);
        k.update(0.9);
        assert_eq!(k.keep_fraction(), 0.5);
        k.update(0.8);
        assert_eq!(k.keep_fraction(), 0.25);
        let kept = (0..1000).filter(|_| k.admit()).count();
        assert_eq!(kept, 250);
        k.update(0.1);
        k.update(0.1);
        k.update(0.1);
        assert_eq!(k.keep_fraction(), 1.0);
    }
}
