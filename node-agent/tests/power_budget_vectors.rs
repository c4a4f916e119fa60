//! Shared PowerBudget vectors (schemas/test-vectors/power-budget/*.json), written by the Java
//! suite (`PowerBudgetVectorsTest`, the publisher's encoder): the agent decodes every
//! `singleObjectHex` to exactly `event`, and its apache-avro encoding of `event` gives the same
//! bytes.
use crate::common;

use serde_json::Value;
use wattgraph_agent::output::avro::budget::{decode_single_object, encode, Policy, PowerBudget};

fn to_budget(e: &Value) -> PowerBudget {
    let s = |k: &str| e[k].as_str().unwrap_or_else(|| panic!("{k} not a string")).to_string();
    let l = |k: &str| e[k].as_i64().unwrap_or_else(|| panic!("{k} not a long"));
    let d = |k: &str| e[k].as_f64().unwrap_or_else(|| panic!("{k} not a double"));
    PowerBudget {
        host_id: s("hostId"),
        sequence: l("sequence"),
        policy: Policy::from_symbol(&s("policy")).unwrap_or_else(|| panic!("policy {}", s("policy"))),
        computed_at_ns: l("computedAtNs"),
        valid_until_ns: l("validUntilNs"),
        budget_watts: d("budgetWatts"),
        min_watts: d("minWatts"),
        max_watts: d("maxWatts"),
        previous_watts: if e["previousWatts"].is_null() { None } else { Some(d("previousWatts")) },
        reason: s("reason"),
    }
}

#[test]
fn shared_power_budget_vectors_decode() {
    common::check_vectors("power-budget", 3, to_budget, |b| encode(b).unwrap(), decode_single_object);
    // Doubles bit for bit (subnormals, Double.MAX_VALUE), not only ==.
    for f in common::vector_files("power-budget", 3) {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        let want = to_budget(&v["event"]);
        let got = decode_single_object(&common::unhex(v["singleObjectHex"].as_str().unwrap())).unwrap();
        for (a, b) in [(got.budget_watts, want.budget_watts), (got.min_watts, want.min_watts), (got.max_watts, want.max_watts)] {
            assert_eq!(a.to_bits(), b.to_bits(), "{}", f.display());
        }
        assert_eq!(got.previous_watts.map(f64::to_bits), want.previous_watts.map(f64::to_bits), "{}", f.display());
    }
}
