#!/usr/bin/env bash
# Bounded fuzzing of the agent's parsers (part of `bin/wattgraph test`): builds the cargo-fuzz
# targets, runs each for FUZZ_SECONDS (default 10) from its committed seeds (seeds/<target>),
# fails on any crash, and prints per target the executions and libFuzzer's final cov/ft figures.
#   node-agent/fuzz/run.sh [TARGET...]      FUZZ_SECONDS=60 node-agent/fuzz/run.sh conntrack
# Inputs that crashed a target once are kept in regressions/<target>/ and run first every time.
# A crash leaves its input in node-agent/fuzz/artifacts/<target>/ (replay: cargo fuzz run
# <target> <file>, with the environment below); make it a regression test before fixing it.
set -euo pipefail
FUZZ=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SECONDS_EACH=${FUZZ_SECONDS:-10}
CARGO_FUZZ_VERSION=0.13.2
TARGETS=(conntrack avro_records kube_json cgroup_paths proc_files http_request_line config_file)
[ $# -gt 0 ] && TARGETS=("$@")
say() { printf '\033[1mfuzz:\033[0m %s\n' "$*" >&2; }

export PATH="$HOME/.cargo/bin:$PATH"
# cargo-fuzz from crates.io, pinned, installed once outside the checkout (keyed by version).
TOOLS=${WATTGRAPH_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/wattgraph/tools}
CF=$TOOLS/cargo-fuzz-$CARGO_FUZZ_VERSION
if [ ! -x "$CF/bin/cargo-fuzz" ]; then
  say "installing cargo-fuzz $CARGO_FUZZ_VERSION into $CF"
  cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked --root "$CF" --quiet
fi
export PATH="$CF/bin:$PATH"
# -Zsanitizer=address is unstable: the project's stable toolchain takes it with RUSTC_BOOTSTRAP=1
# (its rust-std ships the ASan runtime), so no nightly toolchain has to be downloaded.
export RUSTC_BOOTSTRAP=1
# Outside the checkout, like cargo's registry, and one per checkout (keyed by its absolute path):
# two checkouts sharing one target dir built with the other's build.rs output (the BPF skeletons
# of another source layout). A later run of the same checkout rebuilds only what changed; a new
# checkout builds the sanitized dependencies once (minutes of CPU).
CHECKOUT=$(cd "$FUZZ/../.." && pwd -P)
KEY=$(printf '%s' "$CHECKOUT" | sha256sum | cut -c1-16)
export CARGO_TARGET_DIR=${WATTGRAPH_FUZZ_TARGET_DIR:-$TOOLS/fuzz-target-$KEY}

cd "$FUZZ/.."
start=$(date +%s)
say "building ${#TARGETS[@]} targets (cargo fuzz build, ASan, debug assertions)"
mkdir -p "$CARGO_TARGET_DIR"
one=(); [ ${#TARGETS[@]} -eq 1 ] && one=("${TARGETS[0]}")
cargo fuzz build --fuzz-dir "$FUZZ" "${one[@]}" >"$CARGO_TARGET_DIR/fuzz-build.log" 2>&1 \
  || { tail -40 "$CARGO_TARGET_DIR/fuzz-build.log" >&2; say "build failed"; exit 1; }
say "built in $(($(date +%s) - start)) s"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=()
printf '%-18s %10s %8s %8s %6s %7s\n' target executions cov ft corpus seconds
for t in "${TARGETS[@]}"; do
  mkdir -p "$work/$t" "$FUZZ/artifacts/$t"
  t0=$(date +%s)
  # New inputs go to the scratch corpus; the committed ones are only read. No single allocation
  # may exceed 64 MiB (see src/output/avro/mod.rs MAX_LENGTH_BYTES for the decoders'), no input take 10 s.
  rc=0
  corpora=("$FUZZ/seeds/$t"); [ -d "$FUZZ/regressions/$t" ] && corpora+=("$FUZZ/regressions/$t")
  cargo fuzz run --fuzz-dir "$FUZZ" "$t" "$work/$t" "${corpora[@]}" -- \
    -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=64 \
    -print_final_stats=1 -artifact_prefix="$FUZZ/artifacts/$t/" >"$work/$t.log" 2>&1 || rc=$?
  last=$(grep -E '^#[0-9]+[[:space:]]+(DONE|pulse|NEW|REDUCE|INITED)' "$work/$t.log" | tail -1 || true)
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t.log" | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")
  printf '%-18s %10s %8s %8s %6s %7s\n' "$t" "${runs:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$(($(date +%s) - t0))"
  if [ $rc -eq 0 ] && [ "${runs:-0}" -eq 0 ]; then
    tail -20 "$work/$t.log" >&2
    say "$t: ran no input"
    failed+=("$t")
  elif [ $rc -ne 0 ]; then
    grep -E -A30 '^==[0-9]+==|panicked at|ERROR: libFuzzer|SUMMARY' "$work/$t.log" | head -60 >&2 || tail -60 "$work/$t.log" >&2
    say "$t: CRASH (exit $rc); input kept in $FUZZ/artifacts/$t/"
    # The input itself, for a CI log that outlives the machine (up to 4 KiB: larger ones stay in the file).
    crash=$(ls -t "$FUZZ/artifacts/$t/" 2>/dev/null | head -1)
    if [ -n "$crash" ] && [ "$(stat -c %s "$FUZZ/artifacts/$t/$crash")" -le 4096 ]; then
      say "$t: $crash, base64: $(base64 -w0 "$FUZZ/artifacts/$t/$crash")"
    fi
    failed+=("$t")
  fi
done
say "total $(($(date +%s) - start)) s"
if [ ${#failed[@]} -gt 0 ]; then
  say "FAILED: ${failed[*]}"
  exit 1
fi
