// Compiles the BPF C at build time and generates the libbpf-rs skeleton.
use std::env;
use std::path::PathBuf;

use libbpf_cargo::SkeletonBuilder;

const SRC: &str = "src/bpf/connections.bpf.c";

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR")).join("connections.skel.rs");
    SkeletonBuilder::new()
        .source(SRC)
        .clang_args(["-I", "src/bpf", "-Wall", "-Wno-unused-function"])
        .build_and_generate(&out)
        .expect("failed to build BPF program (needs clang)");
    println!("cargo:rerun-if-changed={SRC}");
    println!("cargo:rerun-if-changed=src/bpf/connections.h");
    println!("cargo:rerun-if-changed=src/bpf/vmlinux.h");
}
