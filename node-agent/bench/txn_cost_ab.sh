#!/bin/bash
# The socket programs' ns per call (kernel.bpf_stats_enabled) of two agent builds, alternated
# ROUNDS times in one run, in txn_cost.sh's keep-alive request/response phase (every call starts
# a request or a response, routes parsed: the costly case) and its iperf3 1 KiB phase (streaming).
# Prints medians and A/B ratios. Needs root.
# Usage: node-agent/bench/txn_cost_ab.sh AGENT_A AGENT_B [ROUNDS=3]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$ROOT/node-agent/bench/lib.sh"
A=$1; B=$2; ROUNDS=${3:-3}
need_root
need_cmds jq bpftool iperf3
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
for _ in $(seq 1 "$ROUNDS"); do
  txn_rows A "$A"
  txn_rows B "$B"
done
txn_table A B
echo "rounds: $ROUNDS (medians of the rounds; each round runs both builds back to back)"
