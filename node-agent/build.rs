// Compiles the BPF C at build time and generates the libbpf-rs skeletons. Each program set's C
// stands beside the Rust that loads it; vmlinux.h is shared by both.
use std::env;
use std::path::PathBuf;

use libbpf_cargo::SkeletonBuilder;

/// (C source, its folder for local headers, generated skeleton, name of the object's hash)
const PROGS: [(&str, &str, &str, &str); 2] = [
    ("src/capture/connections/connections.bpf.c", "src/capture/connections", "connections.skel.rs", "WG_CONNECTIONS_BPF_HASH"),
    ("src/capture/sched/sched.bpf.c", "src/capture/sched", "sched.skel.rs", "WG_SCHED_BPF_HASH"),
];

fn main() {
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    for (src, dir, out, hash) in PROGS {
        let obj = out_dir.join(out).with_extension("o");
        SkeletonBuilder::new()
            .source(src)
            .obj(&obj)
            .clang_args(["-I", dir, "-I", "src/capture", "-Wall", "-Wno-unused-function"])
            .build_and_generate(out_dir.join(out))
            .expect("failed to build BPF program (needs clang)");
        println!("cargo:rerun-if-changed={src}");
        // Pinned programs are reused only by an agent of the same object (capture::pins).
        let bytes = std::fs::read(&obj).expect("read the BPF object");
        println!("cargo:rustc-env={hash}={:016x}", fnv1a(&bytes));
    }
    println!("cargo:rerun-if-changed=src/capture/connections/connections.h");
    println!("cargo:rerun-if-changed=src/capture/connections/http_route.h");
    println!("cargo:rerun-if-changed=src/capture/sched/sched.h");
    println!("cargo:rerun-if-changed=src/capture/vmlinux.h");
    println!("cargo:rerun-if-changed=src/shared/fnv1a.rs");
}

include!("src/shared/fnv1a.rs");
