#!/bin/bash
# Agent CPU with many idle live connections: the periodic work over the socket and transaction
# maps (5 s sweep, 1 s transaction drain), for two agent builds alternated ROUNDS times in one run.
# CONNS loopback connections held open by HOLDERS processes (both ends local: 2 x CONNS sockets),
# each with one 64-byte request/response, opened after the agent started; SECS s measured with all
# of them idle. Maps sized for the load. Prints the agent's CPU (millicores, from schedstat) and
# the live sockets it counted, and the ratio of the means. Needs root and local-stack built.
# Usage: node-agent/bench/idle_sockets.sh AGENT_A AGENT_B [ROUNDS=2]
#   (e.g. the working tree's build and one of an older commit from a git worktree)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$ROOT/node-agent/bench/lib.sh"
A=$1; B=$2; ROUNDS=${3:-2}
CONNS=${CONNS:-40000}; HOLDERS=${HOLDERS:-5}; SECS=${SECS:-30}
KAFKA_PORT=${KAFKA_PORT:-29193}; METRICS=127.0.0.1:${METRICS_PORT:-9411}
need_root
WORK=$(mktemp -d)
trap 'touch "$WORK/release"; kill_pids; rm -rf "$WORK"' EXIT
start_kafka "$KAFKA_PORT" wattgraph.connections wattgraph.resources wattgraph.transactions
cpu_ns() { cat /proc/"$1"/task/*/schedstat | awk '{s += $1} END {printf "%.0f", s}'; }
for r in $(seq 1 "$ROUNDS"); do
  for label in A B; do
    if [ $label = A ]; then AGENT=$A; else AGENT=$B; fi
    start_agent "$WORK/agent-$label.log" --map-entries 262144 --transaction-hist-entries 524288 --metrics-addr "$METRICS"
    apid=$!; pids+=("$apid")
    wait_ready "$WORK/ready"; sleep 2
    rm -f "$WORK/release" "$WORK"/held.*
    hp=()
    for h in $(seq 0 $((HOLDERS - 1))); do
      python3 "$ROOT/node-agent/bench/conn_hold.py" $((31000 + h)) 1 $((CONNS / HOLDERS)) "$WORK/held.$h" "$WORK/release" & hp+=($!)
    done
    for _ in $(seq 1 1500); do [ "$(ls "$WORK"/held.* 2>/dev/null | wc -l)" = "$HOLDERS" ] && break; sleep 0.2; done
    [ "$(ls "$WORK"/held.* 2>/dev/null | wc -l)" = "$HOLDERS" ] || { echo "connection holders did not finish" >&2; exit 1; }
    sleep 6  # every socket inserted and seen by a sweep
    c0=$(cpu_ns "$apid"); t0=$(date +%s%N)
    sleep "$SECS"
    c1=$(cpu_ns "$apid"); t1=$(date +%s%N)
    live=$(curl -s "$METRICS/metrics" | awk '/^wattgraph_agent_socket_map_entries/ {print $2}')
    touch "$WORK/release"; wait "${hp[@]}" || true
    kill -TERM "$apid"; wait "$apid" 2>/dev/null || true; forget_pids "$apid"
    mc=$(awk -v c=$((c1 - c0)) -v t=$((t1 - t0)) 'BEGIN {printf "%.1f", 1000 * c / t}')
    echo "$label round $r: $mc millicores, $(cat "$WORK"/held.* | awk '{s += $1} END {print s}') connections held, $live live sockets counted" | tee -a "$WORK/rows"
  done
done
awk '/^A / {a += $4; na++} /^B / {b += $4; nb++} END {printf "mean A %.1f, B %.1f millicores; A/B %.2f\n", a/na, b/nb, (a/na)/(b/nb)}' "$WORK/rows"
