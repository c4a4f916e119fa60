//! Kafka record values: every Avro single-object decoder of the agent on the same bytes (the
//! writer fingerprint sends each input down one of them). PowerBudget is what the agent
//! consumes; ServiceMapping what the mapper's topic holds; the others are its own records read
//! back by tools and tests. No input may panic or make a decoder allocate beyond its bound
//! (run.sh sets libFuzzer's -malloc_limit_mb).
#![no_main]
use libfuzzer_sys::fuzz_target;
use wattgraph_agent::output::avro::transaction as transactions;
use wattgraph_agent::output::avro::{self, budget as budget_avro, cgroup as cgroup_avro, resource as resource_avro};
use wattgraph_agent::output::avro::service_mapping as service_mappings;

fuzz_target!(|data: &[u8]| {
    let _ = budget_avro::decode_single_object(data);
    let _ = service_mappings::decode_single_object(data);
    let _ = avro::connection::decode_single_object(data);
    let _ = transactions::decode_single_object(data);
    let _ = resource_avro::decode_single_object(data);
    let _ = cgroup_avro::decode_single_object(data);
});
