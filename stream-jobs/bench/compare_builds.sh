#!/bin/bash
# Side by side in one run: StreamJobsBenchmark of another revision (a git worktree) and of this
# checkout, alternating ROUNDS times, events per CPU-second of each mix printed per run.
# Usage: stream-jobs/bench/compare_builds.sh REV [EVENTS=2000000] [ROUNDS=2]
# Note: building REV installs its artifacts into ~/.m2; run `mvn -o -q install -DskipTests` here after.
set -euo pipefail
REV=${1:?usage: compare_builds.sh REV [EVENTS] [ROUNDS]}
EVENTS=${2:-2000000}
ROUNDS=${3:-2}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OTHER=$ROOT/target/bench-worktree-$REV
prepare() {
  (cd "$1" && mvn -o -q -pl stream-jobs -am install -DskipTests \
    && mvn -o -q -pl stream-jobs test-compile dependency:build-classpath -Dmdep.includeScope=test \
         -Dmdep.outputFile=target/bench-classpath.txt)
}
[ -d "$OTHER" ] || git -C "$ROOT" worktree add -f "$OTHER" "$REV" >/dev/null
prepare "$OTHER"
prepare "$ROOT"
run() {
  cd "$1/stream-jobs" && mkdir -p target/tmp
  echo "=== $2"
  java -Xmx2g -Djava.io.tmpdir="$PWD/target/tmp" \
    -cp "target/test-classes:target/classes:$(cat target/bench-classpath.txt)" \
    io.wattgraph.stream.bench.StreamJobsBenchmark "$EVENTS" 0 2>&1 | grep measured
}
for _ in $(seq "$ROUNDS"); do
  run "$OTHER" "$REV"
  run "$ROOT" "this checkout"
done
