#!/usr/bin/env bash
# Load shedding, side by side in one run: a flood of short loopback connections from several
# generator processes at different rates (bounded count and time, 127.0.0.1 only), each
# connection making one or more request/response transactions of known sizes with the sink, the
# agent (transactions on, --transaction-interval-ms 1000) producing connections and
# TransactionStats to a real local Kafka broker with its CPU set-point at a few values, for each
# mode (off, kernel-drop, user fair, user priority, kernel fair, kernel priority). Per run:
#  - CPU MAPE: agent CPU (sum of its threads' /proc/.../schedstat, ns) per 1 s sample vs the
#    set-point, over the samples after WARMUP seconds during which all generators ran;
#  - count MAPE: per generator, the agent's connection estimate from surviving events
#    (wattgraph_agent_shed_connections_estimated_total) vs the generator's exact count;
#  - event count MAPE: per generator, the connections the run's ConnectionEvent records stand
#    for (each client end kept 1/keepProbability, counted as the stream job counts it; read
#    back from the run's own connection topic by examples/conn_totals.rs) vs the generator's
#    exact count: what the graph's per-edge estimate gets;
#  - request MAPE, request-bytes MAPE, response-bytes MAPE: per generator, the sums of the
#    CLIENT TransactionStats records of its pid (transactions, requestBytes, responseBytes; read
#    back from the run's own transaction topic by examples/txn_totals.rs with the agent's
#    decoder) vs the generator's exact figures; mean over the generators;
#  - p50 / p99 error: per generator, |agent - generator| / generator of the round-trip
#    percentile, the agent's from the exact merge of the clientRtt histograms of its records
#    (bucket midpoint), the generator's from its own perf_counter_ns send -> full response
#    times (nearest rank); mean over the generators;
#  - shed %: connections shed / decided.
# Kernel-aggregated figures (transactions, bytes, latency histograms) are never shed, so they
# should stay near exact whatever the shed; connection counts are rescaled estimates.
# Needs root. Usage: node-agent/bench/load_shedding.sh [SECONDS] [SETPOINTS...]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$ROOT/node-agent/bench/lib.sh"
SECS=${1:-20}; shift || true
SETPOINTS=("${@:-0.03 0.05}")
read -r -a SETPOINTS <<<"${SETPOINTS[*]}"
WARMUP=${WARMUP:-5}
# MODES: the runs to make (default all six); REPS: repetitions of the whole sequence;
# BASELINE_AGENT: another agent binary whose off and kernel-fair/priority runs follow AGENT's
# (label suffix -base), to compare two builds in one run.
MODES=${MODES:-off kernel-drop user-fair user-priority kernel-fair kernel-priority}
REPS=${REPS:-1}
# TRANSACTIONS=off: the agent with --no-transactions (the request/response load stays), to see
# what TransactionStats cost; the transaction columns are then empty.
# WORKLOAD=conn: the connection-only flood of the earlier runs (each connection sends 1 byte and
# closes, no response) with TRANSACTIONS=off; default rr (request/response, below).
WORKLOAD=${WORKLOAD:-rr}
TRANSACTIONS=${TRANSACTIONS:-on}
# EXTRA_FLAGS: agent flags added to every run (e.g. "--shed-interval-ms 250").
[ "$WORKLOAD" = conn ] && TRANSACTIONS=off
AGENT=${AGENT:-$ROOT/target/release/wattgraph-agent}
# TXN_TOTALS, CONN_TOTALS: read a run's transaction / connection topic back, per process
# (examples/txn_totals.rs, examples/conn_totals.rs).
TXN_TOTALS=${TXN_TOTALS:-${CARGO_TARGET_DIR:-$ROOT/target}/release/examples/txn_totals}
CONN_TOTALS=${CONN_TOTALS:-${CARGO_TARGET_DIR:-$ROOT/target}/release/examples/conn_totals}
FLOOD=$ROOT/node-agent/bench/conn_flood.py
WORK=$(mktemp -d "$ROOT/target/bench-shed.XXXXXX")
KAFKA_PORT=29192; SINK_PORT=25411; METRICS=127.0.0.1:29411
need_root
build_agent
build_example txn_totals "$TXN_TOTALS"
build_example conn_totals "$CONN_TOTALS"

trap kill_pids EXIT

start_kafka $KAFKA_PORT wattgraph.connections wattgraph.resources
python3 "$FLOOD" sink $SINK_PORT & pids+=($!)
sleep 0.5

# Generators: name, rate (connections/s, 0 = as fast as one Python process can), count,
# request bytes, response bytes, transactions per connection. Each stops after SECS seconds (or
# its count), so all four load the agent for the whole run.
GENS=("wg-gen-a 0 $((SECS * 10000)) 16 64 1" "wg-gen-b 1500 $((SECS * 1500)) 100 1000 1"
      "wg-gen-c 400 $((SECS * 400)) 200 4000 2" "wg-gen-d 40 $((SECS * 40)) 50 20000 4")
PRIO=(--shed-priority wg-gen-c=8 --shed-priority wg-gen-b=4)

agent_cpu_ns() { # sum over the agent's threads of on-CPU ns
  cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%.0f", s}'
}

run() { # run LABEL SETPOINT FLAGS... -> one line "LABEL SETPOINT cpu_mape mean_cpu count_mape
  #   req_mape reqbytes_mape respbytes_mape p50_err p99_err shed_pct samples PER-GENERATOR..."
  local label=$1 sp=$2; shift 2
  # A topic of its own per run (auto-created by the broker), so runs are read back apart.
  local ttopic="wattgraph.bench-txn.$label.$sp.$rep"
  local ctopic="wattgraph.bench-conn.$label.$sp.$rep"
  local txn_flags=(--transaction-topic "$ttopic" --transaction-interval-ms 1000)
  [ "$TRANSACTIONS" = off ] && txn_flags=(--no-transactions)
  # shellcheck disable=SC2086 # EXTRA_FLAGS: more agent flags for every run, word-split
  start_agent "$WORK/agent-$label-$sp.log" --topic "$ctopic" "${txn_flags[@]}" --metrics-addr $METRICS "$@" ${EXTRA_FLAGS:-}
  local apid=$!
  pids+=("$apid") # so the EXIT trap stops it too if the run is interrupted
  wait_ready "$WORK/ready"
  sleep 1
  : >"$WORK/gens.txt"
  local gpids=()
  for g in "${GENS[@]}"; do
    read -r name rate count reqb respb per <<<"$g"
    [ "$WORKLOAD" = conn ] && reqb=0
    timeout $((SECS + 20)) python3 "$FLOOD" gen $SINK_PORT "$count" "$rate" "$name" "$SECS" "$reqb" "$respb" "$per" >>"$WORK/gens.txt" &
    gpids+=($!); pids+=($!)
  done
  local cpu_f="$WORK/cpu-$label-$sp-$rep.txt"
  : >"$cpu_f"
  local t0 c0 t1 c1 i=0
  t0=$(date +%s%N); c0=$(agent_cpu_ns $apid || true)
  all_running() { local g; for g in "${gpids[@]}"; do kill -0 "$g" 2>/dev/null || return 1; done; }
  while all_running; do
    sleep 1
    t1=$(date +%s%N); c1=$(agent_cpu_ns $apid || true); i=$((i + 1))
    # A sample is kept only if every generator ran through all of it (the last one is partial).
    all_running && [ $i -gt "$WARMUP" ] && echo "$(( c1 - c0 )) $(( t1 - t0 ))" >>"$cpu_f"
    t0=$t1; c0=$c1
  done
  wait "${gpids[@]}" 2>/dev/null || true
  sleep 3 # the agent drains its ring and runs two more control intervals
  curl -s "http://$METRICS/metrics" >"$WORK/metrics-$label-$sp.txt" || true
  kill -TERM $apid 2>/dev/null || true; wait $apid 2>/dev/null || true # it flushes its last records first
  forget_pids "$apid" "${gpids[@]}"
  cp "$WORK/gens.txt" "$WORK/gens-$label-$sp-$rep.txt"
  local txn_f="$WORK/txn-$label-$sp-$rep.txt"
  if [ "$TRANSACTIONS" = off ]; then
    : >"$txn_f"
  else
    "$TXN_TOTALS" "127.0.0.1:$KAFKA_PORT" "$ttopic" 60 >"$txn_f" 2>"$txn_f.err" || echo "txn_totals: exit $? (see $txn_f.err)" >&2
  fi
  local conn_f="$WORK/conn-$label-$sp-$rep.txt"
  "$CONN_TOTALS" "127.0.0.1:$KAFKA_PORT" "$ctopic" 60 >"$conn_f" 2>"$conn_f.err" || echo "conn_totals: exit $? (see $conn_f.err)" >&2
  # (run is called in this shell, not in a pipeline, so its pids reach the EXIT trap.)
  python3 - "$label" "$sp" "$cpu_f" "$WORK/gens.txt" "$WORK/metrics-$label-$sp.txt" "$txn_f" "$conn_f" <<'EOF' | tee -a "$WORK/results.txt" || echo "run $label $sp: no result line (see $WORK)" >&2
import re, sys
label, sp, cpu_f, gens_f, met_f, txn_f, conn_f = sys.argv[1:]
sp = float(sp)
samples = [int(a) / int(b) for a, b in (l.split() for l in open(cpu_f) if l.strip())]
cpu_mape = 100 * sum(abs(u - sp) / sp for u in samples) / len(samples) if samples and sp > 0 else float("nan")
mean_u = sum(samples) / len(samples) if samples else float("nan")
met = open(met_f).read()
est, kept, shed = {}, 0, 0
for m in re.finditer(r'wattgraph_agent_shed_connections_estimated_total\{domain="pid:(\d+):[^"]*",rescaled="\w+"\} ([0-9.e+]+)', met):
    est[int(m.group(1))] = float(m.group(2))
for m in re.finditer(r'wattgraph_agent_shed_connections_total\{domain="[^"]*",outcome="(kept|shed)"\} ([0-9.e+]+)', met):
    if m.group(1) == "kept": kept += float(m.group(2))
    else: shed += float(m.group(2))
# txn_totals: ROLE TGID COMM RECORDS CONNECTIONS TRANSACTIONS REQ_BYTES RESP_BYTES HIST_COUNT P50 P90 P99
txn = {}
for l in open(txn_f):
    f = l.split()
    if len(f) == 12 and f[0] == "CLIENT":
        txn[int(f[1])] = [int(x) for x in f[5:]] + [int(f[4])]  # ..., P99, CONNECTIONS
# conn_totals: CLIENT TGID COMM SOCKETS SINGLE JOB
conn = {}
for l in open(conn_f):
    f = l.split()
    if len(f) == 6 and f[0] == "CLIENT":
        conn[int(f[1])] = float(f[5])
def rel(agent, exact):
    if not txn:
        return float("nan")  # TRANSACTIONS=off (or nothing read back)
    return abs(agent - exact) / exact if exact else (0.0 if agent == 0 else float("inf"))
errs, ev_errs, per = [], [], []
req_e, rqb_e, rsb_e, p50_e, p99_e = [], [], [], [], []
for line in open(gens_f):
    # NAME PID CONNS REQS REQ_BYTES RESP_BYTES P50_NS P90_NS P99_NS FAILED
    name, pid, ok, reqs, rqb, rsb, g50, g90, g99, failed = line.split()
    ok, reqs, rqb, rsb, g50, g99 = map(int, (ok, reqs, rqb, rsb, g50, g99))
    e = est.get(int(pid), 0.0)
    errs.append(abs(e - ok) / ok if ok else 0.0)
    ev = conn.get(int(pid), 0.0)
    ev_errs.append(abs(ev - ok) / ok if ok else 0.0)
    t = txn.get(int(pid), [0, 0, 0, 0, 0, 0, 0, 0])
    req_e.append(rel(t[0], reqs)); rqb_e.append(rel(t[1], rqb)); rsb_e.append(rel(t[2], rsb))
    p50_e.append(rel(t[4], g50)); p99_e.append(rel(t[6], g99))
    # per generator: conns exact/estimated(/in TransactionStats), requests exact/agent, p50 and
    # p99 generator/agent (us)
    a = lambda v: f"{v}" if txn else "-"
    per.append(f"{name[-1]}:{ok}/{e:.0f}" + (f"/{t[7]}" if txn else "") + f",ev{ev:.0f},r{reqs}/{a(t[0])},p50:{g50/1e3:.0f}/{a(round(t[4]/1e3))}us,p99:{g99/1e3:.0f}/{a(round(t[6]/1e3))}us"
               + (f",failed{failed}" if failed != "0" else ""))
mean = lambda xs: 100 * sum(xs) / len(xs) if xs else float("nan")
cm = mean(errs) if not label.startswith("off") else float("nan")
shed_pct = 100 * shed / (kept + shed) if kept + shed else 0.0
ecm = mean(ev_errs) if conn else float("nan")
print(f"{label} {sp} {cpu_mape:.2f} {mean_u:.4f} {cm:.3f} {mean(req_e):.3f} {mean(rqb_e):.3f} {mean(rsb_e):.3f} "
      f"{mean(p50_e):.1f} {mean(p99_e):.1f} {shed_pct:.1f} {ecm:.3f} {len(samples)} {' '.join(per)}")
EOF
}

echo "# load shedding (${SECS}s per run, warm-up ${WARMUP}s, workload $WORKLOAD, transactions $TRANSACTIONS, $(nproc) cores, kernel $(uname -r))" | tee "$WORK/results.txt"
want() { [[ " $MODES " == *" $1 "* ]]; }
for rep in $(seq 1 "$REPS"); do
  for sp in "${SETPOINTS[@]}"; do
    want off && run off "$sp" --shed-mode off
    want kernel-drop && run kernel-drop "$sp" --shed-mode kernel-drop --cpu-setpoint "$sp"
    want user-fair && run user-fair "$sp" --shed-mode user --shed-policy fair --cpu-setpoint "$sp"
    want user-priority && run user-priority "$sp" --shed-mode user --shed-policy priority "${PRIO[@]}" --cpu-setpoint "$sp"
    want kernel-fair && run kernel-fair "$sp" --shed-mode kernel --shed-policy fair --cpu-setpoint "$sp"
    want kernel-priority && run kernel-priority "$sp" --shed-mode kernel --shed-policy priority "${PRIO[@]}" --cpu-setpoint "$sp"
    if [ -n "${BASELINE_AGENT:-}" ]; then
      want off && AGENT=$BASELINE_AGENT run off-base "$sp" --shed-mode off
      want kernel-fair && AGENT=$BASELINE_AGENT run kernel-fair-base "$sp" --shed-mode kernel --shed-policy fair --cpu-setpoint "$sp"
      want kernel-priority && AGENT=$BASELINE_AGENT run kernel-priority-base "$sp" --shed-mode kernel --shed-policy priority "${PRIO[@]}" --cpu-setpoint "$sp"
    fi
  done
  echo "# repetition $rep done" >>"$WORK/results.txt"
done
echo
echo "| set-point (cores) | mode | CPU MAPE | mean agent CPU (cores) | per-process count MAPE | event count MAPE | request MAPE | request-bytes MAPE | response-bytes MAPE | p50 error | p99 error | shed | CPU MAPE / kernel-drop's | samples |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
awk 'function pc(x) { return x ~ /nan/ ? "-" : x "%" }
     !/^#/ { if ($1 == "kernel-drop") kd[$2] = $3; rows[NR] = $0 }
     END { for (i = 1; i <= NR; i++) { if (!(i in rows)) continue; split(rows[i], f, " "); r = (f[1] !~ /^off/ && kd[f[2]] > 0) ? sprintf("%.2f", f[3] / kd[f[2]]) : "-";
           printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", f[2], f[1], pc(f[3]), f[4], pc(f[5]), pc(f[12]), pc(f[6]), pc(f[7]), pc(f[8]), pc(f[9]), pc(f[10]), pc(f[11]), r, f[13] } }' \
  "$WORK/results.txt"
echo
echo "per generator (a-d): connections exact/estimated(/in TransactionStats), ev connections the events stand for, r requests exact/agent, p50 and p99 generator/agent"
awk '!/^#/ { rest = ""; for (j = 14; j <= NF; j++) rest = rest " " $j; printf "- %s %s:%s\n", $2, $1, rest }' "$WORK/results.txt"
if [ "$REPS" -gt 1 ]; then
  echo
  echo "| set-point (cores) | mode | runs | CPU MAPE mean (min-max) | mean agent CPU (cores) | count MAPE mean | event count MAPE mean | request MAPE mean | request-bytes MAPE mean | response-bytes MAPE mean | p50 error mean | p99 error mean | shed mean |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  # A column that is nan in any run of a cell (off's count, everything of TRANSACTIONS=off) is "-".
  awk 'function pc(k, j, d) { return (k, j) in none ? "-" : sprintf("%." d "f%%", x[k, j] / n[k]) }
       !/^#/ { k = $2 " " $1; n[k]++; m[k] += $3; c[k] += $4
               for (j = 5; j <= 12; j++) { if ($j ~ /nan/) none[k, j] = 1; else x[k, j] += $j }
               if (!(k in lo) || $3 < lo[k]) lo[k] = $3; if (!(k in hi) || $3 > hi[k]) hi[k] = $3 }
       END { for (k in n) { split(k, f, " "); printf "| %s | %s | %d | %.2f%% (%.2f-%.2f) | %.4f | %s | %s | %s | %s | %s | %s | %s | %s |\n", f[1], f[2], n[k], m[k]/n[k], lo[k], hi[k], c[k]/n[k],
             pc(k, 5, 3), pc(k, 12, 3), pc(k, 6, 3), pc(k, 7, 3), pc(k, 8, 3), pc(k, 9, 1), pc(k, 10, 1), pc(k, 11, 1) } }' \
    "$WORK/results.txt" | sort
fi
echo "raw: $WORK/results.txt"
