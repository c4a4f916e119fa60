#!/usr/bin/env bash
# Per-call kernel cost of the agent's sched programs, two agent builds side by side in one run.
#   bench/sched_cost.sh BASELINE_AGENT CANDIDATE_AGENT [ROUNDS]
# Each round runs each build alone (`--once`, resources only) under the same bounded
# context-switch load (two processes ping-ponging a byte over pipes, 100,000 round trips; with
# PAIRS=N, N such pairs at once sharing the 100,000, so switches go between many threads whose
# entries are not all in cache, as on a busy host), with
# kernel.bpf_stats_enabled on, and reads run_time_ns / run_cnt of its programs by program id.
# Prints per-round figures, the mean per build and the candidate/baseline ratio. Needs root.
set -euo pipefail
BASE=${1:?baseline agent binary}; CAND=${2:?candidate agent binary}; ROUNDS=${3:-3}
command -v bpftool >/dev/null && command -v jq >/dev/null || { echo "needs bpftool and jq" >&2; exit 2; }
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$ROOT/node-agent/bench/lib.sh"
trap 'bpf_stats off' EXIT
bpf_stats on

load() {
  PAIRS=${PAIRS:-1} python3 - <<'PY'
import os
pairs = int(os.environ["PAIRS"]); n = 100000 // pairs
kids = []
for _ in range(pairs):
    r1, w1 = os.pipe(); r2, w2 = os.pipe()
    pid = os.fork()
    if pid == 0:
        if os.fork() == 0:
            for _ in range(n):
                os.read(r1, 1); os.write(w2, b'x')
            os._exit(0)
        for _ in range(n):
            os.write(w1, b'x'); os.read(r2, 1)
        os.wait()
        os._exit(0)
    kids.append(pid)
for pid in kids:
    os.waitpid(pid, 0)
PY
}

# The agent's wg_sched_switch: of the programs that appeared since BEFORE (ids), the one with
# the most calls, as "run_time_ns run_cnt"; nothing when there is none.
sched_prog() {
  bpftool prog show -j | jq -r --argjson old "$1" \
    '[.[] | select(.name == "wg_sched_switch" and (.id as $i | $old | index($i) | not))] | max_by(.run_cnt // 0)
     | select(. != null) | "\(.run_time_ns // 0) \(.run_cnt // 0)"'
}

# avg ns per call of wg_sched_switch for one build, read while the agent still runs (its programs
# go when it exits): its one interval is far longer than the load, and it is killed after the
# read (`--once` finishes its interval whatever the signal; it has nothing to flush). Run the
# bench on an otherwise quiet machine.
one() {
  local bin=$1 before stats
  before=$(bpftool prog show -j | jq -c '[.[].id]')
  "$bin" --host-id bench --no-transactions --once --sample-interval-ms 120000 >/dev/null 2>&1 &
  local pid=$!
  for _ in $(seq 1 100); do [ -n "$(sched_prog "$before")" ] && break; sleep 0.1; done
  load
  stats=$(sched_prog "$before")
  kill -0 "$pid" 2>/dev/null || { echo "agent $bin exited before its counters were read" >&2; exit 1; }
  kill -KILL "$pid"; wait "$pid" 2>/dev/null || true
  [ -n "$stats" ] || { echo "no wg_sched_switch program of $bin found" >&2; exit 1; }
  awk '{ printf "%.1f %d\n", ($2 > 0 ? $1 / $2 : 0), $2 }' <<<"$stats"
}

declare -a B C
for r in $(seq 1 "$ROUNDS"); do
  read -r b bn < <(one "$BASE"); read -r c cn < <(one "$CAND")
  B+=("$b"); C+=("$c")
  echo "round $r: baseline ${b} ns/call (${bn} calls)  candidate ${c} ns/call (${cn} calls)"
done
mean() { printf '%s\n' "$@" | awk '{ s += $1 } END { printf "%.1f", s / NR }'; }
mb=$(mean "${B[@]}"); mc=$(mean "${C[@]}")
echo "wg_sched_switch mean: baseline $mb ns, candidate $mc ns, candidate/baseline $(awk -v a="$mc" -v b="$mb" 'BEGIN { printf "%.3f", a / b }')"
