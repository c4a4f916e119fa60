#!/usr/bin/env bash
# Agent footprint with 100,000 open connections (200,000 sockets, both ends on this host), then
# after they close, then after a churn of short connections; for the default map sizes (LRU
# eviction under this load) and for maps sized for it. Reports the agent's RSS and peak RSS,
# the kernel memory of its BPF maps, the socket map's fill and the agent's own loss counters.
# Needs root. Usage: node-agent/bench/footprint.sh [CONNECTIONS=100000] [CHURN=100000]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$ROOT/node-agent/bench/lib.sh"
CONNS=${1:-100000}
CHURN=${2:-100000}
AGENT=${AGENT:-$ROOT/target/release/wattgraph-agent}
WORK=$(mktemp -d "$ROOT/target/bench-footprint.XXXXXX")
KAFKA_PORT=29292; BASE_PORT=26100; SINK_PORT=26190; METRICS=127.0.0.1:29491
# Without CAP_SYS_RESOURCE the per-process file limit caps one holder (both ends of each
# connection): spread the connections over holder processes, one listening port each.
PER_HOLDER=$(( ($(ulimit -Hn) - 100) / 2 )); HOLDERS=$(( (CONNS + PER_HOLDER - 1) / PER_HOLDER ))
need_root
need_cmds jq bpftool
build_agent

trap kill_pids EXIT
start_kafka $KAFKA_PORT wattgraph.connections wattgraph.resources wattgraph.transactions
python3 "$ROOT/node-agent/bench/conn_flood.py" sink $SINK_PORT & pids+=($!)

mb() { awk -v k="$2" '$1 == k":" {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }
# A counter summed over its labels.
metric() { curl -s "http://$METRICS/metrics" | awk -v m="$1" '$1 == m || index($1, m "{") == 1 {s += $2} END {printf "%.0f", s}'; }
# The agent's BPF maps, from its file descriptors (this bpftool does not report owners).
map_ids() { grep -h '^map_id:' /proc/"$1"/fdinfo/* 2>/dev/null | awk '{print $2}' | sort -un; }
maps_mb() {
  local total=0 id
  for id in $(map_ids "$1"); do
    total=$(( total + $(bpftool map show id "$id" -j | jq '.bytes_memlock // 0') ))
  done
  awk -v b=$total 'BEGIN {printf "%.1f", b / 1048576}'
}
row() { # row LABEL PHASE PID
  printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$1" "$2" "$(mb "$3" VmRSS)" "$(mb "$3" VmHWM)" \
    "$(maps_mb "$3")" "$(metric wattgraph_agent_socket_map_entries)" "$(metric wattgraph_agent_socket_storage_refused_total)" "$(metric wattgraph_agent_transaction_map_full_total)" \
    "$(metric wattgraph_agent_ringbuf_lost_total)"
}

echo "| maps | phase | RSS (MB) | peak RSS (MB) | BPF maps (MB) | sockets with state | storage refused | txn map full | ring-buffer lost |"
echo "|---|---|---|---|---|---|---|---|---|"
# label:flags pairs; FOOTPRINT_CONFIGS (newline separated) replaces them, e.g. to attribute
# the peak to one part of the agent. "label@/path/to/agent:flags" runs another build, so two
# builds are compared in one run.
CONFIGS=${FOOTPRINT_CONFIGS:-"default:
sized:--map-entries 262144 --transaction-hist-entries 524288"}
while IFS= read -r cfg; do
  [ -n "$cfg" ] || continue
  label=${cfg%%:*}; flags=${cfg#*:}
  build=$AGENT
  if [[ $label == *@* ]]; then build=${label#*@}; label=${label%%@*}; fi
  rm -f "$WORK/release"
  # shellcheck disable=SC2086
  AGENT=$build start_agent "$WORK/agent-$label.log" --metrics-addr $METRICS $flags
  apid=$!; pids+=($apid)
  wait_ready "$WORK/ready"; sleep 3
  row "$label" "idle" $apid
  hpids=()
  for h in $(seq 0 $((HOLDERS - 1))); do
    n=$(( CONNS / HOLDERS + (h < CONNS % HOLDERS ? 1 : 0) ))
    python3 "$ROOT/node-agent/bench/conn_hold.py" $((BASE_PORT + h)) 1 $n "$WORK/held.$h" "$WORK/release" & hpids+=($!)
  done
  for _ in $(seq 1 1500); do [ "$(ls "$WORK"/held.* 2>/dev/null | wc -l)" = "$HOLDERS" ] && break; sleep 0.2; done
  [ "$(ls "$WORK"/held.* 2>/dev/null | wc -l)" = "$HOLDERS" ] || { echo "connection holders did not finish" >&2; exit 1; }
  sleep 12  # a few snapshot and transaction intervals with every socket live
  row "$label" "$(cat "$WORK"/held.* | awk '{s += $1} END {print s}') connections open" $apid
  touch "$WORK/release"; wait "${hpids[@]}" || true; rm -f "$WORK"/held.*
  sleep 12
  row "$label" "after they closed" $apid
  python3 "$ROOT/node-agent/bench/conn_flood.py" gen $SINK_PORT "$CHURN" 0 wg-churn >/dev/null
  sleep 6
  row "$label" "after $CHURN short connections" $apid
  kill -TERM $apid; wait $apid || true
done <<<"$CONFIGS"
echo "agent logs: $WORK"
