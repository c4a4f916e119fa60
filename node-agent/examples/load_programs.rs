//! The tracing programs of a compiled BPF object, loaded and attached without the agent, for the
//! per-program cost benchmark (node-agent/bench/prog_cost.sh): iterator programs are not loaded
//! (the agent attaches them to its maps itself, and some kernels refuse them), nothing is drained
//! and the maps keep the object's sizes and constants. Writes the number of programs attached to
//! READY once they are, and holds them until its standard input closes.
//! Usage: load_programs OBJECT.o READY
use libbpf_rs::ObjectBuilder;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(path), Some(ready)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: load_programs OBJECT.o READY");
        std::process::exit(2);
    };
    let fail = |what: &str, e: libbpf_rs::Error| -> ! {
        eprintln!("load_programs: {what} {path}: {e}");
        std::process::exit(1)
    };
    let is_iter = |section: &std::ffi::OsStr| section.to_string_lossy().starts_with("iter/");
    let mut open = ObjectBuilder::default().open_file(path).unwrap_or_else(|e| fail("open", e));
    for mut p in open.progs_mut() {
        if is_iter(p.section()) {
            p.set_autoload(false);
        }
    }
    let obj = open.load().unwrap_or_else(|e| fail("load", e));
    let mut links = Vec::new();
    for p in obj.progs_mut().filter(|p| !is_iter(p.section())) {
        links.push(p.attach().unwrap_or_else(|e| fail("attach a program of", e)));
    }
    std::fs::write(ready, format!("{}\n", links.len())).unwrap_or_else(|e| {
        eprintln!("load_programs: {ready}: {e}");
        std::process::exit(1)
    });
    let mut line = String::new();
    while std::io::stdin().read_line(&mut line).is_ok_and(|n| n > 0) {}
}
