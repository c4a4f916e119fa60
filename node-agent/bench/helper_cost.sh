#!/usr/bin/env bash
# What each BPF primitive the connection programs use costs on this kernel and machine, one step at
# a time and without a load's noise: helper_cost.bpf.c's programs (a clock read, a user or kernel
# memory read, a hash lookup, a call to a BPF function, ...) each run their step ITERATIONS times in
# a bpf_loop under BPF_PROG_TEST_RUN, timed inside the program, ROUNDS rounds in turn (the
# helper_cost example); socket-local storage created and deleted 1,000 times by a program on the
# send tracepoint, at a send of the example's own loopback connection. Prints ns per step (median,
# min-max) and what it adds to an empty step.
# Needs root. Usage: node-agent/bench/helper_cost.sh [ITERATIONS=100000, at most 120000] [ROUNDS=7]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$ROOT/node-agent/bench/lib.sh"
ITERS=${1:-100000}
ROUNDS=${2:-7}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
RUNNER=$TARGET/release/examples/helper_cost
need_root
need_cmds clang
build_example helper_cost "$RUNNER"
OBJ=$(mktemp "$TARGET/helper_cost.XXXXXX.o")
trap 'rm -f "$OBJ"' EXIT
bpf_cc "$ROOT/node-agent/bench/helper_cost.bpf.c" "$OBJ" "$ROOT/node-agent/src/capture"
echo "# ns per step, $ITERS steps a run, $ROUNDS runs each ($(nproc) cores, kernel $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs))"
for v in spectre_v2 spec_rstack_overflow; do
  f=/sys/devices/system/cpu/vulnerabilities/$v
  [ -r "$f" ] && echo "# $v: $(cat "$f")"
done
"$RUNNER" "$OBJ" "$ITERS" "$ROUNDS"
