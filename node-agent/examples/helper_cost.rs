//! Runs the programs of node-agent/bench/helper_cost.bpf.c through BPF_PROG_TEST_RUN, ROUNDS times
//! each in turn, and prints ns per step, median and min-max, and the median less `empty`'s (what
//! the step adds to a loop iteration). Each program times its own loop, so the figure does not
//! include the syscall. Usage: helper_cost OBJECT.o ITERATIONS ROUNDS
use libbpf_rs::{ObjectBuilder, ProgramInput};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let parse = |i: usize| args.get(i).and_then(|a| a.parse::<u64>().ok()).filter(|n| *n > 0);
    let (Some(path), Some(iters), Some(rounds)) = (args.get(1), parse(2), parse(3)) else {
        eprintln!("usage: helper_cost OBJECT.o ITERATIONS ROUNDS (both numbers above 0)");
        std::process::exit(2);
    };
    let fail = |what: &str, e: libbpf_rs::Error| -> ! {
        eprintln!("helper_cost: {what}: {e}");
        std::process::exit(1)
    };
    let obj = ObjectBuilder::default()
        .open_file(path)
        .and_then(|o| o.load())
        .unwrap_or_else(|e| fail(&format!("load {path}"), e));
    // What probe_read_user reads: memory of this process, as a socket call's buffer is.
    let user = [b'G'; 256];
    let run = |name: &str| -> u64 {
        let prog = obj
            .progs_mut()
            .find(|p| p.name() == name)
            .unwrap_or_else(|| fail(name, libbpf_rs::Error::from_raw_os_error(libc::ENOENT)));
        let mut ctx = [user.as_ptr() as u64, iters].map(u64::to_ne_bytes).concat();
        let input = ProgramInput { context_in: Some(&mut ctx), ..Default::default() };
        let out = prog.test_run(input).unwrap_or_else(|e| fail(name, e));
        u64::from(out.return_value)
    };
    run("fill");
    let names: Vec<String> = obj
        .progs()
        .map(|p| p.name().to_string_lossy().into_owned())
        .filter(|n| n != "fill")
        .collect();
    let mut ns: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
    for _ in 0..rounds {
        for (i, name) in names.iter().enumerate() {
            ns[i].push(run(name) as f64 / iters as f64);
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let base = names.iter().position(|n| n == "empty").map(|i| median(&mut ns[i].clone()));
    println!("| step | ns per step, median (min-max) | added to an empty step |");
    println!("|---|---|---|");
    for (name, v) in names.iter().zip(ns.iter_mut()) {
        let m = median(v);
        let added = base.map_or(String::from("-"), |b| format!("{:.1}", m - b));
        println!("| {name} | {m:.1} ({:.1}-{:.1}) | {added} |", v[0], v[v.len() - 1]);
    }
}
