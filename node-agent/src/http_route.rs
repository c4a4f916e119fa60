//! HTTP/1.x routes of transactions. The kernel parses a request's first bytes into a method
//! and a normalised path (src/bpf/http_route.h) and files the transaction's latency under the
//! route's id; this names the ids.

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

/// Route names by id, filled from the kernel's route map on first sight (an id's name never
/// changes while the BPF program is loaded).
#[derive(Default)]
pub struct RouteNames {
    by_id: std::collections::HashMap<u64, Arc<HttpRoute>>,
}

impl RouteNames {
    /// The name of `id`, asking `lookup` (the kernel map) when it is not known yet.
    pub fn get(&mut self, id: u64, lookup: impl FnOnce(u64) -> Option<HttpRoute>) -> Option<Arc<HttpRoute>> {
        if id == ROUTE_NONE {
            return None;
        }
        if let Some(r) = self.by_id.get(&id) {
            return Some(r.clone());
        }
        let r = Arc::new(if id == ROUTE_OTHER { HttpRoute::other() } else { lookup(id)? });
        self.by_id.insert(id, r.clone());
        Some(r)
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
        assert!(n.get(ROUTE_NONE, |_| panic!("not looked up")).is_none());
        assert_eq!(n.get(ROUTE_OTHER, |_| panic!("not looked up")).unwrap().method, "OTHER");
        let mut calls = 0;
        for _ in 0..3 {
            let r = n.get(77, |_| {
                calls += 1;
                HttpRoute::from_kernel(1, b"/a\0", 0)
            });
            assert_eq!(r.unwrap().path, "/a");
        }
        assert_eq!(calls, 1);
        assert!(n.get(78, |_| None).is_none(), "unknown to the kernel: not cached");
        assert_eq!(n.len(), 2);
    }
}
