#!/bin/bash
# The agent's own CPU on a quiet host, per thread, for two agent builds alternated ROUNDS times in
# one run: each build as deployed (transactions, resources, cgroup sampler) against a real broker,
# SECS s measured after it is ready, from the threads' schedstat (ns on CPU). Prints millicores
# per thread (threads of one name summed) and in all, means over the rounds, and A/B.
# AGENT_FLAGS adds flags to both (e.g. "--power-cap dry-run": its budget consumer too).
# Needs root and local-stack built. Usage: node-agent/bench/idle_cpu.sh AGENT_A AGENT_B [ROUNDS=3] [SECS=10]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$ROOT/node-agent/bench/lib.sh"
A=$1; B=$2; ROUNDS=${3:-3}; SECS=${4:-10}
KAFKA_PORT=${KAFKA_PORT:-29197}
need_root
WORK=$(mktemp -d)
trap 'kill_pids; rm -rf "$WORK"' EXIT
start_kafka "$KAFKA_PORT" wattgraph.connections wattgraph.resources wattgraph.transactions
# "tid name ns" per thread of PID: the first thread is "main" (its name is the binary's); rdkafka's
# broker threads carry the broker's name, one row for all.
threads_ns() {
  local t name
  for t in /proc/"$1"/task/*; do
    if [ "${t##*/}" = "$1" ]; then name=main; else name=$(tr ' ' _ < "$t/comm" | sed 's/^rdk:broker.*/rdk:broker*/'); fi
    printf '%s %s %s\n' "${t##*/}" "$name" "$(cut -d' ' -f1 "$t/schedstat")"
  done
}
for r in $(seq 1 "$ROUNDS"); do
  for label in A B; do
    if [ $label = A ]; then AGENT=$A; else AGENT=$B; fi
    # shellcheck disable=SC2086 # AGENT_FLAGS is a list of flags
    start_agent "$WORK/agent-$label.log" ${AGENT_FLAGS:-}; apid=$!; pids+=("$apid")
    wait_ready "$WORK/ready"; sleep 3
    threads_ns $apid > "$WORK/t0"; s0=$(date +%s%N)
    sleep "$SECS"
    threads_ns $apid > "$WORK/t1"; s1=$(date +%s%N)
    kill -TERM "$apid"; wait "$apid" 2>/dev/null || true; forget_pids "$apid"
    # Threads present at both readings; millicores = ns on CPU per ns of wall time x 1000.
    awk -v l=$label -v w=$((s1 - s0)) 'NR == FNR {a[$1] = $3; next}
      $1 in a {m[$2] += ($3 - a[$1]) / w * 1000} END {for (k in m) printf "%s %s %.3f\n", l, k, m[k]}' \
      "$WORK/t0" "$WORK/t1" > "$WORK/round"
    cat "$WORK/round" >> "$WORK/rows"
    awk -v l=$label '{s += $3} END {printf "%s %.2f\n", l, s}' "$WORK/round" >> "$WORK/per_round"
  done
done
echo "# Agent CPU at idle (rounds=$ROUNDS, ${SECS}s each, $(nproc) cores, kernel $(uname -r)); millicores, mean over the rounds"
echo "| thread | A | B | A/B |"
echo "|---|---|---|---|"
awk -v r="$ROUNDS" '{s[$1" "$2] += $3; t[$1] += $3; k[$2] = 1}
  END {for (q in k) printf "| %s | %.2f | %.2f | %s |\n", q, s["A "q] / r, s["B "q] / r, (s["B "q] > 0 ? sprintf("%.2f", s["A "q] / s["B "q]) : "-")
       printf "| all threads | %.2f | %.2f | %.2f |\n", t["A"] / r, t["B"] / r, t["A"] / t["B"]}' "$WORK/rows" | sort
echo "all threads per round (millicores): A $(awk '$1 == "A" {print $2}' "$WORK/per_round" | paste -sd' '); B $(awk '$1 == "B" {print $2}' "$WORK/per_round" | paste -sd' ')"
