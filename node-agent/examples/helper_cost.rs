//! Runs the programs of node-agent/bench/helper_cost.bpf.c through BPF_PROG_TEST_RUN, ROUNDS times
//! each in turn, and prints ns per step, median and min-max, and the median less `empty`'s (what
//! the step adds to a loop iteration). Each program times its own loop, so the figure does not
//! include the syscall. Usage: helper_cost OBJECT.o ITERATIONS(<=120,000) ROUNDS
use libbpf_rs::{MapCore, ObjectBuilder, ProgramInput, RingBufferBuilder};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let parse = |i: usize| args.get(i).and_then(|a| a.parse::<u64>().ok()).filter(|n| *n > 0);
    let (Some(path), Some(iters), Some(rounds)) = (args.get(1), parse(2), parse(3)) else {
        eprintln!("usage: helper_cost OBJECT.o ITERATIONS ROUNDS (both numbers above 0)");
        std::process::exit(2);
    };
    if iters > 120_000 {
        eprintln!("helper_cost: ITERATIONS {iters} is over 120,000, the most events ringbuf_event's ring holds");
        std::process::exit(2);
    }
    let fail = |what: &str, e: libbpf_rs::Error| -> ! {
        eprintln!("helper_cost: {what}: {e}");
        std::process::exit(1)
    };
    let obj = ObjectBuilder::default()
        .open_file(path)
        .and_then(|o| o.load())
        .unwrap_or_else(|e| fail(&format!("load {path}"), e));
    // What probe_read_user reads: memory of this process, as a socket call's buffer is.
    let user = vec![b'G'; 2048];
    // ringbuf_event's events are dropped after each run, so every run finds the ring empty.
    let ring_map = obj
        .maps()
        .find(|m| m.name() == "ring")
        .unwrap_or_else(|| fail("map ring", libbpf_rs::Error::from_raw_os_error(libc::ENOENT)));
    let mut ring = RingBufferBuilder::new();
    ring.add(&ring_map, |_: &[u8]| 0).unwrap_or_else(|e| fail("ring buffer", e));
    let ring = ring.build().unwrap_or_else(|e| fail("ring buffer", e));
    let run = |name: &str| -> u64 {
        let prog = obj
            .progs_mut()
            .find(|p| p.name() == name)
            .unwrap_or_else(|| fail(name, libbpf_rs::Error::from_raw_os_error(libc::ENOENT)));
        let mut ctx = [user.as_ptr() as u64, iters].map(u64::to_ne_bytes).concat();
        let input = ProgramInput { context_in: Some(&mut ctx), ..Default::default() };
        let out = prog.test_run(input).unwrap_or_else(|e| fail(name, e));
        ring.consume().unwrap_or_else(|e| fail("ring buffer", e));
        u64::from(out.return_value)
    };
    run("fill");
    let names: Vec<String> = obj
        .progs()
        .filter(|p| p.section().to_string_lossy() == "raw_tp")
        .map(|p| p.name().to_string_lossy().into_owned())
        .filter(|n| n != "fill")
        .collect();
    let mut ns: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
    for _ in 0..rounds {
        for (i, name) in names.iter().enumerate() {
            ns[i].push(run(name) as f64 / iters as f64);
        }
    }
    let sock = sock_storage(&obj, rounds).unwrap_or_else(|e| fail("sk_storage_create_delete", e));
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
    let mut sock = sock;
    let m = median(&mut sock);
    println!(
        "| sk_storage_create_delete (a plain loop on the send tracepoint) | {m:.1} ({:.1}-{:.1}) | {m:.1} |",
        sock[0],
        sock[sock.len() - 1]
    );
}

/// ns per step of `sk_storage_create_delete`, one figure a round: the program runs its
/// SOCK_STEPS steps on the next send of this process, on a loopback connection of its own.
fn sock_storage(obj: &libbpf_rs::Object, rounds: u64) -> libbpf_rs::Result<Vec<f64>> {
    use std::io::{Read, Write};
    const SOCK_STEPS: f64 = 1000.0; // as in helper_cost.bpf.c
    let io = |e: std::io::Error| libbpf_rs::Error::from(e);
    let missing = || libbpf_rs::Error::from_raw_os_error(libc::ENOENT);
    let prog = obj.progs_mut().find(|p| p.name() == "sk_storage_create_delete").ok_or_else(missing)?;
    let _link = prog.attach()?;
    let bss = obj.maps().find(|m| m.name().to_string_lossy().ends_with(".bss")).ok_or_else(missing)?;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(io)?;
    let mut client = std::net::TcpStream::connect(listener.local_addr().map_err(io)?).map_err(io)?;
    let (mut server, _) = listener.accept().map_err(io)?;
    let key = 0u32.to_ne_bytes();
    let mut out = Vec::new();
    for _ in 0..rounds {
        // sock_run: result_ns 0, tgid, armed 1
        let run = [0u64.to_ne_bytes().as_slice(), &std::process::id().to_ne_bytes(), &1u32.to_ne_bytes()].concat();
        bss.update(&key, &run, libbpf_rs::MapFlags::ANY)?;
        client.write_all(b"x").map_err(io)?;
        server.read_exact(&mut [0u8; 1]).map_err(io)?;
        let now = bss.lookup(&key, libbpf_rs::MapFlags::ANY)?.ok_or_else(missing)?;
        let ns = u64::from_ne_bytes(now[..8].try_into().expect("8 bytes"));
        if ns == 0 {
            return Err(libbpf_rs::Error::from_raw_os_error(libc::ENODATA)); // the program did not run
        }
        out.push(ns as f64 / SOCK_STEPS);
    }
    Ok(out)
}
