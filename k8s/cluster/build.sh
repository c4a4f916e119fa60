#!/usr/bin/env bash
# Builds the test cluster's binaries from the Go module proxy at the versions of versions.sh:
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy, kubectl,
# CoreDNS and helm, into $K8S_BIN. A binary already there is not rebuilt; the Go build and module
# caches are under $WATTGRAPH_CACHE/go, so a new version reuses what it can.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/versions.sh"

export GOCACHE=$WATTGRAPH_CACHE/go/build GOMODCACHE=$WATTGRAPH_CACHE/go/mod
export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0
# Other work shares the machine's cores: the builds run at a lower priority.
GO="nice -n 10 go"
SRC=$K8S_CACHE/src
mkdir -p "$K8S_BIN" "$SRC"

say() { printf '\033[1mk8s build:\033[0m %s\n' "$*" >&2; }
have() { local b; for b in "$@"; do [ -x "$K8S_BIN/$b" ] || return 1; done; }

# A module of our own: one main package, its requirements resolved by `go mod tidy`.
main_module() { # main_module DIR MODULE-PATH GO-SOURCE
  rm -rf "$1" && mkdir -p "$1"
  printf 'module %s\n\ngo 1.24\n' "$2" >"$1/go.mod"
  printf '%s\n' "$3" >"$1/main.go"
}

build_etcd() {
  have etcd && return
  say "etcd $ETCD_VERSION"
  local d=$SRC/etcd
  main_module "$d" wattgraph.local/etcd 'package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }'
  (cd "$d" && $GO get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" && $GO mod tidy \
    && $GO build -o "$K8S_BIN/etcd" .)
}

# k8s.io/kubernetes from the module proxy lacks staging/ (its go.mod points k8s.io/* there): require
# the published staging modules of the same release instead, then build the commands.
build_kubernetes() {
  local cmds=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl)
  have "${cmds[@]}" && return
  say "Kubernetes $K8S_VERSION (${cmds[*]})"
  local d=$SRC/kubernetes
  if [ ! -f "$d/.prepared" ]; then
    local orig
    orig=$($GO mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')
    [ -d "$orig" ] || { say "go mod download k8s.io/kubernetes@$K8S_VERSION gave no directory"; exit 1; }
    rm -rf "$d" && cp -r "$orig" "$d" && chmod -R u+w "$d"
    rm -rf "$d/vendor" "$d"/go.work*
    local m edits=()
    for m in $(sed -n 's#^\s*\(k8s\.io/[^ ]*\) => \./staging/.*#\1#p' "$d/go.mod"); do
      edits+=("-dropreplace=$m" "-require=$m@$K8S_STAGING_VERSION")
    done
    [ ${#edits[@]} -gt 0 ] || { say "no ./staging replacements found in k8s.io/kubernetes's go.mod"; exit 1; }
    (cd "$d" && go mod edit "${edits[@]}" && $GO mod tidy -e)
    touch "$d/.prepared"
  fi
  local minor=${K8S_VERSION#v1.}
  minor=${minor%%.*}
  local ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION
    -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor
    -X k8s.io/component-base/version.gitTreeState=clean
    -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION"
  local c
  for c in "${cmds[@]}"; do
    have "$c" && continue
    say "  go build ./cmd/$c"
    (cd "$d" && $GO build -ldflags "$ldflags" -o "$K8S_BIN/$c" "./cmd/$c")
  done
}

# CoreDNS with the plugins a cluster's Corefile uses (the full build pulls every cloud SDK);
# package metrics is the "prometheus" directive.
build_coredns() {
  have coredns && return
  say "CoreDNS $COREDNS_VERSION"
  local d=$SRC/coredns p imports="" plugins=(errors log health ready kubernetes metrics forward cache loop reload loadbalance)
  for p in "${plugins[@]}"; do imports+="	_ \"github.com/coredns/coredns/plugin/$p\"
"; done
  # Directive order matters (it is the order plugins see a query): CoreDNS's own plugin.cfg order.
  main_module "$d" wattgraph.local/coredns "package main

import (
	\"github.com/coredns/coredns/core/dnsserver\"
	\"github.com/coredns/coredns/coremain\"
$imports)

func main() {
	dnsserver.Directives = []string{\"reload\", \"ready\", \"health\", \"prometheus\", \"errors\", \"log\", \"loadbalance\", \"cache\", \"kubernetes\", \"loop\", \"forward\"}
	coremain.Run()
}"
  (cd "$d" && $GO get "github.com/coredns/coredns@$COREDNS_VERSION" && $GO mod tidy \
    && $GO build -ldflags "-s -w" -o "$K8S_BIN/coredns" .)
}

build_helm() {
  have helm && return
  say "helm $HELM_VERSION"
  local d=$SRC/helm
  main_module "$d" wattgraph.local/helm 'package main'
  (cd "$d" && $GO get "helm.sh/helm/v3@$HELM_VERSION" \
    && $GO build -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" \
      -o "$K8S_BIN/helm" helm.sh/helm/v3/cmd/helm)
}

case "${1:-all}" in
  all) build_etcd; build_kubernetes; build_coredns; build_helm ;;
  etcd | kubernetes | coredns | helm) "build_$1" ;;
  *) echo "usage: $0 [all|etcd|kubernetes|coredns|helm]" >&2; exit 2 ;;
esac
say "binaries in $K8S_BIN"
