#!/usr/bin/env bash
# Agent overhead, side by side in one run: iperf3 throughput over loopback with the agent off and
# on (alternating rounds, so drift hits both alike), the agent's CPU and RSS while on, and the
# average kernel run time per call of each BPF program (kernel.bpf_stats_enabled).
# AGENT_BEFORE=path adds a third run per round with that build (e.g. the commit before a change),
# so before, after and off are measured side by side (per-call figures of both builds too).
# Each program's per-call figure is read from that agent's own programs (by the prog ids its file
# descriptors hold), so other agents on the machine do not mix in.
# Needs root. Usage: [AGENT_BEFORE=path] node-agent/bench/overhead.sh [ROUNDS] [SECONDS_PER_RUN]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$ROOT/node-agent/bench/lib.sh"
ROUNDS=${1:-3}
SECS=${2:-8}
AGENT=$ROOT/target/release/wattgraph-agent
WORK=$(mktemp -d "$ROOT/target/bench-overhead.XXXXXX")
KAFKA_PORT=29092
IPERF_PORT=25201
need_root
need_cmds iperf3 jq bpftool
build_agent

trap 'kill_pids; bpf_stats off' EXIT

# A real broker, so the agent does its whole job (encode, batch, send).
start_kafka $KAFKA_PORT wattgraph.connections
broker=${pids[-1]}

iperf3 -s -B 127.0.0.1 -p $IPERF_PORT >/dev/null 2>&1 &
pids+=($!)
sleep 0.5

run_iperf() { # run_iperf LEN -> Gbit/s
  iperf3 -c 127.0.0.1 -p $IPERF_PORT -l "$1" -t "$SECS" -J | jq '.end.sum_received.bits_per_second / 1e9'
}

declare -A off on before
agent_cpu=() agent_rss=() broker_off=() broker_on=() broker_before=() before_cpu=()
AGENT_AFTER=$AGENT
for len in 1K 128K; do
  for r in $(seq 1 "$ROUNDS"); do
    b0=$(cpu_ticks $broker); s0=$(date +%s%N)
    off[$len]+="$(run_iperf $len) "
    b1=$(cpu_ticks $broker); s1=$(date +%s%N)
    broker_off+=("$(millicores $b0 $b1 $s0 $s1)")
    start_agent "$WORK/agent.log"; apid=$!
    wait_ready "$WORK/ready"
    t0=$(cpu_ticks $apid); b0=$(cpu_ticks $broker); s0=$(date +%s%N)
    on[$len]+="$(run_iperf $len) "
    t1=$(cpu_ticks $apid); b1=$(cpu_ticks $broker); s1=$(date +%s%N)
    agent_cpu+=("$(millicores $t0 $t1 $s0 $s1)")
    broker_on+=("$(millicores $b0 $b1 $s0 $s1)")
    agent_rss+=("$(awk '/VmRSS/ {print $2}' /proc/$apid/status)")
    kill -TERM $apid; wait $apid || true
    if [ -n "${AGENT_BEFORE:-}" ]; then
      AGENT=$AGENT_BEFORE start_agent "$WORK/agent.log"; apid=$!
      wait_ready "$WORK/ready"
      t0=$(cpu_ticks $apid); b0=$(cpu_ticks $broker); s0=$(date +%s%N)
      before[$len]+="$(run_iperf $len) "
      t1=$(cpu_ticks $apid); b1=$(cpu_ticks $broker); s1=$(date +%s%N)
      before_cpu+=("$(millicores $t0 $t1 $s0 $s1)")
      broker_before+=("$(millicores $b0 $b1 $s0 $s1)")
      kill -TERM $apid; wait $apid || true
    fi
  done
done
AGENT=$AGENT_AFTER

# Per-call cost of each program, in a separate run: bpf_stats_enabled itself adds two clock
# reads per call, so it stays off while throughput is measured.
bpf_stats on
for len in 1K 128K; do
  for label in after before; do
    if [ $label = before ]; then [ -n "${AGENT_BEFORE:-}" ] || continue; AGENT=$AGENT_BEFORE; else AGENT=$AGENT_AFTER; fi
    start_agent "$WORK/agent.log"; apid=$!
    wait_ready "$WORK/ready"
    run_iperf $len >/dev/null
    prog_stats $apid $label >> "$WORK/bpfstats.txt"
    kill -TERM $apid; wait $apid || true
  done
done
AGENT=$AGENT_AFTER
bpf_stats off

mean() { echo "$@" | tr ' ' '\n' | grep -v '^$' | awk '{s+=$1; n++} END {printf "%.3f", s/n}'; }
spread() { echo "$@" | tr ' ' '\n' | grep -v '^$' | sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%.3f-%.3f", lo, hi}'; }
echo "# Agent overhead (rounds=$ROUNDS, ${SECS}s per run, $(nproc) cores, kernel $(uname -r))"
echo "| message | iperf3 off (Gbit/s) | iperf3 on (Gbit/s) | on/off | throughput loss | off min-max | on min-max |"
echo "|---|---|---|---|---|---|---|"
for len in 1K 128K; do
  a=$(mean ${off[$len]}); b=$(mean ${on[$len]})
  printf "| %s | %s | %s | %.4f | %.2f%% | %s | %s |\n" "$len" "$a" "$b" "$(echo "$b/$a" | bc -l)" "$(echo "(1-$b/$a)*100" | bc -l)" \
    "$(spread ${off[$len]})" "$(spread ${on[$len]})"
done
if [ -n "${AGENT_BEFORE:-}" ]; then
  echo
  echo "| message | iperf3 with AGENT_BEFORE (Gbit/s) | throughput loss | after/before | before min-max |"
  echo "|---|---|---|---|---|"
  for len in 1K 128K; do
    a=$(mean ${off[$len]}); b=$(mean ${on[$len]}); c=$(mean ${before[$len]})
    printf "| %s | %s | %.2f%% | %.4f | %s |\n" "$len" "$c" "$(echo "(1-$c/$a)*100" | bc -l)" "$(echo "$b/$c" | bc -l)" "$(spread ${before[$len]})"
  done
fi
echo
echo "agent CPU while iperf3 ran (millicores, per run): ${agent_cpu[*]}${AGENT_BEFORE:+; AGENT_BEFORE: ${before_cpu[*]}}"
echo "agent RSS (kB, per run): ${agent_rss[*]}"
# The broker shares the 2 cores here; on a real host it runs elsewhere, so its extra CPU while the
# agent sends is part of the measured loss but not of the agent's cost on its host.
echo "broker CPU (millicores, per run), agent off: ${broker_off[*]}; agent on: ${broker_on[*]}${AGENT_BEFORE:+; AGENT_BEFORE: ${broker_before[*]}}"
echo
echo "| BPF program | calls | avg ns per call | AGENT_BEFORE calls | its ns per call | after/before |"
echo "|---|---|---|---|---|---|"
awk '{t[$1" "$2]+=$3; c[$1" "$2]+=$4; p[$2]=1}
     END {for (k in p) if (c["after "k] > 0) {a = t["after "k]/c["after "k];
       if (c["before "k] > 0) {b = t["before "k]/c["before "k]; printf "| %s | %d | %.1f | %d | %.1f | %.3f |\n", k, c["after "k], a, c["before "k], b, a/b}
       else printf "| %s | %d | %.1f | - | - | - |\n", k, c["after "k], a}}' "$WORK/bpfstats.txt" | sort
