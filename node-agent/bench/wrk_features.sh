#!/usr/bin/env bash
# What each capture feature costs per request: wrk (100 B responses, keep-alive) against nginx on
# loopback, the agent as deployed ("all"), without HTTP routes (--http-routes 0) and without
# transactions (--no-transactions), alternated ROUNDS times in one run with bpf_stats on. Prints
# each socket program's ns per request and the agent process's CPU (medians over the rounds, min-max), and the differences that
# are each feature's cost: routes = all - noroutes, transactions = noroutes - notxn.
# VARIANTS="name=/path/to/agent ..." adds builds run with the default flags (measurement builds,
# e.g. a program with one step removed), compared with "all".
# CLOSE=1: every request on a new connection (run_wrk), so the figures per request are per
# connection, state changes included.
# Needs root. Usage: [CLOSE=1] node-agent/bench/wrk_features.sh [ROUNDS=3] [SECONDS=6] [CONNECTIONS=8]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$ROOT/node-agent/bench/lib.sh"
ROUNDS=${1:-3}
SECS=${2:-6}
CONNS=${3:-8}
AGENT=$ROOT/target/release/wattgraph-agent
WORK=$(mktemp -d "$ROOT/target/bench-wrkf.XXXXXX")
KAFKA_PORT=29094
PORT=25212
need_root
need_cmds jq bpftool bc
need_wrk_nginx
build_agent
trap 'kill_pids; bpf_stats off' EXIT
start_kafka $KAFKA_PORT wattgraph.connections wattgraph.transactions wattgraph.resources
start_nginx $PORT

configs=(all noroutes notxn)
declare -A bin=([all]=$AGENT [noroutes]=$AGENT [notxn]=$AGENT) flags=([all]="" [noroutes]="--http-routes 0" [notxn]="--no-transactions")
for v in ${VARIANTS:-}; do
  configs+=("${v%%=*}"); bin[${v%%=*}]=${v#*=}; flags[${v%%=*}]=""
  [ -x "${v#*=}" ] || { echo "VARIANTS: ${v#*=} is not an executable" >&2; exit 1; }
done

bpf_stats on
run_wrk small >/dev/null # the broker's JIT and nginx warm before the first measured round
rows=$WORK/rows
for _ in $(seq 1 "$ROUNDS"); do
  for c in "${configs[@]}"; do
    # shellcheck disable=SC2086 # flags are words
    AGENT=${bin[$c]} start_agent "$WORK/agent.log" ${flags[$c]}; apid=$!
    wait_ready "$WORK/ready"
    prog_stats $apid "$c" > "$WORK/progs0"; s0=$(date +%s%N); t0=$(cpu_ticks $apid)
    rps=$(run_wrk small | cut -d' ' -f1); s1=$(date +%s%N); t1=$(cpu_ticks $apid)
    prog_stats $apid "$c" > "$WORK/progs1"
    kill -TERM $apid; wait $apid || true
    reqs=$(echo "$rps * ($s1 - $s0) / 1000000000" | bc -l)
    # "config program ns_per_request", and "config req/s rps"
    prog_delta "$WORK/progs0" "$WORK/progs1" |
      awk -v c="$c" -v n="$reqs" '$1 ~ /^handle_(send|recv|sendmsg_begin|set_state|set_state_nested)$/ { t = $2 / n; all += t; print c, $1, t }
        END { print c, "all_socket_programs", all }' >> "$rows"
    echo "$c req/s $rps" >> "$rows"
    echo "$c agent_mc $(millicores "$t0" "$t1" "$s0" "$s1")" >> "$rows"
  done
done

# figure CONFIG NAME : "median (min-max)" of that config's rows; value: the median alone (none: 0).
figure() { awk -v c="$1" -v p="$2" '$1 == c && $2 == p { print $3 }' "$rows" | median_range; }
value() { [ "$1" = none ] && { echo 0; return; }; figure "$1" "$2" | cut -d' ' -f1; }
echo "# ns per request under wrk 100 B${CLOSE:+, each request a new connection} ($ROUNDS rounds, ${SECS}s, $CONNS connections, $(nproc) cores, kernel $(uname -r)), median (min-max)"
echo "| config | handle_recv | handle_send | handle_sendmsg_begin | handle_set_state | all socket programs | req/s | agent process, millicores |"
echo "|---|---|---|---|---|---|---|---|"
for c in "${configs[@]}"; do
  printf '| %s |' "$c"
  for p in handle_recv handle_send handle_sendmsg_begin handle_set_state all_socket_programs req/s agent_mc; do
    printf ' %s |' "$(figure "$c" "$p")"
  done
  echo
done
echo
echo "| feature (difference of medians) | handle_recv | handle_send | handle_sendmsg_begin | handle_set_state | all socket programs |"
echo "|---|---|---|---|---|---|"
diff_row() {
  printf '| %s |' "$1"
  for p in handle_recv handle_send handle_sendmsg_begin handle_set_state all_socket_programs; do
    printf ' %s |' "$(echo "$(value "$2" $p) - $(value "$3" $p)" | bc)"
  done
  echo
}
diff_row "routes (all - noroutes)" all noroutes
diff_row "transactions (noroutes - notxn)" noroutes notxn
diff_row "bytes and connections (notxn)" notxn none
for v in ${VARIANTS:-}; do diff_row "${v%%=*} - all" "${v%%=*}" all; done
