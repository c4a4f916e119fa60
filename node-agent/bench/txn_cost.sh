#!/bin/bash
# Per-call cost (kernel.bpf_stats_enabled) of the socket programs of AGENT: a keep-alive
# request/response phase (every send starts a request or a response) and an iperf3 -l 1K phase.
# Needs root, bpftool, jq, iperf3. Usage: node-agent/bench/txn_cost.sh AGENT LABEL [AGENT FLAGS...]
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$ROOT/node-agent/bench/lib.sh"
AGENT=$1; LABEL=$2; shift 2; W=${TMPDIR:-/tmp}/wg-txn-cost/$LABEL; mkdir -p $W; rm -f $W/ready
bpftool prog show -j | jq -r ".[].id" > $W/ids0
$AGENT --host-id bench --kafka-brokers 127.0.0.1:1 --ready-file $W/ready --log-level error --no-resources "$@" >$W/agent.log 2>&1 &
apid=$!
for _ in $(seq 1 100); do [ -f $W/ready ] && break; sleep 0.1; done
snap() { bpftool prog show -j | jq -r '.[] | select(.name|test("^handle_(send|recv|set_state)$")) | "\(.id) \(.name) \(.run_time_ns // 0) \(.run_cnt // 0)"' | grep -v -w -F -f $W/ids0 | cut -d' ' -f2- | sort; }
trap 'bpf_stats off' EXIT
bpf_stats on
snap > $W/s0
python3 "$(dirname "$0")/pingpong.py" 6 4 > $W/pp.txt
snap > $W/s1
iperf3 -s -B 127.0.0.1 -p 25299 -1 >/dev/null 2>&1 & sleep 0.3
iperf3 -c 127.0.0.1 -p 25299 -l 1K -t 5 >/dev/null 2>&1
snap > $W/s2
bpf_stats off
kill -TERM $apid; wait $apid
cat $W/pp.txt
echo "request/response phase:"; join $W/s0 $W/s1 | awk '{c=$5-$3; if (c>0) printf "  %s calls=%d ns/call=%.0f\n", $1, c, ($4-$2)/c}'
echo "iperf3 1K phase:"; join $W/s1 $W/s2 | awk '{c=$5-$3; if (c>0) printf "  %s calls=%d ns/call=%.0f\n", $1, c, ($4-$2)/c}'
