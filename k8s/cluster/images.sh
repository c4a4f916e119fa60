#!/usr/bin/env bash
# Container images without a registry: built with buildah (Debian's) from the project's Dockerfiles
# on bases made here (debootstrap), saved as archives in $IMAGE_CACHE/archives, imported into the
# test cluster's containerd.
#   images.sh system         the node's own images: the pod sandbox (pause) and CoreDNS
#   images.sh build          the bases and every project image (see IMAGES below)
#   images.sh import-system  import the node's images into each node's containerd (cluster.sh up does)
#   images.sh import         import every project image into each node's containerd
#   images.sh list           the images and their archives
#   images.sh prune          remove what earlier builds left (build does it at its end)
# A user builds the same Dockerfiles with their own builder and the public bases (README.md).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/env.sh"

ARCHIVES=$IMAGE_CACHE/archives
B=(buildah --root "$IMAGE_CACHE/buildah/root" --runroot "$IMAGE_CACHE/buildah/run")
PROJECT_VERSION=0.1.0
# Stand-ins for the public bases the Dockerfiles name by default, made here from Debian packages.
DEBIAN_IMAGE=wattgraph.local/debian:bookworm-slim
JRE_IMAGE=wattgraph.local/jre:17
# name|Dockerfile|build arguments: the project's images, built from what the host already built.
IMAGES=(
  "wattgraph/node-agent:$PROJECT_VERSION|node-agent/Dockerfile|RUNTIME_IMAGE=$DEBIAN_IMAGE"
  "wattgraph/graph-service:$PROJECT_VERSION|graph-service/Dockerfile|JRE_IMAGE=$JRE_IMAGE"
  "wattgraph/stream-jobs:$PROJECT_VERSION|stream-jobs/Dockerfile|FLINK_IMAGE=wattgraph/flink:2.2.1-java17"
  "wattgraph/kafka:4.2.2|k8s/images/kafka/Dockerfile|JRE_IMAGE=$JRE_IMAGE"
  "wattgraph/neo4j:5.26.30|k8s/images/neo4j/Dockerfile|JRE_IMAGE=$JRE_IMAGE"
  # The cluster test's client and server (k8s/tests/test_cluster.py), not part of the chart.
  "wattgraph/e2e-workload:$PROJECT_VERSION|k8s/tests/workload/Dockerfile|BASE_IMAGE=$DEBIAN_IMAGE"
)

say() { printf '\033[1mk8s images:\033[0m %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }
archive_of() { echo "$ARCHIVES/$(echo "$1" | tr '/:' '__').tar"; }
have_image() { "${B[@]}" images --quiet "$1" >/dev/null 2>&1; }

save() { # save IMAGE : docker-archive in $ARCHIVES, which `ctr images import` reads with its name
  mkdir -p "$ARCHIVES"
  local a
  a=$(archive_of "$1")
  rm -f "$a.tmp"
  "${B[@]}" push --quiet "$1" "docker-archive:$a.tmp:$1" >/dev/null
  mv "$a.tmp" "$a"
}

from_files() { # from_files IMAGE USER ENTRYPOINT-JSON SRC:DEST... : an image of static files, no base
  local image=$1 user=$2 entry=$3 c f; shift 3
  c=$("${B[@]}" from scratch)
  for f in "$@"; do "${B[@]}" copy --chmod 0755 "$c" "${f%%:*}" "${f#*:}" >/dev/null; done
  "${B[@]}" config --user "$user" --entrypoint "$entry" --cmd '' "$c"
  "${B[@]}" commit --quiet --rm "$c" "$image" >/dev/null
  save "$image"
}

system() {
  ensure_packages buildah gcc libc6-dev
  local tmp
  tmp=$(mktemp -d)
  if [ ! -f "$(archive_of "$PAUSE_IMAGE")" ]; then
    say "$PAUSE_IMAGE (Kubernetes' pause.c, static)"
    gcc -Os -static -o "$tmp/pause" "$K8S_CACHE/src/kubernetes/build/pause/linux/pause.c" \
      -DVERSION="$K8S_VERSION"
    from_files "$PAUSE_IMAGE" 65535:65535 '["/pause"]' "$tmp/pause:/pause"
  fi
  if [ ! -f "$(archive_of "$COREDNS_IMAGE")" ]; then
    say "$COREDNS_IMAGE"
    from_files "$COREDNS_IMAGE" 65532:65532 '["/coredns"]' "$K8S_BIN/coredns:/coredns"
  fi
  rm -rf "$tmp"
}

# ---------------------------------------------------------------- bases
debian_base() {
  have_image "$DEBIAN_IMAGE" && return
  local rootfs=$IMAGE_CACHE/rootfs/bookworm.tar
  if [ ! -f "$rootfs" ]; then
    say "Debian bookworm rootfs (debootstrap --variant=minbase)"
    local d=$IMAGE_CACHE/rootfs/bookworm.tmp
    [ -f "$d/etc/debian_version" ] || { rm -rf "$d"; debootstrap --variant=minbase bookworm "$d" http://deb.debian.org/debian >&2; }
    rm -rf "$d"/var/cache/apt/archives/*.deb "$d"/var/lib/apt/lists/*
    tar -C "$d" --numeric-owner -cf "$rootfs.tmp" . && mv "$rootfs.tmp" "$rootfs" && rm -rf "$d"
  fi
  say "$DEBIAN_IMAGE"
  local c
  c=$("${B[@]}" from scratch)
  "${B[@]}" add "$c" "$rootfs" / >/dev/null
  "${B[@]}" config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --cmd /bin/bash "$c"
  "${B[@]}" commit --quiet --rm "$c" "$DEBIAN_IMAGE" >/dev/null
}

bud() { # bud IMAGE DOCKERFILE BUILD-ARG... : the Dockerfile with the host's artefacts (ARTEFACTS=prebuilt)
  local image=$1 file=$2 args=() a; shift 2
  for a in "$@"; do args+=(--build-arg "$a"); done
  say "$image ($file)"
  "${B[@]}" bud --quiet --pull-never --network host --layers --build-arg ARTEFACTS=prebuilt "${args[@]}" \
    -f "$ROOT/$file" -t "$image" "$ROOT" >/dev/null
  save "$image"
}

# What the ARTEFACTS=prebuilt stages copy: the host's builds (bin/wattgraph build) and the jars of
# the Maven-built images.
artefacts() {
  local f x
  for f in target/release/wattgraph-agent target/release/wattgraph-service-mapper \
           graph-service/target/wattgraph-graph-service-0.1.0-SNAPSHOT.jar \
           stream-jobs/target/wattgraph-stream-jobs-0.1.0-SNAPSHOT-job.jar; do
    [ -f "$ROOT/$f" ] || die "$f is missing: run bin/wattgraph build first"
  done
  local stamp
  for x in kafka neo4j flink; do
    # Rebuilt when its pom or sources (kafka's CreateTopics) are newer than the last build.
    stamp=$ROOT/k8s/images/$x/target/lib.built
    [ -f "$stamp" ] && [ -z "$(find "$ROOT/k8s/images/$x/pom.xml" "$ROOT/k8s/images/$x/src" -newer "$stamp" 2>/dev/null)" ] \
      && continue
    say "jars of the $x image (mvn -f k8s/images/$x/pom.xml package)"
    mvn -B -q -f "$ROOT/k8s/images/$x/pom.xml" package
    touch "$stamp"
  done
}

# Unnamed images older than $1 (epoch s) that no image builds on: the stages of earlier builds
# (each build of changed artefacts left ~1.3 GB). The layer cache of unchanged steps is an ancestor
# of a named image, so buildah refuses to remove it and it stays. First the working containers that
# bud leaves of the stages it copied from (they hold those images); this storage is the project's
# own and builds in it run one at a time (the cluster test's lock).
prune() {
  local since=$1 id created n=0
  "${B[@]}" rm --all >/dev/null
  while read -r id created; do
    [ "$created" -lt "$since" ] && "${B[@]}" rmi "$id" >/dev/null 2>&1 && n=$((n + 1))
  done < <("${B[@]}" images --all --noheading --filter dangling=true --format '{{.ID}} {{.Created}}')
  say "removed $n images of earlier builds"
}

# What no build of this checkout changes: the system images, the Debian base and the JRE on it.
bases() {
  ensure_packages buildah debootstrap gcc libc6-dev
  system
  debian_base
  have_image "$JRE_IMAGE" || bud "$JRE_IMAGE" k8s/images/jre/Dockerfile "BASE_IMAGE=$DEBIAN_IMAGE"
}

build() {
  local started
  started=$(date +%s)
  bases
  artefacts
  bud wattgraph/flink:2.2.1-java17 k8s/images/flink/Dockerfile "JRE_IMAGE=$JRE_IMAGE"
  local i name file arg
  for i in "${IMAGES[@]}"; do
    IFS='|' read -r name file arg <<<"$i"
    bud "$name" "$file" "$arg"
  done
  prune "$started"
}

import_archive() { # import_archive IMAGE : unless containerd has it with the archive's digest
  local a
  a=$(archive_of "$1")
  [ -f "$a" ] || die "no archive for $1 ($a): run images.sh build (or system)"
  say "importing $1 (${CTR_SOCK:-$CONTAINERD_SOCK})"
  ctr_k8s images import "$a" >/dev/null
}

import_system() {
  local i
  for i in "$PAUSE_IMAGE" "$COREDNS_IMAGE"; do
    ctr_k8s images ls -q | grep -qx "$i" || import_archive "$i"
  done
}

import_all() {
  local i
  for i in "${IMAGES[@]}"; do import_archive "${i%%|*}"; done
}

case "${1:-}" in
  system) system ;;
  bases) bases ;;
  build) build ;;
  import-system) system; each_containerd import_system ;;
  import) each_containerd_at_once import_all ;;
  list) "${B[@]}" images; ls -la "$ARCHIVES" ;;
  prune) prune "$(date +%s)" ;;
  *) echo "usage: $0 system|build|import-system|import|list" >&2; exit 2 ;;
esac
