# Shared by the agent benchmarks (sourced). Needs ROOT and WORK set and a `pids` array that the
# caller's EXIT trap kills.

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

# wait_ready FILE : the agent writes it once its programs are attached.
wait_ready() {
  for _ in $(seq 1 200); do [ -f "$1" ] && return 0; sleep 0.1; done
  echo "agent did not become ready" >&2; exit 1
}
