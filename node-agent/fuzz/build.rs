// Compiles harness/http_route_fuzz.c (the kernel's request-line parser) with clang: with
// libFuzzer's coverage counters so the fuzzer is guided through the C code too, and with bounds
// checks that trap (no sanitizer runtime needed) so an index past an array is a crash.
fn main() {
    let fuzzing = std::env::var("CARGO_CFG_FUZZING").is_ok();
    let mut b = cc::Build::new();
    b.compiler("clang").file("harness/http_route_fuzz.c").include("../src/capture/connections").opt_level(2).warnings_into_errors(true);
    b.flag("-fsanitize=bounds,signed-integer-overflow,shift").flag("-fsanitize-trap=all");
    if fuzzing {
        b.flag("-fsanitize-coverage=inline-8bit-counters,pc-table,trace-cmp");
    }
    b.compile("wg_http_route_fuzz");
    println!("cargo:rerun-if-changed=harness/http_route_fuzz.c");
    println!("cargo:rerun-if-changed=../src/capture/connections/http_route.h");
}
