//! The agent's integration tests, one module per file, built as one test binary: the shared
//! `common` module and the static libraries are compiled and linked once, not once per file.
//! One file alone: `cargo test --release -p wattgraph-agent --test agent FILE:: -- --test-threads=1`.
mod common;

// Counts allocations per thread, for the tests that prove a path allocates nothing or only so much.
#[global_allocator]
static A: common::alloc_count::Counting = common::alloc_count::Counting;

mod agent_bin;
mod agent_restart;
mod agent_restart_cpu;
mod agent_restart_txn;
mod agent_unpin;
mod capabilities;
mod capture;
mod cgroup_agent;
mod cgroup_report_alloc;
mod cgroup_sampler;
mod cgroup_stats_vectors;
mod config_file;
mod cpu;
mod http_route;
mod kafka_journal_cost;
mod kafka_send_alloc;
mod kafka_spool;
mod map_batch;
mod nat;
mod node_scope;
mod node_scope_cpu;
mod pinned_ring;
mod pinned_txn;
mod pinned_txn_closed;
mod pod_metadata;
mod poison_records;
mod power_budget_vectors;
mod power_cap_agent;
mod readme_flags;
mod resource_vectors;
mod service_mapper;
mod service_mapping_vectors;
mod shedding;
mod shedding_hash;
mod transaction_vectors;
mod transactions;
mod vectors;

/// `autotests = false`: a file in tests/ that is not declared above would never be built or run.
#[test]
fn every_test_file_is_a_module_of_this_binary() {
    let declared: Vec<&str> =
        include_str!("main.rs").lines().filter_map(|l| l.strip_prefix("mod ")?.strip_suffix(';')).collect();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if let Some(module) = name.strip_suffix(".rs") {
            if module != "main" && !declared.contains(&module) {
                missing.push(name);
            }
        }
    }
    assert!(missing.is_empty(), "add `mod NAME;` to tests/main.rs for {missing:?}");
}

/// The binaries are built without a test harness (`test = false` in Cargo.toml): a test written in
/// one would never run.
#[test]
fn the_binaries_hold_no_tests() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = vec![dir.join("main.rs")];
    for entry in std::fs::read_dir(dir.join("bin")).unwrap() {
        files.push(entry.unwrap().path());
    }
    let with_tests: Vec<_> = files
        .iter()
        .filter(|f| std::fs::read_to_string(f).unwrap().lines().any(|l| l.trim_start().starts_with("#[test]")))
        .collect();
    assert!(with_tests.is_empty(), "move the tests of {with_tests:?} into the library");
}
