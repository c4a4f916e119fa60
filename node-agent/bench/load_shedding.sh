#!/usr/bin/env bash
# Load shedding, side by side in one run: a flood of short loopback connections from several
# generator processes at different rates (bounded count and time, 127.0.0.1 only), the agent
# producing to a real local Kafka broker with its CPU set-point at a few values, for each mode
# (off, kernel-drop, user fair, user priority, kernel fair, kernel priority). Per run:
#  - CPU MAPE: agent CPU (sum of its threads' /proc/.../schedstat, ns) per 1 s sample vs the
#    set-point, over the samples after WARMUP seconds during which all generators ran;
#  - count MAPE: per generator, the agent's connection estimate from surviving events
#    (wattgraph_agent_shed_connections_estimated_total) vs the generator's exact count;
#  - shed %: connections shed / decided.
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
AGENT=${AGENT:-$ROOT/target/release/wattgraph-agent}
FLOOD=$ROOT/node-agent/bench/conn_flood.py
WORK=$(mktemp -d "$ROOT/target/bench-shed.XXXXXX")
KAFKA_PORT=29192; SINK_PORT=25411; METRICS=127.0.0.1:29411
need_root
build_agent

trap kill_pids EXIT

start_kafka $KAFKA_PORT wattgraph.connections wattgraph.resources
python3 "$FLOOD" sink $SINK_PORT & pids+=($!)
sleep 0.5

# Generators: name, rate (connections/s, 0 = as fast as one Python process can), count.
# Each stops after SECS seconds (or its count), so all four load the agent for the whole run.
GENS=("wg-gen-a 0 $((SECS * 10000))" "wg-gen-b 1500 $((SECS * 1500))" "wg-gen-c 400 $((SECS * 400))" "wg-gen-d 40 $((SECS * 40))")
PRIO=(--shed-priority wg-gen-c=8 --shed-priority wg-gen-b=4)

agent_cpu_ns() { # sum over the agent's threads of on-CPU ns
  cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%.0f", s}'
}

run() { # run LABEL SETPOINT FLAGS... -> one line "LABEL SETPOINT cpu_mape count_mape shed_pct samples"
  local label=$1 sp=$2; shift 2
  start_agent "$WORK/agent-$label-$sp.log" --no-transactions --metrics-addr $METRICS "$@"
  local apid=$!
  wait_ready "$WORK/ready"
  sleep 1
  : >"$WORK/gens.txt"
  local gpids=()
  for g in "${GENS[@]}"; do
    read -r name rate count <<<"$g"
    timeout $((SECS + 20)) python3 "$FLOOD" gen $SINK_PORT "$count" "$rate" "$name" "$SECS" >>"$WORK/gens.txt" &
    gpids+=($!)
  done
  local cpu_f="$WORK/cpu-$label-$sp-$rep.txt"
  : >"$cpu_f"
  local t0 c0 t1 c1 i=0
  t0=$(date +%s%N); c0=$(agent_cpu_ns $apid)
  all_running() { local g; for g in "${gpids[@]}"; do kill -0 "$g" 2>/dev/null || return 1; done; }
  while all_running; do
    sleep 1
    t1=$(date +%s%N); c1=$(agent_cpu_ns $apid); i=$((i + 1))
    # A sample is kept only if every generator ran through all of it (the last one is partial).
    all_running && [ $i -gt "$WARMUP" ] && echo "$(( c1 - c0 )) $(( t1 - t0 ))" >>"$cpu_f"
    t0=$t1; c0=$c1
  done
  wait "${gpids[@]}" 2>/dev/null || true
  sleep 3 # the agent drains its ring and runs two more control intervals
  curl -s "http://$METRICS/metrics" >"$WORK/metrics-$label-$sp.txt" || true
  kill -TERM $apid; wait $apid 2>/dev/null || true
  python3 - "$label" "$sp" "$cpu_f" "$WORK/gens.txt" "$WORK/metrics-$label-$sp.txt" <<'EOF'
import re, sys
label, sp, cpu_f, gens_f, met_f = sys.argv[1:]
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
errs, per = [], []
for line in open(gens_f):
    name, pid, ok = line.split()
    e = est.get(int(pid), 0.0)
    errs.append(abs(e - int(ok)) / int(ok) if int(ok) else 0.0)
    per.append(f"{name[-1]}:{int(ok)}/{e:.0f}")
cm = 100 * sum(errs) / len(errs) if errs and not label.startswith("off") else float("nan")
shed_pct = 100 * shed / (kept + shed) if kept + shed else 0.0
print(f"{label} {sp} {cpu_mape:.2f} {mean_u:.4f} {cm:.3f} {shed_pct:.1f} {len(samples)} {' '.join(per)}")
EOF
}

echo "# load shedding (${SECS}s per run, warm-up ${WARMUP}s, $(nproc) cores, kernel $(uname -r))" | tee "$WORK/results.txt"
want() { [[ " $MODES " == *" $1 "* ]]; }
for rep in $(seq 1 "$REPS"); do
  for sp in "${SETPOINTS[@]}"; do
    want off && run off "$sp" --shed-mode off | tee -a "$WORK/results.txt"
    want kernel-drop && run kernel-drop "$sp" --shed-mode kernel-drop --cpu-setpoint "$sp" | tee -a "$WORK/results.txt"
    want user-fair && run user-fair "$sp" --shed-mode user --shed-policy fair --cpu-setpoint "$sp" | tee -a "$WORK/results.txt"
    want user-priority && run user-priority "$sp" --shed-mode user --shed-policy priority "${PRIO[@]}" --cpu-setpoint "$sp" | tee -a "$WORK/results.txt"
    want kernel-fair && run kernel-fair "$sp" --shed-mode kernel --shed-policy fair --cpu-setpoint "$sp" | tee -a "$WORK/results.txt"
    want kernel-priority && run kernel-priority "$sp" --shed-mode kernel --shed-policy priority "${PRIO[@]}" --cpu-setpoint "$sp" | tee -a "$WORK/results.txt"
    if [ -n "${BASELINE_AGENT:-}" ]; then
      want off && AGENT=$BASELINE_AGENT run off-base "$sp" --shed-mode off | tee -a "$WORK/results.txt"
      want kernel-fair && AGENT=$BASELINE_AGENT run kernel-fair-base "$sp" --shed-mode kernel --shed-policy fair --cpu-setpoint "$sp" | tee -a "$WORK/results.txt"
      want kernel-priority && AGENT=$BASELINE_AGENT run kernel-priority-base "$sp" --shed-mode kernel --shed-policy priority "${PRIO[@]}" --cpu-setpoint "$sp" | tee -a "$WORK/results.txt"
    fi
  done
  echo "# repetition $rep done" >>"$WORK/results.txt"
done
echo
echo "| set-point (cores) | mode | CPU MAPE | mean agent CPU (cores) | per-process count MAPE | shed | CPU MAPE / kernel-drop's | samples | exact/estimated per generator |"
echo "|---|---|---|---|---|---|---|---|---|"
awk '!/^#/ { if ($1 == "kernel-drop") kd[$2] = $3; rows[NR] = $0 }
     END { for (i = 1; i <= NR; i++) { if (!(i in rows)) continue; split(rows[i], f, " "); r = (f[1] !~ /^off/ && kd[f[2]] > 0) ? sprintf("%.2f", f[3] / kd[f[2]]) : "-";
           rest = ""; for (j = 8; j <= length(f); j++) rest = rest " " f[j];
           printf "| %s | %s | %s%% | %s | %s%% | %s%% | %s | %s |%s |\n", f[2], f[1], f[3], f[4], f[5], f[6], r, f[7], rest } }' \
  "$WORK/results.txt"
if [ "$REPS" -gt 1 ]; then
  echo
  echo "| set-point (cores) | mode | runs | CPU MAPE mean (min-max) | mean agent CPU (cores) | count MAPE mean |"
  echo "|---|---|---|---|---|---|"
  awk '!/^#/ { k = $2 " " $1; n[k]++; m[k] += $3; c[k] += $4; q[k] += $5
               if (!(k in lo) || $3 < lo[k]) lo[k] = $3; if (!(k in hi) || $3 > hi[k]) hi[k] = $3 }
       END { for (k in n) { split(k, f, " "); printf "| %s | %s | %d | %.2f%% (%.2f-%.2f) | %.4f | %.3f%% |\n", f[1], f[2], n[k], m[k]/n[k], lo[k], hi[k], c[k]/n[k], q[k]/n[k] } }' \
    "$WORK/results.txt" | sort
fi
echo "raw: $WORK/results.txt"
