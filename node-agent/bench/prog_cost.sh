#!/usr/bin/env bash
# Kernel time of the connection programs of several revisions, without the agent: each
# revision's connections.bpf.c is compiled here as build.rs does and its tracing programs are
# loaded and attached by the load_programs example (no iterators, nothing drained, the object's
# default constants), alternated ROUNDS times under wrk (100 B responses, keep-alive) against
# nginx on loopback, bpf_stats on. Prints each program's ns per request per revision (median,
# min-max) and, per round, each revision's difference from the first (they ran minutes apart at
# most), with the median of those and the ratio of medians. Leaves the agent process out, and
# runs where a kernel refuses the map-element iterators the agent needs (node-agent/README.md,
# "Capabilities").
# CLOSE=1: every request on a new connection (run_wrk), so the figures per request are per
# connection, state changes included.
# Needs root. Usage: [CLOSE=1] node-agent/bench/prog_cost.sh ROUNDS SECONDS CONNECTIONS REV...
#   REV: a commit, or "tree" for the working tree; the first is the baseline.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$ROOT/node-agent/bench/lib.sh"
[ $# -ge 4 ] || { echo "usage: $0 ROUNDS SECONDS CONNECTIONS REV..." >&2; exit 2; }
ROUNDS=$1 SECS=$2 CONNS=$3
shift 3
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
LOADER=$TARGET/release/examples/load_programs
WORK=$(mktemp -d "$ROOT/target/bench-progs.XXXXXX")
PORT=25214
need_root
need_cmds jq bpftool bc clang
need_wrk_nginx
build_example load_programs "$LOADER"

# object REV : $WORK/REV.o, REV's connections programs, compiled with build.rs's flags.
object() {
  local src=$WORK/src-$1
  mkdir -p "$src"
  if [ "$1" = tree ]; then
    cp -r "$ROOT/node-agent/src/capture" "$src/"
  else
    git -C "$ROOT" archive "$1" node-agent/src/capture | tar -x -C "$src" --strip-components=2
  fi
  bpf_cc "$src/capture/connections/connections.bpf.c" "$WORK/$1.o" "$src/capture/connections" "$src/capture"
}
for rev in "$@"; do object "$rev"; done

trap 'kill_pids; bpf_stats off' EXIT
start_nginx $PORT
bpf_stats on
run_wrk small >/dev/null # nginx warm before the first measured round
rows=$WORK/rows
for r in $(seq 1 "$ROUNDS"); do
  for rev in "$@"; do
    rm -f "$WORK/ready" "$WORK/hold"
    mkfifo "$WORK/hold"
    "$LOADER" "$WORK/$rev.o" "$WORK/ready" < "$WORK/hold" & lp=$!
    pids+=("$lp")
    exec 9> "$WORK/hold" # the loader holds its programs until this closes
    wait_file "$WORK/ready" 300 || { echo "$rev: programs not attached" >&2; exit 1; }
    prog_stats $lp "$rev" > "$WORK/progs0"; s0=$(date +%s%N)
    rps=$(run_wrk small | cut -d' ' -f1); s1=$(date +%s%N)
    prog_stats $lp "$rev" > "$WORK/progs1"
    exec 9>&-
    wait $lp || true
    reqs=$(echo "$rps * ($s1 - $s0) / 1000000000" | bc -l)
    # "rev round program ns_per_request", and "rev round req/s rps"
    prog_delta "$WORK/progs0" "$WORK/progs1" |
      awk -v c="$rev" -v r="$r" -v n="$reqs" '$1 ~ /^handle_(send|recv|sendmsg_begin|set_state|set_state_nested)$/ { t = $2 / n; all += t; print c, r, $1, t }
        END { print c, r, "all_socket_programs", all }' >> "$rows"
    echo "$rev $r req/s $rps" >> "$rows"
  done
done

progs=(handle_recv handle_send handle_sendmsg_begin handle_set_state all_socket_programs)
figure() { awk -v c="$1" -v p="$2" '$1 == c && $3 == p { print $4 }' "$rows" | median_range; }
echo "# ns per request under wrk 100 B${CLOSE:+, each request a new connection} ($ROUNDS rounds, ${SECS}s, $CONNS connections, $(nproc) cores, kernel $(uname -r)), median (min-max); programs without the agent"
echo "| revision | handle_recv | handle_send | handle_sendmsg_begin | handle_set_state | all socket programs | req/s |"
echo "|---|---|---|---|---|---|---|"
for rev in "$@"; do
  printf '| %s |' "$rev"
  for p in "${progs[@]}" req/s; do printf ' %s |' "$(figure "$rev" "$p")"; done
  echo
done
base=$1
shift
[ $# -gt 0 ] || exit 0
echo
echo "| against $base: per-round difference, median (min..max); ratio of medians; rounds lower | handle_recv | handle_send | handle_sendmsg_begin | handle_set_state | all socket programs |"
echo "|---|---|---|---|---|---|"
for rev in "$@"; do
  printf '| %s |' "$rev"
  for p in "${progs[@]}"; do
    d=$(awk -v a="$rev" -v b="$base" -v p="$p" '$3 == p && $1 == a { x[$2] = $4 } $3 == p && $1 == b { y[$2] = $4 }
      END { for (r in x) if (r in y) print x[r] - y[r] }' "$rows")
    ratio=$(echo "$(figure "$rev" "$p" | cut -d' ' -f1) / $(figure "$base" "$p" | cut -d' ' -f1)" | bc -l)
    printf ' %s; %.2f; %s of %s |' "$(echo "$d" | median_range ..)" "$ratio" "$(echo "$d" | awk '$1 < 0' | wc -l)" "$(echo "$d" | wc -l)"
  done
  echo
done
