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
for _ in $(seq 1 "$ROUNDS"); do
  txn_rows on "$AGENT"
  txn_rows off "$AGENT" --http-routes 0
done
txn_table on off
echo "rounds: $ROUNDS (medians of the rounds; each round runs both configurations back to back)"
