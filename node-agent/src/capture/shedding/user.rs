//! `--shed-mode user`: the kernel's shedding decision taken in user space, after the ring buffer.
use std::collections::HashMap;

use super::{Domain, ShedCount, ShedPlan};
use crate::capture::event::{Kind, KEEP_ONE};

/// `--shed-mode user`: the same per-connection decision as the kernel's (a connection is kept
/// when its sampling hash is below its domain's keep fraction), taken after the event was read
/// from the ring buffer (Shedding's LS filter).
#[derive(Debug, Default)]
pub struct UserShed {
    filter: super::ShedFilter,
    plan: ShedPlan,
    counts: HashMap<Domain, ShedCount>,
    /// Shed connections still open: cookie -> (domain, reported by a SNAPSHOT since).
    shed_open: HashMap<u64, (Domain, bool)>,
    /// Sampled connections kept and still open: cookie -> keep fraction they were kept at.
    sampled_open: HashMap<u64, u32>,
}

impl UserShed {
    /// Applies the controller's fractions (what kernel mode writes to the map).
    pub fn set_fractions(&mut self, fractions: impl IntoIterator<Item = (Domain, f64)>, default_keep: f64) {
        self.plan.set_fractions(fractions, default_keep);
        self.filter.set_plan(&self.plan);
    }

    /// Whether an event is delivered, and with which keep fraction (`ConnEvent::keep`: that of
    /// its connection's decision); `domain` as `ShedController::domain_of`, `hash` as
    /// `sampling::connection_hash`.
    pub fn admit(&mut self, kind: Kind, cookie: u64, domain: Domain, bytes: (u64, u64), hash: u32) -> Option<u32> {
        match kind {
            Kind::Opened => {
                let (keep, at) = self.filter.admit(domain, hash);
                let c = self.counts.entry(domain).or_default();
                if keep {
                    c.kept += 1;
                    if at < KEEP_ONE {
                        self.sampled_open.insert(cookie, at);
                    }
                    Some(at)
                } else {
                    c.shed += 1;
                    self.shed_open.insert(cookie, (domain, false));
                    None
                }
            }
            Kind::Snapshot => match self.shed_open.get_mut(&cookie) {
                Some(e) => {
                    e.1 = true; // reported from now on, as in the kernel
                    Some(0)
                }
                None => Some(self.sampled_open.get(&cookie).copied().unwrap_or(KEEP_ONE)),
            },
            Kind::Closed => match self.shed_open.remove(&cookie) {
                Some((d, false)) => {
                    let c = self.counts.entry(d).or_default();
                    c.shed_bytes_sent += bytes.0;
                    c.shed_bytes_recv += bytes.1;
                    None
                }
                Some((_, true)) => Some(0),
                None => Some(self.sampled_open.remove(&cookie).unwrap_or(KEEP_ONE)),
            },
        }
    }

    /// A shed connection not reported yet (the periodic sweep skips it, as in the kernel).
    pub fn is_unreported(&self, cookie: u64) -> bool {
        self.shed_open.get(&cookie).is_some_and(|e| !e.1)
    }

    /// Cumulative counts, the same shape as the kernel's counter map.
    pub fn counts(&self) -> &HashMap<Domain, ShedCount> {
        &self.counts
    }

    /// Forgets shed connections the kernel no longer tracks (bounded memory).
    pub fn retain_open(&mut self, live: impl Fn(u64) -> bool) {
        self.shed_open.retain(|c, _| live(*c));
        self.sampled_open.retain(|c, _| live(*c));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_mode_events_carry_the_keep_fraction_of_their_connections_decision() {
        let mut u = UserShed::default();
        u.set_fractions([(7, 0.5)], 1.0);
        let half = KEEP_ONE / 2;
        // Kept (hash below half): every event of it says 0.5, until it closes.
        assert_eq!(u.admit(Kind::Opened, 1, 7, (0, 0), half - 1), Some(half));
        assert_eq!(u.admit(Kind::Snapshot, 1, 7, (10, 0), half - 1), Some(half));
        assert_eq!(u.admit(Kind::Closed, 1, 7, (10, 5), half - 1), Some(half));
        // Shed: nothing, unless its traffic got it reported (keep 0: stands for no connection).
        assert_eq!(u.admit(Kind::Opened, 2, 7, (0, 0), half), None);
        assert_eq!(u.admit(Kind::Snapshot, 2, 7, (1 << 20, 0), half), Some(0));
        assert_eq!(u.admit(Kind::Closed, 2, 7, (1 << 20, 9), half), Some(0));
        assert_eq!(u.admit(Kind::Opened, 3, 7, (0, 0), KEEP_ONE - 1), None);
        assert_eq!(u.admit(Kind::Closed, 3, 7, (3, 4), KEEP_ONE - 1), None);
        // A domain kept whole is not sampled.
        assert_eq!(u.admit(Kind::Opened, 4, 8, (0, 0), KEEP_ONE - 1), Some(KEEP_ONE));
        assert_eq!(u.admit(Kind::Closed, 4, 8, (0, 0), KEEP_ONE - 1), Some(KEEP_ONE));
        let c = u.counts()[&7];
        assert_eq!((c.kept, c.shed, c.shed_bytes_sent, c.shed_bytes_recv), (1, 2, 3, 4));
        assert!(u.sampled_open.is_empty() && u.shed_open.is_empty(), "closed connections are forgotten");
    }
}
