// Compiles the BPF C at build time and generates the libbpf-rs skeletons.
use std::env;
use std::path::PathBuf;

use libbpf_cargo::SkeletonBuilder;

const PROGS: [(&str, &str); 2] = [
    ("src/bpf/connections.bpf.c", "connections.skel.rs"),
    ("src/bpf/sched.bpf.c", "sched.skel.rs"),
];

fn main() {
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    for (src, out) in PROGS {
        SkeletonBuilder::new()
            .source(src)
            .clang_args(["-I", "src/bpf", "-Wall", "-Wno-unused-function"])
            .build_and_generate(out_dir.join(out))
            .expect("failed to build BPF program (needs clang)");
        println!("cargo:rerun-if-changed={src}");
    }
    println!("cargo:rerun-if-changed=src/bpf/connections.h");
    println!("cargo:rerun-if-changed=src/bpf/http_route.h");
    println!("cargo:rerun-if-changed=src/bpf/sched.h");
    println!("cargo:rerun-if-changed=src/bpf/vmlinux.h");
}
