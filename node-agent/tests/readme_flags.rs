//! The flag tables of node-agent/README.md against the binaries' own `--help`: every flag in both,
//! with the same default, so the reference cannot drift from the code.
use std::collections::BTreeMap;
use std::process::Command;

/// Flag -> default (None: no default) as a table of the README lists them, below `heading`.
fn readme_table(readme: &str, heading: &str) -> BTreeMap<String, Option<String>> {
    let start = readme.find(heading).unwrap_or_else(|| panic!("README has no heading {heading:?}"));
    let mut rows = BTreeMap::new();
    let mut in_table = false;
    for line in readme[start + heading.len()..].lines() {
        if !line.starts_with('|') {
            if in_table {
                break;
            }
            continue;
        }
        in_table = true;
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let Some(flag) = cells[0].strip_prefix("`--").map(|f| format!("--{}", f.split([' ', '`']).next().unwrap())) else { continue };
        let default = cells.get(1).and_then(|c| c.strip_prefix('`')).map(|c| c.split('`').next().unwrap().to_string());
        assert!(rows.insert(flag.clone(), default).is_none(), "{heading}: {flag} listed twice");
    }
    assert!(!rows.is_empty(), "no flag rows below {heading:?}");
    rows
}

/// Flag -> default as clap prints them in `--help` (long or short form), without --help/--version.
fn help_flags(exe: &str) -> BTreeMap<String, Option<String>> {
    let out = Command::new(exe).arg("--help").output().unwrap_or_else(|e| panic!("{exe} --help: {e}"));
    assert!(out.status.success(), "{exe} --help: {:?}", out.status);
    let text = String::from_utf8(out.stdout).unwrap();
    let mut flags: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        let t = if t.len() > 4 && t.starts_with('-') && t.as_bytes()[2] == b',' { t[4..].trim_start() } else { t };
        match t.strip_prefix("--").filter(|_| line.starts_with("  ")) {
            Some(rest) if rest.starts_with(|c: char| c.is_ascii_lowercase()) => {
                let name = rest.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')).next().unwrap();
                flags.push((format!("--{name}"), line.to_string()));
            }
            _ => {
                if let Some((_, body)) = flags.last_mut() {
                    body.push('\n');
                    body.push_str(line);
                }
            }
        }
    }
    flags
        .into_iter()
        .filter(|(f, _)| f != "--help" && f != "--version")
        .map(|(f, body)| {
            let default = body.find("[default: ").map(|i| body[i + 10..].split(']').next().unwrap().to_string());
            (f, default)
        })
        .collect()
}

fn compare(binary: &str, heading: &str) {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let table = readme_table(&readme, heading);
    let help = help_flags(binary);
    let missing: Vec<_> = help.keys().filter(|f| !table.contains_key(*f)).collect();
    let unknown: Vec<_> = table.keys().filter(|f| !help.contains_key(*f)).collect();
    assert!(missing.is_empty() && unknown.is_empty(), "{heading}: in --help but not in the README {missing:?}; in the README but not in --help {unknown:?}");
    for (flag, default) in &help {
        assert_eq!(&table[flag], default, "{heading}: default of {flag} (README vs --help)");
    }
}

#[test]
fn agent_flags_table_is_the_help() {
    compare(env!("CARGO_BIN_EXE_wattgraph-agent"), "### `wattgraph-agent` flags");
}

#[test]
fn service_mapper_flags_table_is_the_help() {
    compare(env!("CARGO_BIN_EXE_wattgraph-service-mapper"), "### `wattgraph-service-mapper` flags");
}
