#!/usr/bin/env bash
# Time of importing the project's images into the test cluster's two containerds, REV's
# images.sh against the checkout's, alternated, each on a fresh cluster (up, import, down).
#   k8s/bench/image_import.sh [ROUNDS] [REV]      (defaults 2, HEAD~1; images built already)
# Prints each import's wall time and the checkout's over REV's per round.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ROUNDS=${1:-2}
REV=${2:-HEAD~1}
OLD=$ROOT/k8s/cluster/.images-$(git -C "$ROOT" rev-parse --short "$REV").sh
git -C "$ROOT" show "$REV:k8s/cluster/images.sh" >"$OLD"
chmod +x "$OLD"
trap 'rm -f "$OLD"; "$ROOT/bin/wattgraph" k8s down >/dev/null 2>&1 || true' EXIT
once() { # once SCRIPT : milliseconds of its import on a fresh cluster
  "$ROOT/bin/wattgraph" k8s up >/dev/null 2>&1
  local s e
  s=$(date +%s%N)
  "$1" import >/dev/null 2>&1
  e=$(date +%s%N)
  "$ROOT/bin/wattgraph" k8s down >/dev/null 2>&1
  echo $(((e - s) / 1000000))
}
for r in $(seq 1 "$ROUNDS"); do
  old=$(once "$OLD")
  new=$(once "$ROOT/k8s/cluster/images.sh")
  printf 'round %d: %s %d ms, checkout %d ms, ratio %.2f\n' "$r" "$REV" "$old" "$new" "$(echo "$new / $old" | bc -l)"
done
