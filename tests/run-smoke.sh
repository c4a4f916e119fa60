#!/usr/bin/env bash
# The README's run command, end to end: start the whole stack on spare ports, make a TCP exchange
# on this machine (curl to the graph service), and find it as an edge in the REST graph.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$ROOT/target"
export WATTGRAPH_RUN_DIR=$(mktemp -d "$ROOT/target/run-smoke.XXXXXX")
export WATTGRAPH_KAFKA_PORT=19092 WATTGRAPH_KAFKA_CONTROLLER_PORT=19093 WATTGRAPH_BOLT_PORT=17687
export WATTGRAPH_SERVICE_PORT=18080 WATTGRAPH_FLINK_PORT=18081 WATTGRAPH_HOST_ID=smoke-host
export WATTGRAPH_AGENT_METRICS_PORT=19400 WATTGRAPH_POWER_PERIOD=3s
LOG=$WATTGRAPH_RUN_DIR/run.log
API=http://127.0.0.1:$WATTGRAPH_SERVICE_PORT

: >"$LOG"
"$ROOT/bin/wattgraph" run >>"$LOG" 2>&1 &
RUN_PID=$!
cleanup() {
  if kill -0 $RUN_PID 2>/dev/null; then kill -TERM $RUN_PID; wait $RUN_PID || true; fi
}
trap cleanup EXIT
fail() { echo "run-smoke: FAIL: $*" >&2; tail -n 40 "$LOG" >&2; exit 1; }

deadline=$((SECONDS + 600))
until grep -q "Wattgraph is running" "$LOG"; do
  kill -0 $RUN_PID 2>/dev/null || fail "bin/wattgraph run exited before the stack was up"
  [ $SECONDS -lt $deadline ] || fail "stack not up after 600 s"
  sleep 1
done
echo "run-smoke: stack up"

# The exchange: curl (client) to the graph service (server) over loopback.
SERVICE_PID=$(ss -Hltnp "sport = :$WATTGRAPH_SERVICE_PORT" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)
[ -n "$SERVICE_PID" ] || fail "no process listens on $WATTGRAPH_SERVICE_PORT"
BODY=$(curl -fsS "$API/actuator/health")
sent_at=$(date +%s%N)

found=""
while [ $(( ($(date +%s%N) - sent_at) / 1000000000 )) -lt 60 ]; do
  found=$(curl -fsS "$API/api/v1/graph?host=smoke-host" | jq -c --argjson spid "$SERVICE_PID" '
    . as $g
    | ($g.nodes | map({key: .id, value: .}) | from_entries) as $n
    | $g.edges[]
    | select($n[.source].comm == "curl" and $n[.target].pid == $spid and .bytesServerToClient > 0)') || true
  [ -n "$found" ] && break
  sleep 0.5
done
[ -n "$found" ] || fail "the curl -> graph-service exchange never showed up in $API/api/v1/graph"
delay_ms=$(( ($(date +%s%N) - sent_at) / 1000000 ))
echo "run-smoke: edge visible in the REST graph ${delay_ms} ms after the exchange: $found"
echo "run-smoke: (health body was ${#BODY} bytes)"
metrics=$(curl -fsS "http://127.0.0.1:$WATTGRAPH_AGENT_METRICS_PORT/metrics") || fail "agent metrics endpoint did not answer"
grep -q '^wattgraph_agent' <<<"$metrics" || fail "agent metrics have no wattgraph_agent series"

# The power-budget loop: graph-service publishes this host's budget to Kafka, the agent (dry-run)
# receives it; both say so.
budget=""
until [ -n "$budget" ]; do
  budget=$(curl -fsS "$API/api/v1/power/budgets/current" | jq -c '[.budgets[]? | select(.hostId == "smoke-host")] | first // empty') || true
  [ -n "$budget" ] && break
  [ $(( ($(date +%s%N) - sent_at) / 1000000000 )) -lt 120 ] || fail "no published power budget for smoke-host"
  sleep 1
done
echo "run-smoke: graph-service published a budget: $budget"
until curl -fsS "http://127.0.0.1:$WATTGRAPH_AGENT_METRICS_PORT/metrics" | grep -Eq '^wattgraph_agent_power_budget_sequence [1-9]'; do
  [ $(( ($(date +%s%N) - sent_at) / 1000000000 )) -lt 180 ] || fail "the agent never took a power budget (wattgraph_agent_power_budget_sequence)"
  sleep 1
done
echo "run-smoke: the agent took the budget: $(curl -fsS "http://127.0.0.1:$WATTGRAPH_AGENT_METRICS_PORT/metrics" | grep -E '^wattgraph_agent_power_budget_(sequence|watts) ' | tr '\n' ' ')"

kill -TERM $RUN_PID
wait $RUN_PID || true
for port in $WATTGRAPH_KAFKA_PORT $WATTGRAPH_BOLT_PORT $WATTGRAPH_SERVICE_PORT $WATTGRAPH_FLINK_PORT $WATTGRAPH_AGENT_METRICS_PORT; do
  if ss -Hltn "sport = :$port" | grep -q .; then fail "port $port still open after stopping"; fi
done
pgrep -f "wattgraph-agent --host-id smoke-host" >/dev/null && fail "agent still running after stop"
trap - EXIT
echo "run-smoke: 1 passed, 0 failed"
