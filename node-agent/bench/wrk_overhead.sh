#!/usr/bin/env bash
# Agent overhead on request latency, side by side in one run: wrk --latency against nginx on
# loopback with the agent off and on (rounds alternate, so drift hits both alike), for a small
# (100 B) and a large (128 KiB) response; requests/s and p50/p90/p99 with their on/off ratios.
# The agent runs as deployed (transactions, resources) against a real broker.
# AGENT_BEFORE=path adds a third run per round with that build (e.g. the commit before a change).
# Needs root. Usage: node-agent/bench/wrk_overhead.sh [ROUNDS] [SECONDS_PER_RUN] [CONNECTIONS]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$ROOT/node-agent/bench/lib.sh"
ROUNDS=${1:-3}
SECS=${2:-8}
CONNS=${3:-8}
AGENT=$ROOT/target/release/wattgraph-agent
WORK=$(mktemp -d "$ROOT/target/bench-wrk.XXXXXX")
KAFKA_PORT=29093
PORT=25211
need_root
need_cmds jq bpftool
need_wrk_nginx
build_agent
trap 'kill_pids; bpf_stats off' EXIT

start_kafka $KAFKA_PORT wattgraph.connections wattgraph.transactions wattgraph.resources
broker=${pids[-1]}
start_nginx $PORT

declare -A off on before
AGENT_AFTER=$AGENT
for path in small large; do
  for r in $(seq 1 "$ROUNDS"); do
    off[$path]+="$(run_wrk $path);"
    start_agent "$WORK/agent.log"; apid=$!
    wait_ready "$WORK/ready"
    on[$path]+="$(run_wrk $path);"
    kill -TERM $apid; wait $apid || true
    if [ -n "${AGENT_BEFORE:-}" ]; then
      AGENT=$AGENT_BEFORE start_agent "$WORK/agent.log"; apid=$!
      wait_ready "$WORK/ready"
      before[$path]+="$(run_wrk $path);"
      kill -TERM $apid; wait $apid || true
    fi
  done
done
AGENT=$AGENT_AFTER

# Where a request's cost goes: one more agent run per response size (and build) with bpf_stats on (its clock
# reads stay out of the throughput runs): each program's calls and ns per request, and the
# agent's and the broker's CPU per request, as shares of the machine's cores at that rate.
bpf_stats on
breakdown=()
builds=(now); [ -n "${AGENT_BEFORE:-}" ] && builds+=(before)
for path in small large; do
  for build in "${builds[@]}"; do
    if [ "$build" = before ]; then AGENT=$AGENT_BEFORE; else AGENT=$AGENT_AFTER; fi
    start_agent "$WORK/agent.log"; apid=$!
    wait_ready "$WORK/ready"
    prog_stats $apid "$path" > "$WORK/progs0"
    t0=$(cpu_ticks $apid); b0=$(cpu_ticks $broker); s0=$(date +%s%N)
    rps=$(run_wrk $path | cut -d' ' -f1)
    t1=$(cpu_ticks $apid); b1=$(cpu_ticks $broker); s1=$(date +%s%N)
    prog_stats $apid "$path" > "$WORK/progs1"
    kill -TERM $apid; wait $apid || true
    reqs=$(echo "$rps * ($s1 - $s0) / 1000000000" | bc -l)
    breakdown+=("$(prog_delta "$WORK/progs0" "$WORK/progs1" | awk -v p="$path $build" -v n="$reqs" -v rps="$rps" \
        -v agent="$(millicores $t0 $t1 $s0 $s1)" -v broker="$(millicores $b0 $b1 $s0 $s1)" -v cores="$(nproc)" '
      { c = $3 / n; t = $2 / n; sum += t
        if (c > 0) printf "| %s | %s | %.2f | %.0f | %.1f %% |\n", p, $1, c, t, t * rps / 1e9 / cores * 100 }
      END { printf "| %s | all programs | | %.0f | %.1f %% |\n", p, sum, sum * rps / 1e9 / cores * 100
            printf "| %s | agent process | | %.0f | %.1f %% (%d millicores) |\n", p, agent * 1e6 / rps, agent / 10 / cores, agent
            printf "| %s | broker | | %.0f | %.1f %% (%d millicores) |\n", p, broker * 1e6 / rps, broker / 10 / cores, broker }')")
  done
done
AGENT=$AGENT_AFTER
bpf_stats off

echo "# wrk against nginx, agent off and on (rounds=$ROUNDS, ${SECS}s per run, $CONNS connections, $(nproc) cores, kernel $(uname -r))"
echo "| response | off req/s | on req/s | on/off | off p50/p90/p99 (µs) | on p50/p90/p99 (µs) | on/off p50 / p90 / p99 |"
echo "|---|---|---|---|---|---|---|"
for path in small large; do
  printf '%s\n%s\n' "${off[$path]}" "${on[$path]}" | awk -F';' -v name="$path" '
    NR == 1 { for (i = 1; i < NF; i++) { split($i, v, " "); for (k = 1; k <= 4; k++) a[k] += v[k]; n++ } }
    NR == 2 { for (i = 1; i < NF; i++) { split($i, v, " "); for (k = 1; k <= 4; k++) b[k] += v[k]; m++ } }
    END {
      for (k = 1; k <= 4; k++) { a[k] /= n; b[k] /= m }
      printf "| %s | %.0f | %.0f | %.3f | %.0f/%.0f/%.0f | %.0f/%.0f/%.0f | %.3f / %.3f / %.3f |\n",
        name, a[1], b[1], b[1] / a[1], a[2], a[3], a[4], b[2], b[3], b[4], b[2] / a[2], b[3] / a[3], b[4] / a[4]
    }'
done
if [ -n "${AGENT_BEFORE:-}" ]; then
  echo
  echo "| response | AGENT_BEFORE req/s | its on/off | its p50/p90/p99 (µs) | after/before req/s |"
  echo "|---|---|---|---|---|"
  for path in small large; do
    printf '%s\n%s\n%s\n' "${off[$path]}" "${on[$path]}" "${before[$path]}" | awk -F';' -v name="$path" '
      { for (i = 1; i < NF; i++) { split($i, v, " "); for (k = 1; k <= 4; k++) x[NR, k] += v[k]; n[NR]++ } }
      END {
        for (r = 1; r <= 3; r++) for (k = 1; k <= 4; k++) x[r, k] /= n[r]
        printf "| %s | %.0f | %.3f | %.0f/%.0f/%.0f | %.3f |\n", name, x[3, 1], x[3, 1] / x[1, 1], x[3, 2], x[3, 3], x[3, 4], x[2, 1] / x[3, 1]
      }'
  done
fi
echo
echo "Per request, with the agent on and bpf_stats on (one more run each; the broker's CPU is all of it, the agent's output included):"
echo "| response, build | program | calls per request | ns per request | share of the $(nproc) cores |"
echo "|---|---|---|---|---|"
printf '%s\n' "${breakdown[@]}"
echo "per run (req/s p50 p90 p99): small off ${off[small]} on ${on[small]} before ${before[small]:-}; large off ${off[large]} on ${on[large]} before ${before[large]:-}"
