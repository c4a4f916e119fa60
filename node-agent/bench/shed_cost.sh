#!/usr/bin/env bash
# Per-call kernel cost of the socket BPF programs (kernel.bpf_stats_enabled) under a
# streaming load (iperf3 -l 1K over loopback) and a flood of short loopback connections,
# with the agent in `--once` mode plus any extra flags (e.g. --shed-mode kernel ...).
# Needs root. Usage: node-agent/bench/shed_cost.sh [CONNECTIONS] [-- AGENT FLAGS...]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$ROOT/node-agent/bench/lib.sh"
N=${1:-20000}; shift || true
[ "${1:-}" = "--" ] && shift
AGENT=${AGENT:-$ROOT/target/release/wattgraph-agent}
PORT=25301; SINK=25302
need_root
trap 'kill_pids; bpf_stats off' EXIT
iperf3 -s -B 127.0.0.1 -p $PORT >/dev/null 2>&1 & pids+=($!)
python3 "$ROOT/node-agent/bench/conn_flood.py" sink $SINK & pids+=($!)
sleep 0.5
bpf_stats on
"$AGENT" --host-id cost --once --no-transactions --sample-interval-ms 15000 --log-level warn "$@" >/dev/null 2>&1 & apid=$!
sleep 1.5
iperf3 -c 127.0.0.1 -p $PORT -l 1K -t 4 >/dev/null
python3 "$ROOT/node-agent/bench/conn_flood.py" gen $SINK "$N" 0 wg-flood >/dev/null
echo "| BPF program | calls | avg ns per call |"
echo "|---|---|---|"
# Only this agent's programs (other agents may be loaded): prog ids from its fds.
ids=$(grep -h '^prog_id:' /proc/$apid/fdinfo/* 2>/dev/null | awk '{print $2}' | sort -u | paste -sd, -)
bpftool prog show -j | jq -r --argjson ids "[${ids}]" '.[] | select(.id as $i | $ids | index($i)) | select(.name|test("^handle_(set_state|send|recv)")) | "| \(.name) | \(.run_cnt // 0) | \(if (.run_cnt // 0) > 0 then ((.run_time_ns // 0) / .run_cnt * 10 | floor / 10) else 0 end) |"'
kill -TERM $apid 2>/dev/null; wait $apid 2>/dev/null || true
