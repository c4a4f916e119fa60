#!/usr/bin/env bash
# What pinning costs the CPU accounting: two agents of one build side by side in one run, one with
# --pin-bpf (its sampler writes the reported per-thread totals to the pinned baseline after every
# interval) and one without, over the same host threads.
#   bench/pin_cost.sh [ROUNDS] [SECONDS]
# THREADS (default 2000) Python threads that each wake twice a second run meanwhile, so every
# interval has that many threads whose totals moved. Connection capture watches an empty network
# namespace of the run and Kafka is unreachable (both agents alike), so the difference is the
# sampler's. Prints each agent's CPU (utime + stime) per round and the pinned/plain ratio. Root.
set -euo pipefail
ROUNDS=${1:-2}; SECS=${2:-40}; THREADS=${THREADS:-2000}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
AGENT=${AGENT:-$ROOT/target/release/wattgraph-agent}
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$ROOT/node-agent/bench/lib.sh"
need_root
build_agent
WORK=$(mktemp -d /tmp/wg-pin-cost.XXXXXX)
NS=wg-pincost-$$
cleanup() {
  kill_pids
  "$AGENT" --host-id x --unpin --bpf-pin-dir "$WORK/bpf" >/dev/null 2>&1 || true
  umount "$WORK/bpf" 2>/dev/null || true
  ip netns del "$NS" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
ip netns add "$NS"

agent() {
  "$AGENT" --host-id "pin-cost-$1" --kafka-brokers 127.0.0.1:1 --netns "/run/netns/$NS" --cgroup-sample-interval-ms 0 \
    --metrics-addr "127.0.0.1:0" --log-level warn "${@:2}" >"$WORK/$1.log" 2>&1 &
  pids+=($!)
}

python3 - "$THREADS" "$((ROUNDS * (SECS + 15) + 10))" <<'PY' &
import sys, threading, time
n, secs = int(sys.argv[1]), float(sys.argv[2])
end = time.time() + secs
def wake():
    while time.time() < end:
        time.sleep(0.5)
for _ in range(n):
    threading.Thread(target=wake, daemon=True).start()
time.sleep(max(0.0, end - time.time()))
PY
pids+=($!)
tick_ms=$((1000 / $(getconf CLK_TCK)))
sum_p=0; sum_u=0
for r in $(seq 1 "$ROUNDS"); do
  agent pinned --pin-bpf --bpf-pin-dir "$WORK/bpf"; p=$!
  agent plain; u=$!
  sleep 5
  p0=$(cpu_ticks "$p"); u0=$(cpu_ticks "$u")
  sleep "$SECS"
  p1=$(cpu_ticks "$p"); u1=$(cpu_ticks "$u")
  kill "$p" "$u"
  while [ -e "/proc/$p" ] || [ -e "/proc/$u" ]; do sleep 0.2; done
  forget_pids "$p" "$u"
  dp=$(((p1 - p0) * tick_ms)); du=$(((u1 - u0) * tick_ms))
  sum_p=$((sum_p + dp)); sum_u=$((sum_u + du))
  awk -v r="$r" -v s="$SECS" -v p="$dp" -v u="$du" 'BEGIN { printf "round %d: pinned %.1f millicores, plain %.1f millicores\n", r, p / s, u / s }'
done
awk -v p="$sum_p" -v u="$sum_u" -v s="$((SECS * ROUNDS))" -v t="$THREADS" \
  'BEGIN { printf "mean over %d s, %d waking threads: pinned %.1f, plain %.1f millicores, ratio %.2fx (+%.1f millicores)\n", s, t, p / s, u / s, p / u, (p - u) / s }'
