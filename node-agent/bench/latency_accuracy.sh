#!/usr/bin/env bash
# Latency accuracy of the agent against wrk --latency (nginx on loopback, real Kafka broker):
# client-side p50/p75/p90/p99 of the agent vs wrk's own at four request rates, request counts,
# server time, the agent's CPU per scenario. Needs root. Usage: node-agent/bench/latency_accuracy.sh [SECONDS_PER_SCENARIO]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SECS=${1:-10}
for tool in wrk nginx; do
  command -v $tool >/dev/null || { apt-get install -y -qq wrk nginx-light >/dev/null || apt-get install -y -qq wrk nginx >/dev/null; }
done
cd "$ROOT"
cargo build --release -q -p wattgraph-agent
mvn -B -q -o -pl system-tests -am install -DskipTests
mvn -B -q -o -pl system-tests dependency:build-classpath -Dmdep.includeScope=test -Dmdep.outputFile=target/bench-cp.txt
CP="system-tests/target/test-classes:$(cat system-tests/target/bench-cp.txt)"
WORK=$(mktemp -d /tmp/wg-latency-XXXX)
trap 'rm -rf "$WORK"' EXIT
java -cp "$CP" io.wattgraph.system.bench.LatencyAccuracyBenchmark "$ROOT/target/release/wattgraph-agent" "$WORK" "$SECS"
