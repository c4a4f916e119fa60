//! The agent's --config file (TOML, toml_edit): keys checked against the flags and their types,
//! then the values through clap's own parsers, as `Config::load` does.
#![no_main]
use std::collections::HashSet;

use libfuzzer_sys::fuzz_target;
use wattgraph_agent::config::file_args_from_text;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match file_args_from_text(text, "config file 'fuzz.toml'", &HashSet::new()) {
        Ok((args, keys)) => {
            for a in args.iter().map(|a| a.to_str().expect("from UTF-8 text")) {
                assert!(keys.iter().any(|k| a == format!("--{k}") || a.starts_with(&format!("--{k}="))), "{a} names no key of {keys:?}");
            }
        }
        Err(e) => assert!(e.starts_with("config file 'fuzz.toml'"), "errors name the file: {e}"),
    }
});
