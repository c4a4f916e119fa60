//! HTTP/1.x routes of transactions. The kernel parses a request's first bytes into a method
//! and a normalised path (src/capture/connections/http_route.h) and files the transaction's latency under the
//! route's id; this names the ids.

use std::collections::HashMap;
use std::sync::Arc;

/// Never a route id: the transaction was not an HTTP/1.x request (mirrors ROUTE_NONE).
pub const ROUTE_NONE: u64 = 0;
/// The kernel's route table was full (mirrors ROUTE_OTHER).
pub const ROUTE_OTHER: u64 = 1;

/// Index = enum http_method of http_route.h.
const METHODS: [&str; 10] = ["", "GET", "POST", "PUT", "DELETE", "HEAD", "PATCH", "OPTIONS", "CONNECT", "TRACE"];

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HttpRoute {
    pub method: &'static str,
    pub path: String,
    pub truncated: bool,
}

impl HttpRoute {
    /// What ROUTE_OTHER stands for.
    pub fn other() -> HttpRoute {
        HttpRoute { method: "OTHER", path: "*".into(), truncated: false }
    }

    /// From the kernel's `struct http_route` (method byte, NUL-padded path, truncated flag);
    /// None for a method the kernel does not produce.
    pub fn from_kernel(method: u8, path: &[u8], truncated: u8) -> Option<HttpRoute> {
        let method = *METHODS.get(method as usize).filter(|m| !m.is_empty())?;
        let end = path.iter().position(|&b| b == 0).unwrap_or(path.len());
        // The kernel keeps printable ASCII only.
        let path = String::from_utf8_lossy(&path[..end]).into_owned();
        Some(HttpRoute { method, path, truncated: truncated != 0 })
    }
}

/// Route names by id, filled from the kernel's route map on first sight (an id always names the
/// same route: it is a hash of the name), with when each was last used, so that routes nobody
/// uses any more can leave the kernel's bounded table to routes that are new.
#[derive(Default)]
pub struct RouteNames {
    /// Name and last use (boot-clock ns).
    by_id: HashMap<u64, (Arc<HttpRoute>, u64)>,
    /// Pruned from the kernel's table (at the ns given), still named for one more idle period: a
    /// request that began before the pruning completes under its id.
    retired: HashMap<u64, (Arc<HttpRoute>, u64)>,
    /// Ids in the kernel's table that no transaction has used yet (a request that never got its
    /// answer), with when a prune first saw them.
    unused: HashMap<u64, u64>,
}

impl RouteNames {
    /// The name of `id`, used at `now`, asking `lookup` (the kernel map) when it is not known.
    pub fn get(&mut self, id: u64, now: u64, lookup: impl FnOnce(u64) -> Option<HttpRoute>) -> Option<Arc<HttpRoute>> {
        if id == ROUTE_NONE {
            return None;
        }
        if let Some((r, used)) = self.by_id.get_mut(&id) {
            *used = now;
            return Some(r.clone());
        }
        let r = match self.retired.remove(&id) {
            Some((r, _)) => r,
            None => Arc::new(if id == ROUTE_OTHER { HttpRoute::other() } else { lookup(id)? }),
        };
        self.unused.remove(&id);
        self.by_id.insert(id, (r.clone(), now));
        Some(r)
    }

    /// Appends to `out` the ids to delete from the kernel's table at `now`: named routes unused
    /// for `idle_ns`, and ids of `in_kernel` (the table's keys) no transaction has used for
    /// that long since a prune first saw them. Forgets retired names older than `idle_ns`.
    pub fn prune(&mut self, now: u64, idle_ns: u64, in_kernel: &[u64], out: &mut Vec<u64>) {
        let idle = |since: u64| now.saturating_sub(since) >= idle_ns;
        self.retired.retain(|_, (_, at)| !idle(*at));
        let retired = &mut self.retired;
        self.by_id.retain(|&id, (r, used)| {
            if id == ROUTE_OTHER || !idle(*used) {
                return true;
            }
            retired.insert(id, (r.clone(), now));
            out.push(id);
            false
        });
        if !self.unused.is_empty() {
            let present: std::collections::HashSet<u64> = in_kernel.iter().copied().collect();
            self.unused.retain(|id, _| present.contains(id));
        }
        for &id in in_kernel {
            if self.by_id.contains_key(&id) || self.retired.contains_key(&id) {
                continue;
            }
            let seen = *self.unused.entry(id).or_insert(now);
            if idle(seen) {
                self.unused.remove(&id);
                out.push(id);
            }
        }
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_route_decoding() {
        let mut path = [0u8; 64];
        path[..11].copy_from_slice(b"/users/{id}");
        let r = HttpRoute::from_kernel(2, &path, 0).unwrap();
        assert_eq!((r.method, r.path.as_str(), r.truncated), ("POST", "/users/{id}", false));
        assert!(HttpRoute::from_kernel(0, &path, 0).is_none());
        assert!(HttpRoute::from_kernel(10, &path, 0).is_none());
        assert!(HttpRoute::from_kernel(9, &[b'/'; 64], 1).unwrap().truncated);
    }

    #[test]
    fn names_cached_and_reserved_ids() {
        let mut n = RouteNames::default();
        assert!(n.get(ROUTE_NONE, 0, |_| panic!("not looked up")).is_none());
        assert_eq!(n.get(ROUTE_OTHER, 0, |_| panic!("not looked up")).unwrap().method, "OTHER");
        let mut calls = 0;
        for _ in 0..3 {
            let r = n.get(77, 0, |_| {
                calls += 1;
                HttpRoute::from_kernel(1, b"/a\0", 0)
            });
            assert_eq!(r.unwrap().path, "/a");
        }
        assert_eq!(calls, 1);
        assert!(n.get(78, 0, |_| None).is_none(), "unknown to the kernel: not cached");
        assert_eq!(n.len(), 2);
    }

    fn named(path: &str) -> impl FnOnce(u64) -> Option<HttpRoute> + '_ {
        move |_| Some(HttpRoute { method: "GET", path: path.into(), truncated: false })
    }

    #[test]
    fn idle_routes_pruned_and_named_one_more_period() {
        const IDLE: u64 = 100;
        let mut n = RouteNames::default();
        n.get(ROUTE_OTHER, 0, |_| None);
        n.get(10, 0, named("/old"));
        n.get(11, 0, named("/busy"));
        let mut out = Vec::new();
        n.prune(50, IDLE, &[10, 11], &mut out);
        assert!(out.is_empty(), "nothing idle yet");
        n.get(11, 120, |_| panic!("cached"));
        n.prune(130, IDLE, &[10, 11], &mut out);
        assert_eq!(out, vec![10], "unused since 0; OTHER is never pruned (not in the kernel's table)");
        assert_eq!(n.len(), 2);
        // A request begun before the pruning completes: still named, without asking the kernel.
        assert_eq!(n.get(10, 140, |_| panic!("retired, not forgotten")).unwrap().path, "/old");
        n.get(10, 250, |_| panic!("cached"));
        out.clear();
        n.prune(300, IDLE, &[11], &mut out);
        assert_eq!(out, vec![11], "/busy unused since 120; /old used again at 250: not yet");
        out.clear();
        n.prune(450, IDLE, &[], &mut out);
        assert_eq!(out, vec![10]);
        // Gone for good after one more idle period: the kernel is asked again.
        n.prune(600, IDLE, &[], &mut out);
        assert_eq!(n.get(10, 610, named("/old")).unwrap().path, "/old");
    }

    #[test]
    fn kernel_ids_never_used_pruned_after_an_idle_period() {
        const IDLE: u64 = 100;
        let mut n = RouteNames::default();
        let mut out = Vec::new();
        n.prune(0, IDLE, &[5, 6], &mut out);
        assert!(out.is_empty(), "first seen now");
        n.get(6, 50, named("/answered"));
        n.prune(99, IDLE, &[5, 6], &mut out);
        assert!(out.is_empty());
        n.prune(100, IDLE, &[5, 6], &mut out);
        assert_eq!(out, vec![5], "in the table for an idle period, never used; 6 was used at 50");
    }
}
