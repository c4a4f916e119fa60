//! Kernel C (src/capture/connections/*.h) compiled natively with the host C compiler, so tests can run the
//! exact functions the BPF programs run.
use std::path::PathBuf;
use std::sync::Mutex;

/// Compiles `main_c` (which may include headers of src/capture/connections; the __u* types are defined first)
/// into `<CARGO_TARGET_TMPDIR>/<name>/<name>`, once per test process (tests of one file run in
/// parallel and would otherwise overwrite the binary another one runs). No compiler: panic when
/// CI=true, else None.
pub fn compile(name: &str, main_c: &str) -> Option<PathBuf> {
    static BUILT: Mutex<Vec<(String, Option<PathBuf>)>> = Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, exe)) = built.iter().find(|(n, _)| n == name) {
        return exe.clone();
    }
    let exe = compile_now(name, main_c);
    built.push((name.to_string(), exe.clone()));
    exe
}

fn compile_now(name: &str, main_c: &str) -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join(format!("{name}.c"));
    let prelude = "#include <stdio.h>\ntypedef unsigned long long __u64; typedef unsigned int __u32; \
                   typedef unsigned short __u16; typedef unsigned char __u8;\n";
    std::fs::write(&src, format!("{prelude}{main_c}")).unwrap();
    let exe = dir.join(name);
    let inc = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/capture/connections");
    let cc = std::process::Command::new("cc").args(["-O2", "-Wall", "-Werror", "-I"]).arg(&inc).arg(&src).arg("-o").arg(&exe).output();
    match cc {
        Ok(o) if o.status.success() => Some(exe),
        other => {
            if std::env::var("CI").as_deref() == Ok("true") {
                panic!("cannot compile {name} with cc: {other:?}");
            }
            eprintln!("SKIPPED: no C compiler ({other:?})");
            None
        }
    }
}

/// Runs `exe` with `input` on stdin; its stdout.
pub fn run(exe: &PathBuf, input: String) -> String {
    use std::io::Write;
    let mut child = std::process::Command::new(exe)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || stdin.write_all(input.as_bytes()).unwrap());
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    assert!(out.status.success(), "{} failed: {:?}", exe.display(), out.status);
    String::from_utf8(out.stdout).unwrap()
}
