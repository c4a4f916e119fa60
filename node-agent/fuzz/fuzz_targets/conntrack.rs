//! A datagram read from a ctnetlink socket (dump answers, NEW/DESTROY events), parsed by
//! `conntrack::for_each_message` and taken into a small NAT table as the reader does.
#![no_main]
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use wattgraph_agent::capture::conntrack::{for_each_message, End, NatTable};

const CAPACITY: usize = 4;

fuzz_target!(|data: &[u8]| {
    let mut table = NatTable::detached(CAPACITY, 1_000, Arc::default());
    let mut now = 1u64;
    for_each_message(data, |m| {
        now += 100;
        match m {
            Ok(Some(m)) => table.apply(m, now),
            Ok(None) | Err(End::Done) => {}
            // As the dump reports it.
            Err(End::Error(code)) => drop(std::io::Error::from_raw_os_error(code).to_string()),
        }
    });
    assert!(table.len() <= CAPACITY);
    table.expire(now + 1_000);
});
