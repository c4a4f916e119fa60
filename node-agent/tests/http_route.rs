//! The kernel's HTTP/1.x request-line parser (src/capture/connections/http_route.h), compiled natively and run
//! on request starts: methods, normalisation of ids, query and fragment, truncation, what is
//! not a request, and which routes share an id. The BPF program runs the same code
//! (tests/transactions.rs checks it on real traffic).
use crate::common;

use std::collections::HashMap;

use common::hex;
use wattgraph_agent::capture::connections::http_route::HttpRoute;

const HARNESS: &str = r#"#include <string.h>
#include "http_route.h"
static int unhex(int c) { return c <= '9' ? c - '0' : c - 'a' + 10; }
int main(void) {
    static char line[1024];
    struct http_parse p;
    while (fgets(line, sizeof line, stdin)) {
        memset(&p, 0x5a, sizeof p); /* stale bytes from an earlier parse must not matter */
        size_t len = strcspn(line, "\n") / 2;
        p.n = len < HTTP_PEEK ? len : HTTP_PEEK;
        for (unsigned i = 0; i < p.n; i++)
            p.raw[i] = (char)(unhex(line[2 * i]) << 4 | unhex(line[2 * i + 1]));
        unsigned long long id = http_route_parse(&p);
        if (id == ROUTE_NONE) { printf("none\n"); continue; }
        printf("%u %d %llu ", p.r.method, p.r.truncated, id);
        for (int i = 0; i < HTTP_PATH_MAX; i++) printf("%02x", (unsigned char)p.r.path[i]);
        printf("\n");
    }
    return 0;
}
"#;

struct Parsed {
    route: HttpRoute,
    /// The kernel's method byte (enum http_method), as the route map holds it.
    method: u8,
    id: u64,
}

fn parse_all(inputs: &[Vec<u8>]) -> Option<Vec<Option<Parsed>>> {
    let exe = common::native::compile("http-route-parser", HARNESS)?;
    let input: String = inputs.iter().map(|b| hex(b) + "\n").collect();
    let out = common::native::run(&exe, input);
    let parsed: Vec<Option<Parsed>> = out
        .lines()
        .map(|l| {
            if l == "none" {
                return None;
            }
            let f: Vec<&str> = l.split(' ').collect();
            let path = common::unhex(f[3]);
            assert_eq!(path.len(), 64);
            let method = f[0].parse().unwrap();
            let route = HttpRoute::from_kernel(method, &path, f[1].parse().unwrap()).expect("a method");
            assert!(path[route.path.len()..].iter().all(|&b| b == 0), "path tail not zeroed: {l}");
            Some(Parsed { route, method, id: f[2].parse().unwrap() })
        })
        .collect();
    assert_eq!(parsed.len(), inputs.len());
    Some(parsed)
}

#[test]
fn request_lines_to_routes() {
    let long_seg = "a".repeat(70);
    let cases: Vec<(String, Option<(&str, String, bool)>)> = vec![
        ("GET / HTTP/1.1\r\n".into(), Some(("GET", "/".into(), false))),
        ("GET /index.html HTTP/1.0\r\n".into(), Some(("GET", "/index.html".into(), false))),
        ("POST /api/v1/orders HTTP/1.1\r\n".into(), Some(("POST", "/api/v1/orders".into(), false))),
        ("PUT /users/42 HTTP/1.1\r\n".into(), Some(("PUT", "/users/{id}".into(), false))),
        ("PATCH /users/42/ HTTP/1.1\r\n".into(), Some(("PATCH", "/users/{id}/".into(), false))),
        ("DELETE /a/1/b/22/c/333 HTTP/1.1\r\n".into(), Some(("DELETE", "/a/{id}/b/{id}/c/{id}".into(), false))),
        ("HEAD /q?id=7&x=y HTTP/1.1\r\n".into(), Some(("HEAD", "/q".into(), false))),
        ("GET /p#frag HTTP/1.1\r\n".into(), Some(("GET", "/p".into(), false))),
        ("TRACE /x HTTP/1.1\r\n".into(), Some(("TRACE", "/x".into(), false))),
        ("OPTIONS * HTTP/1.1\r\n".into(), Some(("OPTIONS", "*".into(), false))),
        ("CONNECT db:5432 HTTP/1.1\r\n".into(), Some(("CONNECT", "db:5432".into(), false))),
        // Ids: a UUID, a long hex hash, but not short hex words, versions or names with digits.
        ("GET /o/550e8400-e29b-41d4-a716-446655440000 HTTP/1.1\r\n".into(), Some(("GET", "/o/{id}".into(), false))),
        ("GET /blob/deadbeef01 HTTP/1.1\r\n".into(), Some(("GET", "/blob/{id}".into(), false))),
        ("GET /cafe/face/v2/img2.png HTTP/1.1\r\n".into(), Some(("GET", "/cafe/face/v2/img2.png".into(), false))),
        ("GET /deadbeef HTTP/1.1\r\n".into(), Some(("GET", "/deadbeef".into(), false))),
        // Truncated: a long path, and a request line that ends in the bytes read.
        (format!("GET /{long_seg} HTTP/1.1\r\n"), Some(("GET", format!("/{}", &long_seg[..62]), true))),
        ("GET /users/12".into(), Some(("GET", "/users/{id}".into(), true))),
        ("GET /users/ab".into(), Some(("GET", "/users/ab".into(), true))),
        // An id segment with no room left for "{id}": cut at its slash.
        (format!("GET /{}/12345 HTTP/1.1\r\n", "a".repeat(58)), Some(("GET", format!("/{}/", "a".repeat(58)), true))),
        // Not request lines.
        ("HTTP/1.1 200 OK\r\n".into(), None),
        ("get / HTTP/1.1\r\n".into(), None),
        ("GET\r\n".into(), None),
        ("GETX / HTTP/1.1\r\n".into(), None),
        ("GET  HTTP/1.1\r\n".into(), None),
        ("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".into(), None),
        ("GET /a\u{1}b HTTP/1.1\r\n".into(), None),
        ("ping!".into(), None),
    ];
    let mut inputs: Vec<Vec<u8>> = cases.iter().map(|(s, _)| s.as_bytes().to_vec()).collect();
    inputs.push(vec![0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03]); // TLS ClientHello
    inputs.push({
        let mut b = b"GET /caf".to_vec();
        b.extend_from_slice("é".as_bytes()); // bytes outside printable ASCII
        b.extend_from_slice(b" HTTP/1.1\r\n");
        b
    });
    // A path far beyond the bytes looked at (128) parses the first ones only.
    inputs.push(format!("GET /{} HTTP/1.1\r\n", "x/".repeat(200)).into_bytes());
    let Some(got) = parse_all(&inputs) else { return };
    for ((line, want), got) in cases.iter().zip(&got) {
        let got = got.as_ref().map(|p| (p.route.method, p.route.path.clone(), p.route.truncated));
        let want = want.as_ref().map(|(m, p, t)| (*m, p.clone(), *t));
        assert_eq!(got, want, "request {line:?}");
    }
    // The id is the FNV-1a of the path as finally written ("{id}" rewrites included), from a
    // basis holding the method, then the truncated flag; the kernel builds it while it parses.
    for (line, p) in cases.iter().map(|c| &c.0).zip(&got).filter_map(|(l, p)| Some((l, p.as_ref()?))) {
        let h = p.route.path.bytes().fold(0xcbf2_9ce4_8422_2325u64 ^ p.method as u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
        let h = h ^ p.route.truncated as u64;
        assert_eq!(p.id, if h <= 1 { h + 2 } else { h }, "id of {line:?}");
    }
    let n = cases.len();
    assert!(got[n].is_none(), "TLS");
    assert!(got[n + 1].is_none(), "non-ASCII path");
    let deep = got[n + 2].as_ref().expect("deep path");
    assert_eq!((deep.route.path.len(), deep.route.truncated), (63, true));
}

#[test]
fn route_ids_name_routes() {
    let lines = [
        "GET /users/1 HTTP/1.1\r\n",
        "GET /users/22?x HTTP/1.1\r\n", // same route as the first
        "POST /users/1 HTTP/1.1\r\n",   // another method
        "GET /users HTTP/1.1\r\n",
        "GET /users/12",                // truncated: kept apart from the complete one
        "GET /orders/1 HTTP/1.1\r\n",
    ];
    let inputs: Vec<Vec<u8>> = lines.iter().map(|l| l.as_bytes().to_vec()).collect();
    let Some(got) = parse_all(&inputs) else { return };
    let ids: Vec<u64> = got.iter().map(|p| p.as_ref().unwrap().id).collect();
    assert_eq!(ids[0], ids[1]);
    let distinct: HashMap<u64, usize> = ids.iter().skip(1).enumerate().map(|(i, id)| (*id, i)).collect();
    assert_eq!(distinct.len(), 5, "ids {ids:?}");
    assert!(ids.iter().all(|&id| id >= 2), "0 and 1 are reserved: {ids:?}");
    // Stable across runs (ids are only ever compared on one host, but must not depend on
    // stale bytes): the harness fills its state with garbage before each parse.
    let again = parse_all(&inputs).unwrap();
    assert_eq!(again.iter().map(|p| p.as_ref().unwrap().id).collect::<Vec<_>>(), ids);
}

/// The route a CPU remembers (http_remember / http_repeats_last), run over a sequence of request
/// starts as one CPU sees them: each line's id, and whether it came from the remembered route.
const REMEMBER_HARNESS: &str = r#"#include <string.h>
#include "http_route.h"
static int unhex(int c) { return c <= '9' ? c - '0' : c - 'a' + 10; }
int main(void) {
    static char line[1024];
    static struct http_parse p; /* zeroed, as the kernel's per-CPU map starts */
    while (fgets(line, sizeof line, stdin)) {
        size_t len = strcspn(line, "\n") / 2;
        p.n = len < HTTP_PEEK ? len : HTTP_PEEK;
        for (unsigned i = 0; i < p.n; i++)
            p.raw[i] = (char)(unhex(line[2 * i]) << 4 | unhex(line[2 * i + 1]));
        if (p.last_gen == 0 && http_repeats_last(&p)) {
            printf("hit %llu\n", p.last_id);
            continue;
        }
        unsigned long long id = http_route_parse(&p);
        if (id != ROUTE_NONE)
            http_remember(&p, id, 0);
        printf("parsed %llu\n", id);
    }
    return 0;
}
"#;

/// (came from the remembered route, id; 0 = none) per request start, in order.
fn run_remembering(inputs: &[Vec<u8>]) -> Option<Vec<(bool, u64)>> {
    let exe = common::native::compile("http-route-remember", REMEMBER_HARNESS)?;
    let input: String = inputs.iter().map(|b| hex(b) + "\n").collect();
    let out = common::native::run(&exe, input);
    let got: Vec<(bool, u64)> = out
        .lines()
        .map(|l| {
            let (how, id) = l.split_once(' ').unwrap();
            (how == "hit", id.parse().unwrap())
        })
        .collect();
    assert_eq!(got.len(), inputs.len());
    Some(got)
}

/// A request start repeating the last remembered one's bytes through the byte that ended its
/// path takes its route without a parse; any other is parsed. Either way the id is the parse's.
#[test]
fn a_request_repeating_the_last_ones_line_takes_its_route() {
    let at63 = format!("GET /{} HTTP/1.1\r\n", "p".repeat(58)); // the path ends at byte 63: remembered
    let at64 = format!("GET /{} HTTP/1.1\r\n", "p".repeat(59)); // ... at byte 64: not
    // (request start, expected to come from the remembered route)
    let cases: Vec<(String, bool)> = vec![
        ("GET /users/42 HTTP/1.1\r\nHost: a\r\n".into(), false),
        ("GET /users/42 HTTP/1.1\r\nHost: b\r\n".into(), true), // differs after the path only
        ("GET /users/42?x=1 HTTP/1.1\r\n".into(), false),       // ends the path with another byte
        ("GET /users/42?y=2 HTTP/1.1\r\n".into(), true),
        ("GET /users/43 HTTP/1.1\r\n".into(), false), // the same route from other bytes: parsed
        ("GET /users/4 HTTP/1.1\r\n".into(), false),  // a shorter path
        ("GET /users/4".into(), false),               // the bytes end before the path does
        ("GET /users/4".into(), false),               // ... so it was not remembered
        ("GET /users/4 HTTP/1.1\r\n".into(), false),
        ("GET /users/4 ".into(), true), // the bytes end right after the path's end: enough
        ("POST /users/4 HTTP/1.1\r\n".into(), false),
        ("PUT /users/4 HTTP/1.1\r\n".into(), false),
        ("\x16\x03\x01\x02\x00".into(), false), // not a request: nothing remembered
        ("PUT /users/4 HTTP/1.1\r\n".into(), true), // the last route named is still remembered
        (at63.clone(), false),
        (at63, true),
        (at64.clone(), false),
        (at64, false),
        ("GET /users/4 HTTP/1.1\r\n".into(), false),
    ];
    let inputs: Vec<Vec<u8>> = cases.iter().map(|(s, _)| s.as_bytes().to_vec()).collect();
    let Some(got) = run_remembering(&inputs) else { return };
    let fresh = parse_all(&inputs).unwrap();
    for (i, ((line, hit), (got_hit, id))) in cases.iter().zip(&got).enumerate() {
        assert_eq!(*got_hit, *hit, "case {i} {line:?}: from the remembered route");
        assert_eq!(*id, fresh[i].as_ref().map_or(0, |p| p.id), "case {i} {line:?}: id");
    }
}

/// Many request starts sharing prefixes, in a shuffled order: whatever the remembered route
/// answers is what a parse of the same bytes names.
#[test]
fn the_remembered_route_is_always_the_parses() {
    let (methods, heads, tails) = (["GET ", "POST ", "GETX "], ["/a", "/ab", "/a/1", "/a/12", "/a/b?", "/"], [" H", "? H", "#", "/ H", "", "\r\n"]);
    let mut inputs: Vec<Vec<u8>> = Vec::new();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    for _ in 0..5000 {
        let line = format!("{}{}{}", methods[next(3)], heads[next(6)], tails[next(6)]);
        inputs.push(line.into_bytes());
    }
    let Some(got) = run_remembering(&inputs) else { return };
    let fresh = parse_all(&inputs).unwrap();
    let hits = got.iter().filter(|(h, _)| *h).count();
    for (i, (_, id)) in got.iter().enumerate() {
        assert_eq!(*id, fresh[i].as_ref().map_or(0, |p| p.id), "line {i} {:?}", String::from_utf8_lossy(&inputs[i]));
    }
    assert!(hits > 50, "only {hits} of {} from the remembered route", inputs.len());
}
