//! The `--config FILE` (TOML): its keys are the long flags without `--`, turned into arguments
//! that go before the command line's, each checked for the type its flag takes.
use std::collections::HashSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::{ArgAction, CommandFactory};

use super::Config;

/// Long names given on the command line (`--name` or `--name=value`), up to a `--`.
/// Exact because no flag takes a value starting with `--` as a separate token.
pub(super) fn cli_names(argv: &[OsString]) -> HashSet<String> {
    let mut names = HashSet::new();
    for a in argv.iter().skip(1) {
        let Some(a) = a.to_str() else { continue };
        if a == "--" {
            break;
        }
        if let Some(n) = a.strip_prefix("--") {
            names.insert(n.split_once('=').map_or(n, |(k, _)| k).to_string());
        }
    }
    names
}

/// The `--config` value of the command line, if any.
pub(super) fn config_path(argv: &[OsString]) -> Option<PathBuf> {
    let mut it = argv.iter().skip(1);
    while let Some(a) = it.next() {
        if a == "--" {
            break;
        }
        if a == "--config" {
            return it.next().map(PathBuf::from);
        }
        if let Some(p) = a.to_str().and_then(|a| a.strip_prefix("--config=")) {
            return Some(PathBuf::from(p));
        }
    }
    None
}

/// The TOML type a flag takes in the file.
#[derive(Clone, Copy, PartialEq)]
enum Want {
    Switch,
    List,
    Integer,
    Number,
    Text,
}

fn want(arg: &clap::Arg) -> Want {
    use std::any::TypeId;
    match arg.get_action() {
        ArgAction::SetTrue => Want::Switch,
        ArgAction::Append => Want::List,
        _ => {
            let t = arg.get_value_parser().type_id();
            if [TypeId::of::<u64>(), TypeId::of::<u32>(), TypeId::of::<u16>(), TypeId::of::<i64>()].iter().any(|x| t == *x) {
                Want::Integer
            } else if t == TypeId::of::<f64>() {
                Want::Number
            } else {
                Want::Text
            }
        }
    }
}

/// The file's keys as `--key=value` arguments (each checked for its TOML type), with the keys
/// they came from. Keys named in `skip` (given on the command line) are left out, so a
/// command-line list replaces the file's list instead of adding to it.
pub(super) fn file_args(path: &Path, skip: &HashSet<String>) -> Result<(Vec<OsString>, Vec<String>), String> {
    let where_ = format!("config file '{}'", path.display());
    let text = std::fs::read_to_string(path).map_err(|e| format!("{where_}: cannot read it: {e}"))?;
    file_args_from_text(&text, &where_, skip)
}

/// `file_args` of a file's text; `where_` names the file in messages.
pub fn file_args_from_text(text: &str, where_: &str, skip: &HashSet<String>) -> Result<(Vec<OsString>, Vec<String>), String> {
    let doc: toml_edit::DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| format!("{where_}: not valid TOML: {}", e.to_string().trim_end()))?;
    let cmd = Config::command();
    let mut args = Vec::new();
    let mut keys = Vec::new();
    for (key, item) in doc.as_table().iter() {
        let arg = cmd
            .get_arguments()
            .find(|a| a.get_long() == Some(key) && !["config", "help", "version"].contains(&key))
            .ok_or_else(|| format!("{where_}: unknown key '{key}' (keys are the long flag names without '--'; see --help)"))?;
        let w = want(arg);
        let bad = |expected: &str| {
            let got = match item {
                toml_edit::Item::Value(v) => v.type_name(),
                _ => "table",
            };
            format!("{where_}: key '{key}' must be {expected}, not {got}")
        };
        let value = item.as_value();
        let mut values: Vec<String> = Vec::new();
        match w {
            Want::Switch => match value.and_then(|v| v.as_bool()) {
                Some(true) => values.push(String::new()),
                Some(false) => {}
                None => return Err(bad("a boolean (true or false)")),
            },
            Want::List => {
                let a = value.and_then(|v| v.as_array()).ok_or_else(|| bad("an array of strings"))?;
                for v in a.iter() {
                    values.push(v.as_str().ok_or_else(|| bad("an array of strings"))?.to_string());
                }
            }
            Want::Integer => values.push(value.and_then(|v| v.as_integer()).ok_or_else(|| bad("an integer"))?.to_string()),
            Want::Number => {
                let v = value.and_then(|v| v.as_float().or_else(|| v.as_integer().map(|i| i as f64))).ok_or_else(|| bad("a number"))?;
                values.push(v.to_string());
            }
            Want::Text => values.push(value.and_then(|v| v.as_str()).ok_or_else(|| bad("a string"))?.to_string()),
        }
        if skip.contains(key) {
            continue;
        }
        for v in values {
            // `--key=value` in one token, so a value starting with '-' stays a value.
            args.push(OsString::from(if w == Want::Switch { format!("--{key}") } else { format!("--{key}={v}") }));
        }
        keys.push(key.to_string());
    }
    // The file's values alone through clap's own value parsers, to blame the file for them
    // (flags required of the whole configuration may come from the command line).
    let mut only_file = vec![OsString::from("wattgraph-agent")];
    only_file.extend(args.iter().cloned());
    if let Err(e) = Config::command().try_get_matches_from(only_file) {
        if e.kind() != clap::error::ErrorKind::MissingRequiredArgument {
            let arg = e.get(clap::error::ContextKind::InvalidArg).map(|a| a.to_string()).unwrap_or_default();
            let key = arg.trim_start_matches("--").split([' ', '=']).next().unwrap_or("").to_string();
            let msg = e.to_string();
            let first = msg.lines().next().unwrap_or("").trim_start_matches("error: ");
            return Err(format!("{where_}: key '{key}': {first}"));
        }
    }
    Ok((args, keys))
}
