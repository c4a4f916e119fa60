#!/usr/bin/env bash
# What NAT translation (capture/conntrack) costs the agent: its CPU per 1,000 short connections with
# --nat-entries 0 (off) and 65536 (on), for connections dialled directly and through a DNAT rule,
# side by side, alternating over ROUNDS. The flood runs in a namespace of its own whose nat table
# has the DNAT rule (so conntrack tracks it and sends NEW/DESTROY messages); the agent (--once, no
# Kafka) watches that namespace. CPU is the sum of the agent's threads' run time (schedstat, ns).
# Needs root, iproute2, iptables. Usage: node-agent/bench/nat_cost.sh [CONNECTIONS] [ROUNDS]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$ROOT/node-agent/bench/lib.sh"
N=${1:-20000}
ROUNDS=${2:-3}
AGENT=${AGENT:-$ROOT/target/release/wattgraph-agent}
NS=wg-natcost
SINK=25303
VPORT=25304
need_root
cleanup() { kill_pids; ip netns del $NS 2>/dev/null || true; }
trap cleanup EXIT
ip netns del $NS 2>/dev/null || true
ip netns add $NS
ip -n $NS link set lo up
ip netns exec $NS iptables -t nat -A OUTPUT -p tcp -d 127.0.0.1 --dport $VPORT -j DNAT --to-destination 127.0.0.1:$SINK
ip netns exec $NS python3 "$ROOT/node-agent/bench/conn_flood.py" sink $SINK & pids+=($!)
sleep 0.5
run_ns() { local s=0 f; for f in /proc/"$1"/task/*/schedstat; do s=$((s + $(cut -d' ' -f1 "$f"))); done; echo $s; }
declare -A total
for r in $(seq "$ROUNDS"); do
  for entries in 0 65536; do
    for port in $SINK $VPORT; do
      "$AGENT" --host-id cost --once --netns /run/netns/$NS --nat-entries "$entries" --sample-interval-ms 15000 \
        --log-level warn >/dev/null 2>&1 & apid=$!
      sleep 1.5
      before=$(run_ns $apid)
      ip netns exec $NS python3 "$ROOT/node-agent/bench/conn_flood.py" gen $port "$N" 0 wg-flood >/dev/null
      sleep 0.5 # the last ring batch
      after=$(run_ns $apid)
      kill -TERM $apid 2>/dev/null; wait $apid 2>/dev/null || true
      case=$([ $port = $SINK ] && echo direct || echo dnat)
      us=$(( (after - before) / 1000 ))
      total[$entries,$case]=$(( ${total[$entries,$case]:-0} + us ))
      echo "round $r --nat-entries $entries, $case: agent CPU $((us / 1000)) ms for $N connections"
    done
  done
done
for case in direct dnat; do
  awk -v off="${total[0,$case]}" -v on="${total[65536,$case]}" -v n="$N" -v r="$ROUNDS" -v c="$case" 'BEGIN {
    printf "%s connections: agent CPU per 1000 connections off %.2f ms, on %.2f ms, on/off %.3f\n", c, off / r / n, on / r / n, (off > 0 ? on / off : 0)
  }'
done
