#!/usr/bin/env bash
# Throughput of two builds of stream-jobs, alternated ROUNDS times in one run: one measured part
# of StreamJobsBenchmark (RUN: correlation = generator -> VIP resolver -> correlator -> edge
# aggregator; windows = generated ResourceSamples and TransactionStats through the metric windows;
# both = the two in one job), parallelism 1, discarding sinks, EVENTS events per measured run, a
# JVM per run. Prints events per CPU-second of each run, the means and the ratio A/B.
# A and B are stream-jobs directories whose test classes and target/bench-classpath.txt are built
# (docs/benchmarks/stream-jobs.md; e.g. this checkout and a git worktree of an older commit).
# Usage: stream-jobs/bench/throughput_ab.sh DIR_A DIR_B [ROUNDS=3] [EVENTS=2000000] [RUN=correlation]
# (builds from before the windows benchmark only have RUN=correlation)
set -euo pipefail
A=$(cd "$1" && pwd); B=$(cd "$2" && pwd); ROUNDS=${3:-3}; EVENTS=${4:-2000000}; RUN=${5:-correlation}
WORK=$(mktemp -d)
jpid=
trap '[ -n "$jpid" ] && kill "$jpid" 2>/dev/null; rm -rf "$WORK"' EXIT
run() {  # DIR LABEL ROUND
  local dir=$1 out="$WORK/$2.$3"
  mkdir -p "$WORK/tmp"
  (cd "$dir" && exec java -Xmx2g -Djava.io.tmpdir="$WORK/tmp" \
      -cp "target/test-classes:target/classes:$(cat target/bench-classpath.txt)" \
      io.wattgraph.stream.bench.StreamJobsBenchmark "$EVENTS" 0 500) >"$out" 2>&1 &
  jpid=$!
  # The measured line is all that is used; older builds have no way to skip the Neo4j part.
  for _ in $(seq 1 1800); do
    grep -Eq "^$RUN +measured" "$out" && break
    kill -0 "$jpid" 2>/dev/null || break
    sleep 0.5
  done
  kill "$jpid" 2>/dev/null || true; wait "$jpid" 2>/dev/null || true; jpid=
  local line
  line=$(grep -E "^$RUN +measured" "$out") || { echo "run $2.$3 gave no result:" >&2; tail -20 "$out" >&2; exit 1; }
  echo "$2 round $3: $line"
  echo "$2 $(sed -E 's/.* ([0-9,]+) events per CPU-second.*/\1/' <<<"$line" | tr -d ,)" >>"$WORK/rows"
}
for r in $(seq 1 "$ROUNDS"); do
  run "$A" A "$r"
  run "$B" B "$r"
done
awk '/^A / {a += $2; na++} /^B / {b += $2; nb++}
     END {printf "mean events per CPU-second: A %.0f, B %.0f; A/B %.2f\n", a/na, b/nb, (a/na)/(b/nb)}' "$WORK/rows"
