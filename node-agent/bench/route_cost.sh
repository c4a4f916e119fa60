#!/bin/bash
# Cost of reading HTTP routes: the socket programs' ns per call (kernel.bpf_stats_enabled) with
# routes on (default) and off (--http-routes 0), alternated ROUNDS times in one run, in a
# keep-alive request/response phase (every call starts a request or a response: the worst case)
# and an iperf3 1 KiB phase (streaming: no request starts). Prints medians and on/off ratios.
# Needs root. Usage: node-agent/bench/route_cost.sh [ROUNDS=3]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$ROOT/node-agent/bench/lib.sh"
ROUNDS=${1:-3}
AGENT=$ROOT/target/release/wattgraph-agent
need_root
need_cmds jq bpftool iperf3
build_agent
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
for r in $(seq 1 "$ROUNDS"); do
  for cfg in on off; do
    flags=(); [ $cfg = off ] && flags=(--http-routes 0)
    # "phase program ns" lines
    TMPDIR=$OUT bash "$ROOT/node-agent/bench/txn_cost.sh" "$AGENT" "$cfg-$r" "${flags[@]}" |
      awk -v cfg=$cfg '/request\/response/ {ph="reqresp"} /iperf3/ {ph="iperf1k"}
        /handle_(send|recv) / {split($3, a, "="); print cfg, ph, $1, a[2]}' >>"$OUT/all.txt"
  done
done
median() { sort -n | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
printf "%-8s %-12s %10s %10s %7s %10s\n" phase program on_ns off_ns ratio added_ns
for ph in reqresp iperf1k; do
  for prog in handle_recv handle_send; do
    on=$(awk -v p=$ph -v g=$prog '$1=="on" && $2==p && $3==g {print $4}' "$OUT/all.txt" | median)
    off=$(awk -v p=$ph -v g=$prog '$1=="off" && $2==p && $3==g {print $4}' "$OUT/all.txt" | median)
    awk -v ph=$ph -v g=$prog -v on="$on" -v off="$off" \
      'BEGIN {printf "%-8s %-12s %10.0f %10.0f %7.2f %10.0f\n", ph, g, on, off, on/off, on-off}'
  done
done
echo "rounds: $ROUNDS (medians of the rounds; each round runs both configurations back to back)"
