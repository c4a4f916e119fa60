//! The first bytes of a TCP payload, parsed by the kernel's request-line parser (src/capture/connections/http_route.h,
//! compiled natively by build.rs) and named in user space (`HttpRoute::from_kernel`), as
//! the capture's transaction drain does with the kernel's route map. Checks what the BPF side promises.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wattgraph_agent::capture::connections::http_route::{HttpRoute, ROUTE_NONE, ROUTE_OTHER};

extern "C" {
    fn wg_fuzz_http_route_parse(data: *const u8, len: usize, method: *mut u8, truncated: *mut u8, path: *mut u8) -> u64;
    fn wg_fuzz_http_route_remembered(a: *const u8, alen: usize, b: *const u8, blen: usize) -> i32;
}

fuzz_target!(|data: &[u8]| {
    // The route remembered after one request start (the first byte says where the second
    // begins) answers for the second only with the id its own parse names.
    if let Some((&cut, rest)) = data.split_first() {
        let (a, b) = rest.split_at((cut as usize).min(rest.len()));
        // SAFETY: both slices are valid for their lengths.
        let same = unsafe { wg_fuzz_http_route_remembered(a.as_ptr(), a.len(), b.as_ptr(), b.len()) };
        assert_ne!(same, 0, "remembered route of {a:?} answered for {b:?} with another id");
    }
    let (mut method, mut truncated, mut path) = (0u8, 0u8, [0u8; 64]);
    // SAFETY: data is valid for len bytes; the outputs are valid for what the harness writes.
    let id = unsafe { wg_fuzz_http_route_parse(data.as_ptr(), data.len(), &mut method, &mut truncated, path.as_mut_ptr()) };
    if id == ROUTE_NONE {
        return;
    }
    assert_ne!(id, ROUTE_OTHER, "a route id is never the reserved ROUTE_OTHER");
    let r = HttpRoute::from_kernel(method, &path, truncated).expect("a parsed route has a method the agent names");
    assert!(!r.path.is_empty() && r.path.len() < 64, "path length {}", r.path.len());
    assert!(r.path.bytes().all(|b| (0x21..=0x7e).contains(&b)), "printable ASCII only: {:?}", r.path);
    assert!(path[r.path.len()..].iter().all(|&b| b == 0), "path tail zeroed: {path:?}");
    assert!(data.starts_with(r.method.as_bytes()), "method {} from {:?}", r.method, &data[..data.len().min(16)]);
    // The id the kernel builds while it parses is the FNV-1a of the path as finally written, from
    // a basis holding the method, then the truncated flag (0 and 1 are reserved).
    let h = r.path.bytes().fold(0xcbf2_9ce4_8422_2325u64 ^ method as u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
    let h = h ^ truncated as u64;
    assert_eq!(id, if h <= 1 { h + 2 } else { h }, "route id of {:?}", r.path);
});
