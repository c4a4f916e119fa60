//! Load shedding in the kernel: its keep fractions and counters in BPF maps, written and read
//! once per control interval by the capture thread, and the commands of `CaptureHandle`.
use std::cell::RefCell;
use std::collections::HashMap;
use std::time::{Duration, Instant};

use libbpf_rs::{MapCore, MapFlags};

use super::dispatch::{Dispatcher, Shedder};
use super::skel::*;
use super::{pod_bytes, read_pod, CaptureStats, ShedCmd};
use crate::capture::shedding::{keep_fixed, Domain, ShedCount, DOMAIN_DEFAULT};

/// When the next control interval is due, and the wall time of the last one.
pub(super) struct ShedClock {
    pub(super) every: Option<Duration>,
    pub(super) next: Instant,
    pub(super) last: Instant,
}

impl ShedClock {
    pub(super) fn new(every: Option<Duration>) -> ShedClock {
        let now = Instant::now();
        ShedClock { every, next: now + every.unwrap_or_default(), last: now }
    }
    pub(super) fn due(&self) -> bool {
        self.every.is_some() && Instant::now() >= self.next
    }
    /// Wall seconds since the previous tick; schedules the next.
    pub(super) fn advance(&mut self) -> f64 {
        let now = Instant::now();
        let wall = now.duration_since(self.last).as_secs_f64();
        self.last = now;
        let every = self.every.unwrap_or_default();
        self.next += every;
        if self.next < now {
            self.next = now + every;
        }
        wall
    }
}

pub(super) fn shed_set_kernel(skel: &ConnectionsSkel<'_>, domain: Domain, keep: f64) {
    let val = types::shed_keep_val { keep: keep_fixed(keep), ..Default::default() };
    if let Err(e) = skel.maps.shed_keep.update(&domain.to_ne_bytes(), pod_bytes(&val), MapFlags::ANY) {
        log::warn!("shedding: cannot write keep fraction of domain {domain}: {e}");
    }
}

/// Cumulative per-domain counts from the kernel's per-CPU map.
pub(super) fn read_shed_counts(skel: &ConnectionsSkel<'_>) -> HashMap<Domain, ShedCount> {
    let mut out = HashMap::new();
    let map = &skel.maps.shed_counts;
    for key in map.keys() {
        let Ok(k) = <[u8; 8]>::try_from(&key[..]) else { continue };
        let Ok(Some(per_cpu)) = map.lookup_percpu(&key, MapFlags::ANY) else { continue };
        let mut c = ShedCount::default();
        for v in per_cpu {
            if let Some(x) = read_pod::<types::shed_count>(&v) {
                c.kept += x.kept;
                c.shed += x.shed;
                c.shed_bytes_sent += x.shed_bytes_sent;
                c.shed_bytes_recv += x.shed_bytes_recv;
            }
        }
        out.insert(u64::from_ne_bytes(k), c);
    }
    out
}

pub(super) fn shed_counts_now(skel: &ConnectionsSkel<'_>, sh: &Shedder) -> HashMap<Domain, ShedCount> {
    match &sh.user {
        Some(u) => u.counts().clone(),
        None => read_shed_counts(skel),
    }
}

pub(super) fn shed_command(skel: &ConnectionsSkel<'_>, disp: &RefCell<Dispatcher>, cmd: ShedCmd) {
    let mut d = disp.borrow_mut();
    let Some(sh) = d.shed.as_mut() else {
        if let ShedCmd::Counts(tx) = cmd {
            let _ = tx.send(HashMap::new());
        }
        return;
    };
    match cmd {
        ShedCmd::SetKeep(domain, keep) => {
            sh.ctrl.set_manual(domain, keep);
            match sh.user.as_mut() {
                Some(_) => {}
                None => shed_set_kernel(skel, domain, keep),
            }
            if let Some(u) = sh.user.as_mut() {
                let fr = sh.ctrl.manual_fractions();
                let def = sh.ctrl.keep_of(DOMAIN_DEFAULT);
                u.set_fractions(fr, def);
            }
        }
        ShedCmd::Counts(tx) => {
            let _ = tx.send(shed_counts_now(skel, sh));
        }
    }
}

/// One control interval: read the counts and the agent's CPU, plan, write the kernel map (or
/// the user-space filter).
pub(super) fn shed_tick(skel: &ConnectionsSkel<'_>, disp: &RefCell<Dispatcher>, stats: &CaptureStats, clock: &mut ShedClock) {
    let wall = clock.advance();
    let mut d = disp.borrow_mut();
    let Some(sh) = d.shed.as_mut() else { return };
    let counts = shed_counts_now(skel, sh);
    let util = sh.ctrl.utilization(crate::shared::process::self_cpu_seconds(), wall);
    let queued = if sh.user.is_none() {
        let kept: u64 = counts.values().map(|c| c.kept).sum();
        kept.saturating_sub(sh.opened_read) as f64
    } else {
        0.0
    };
    let update = sh.ctrl.tick(&counts, util, queued, &stats.shed);
    if sh.ctrl.manual() {
        return;
    }
    match sh.user.as_mut() {
        Some(u) => u.set_fractions(update.set.iter().copied(), update.default_keep),
        None => {
            for &(dom, keep) in &update.set {
                shed_set_kernel(skel, dom, keep);
            }
            for dom in &update.remove {
                let _ = skel.maps.shed_keep.delete(&dom.to_ne_bytes());
            }
            shed_set_kernel(skel, DOMAIN_DEFAULT, update.default_keep);
            for dom in &update.forget {
                let _ = skel.maps.shed_counts.delete(&dom.to_ne_bytes());
            }
        }
    }
}
