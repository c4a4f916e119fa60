#!/usr/bin/env bash
# The README's run command, end to end: start the whole stack on spare ports, check that it
# listens on loopback only, make a TCP exchange on this machine (curl to the graph service), and
# find it as an edge in the REST graph. Then once more with WATTGRAPH_BIND=0.0.0.0: the graph
# service alone on every interface, with generated tokens required.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$ROOT/target"
export WATTGRAPH_RUN_DIR=$(mktemp -d "$ROOT/target/run-smoke.XXXXXX")
# Spare ports and a host id of this run, so two runs on one machine do not meet.
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
export WATTGRAPH_KAFKA_PORT=$(free_port) WATTGRAPH_KAFKA_CONTROLLER_PORT=$(free_port) WATTGRAPH_BOLT_PORT=$(free_port)
export WATTGRAPH_SERVICE_PORT=$(free_port) WATTGRAPH_FLINK_PORT=$(free_port) WATTGRAPH_HOST_ID=smoke-host-$$
export WATTGRAPH_AGENT_METRICS_PORT=$(free_port) WATTGRAPH_FLINK_METRICS_PORT=$(free_port) WATTGRAPH_POWER_PERIOD=3s
HOST=$WATTGRAPH_HOST_ID
BASE_RUN_DIR=$WATTGRAPH_RUN_DIR
API=http://127.0.0.1:$WATTGRAPH_SERVICE_PORT
RUN_PID=""
LOG=$BASE_RUN_DIR/run.log
cleanup() {
  if [ -n "$RUN_PID" ] && kill -0 "$RUN_PID" 2>/dev/null; then kill -TERM "$RUN_PID"; wait "$RUN_PID" || true; fi
}
trap cleanup EXIT
fail() { echo "run-smoke: FAIL: $*" >&2; tail -n 40 "$LOG" >&2; exit 1; }

start_stack() { # start_stack RUN_DIR : bin/wattgraph run in the background, until it is up
  export WATTGRAPH_RUN_DIR=$1
  LOG=$1/run.log
  mkdir -p "$1"
  : >"$LOG"
  "$ROOT/bin/wattgraph" run >>"$LOG" 2>&1 &
  RUN_PID=$!
  local deadline=$((SECONDS + 600))
  until grep -q "Wattgraph is running" "$LOG"; do
    kill -0 "$RUN_PID" 2>/dev/null || fail "bin/wattgraph run exited before the stack was up"
    [ $SECONDS -lt $deadline ] || fail "stack not up after 600 s"
    sleep 1
  done
  echo "run-smoke: stack up (WATTGRAPH_BIND=${WATTGRAPH_BIND:-})"
}

stop_stack() { # Ctrl-C's path; then nothing of it may be left
  kill -TERM "$RUN_PID"
  wait "$RUN_PID" || true
  local port
  for port in $WATTGRAPH_KAFKA_PORT $WATTGRAPH_BOLT_PORT $WATTGRAPH_SERVICE_PORT $WATTGRAPH_FLINK_PORT $WATTGRAPH_FLINK_METRICS_PORT $WATTGRAPH_AGENT_METRICS_PORT; do
    if ss -Hltn "sport = :$port" | grep -q .; then fail "port $port still open after stopping"; fi
  done
  if pgrep -f "wattgraph-agent --host-id $HOST( |$)" >/dev/null; then fail "agent still running after stop"; fi
}

stack_pids() { # the run command and everything it started
  local todo=("$RUN_PID") p
  while [ ${#todo[@]} -gt 0 ]; do
    p=${todo[0]}; todo=("${todo[@]:1}")
    echo "$p"
    todo+=($(pgrep -P "$p" || true))
  done
}

# The stack's listening TCP sockets (ss lines) that are not on loopback, except on port $1.
exposed_sockets() {
  local pids listening
  pids=$(stack_pids | paste -sd'|')
  listening=$(ss -Hltnp | grep -E "pid=($pids)," || true)
  [ -n "$listening" ] || fail "no listening socket found for the stack's processes ($pids)"
  echo "run-smoke: the stack listens on: $(awk '{print $4}' <<<"$listening" | sort -u | paste -sd' ')" >&2
  grep -Ev '^\S+\s+\S+\s+\S+\s+(127\.[0-9.]+|\[::1\]|\[::ffff:127\.[0-9.]+\]):[0-9]+\s' <<<"$listening" \
    | grep -Ev "^\S+\s+\S+\s+\S+\s+\S+:${1:-none}\s" || true
}

start_stack "$BASE_RUN_DIR/default"
# A first run talks: the banner opens with the page's address, and every step says how long it took.
banner=$(grep -m1 "Wattgraph is running" "$LOG")
grep -qF "open $API/ " <<<"$banner" || fail "the banner's first line does not give the page's address ($API/): $banner"
page=$(curl -fsS "$API/") && grep -qi "<html" <<<"$page" || fail "the page at $API/ is not served"
for what in Kafka Neo4j "Flink job" "graph service" agent; do
  grep -Eq "wattgraph.* \[ *[0-9]+s\]   $what.* is up after [0-9]+ s" "$LOG" || fail "no timed 'is up' line for $what"
done
exposed=$(exposed_sockets)
[ -z "$exposed" ] || fail "listening beyond loopback by default:
$exposed"

# The exchange: curl (client) to the graph service (server) over loopback.
SERVICE_PID=$(ss -Hltnp "sport = :$WATTGRAPH_SERVICE_PORT" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)
[ -n "$SERVICE_PID" ] || fail "no process listens on $WATTGRAPH_SERVICE_PORT"
BODY=$(curl -fsS "$API/actuator/health")
sent_at=$(date +%s%N)

found=""
while [ $(( ($(date +%s%N) - sent_at) / 1000000000 )) -lt 60 ]; do
  found=$(curl -fsS "$API/api/v1/graph?host=$HOST" | jq -c --argjson spid "$SERVICE_PID" '
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
# The page on this stack as a person uses it: Debian's Chromium driven by playwright-core (graph-service's
# node_modules, installed by its build).
if [ -x /usr/bin/chromium ] && [ -d "$ROOT/graph-service/node_modules/playwright-core" ]; then
  mkdir -p "$BASE_RUN_DIR/screenshots"
  (cd "$ROOT/graph-service" && WATTGRAPH_URL=$API WATTGRAPH_EDGE=$(jq -r '.source + ">" + .target' <<<"$found" | head -1) \
    WATTGRAPH_HOST=$HOST WATTGRAPH_SHOTS=$BASE_RUN_DIR/screenshots node --test src/test/browser/stack.test.mjs) \
    || fail "the service map on the running stack (screenshots in $BASE_RUN_DIR/screenshots)"
elif [ "${CI:-}" = true ]; then
  fail "/usr/bin/chromium or graph-service/node_modules is missing (bin/wattgraph test installs Chromium; the build, the modules)"
else
  echo "run-smoke: no /usr/bin/chromium or graph-service/node_modules: the page on the running stack not checked"
fi
metrics=$(curl -fsS "http://127.0.0.1:$WATTGRAPH_AGENT_METRICS_PORT/metrics") || fail "agent metrics endpoint did not answer"
grep -q '^wattgraph_agent' <<<"$metrics" || fail "agent metrics have no wattgraph_agent series"
# The job's own counters in Prometheus' format, on the port the banner names.
grep -qF "http://127.0.0.1:$WATTGRAPH_FLINK_METRICS_PORT/metrics" "$LOG" || fail "the banner does not name the job's metrics port"
job_metrics=$(curl -fsS "http://127.0.0.1:$WATTGRAPH_FLINK_METRICS_PORT/metrics") || fail "the job's Prometheus endpoint did not answer"
for series in flink_taskmanager_job_task_operator_deserializer_deadLetters flink_taskmanager_job_task_operator_lateSamplesDropped \
    flink_taskmanager_job_task_operator_vipUnresolved flink_taskmanager_job_task_operator_oneSidedConnections \
    flink_taskmanager_job_task_operator_currentInputWatermark; do
  grep -q "^$series{" <<<"$job_metrics" || fail "the job's metrics have no $series"
done
# Every discard counter docs/architecture.md names (its "Discards" table) is exported by the running stack.
service_metrics=$(curl -fsS "$API/actuator/prometheus") || fail "the service's Prometheus endpoint did not answer"
discards=0
while IFS='|' read -r _ component series _; do
  component=$(xargs <<<"$component"); series=$(tr -d ' `' <<<"$series")
  case "$component" in
    agent) grep -q "^$series[{ ]" <<<"$metrics" || fail "the agent does not export $series (docs/architecture.md, Discards)" ;;
    "agent, shedding") continue ;; # only with --shed-mode (control::shedding::metrics tests them)
    job) grep -Eq "^flink_taskmanager_job_task_operator_([A-Za-z]+_)?$series[{ ]" <<<"$job_metrics" \
           || fail "the job does not export $series (docs/architecture.md, Discards)" ;;
    service) grep -q "^$series[{ ]" <<<"$service_metrics" || fail "the service does not export $series (docs/architecture.md, Discards)" ;;
    *) continue ;;
  esac
  discards=$((discards + 1))
done < <(sed -n '/^<!-- discards:/,/^$/p' "$ROOT/docs/architecture.md")
[ "$discards" -ge 20 ] || fail "docs/architecture.md's Discards table has $discards rows"
echo "run-smoke: all $discards discard counters of docs/architecture.md exported"
# The agent's and the job's dashboard panels, through a real Prometheus scraping this stack.
if [ -x /usr/bin/prometheus ]; then
  python3 "$ROOT/tests/dashboards-live.py" "$BASE_RUN_DIR/prometheus" "http://127.0.0.1:$WATTGRAPH_AGENT_METRICS_PORT/metrics" \
    "http://127.0.0.1:$WATTGRAPH_FLINK_METRICS_PORT/metrics" "$API/actuator/prometheus" || fail "the dashboards on the running stack"
elif [ "${CI:-}" = true ]; then
  fail "/usr/bin/prometheus is missing (Debian's prometheus: bin/wattgraph test installs it)"
else
  echo "run-smoke: no /usr/bin/prometheus: the dashboards on the running stack not checked"
fi
echo "run-smoke: the job's metrics: $(grep -c '^flink_' <<<"$job_metrics") flink_ series, dead letters: $(grep '^flink_taskmanager_job_task_operator_deserializer_deadLetters{' <<<"$job_metrics" | awk '{s+=$NF} END {print s}')"

# The power-budget loop: graph-service publishes this host's budget to Kafka, the agent (dry-run)
# receives it; both say so.
budget=""
until [ -n "$budget" ]; do
  budget=$(curl -fsS "$API/api/v1/power/budgets/current" | jq -c --arg host "$HOST" '[.budgets[]? | select(.hostId == $host)] | first // empty') || true
  [ -n "$budget" ] && break
  [ $(( ($(date +%s%N) - sent_at) / 1000000000 )) -lt 120 ] || fail "no published power budget for $HOST"
  sleep 1
done
echo "run-smoke: graph-service published a budget: $budget"
until curl -fsS "http://127.0.0.1:$WATTGRAPH_AGENT_METRICS_PORT/metrics" | grep -E '^wattgraph_agent_power_budget_sequence [1-9]' >/dev/null; do
  [ $(( ($(date +%s%N) - sent_at) / 1000000000 )) -lt 180 ] || fail "the agent never took a power budget (wattgraph_agent_power_budget_sequence)"
  sleep 1
done
echo "run-smoke: the agent took the budget: $(curl -fsS "http://127.0.0.1:$WATTGRAPH_AGENT_METRICS_PORT/metrics" | grep -E '^wattgraph_agent_power_budget_(sequence|watts) ' | tr '\n' ' ')"

stop_stack

# WATTGRAPH_BIND: the graph service on every interface, with tokens; everything else on loopback.
export WATTGRAPH_BIND=0.0.0.0
start_stack "$BASE_RUN_DIR/bind"
exposed=$(exposed_sockets "$WATTGRAPH_SERVICE_PORT")
[ -z "$exposed" ] || fail "with WATTGRAPH_BIND, listening beyond loopback besides the graph service:
$exposed"
ss -Hltn "sport = :$WATTGRAPH_SERVICE_PORT" | grep -Eq '\s(0\.0\.0\.0|\*|\[::\]):[0-9]+\s' \
  || fail "the graph service does not listen on every interface: $(ss -Hltn "sport = :$WATTGRAPH_SERVICE_PORT")"
TOKENS=$WATTGRAPH_RUN_DIR/auth-tokens
[ "$(stat -c %a "$TOKENS")" = 600 ] || fail "$TOKENS is mode $(stat -c %a "$TOKENS"), not 600"
grep -q "$TOKENS" "$LOG" || fail "the run command does not say where the tokens are"
READ=$(sed -n 's/^WATTGRAPH_AUTH_READ_TOKENS=//p' "$TOKENS")
ADMIN=$(sed -n 's/^WATTGRAPH_AUTH_ADMIN_TOKENS=//p' "$TOKENS")
[ ${#READ} -ge 32 ] && [ ${#ADMIN} -ge 32 ] && [ "$READ" != "$ADMIN" ] || fail "tokens missing or not distinct in $TOKENS"
if grep -qF "$READ" "$LOG" || ps -eo args | grep -F "$READ" | grep -vq grep; then fail "the read token is in the log or on a command line"; fi
code=$(curl -s -o /dev/null -w '%{http_code}' "$API/api/v1/hosts")
[ "$code" = 401 ] || fail "GET /api/v1/hosts without a token answered $code, not 401"
curl -fsS -o /dev/null -H "Authorization: Bearer $READ" "$API/api/v1/hosts" || fail "GET /api/v1/hosts with the read token failed"
echo "run-smoke: WATTGRAPH_BIND=0.0.0.0: graph service on every interface, 401 without a token, 200 with the read token"
stop_stack
unset WATTGRAPH_BIND
trap - EXIT
echo "run-smoke: 2 passed, 0 failed"
