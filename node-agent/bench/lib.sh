# shellcheck shell=bash
# Shared by the agent benchmarks (sourced). Needs ROOT set; the helpers that start processes also
# need WORK, and append to the `pids` array that kill_pids (the caller's EXIT trap) stops.
pids=()

# need_root : the benchmarks load BPF programs.
need_root() {
  [ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 1; }
}

# need_cmds CMD... : apt-get installs each one missing (its package has the command's name).
need_cmds() {
  local p
  for p in "$@"; do
    command -v "$p" >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$p" >/dev/null
  done
}

# build_agent : the release build of the tree, brought up to date; another AGENT binary as found.
build_agent() {
  # The tree's own build is brought up to date (a no-op when it is); another binary is used as is.
  if [ "$AGENT" = "$ROOT/target/release/wattgraph-agent" ] || [ ! -x "$AGENT" ]; then
    cargo build --release -q -p wattgraph-agent --manifest-path "$ROOT/Cargo.toml"
  fi
}

# bpf_cc SRC OUT INCLUDE_DIR... : SRC compiled for BPF with build.rs's flags (this machine's
# architecture), libbpf's headers from the release build under CARGO_TARGET_DIR (default ROOT/target).
bpf_cc() {
  local src=$1 out=$2 inc arch d incs=()
  shift 2
  inc=$(find "${CARGO_TARGET_DIR:-$ROOT/target}/release/build" -maxdepth 3 -path '*libbpf-sys-*/out/include' | head -1)
  [ -n "$inc" ] || { echo "libbpf's headers not found under ${CARGO_TARGET_DIR:-$ROOT/target}/release/build" >&2; exit 1; }
  case $(uname -m) in x86_64) arch=x86 ;; aarch64) arch=arm64 ;; *) arch=$(uname -m) ;; esac
  for d in "$@"; do incs+=(-I "$d"); done
  clang -g -O2 -target bpf -D__TARGET_ARCH_$arch "${incs[@]}" -I "$inc" -Wall -Wno-unused-function \
    -c "$src" -o "$out"
}

# build_example NAME PATH : the agent crate's example NAME (release) at PATH, built when missing
# or older than its source or the agent's library (cargo puts it under CARGO_TARGET_DIR, default
# ROOT/target).
build_example() {
  if [ ! -x "$2" ] || [ -n "$(find "$ROOT/node-agent/examples/$1.rs" "$ROOT/node-agent/examples/support" "$ROOT/node-agent/src" "$ROOT/schemas/avro" -newer "$2" -print -quit)" ]; then
    cargo build --release -q -p wattgraph-agent --example "$1" --manifest-path "$ROOT/Cargo.toml"
  fi
  [ -x "$2" ] || { echo "example $1 not found at $2" >&2; exit 1; }
}

# bpf_stats on|off : kernel.bpf_stats_enabled for the per-call figures; off puts back the value it
# had before the first on (another tool may be counting), and is in the EXIT trap.
BPF_STATS_BEFORE=
bpf_stats() {
  if [ "$1" = on ]; then
    [ -n "$BPF_STATS_BEFORE" ] || BPF_STATS_BEFORE=$(sysctl -n kernel.bpf_stats_enabled)
    sysctl -qw kernel.bpf_stats_enabled=1
  elif [ -n "$BPF_STATS_BEFORE" ]; then
    sysctl -qw kernel.bpf_stats_enabled="$BPF_STATS_BEFORE"
  fi
}

# kill_pids : for the EXIT trap, so an interrupted run leaves nothing behind.
kill_pids() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}

# prog_stats PID LABEL : that agent's programs (from its fds), "LABEL name run_time_ns run_cnt";
# the times need bpf_stats on.
prog_stats() {
  local ids
  ids=$(grep -h '^prog_id:' /proc/"$1"/fdinfo/* 2>/dev/null | awk '{print $2}' | sort -u | paste -sd, -)
  bpftool prog show -j | jq -r --argjson ids "[${ids}]" --arg l "$2" '.[] | select(.id as $i | $ids | index($i))
    | select(.name|test("^(handle_|wg_)")) | "\($l) \(.name) \(.run_time_ns // 0) \(.run_cnt // 0)"'
}

# median_range [SEP] : numbers on stdin -> "median (minSEPmax)", rounded, SEP "-" unless given
# (".." where they may be negative); none: "0 (not attached)".
median_range() { sort -n | awk -v s="${1:--}" '{ v[NR] = $1 } END { if (!NR) { printf "0 (not attached)"; exit } m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.0f (%.0f%s%.0f)", m, v[1], s, v[NR] }'; }

# prog_delta FILE0 FILE1 : two prog_stats readings of one agent -> "name run_time_ns run_cnt"
# between them, a line per program.
prog_delta() {
  join -j 2 <(sort -k2 "$1") <(sort -k2 "$2") | awk '{ print $1, $6 - $3, $7 - $4 }'
}

# txn_rows CFG AGENT [FLAGS...] : one txn_cost.sh run of AGENT; appends "CFG phase program ns" rows
# (phase reqresp: every call starts a request or a response; iperf1k: streaming) to $OUT/all.txt.
txn_rows() {
  local cfg=$1 agent=$2; shift 2
  TMPDIR=$OUT bash "$ROOT/node-agent/bench/txn_cost.sh" "$agent" "$cfg-$RANDOM" "$@" |
    awk -v cfg="$cfg" '/request\/response/ {ph="reqresp"} /iperf3/ {ph="iperf1k"}
      /handle_(send|recv) / {split($3, a, "="); print cfg, ph, $1, a[2]}' >>"$OUT/all.txt"
}

# txn_table CFG_A CFG_B : medians of $OUT/all.txt's rows per phase and program, A against B.
txn_table() {
  local ph prog a b
  median() { sort -n | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
  printf "%-8s %-12s %10s %10s %7s %10s\n" phase program "$1" "$2" ratio difference
  for ph in reqresp iperf1k; do
    for prog in handle_recv handle_send; do
      a=$(awk -v c="$1" -v p=$ph -v g=$prog '$1==c && $2==p && $3==g {print $4}' "$OUT/all.txt" | median)
      b=$(awk -v c="$2" -v p=$ph -v g=$prog '$1==c && $2==p && $3==g {print $4}' "$OUT/all.txt" | median)
      awk -v ph=$ph -v g=$prog -v a="$a" -v b="$b" \
        'BEGIN {printf "%-8s %-12s %10.0f %10.0f %7.2f %10.0f\n", ph, g, a, b, a/b, a-b}'
    done
  done
}

# forget_pids PID... : takes processes already waited for off `pids` (their ids may be reused).
forget_pids() {
  local keep=() p q
  for p in "${pids[@]}"; do
    for q in "$@"; do [ "$p" = "$q" ] && continue 2; done
    keep+=("$p")
  done
  pids=("${keep[@]}")
}

# cpu_ticks PID : the process's user + system CPU time so far, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# millicores TICKS0 TICKS1 NS0 NS1 : CPU between two cpu_ticks readings over wall time NS0..NS1 (ns).
millicores() {
  echo "($2 - $1) / $(getconf CLK_TCK) / (($4 - $3) / 1000000000) * 1000" | bc -l | xargs printf '%.0f'
}

# start_kafka PORT TOPIC... : a real single-node broker from local-stack, waited for.
start_kafka() {
  local port=$1; shift
  local cp
  cp="$(cat "$ROOT/local-stack/target/runtime-classpath.txt"):$ROOT/local-stack/target/wattgraph-local-stack-0.1.0-SNAPSHOT.jar"
  java -Xmx512m -Djava.io.tmpdir="$WORK" -cp "$cp" io.wattgraph.localstack.LocalStackMain kafka "$WORK/kafka" "$port" 0 "$@" >"$WORK/kafka.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 240); do [ -f "$WORK/kafka/ready" ] && break; sleep 0.5; done
  [ -f "$WORK/kafka/ready" ] || { echo "kafka did not start (see $WORK/kafka.log)" >&2; exit 1; }
}

# start_agent LOG FLAGS... : AGENT in the background ($! is its pid) against the broker on
# KAFKA_PORT, ready file $WORK/ready (removed first, so a stale one is not taken for readiness).
start_agent() {
  local log=$1; shift
  rm -f "$WORK/ready"
  "$AGENT" --host-id bench --kafka-brokers "127.0.0.1:$KAFKA_PORT" --ready-file "$WORK/ready" --log-level warn "$@" >"$log" 2>&1 &
}

# wait_file FILE TRIES : polls every 0.1 s; fails if FILE has not appeared after TRIES polls.
wait_file() {
  for _ in $(seq 1 "$2"); do [ -f "$1" ] && return 0; sleep 0.1; done
  return 1
}

# wait_ready FILE : the agent writes it once its programs are attached.
wait_ready() {
  wait_file "$1" 200 || { echo "agent did not become ready" >&2; exit 1; }
}

# need_wrk_nginx : wrk and nginx, installed when missing.
need_wrk_nginx() {
  command -v wrk >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
  command -v nginx >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light >/dev/null \
    || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx >/dev/null
}

# start_nginx PORT : nginx on 127.0.0.1:PORT (one worker, keep-alive, no log) serving /small
# (100 B) and /large (128 KiB) from $WORK, checked byte for byte.
start_nginx() {
  local port=$1 path got
  mkdir -p "$WORK/www" "$WORK/nginx"
  head -c 100 /dev/zero | tr '\0' 'a' > "$WORK/www/small"
  head -c 131072 /dev/zero | tr '\0' 'b' > "$WORK/www/large"
  cat > "$WORK/nginx/nginx.conf" <<EOF
daemon off;
user root;
worker_processes 1;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  keepalive_requests 1000000;
  client_body_temp_path $WORK/nginx/body; proxy_temp_path $WORK/nginx/proxy;
  fastcgi_temp_path $WORK/nginx/fcgi; uwsgi_temp_path $WORK/nginx/uwsgi; scgi_temp_path $WORK/nginx/scgi;
  server { listen 127.0.0.1:$port; root $WORK/www; }
}
EOF
  nginx -c "$WORK/nginx/nginx.conf" -p "$WORK/nginx" & pids+=($!)
  for _ in $(seq 1 50); do curl -sf "http://127.0.0.1:$port/small" >/dev/null && break; sleep 0.1; done
  for path in small large; do
    got=$(curl -sf "http://127.0.0.1:$port/$path" | wc -c)
    [ "$got" = "$(stat -c %s "$WORK/www/$path")" ] || { echo "nginx served $got bytes for /$path" >&2; exit 1; }
  done
}

# run_wrk PATH : one wrk run (1 thread, CONNS connections, SECS seconds) against start_nginx's
# PORT -> "req/s p50 p90 p99" (latencies in µs). CLOSE=1: every request on a new connection
# (wrk's "Connection: close").
run_wrk() {
  local close=()
  [ -z "${CLOSE:-}" ] || close=(-H "Connection: close")
  wrk -t1 -c"$CONNS" -d"${SECS}s" --latency "${close[@]}" "http://127.0.0.1:$PORT/$1" | awk '
    /Non-2xx/ { print "wrk: " $0 > "/dev/stderr"; bad = 1 }
    function us(v) { if (v ~ /us$/) return v + 0; if (v ~ /ms$/) return v * 1000; if (v ~ /s$/) return v * 1000000; return v }
    /^ +50%/ { p50 = us($2) } /^ +90%/ { p90 = us($2) } /^ +99%/ { p99 = us($2) }
    /^Requests\/sec:/ { rps = $2 }
    END { if (bad) exit 1; printf "%s %s %s %s\n", rps, p50, p90, p99 }'
}
