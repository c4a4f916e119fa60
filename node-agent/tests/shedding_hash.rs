//! The kernel's sampling hash (`shed_conn_hash`, src/capture/connections/connections.h) compiled natively with
//! the host C compiler, against `capture::shedding::connection_hash`: user mode, kernel mode and the
//! agents on both ends of a connection must keep the same connections.
use crate::common;

use wattgraph_agent::shared::net::{addr16_from_ip, Role};
use wattgraph_agent::capture::shedding::connection_hash;

#[test]
fn kernel_hash_matches_rust() {
    let Some(exe) = common::native::compile(
        "shed-hash-parity",
        r#"#include "connections.h"
static int hex16(const char *s, __u8 *out) {
    for (int i = 0; i < 16; i++) { unsigned v; if (sscanf(s + 2 * i, "%2x", &v) != 1) return 0; out[i] = (__u8)v; }
    return 1;
}
int main(void) {
    char line[160], la[33], ra[33];
    unsigned role, lp, rp;
    while (fgets(line, sizeof line, stdin)) {
        if (sscanf(line, "%u %32s %u %32s %u", &role, la, &lp, ra, &rp) != 5) continue;
        __u8 l[16], r[16];
        if (!hex16(la, l) || !hex16(ra, r)) continue;
        printf("%u\n", shed_conn_hash((__u8)role, l, (__u16)lp, r, (__u16)rp));
    }
    return 0;
}
"#,
    ) else {
        return;
    };
    let addrs: Vec<[u8; 16]> = ["127.0.0.1", "10.244.1.5", "192.0.2.255", "::1", "2001:db8::abcd:1", "255.255.255.255", "0.0.0.0"]
        .iter()
        .map(|a| addr16_from_ip(a.parse().unwrap()))
        .collect();
    let ports = [0u16, 1, 80, 8080, 32768, 40001, 60999, 65535];
    let roles = [Role::Client, Role::Server, Role::Unknown];
    let mut cases = Vec::new();
    for (i, l) in addrs.iter().enumerate() {
        for r in &addrs[i..] {
            for &lp in &ports {
                for &rp in &ports {
                    for &role in &roles {
                        cases.push((role, *l, lp, *r, rp));
                    }
                }
            }
        }
    }
    let hex = |a: &[u8; 16]| a.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let input: String =
        cases.iter().map(|(role, l, lp, r, rp)| format!("{} {} {lp} {} {rp}\n", role.index(), hex(l), hex(r))).collect();
    let out = common::native::run(&exe, input);
    let got: Vec<u32> = out.lines().map(|l| l.parse().unwrap()).collect();
    assert_eq!(got.len(), cases.len(), "one line per case");
    for ((role, l, lp, r, rp), k) in cases.iter().zip(&got) {
        assert_eq!(*k, connection_hash(*role, (l, *lp), (r, *rp)), "kernel vs Rust hash of {role:?} {l:?}:{lp} {r:?}:{rp}");
    }
    println!("kernel shed_conn_hash == connection_hash on {} cases", cases.len());
}
