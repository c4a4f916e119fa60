#!/usr/bin/env bash
# Per-call kernel cost of the socket BPF programs (kernel.bpf_stats_enabled) for two agent builds,
# alternated ROUNDS times in one run. Each run: iperf3 -l 1K over loopback for 3 s (the steady
# send/recv path), CONNS short loopback connections from one process (new sockets of a known
# process), then PROCS connections each from a new short-lived process (bash /dev/tcp: a new
# process per socket, the worst case for work done once per process). Agent in `--once` mode
# (no Kafka). Prints avg ns per call of each program per run, the means and medians (with
# min-max), and A/B ratios.
# TXN=on runs the agents with transaction tracking (their default; adds handle_sendmsg_begin).
# Needs root. Usage: [TXN=on] node-agent/bench/socket_cost_ab.sh AGENT_A AGENT_B [ROUNDS=3]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$ROOT/node-agent/bench/lib.sh"
A=$1; B=$2; ROUNDS=${3:-3}
CONNS=${CONNS:-20000}; PROCS=${PROCS:-500}
if [ "${TXN:-off}" = on ]; then TXN_FLAGS=(); else TXN_FLAGS=(--no-transactions); fi
PORT=25311; SINK=25312
need_root
need_cmds iperf3 bpftool jq
WORK=$(mktemp -d)
trap 'kill_pids; bpf_stats off; rm -rf "$WORK"' EXIT
iperf3 -s -B 127.0.0.1 -p $PORT >/dev/null 2>&1 & pids+=($!)
python3 "$ROOT/node-agent/bench/conn_flood.py" sink $SINK >/dev/null & pids+=($!)
sleep 0.5
for r in $(seq 1 "$ROUNDS"); do
  for label in A B; do
    if [ $label = A ]; then AGENT=$A; else AGENT=$B; fi
    bpf_stats on
    "$AGENT" --host-id cost --once "${TXN_FLAGS[@]}" --sample-interval-ms 15000 --log-level warn >/dev/null 2>&1 & apid=$!
    pids+=("$apid")
    sleep 1.5
    iperf3 -c 127.0.0.1 -p $PORT -l 1K -t 3 >/dev/null
    python3 "$ROOT/node-agent/bench/conn_flood.py" gen $SINK "$CONNS" 0 wg-flood >/dev/null
    for _ in $(seq 1 "$PROCS"); do
      bash -c "exec 3<>/dev/tcp/127.0.0.1/$SINK; printf x >&3" 2>/dev/null || true
    done
    # Only this agent's programs: prog ids from its fds.
    ids=$(grep -h '^prog_id:' /proc/$apid/fdinfo/* 2>/dev/null | awk '{print $2}' | sort -u | paste -sd, -)
    bpftool prog show -j | jq -r --argjson ids "[${ids}]" --arg l "$label" '.[] | select(.id as $i | $ids | index($i)) | select(.name|test("^handle_(set_state|send|recv|sendmsg_begin)$")) | "\($l) \(.name) \(.run_cnt // 0) \(if (.run_cnt // 0) > 0 then (.run_time_ns // 0) / .run_cnt else 0 end)"' | tee -a "$WORK/rows"
    kill -TERM "$apid" 2>/dev/null; wait "$apid" 2>/dev/null || true; forget_pids "$apid"
    bpf_stats off
  done
done
# Means, and medians with min-max: on a shared machine one disturbed round moves a mean.
echo "| BPF program | A ns per call (mean) | B | A/B | A median (min-max) | B median (min-max) | A/B of medians |"
echo "|---|---|---|---|---|---|---|"
sort -k1,2 -k4g "$WORK/rows" | awk '{k = $1" "$2; v[k, ++n[k]] = $4; s[k] += $4; p[$2] = 1}
     function med(k) { return n[k] % 2 ? v[k, (n[k] + 1) / 2] : (v[k, n[k] / 2] + v[k, n[k] / 2 + 1]) / 2 }
     END {for (q in p) {a = s["A "q] / n["A "q]; b = s["B "q] / n["B "q]; ma = med("A "q); mb = med("B "q)
       printf "| %s | %.1f | %.1f | %.3f | %.1f (%.1f-%.1f) | %.1f (%.1f-%.1f) | %.3f |\n", q, a, b, a / b,
         ma, v["A "q, 1], v["A "q, n["A "q]], mb, v["B "q, 1], v["B "q, n["B "q]], ma / mb}}' | sort
