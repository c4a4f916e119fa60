# Addresses and paths of the two-node test cluster (sourced by cluster.sh, images.sh and the tests).
. "$(dirname "${BASH_SOURCE[0]}")/versions.sh"

# Everything of a running cluster lives here (certificates, etcd, containerd, kubelet, CNI, logs);
# `down` removes it. Built binaries and images stay in $WATTGRAPH_CACHE.
K8S_STATE=${WATTGRAPH_K8S_STATE:-/var/lib/wattgraph-k8s}
# Held by a cluster test for its whole run, and by cluster.sh up/down/install while they run: the
# cluster is one per machine, and a second user's `down` would pull it from under a running test.
K8S_LOCK=/run/lock/wattgraph-k8s.lock
K8S_NODE=${WATTGRAPH_K8S_NODE:-wattgraph-node}
# The node's address, on an interface of its own: not loopback (pods must reach the API
# server there through the kubernetes Service) and not an interface of the machine's.
K8S_NODE_IF=wgk8s0
K8S_NODE_IP=${WATTGRAPH_K8S_NODE_IP:-10.245.0.1}
# The second node: a network namespace of its own, joined to the host by a veth pair (host side
# $K8S_NODE2_IF), with its own containerd, kubelet and kube-proxy on this kernel. Its pod range is
# the one the controller manager gives it (spec.podCIDR, a /24 of $K8S_CLUSTER_CIDR, as for the
# first node), routed by the host to its address.
K8S_NODE2=${WATTGRAPH_K8S_NODE2:-wattgraph-node-2}
K8S_NODE2_NETNS=wgk8s-node2
K8S_NODE2_IF=wgk8s1
K8S_NODE2_IP=10.245.0.2
# Every node address (the chart's network policies let the agents in from these).
K8S_NODE_CIDR=10.245.0.0/24
K8S_CLUSTER_CIDR=10.244.0.0/16
K8S_SERVICE_CIDR=10.96.0.0/16
K8S_API_VIP=10.96.0.1
K8S_DNS_IP=10.96.0.10
K8S_DOMAIN=cluster.local
K8S_API_PORT=6443
K8S_ETCD_PORT=23790
K8S_ETCD_PEER_PORT=23800

CONTAINERD_SOCK=$K8S_STATE/run/containerd.sock
CONTAINERD2_SOCK=$K8S_STATE/node-2/run/containerd.sock
KUBECONFIG_ADMIN=$K8S_STATE/pki/admin.kubeconfig
IMAGE_CACHE=$WATTGRAPH_CACHE/images
# Images the node itself needs (the pod sandbox, cluster DNS); the project's are in images.sh.
PAUSE_IMAGE=wattgraph.local/pause:$K8S_VERSION
COREDNS_IMAGE=wattgraph.local/coredns:$COREDNS_VERSION

kc() { "$K8S_BIN/kubectl" --kubeconfig "$KUBECONFIG_ADMIN" "$@"; }
ctr_k8s() { ctr --address "${CTR_SOCK:-$CONTAINERD_SOCK}" --namespace k8s.io "$@"; }
# ctr_k8s on each node's containerd that runs (CTR_SOCK set for the command).
each_containerd() { # each_containerd CMD...
  local sock
  for sock in "$CONTAINERD_SOCK" "$CONTAINERD2_SOCK"; do
    [ -S "$sock" ] || continue
    CTR_SOCK=$sock "$@"
  done
}
# The same on both nodes at once, failing if either fails.
each_containerd_at_once() { # each_containerd_at_once CMD...
  local sock pids=() p rc=0
  for sock in "$CONTAINERD_SOCK" "$CONTAINERD2_SOCK"; do
    [ -S "$sock" ] || continue
    CTR_SOCK=$sock "$@" & pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  return $rc
}
# Debian packages a script needs, installed when missing (CI starts from a clean machine).
ensure_packages() { # ensure_packages PACKAGE...
  local p missing=()
  for p in "$@"; do
    [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ] || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return
  printf '\033[1mk8s:\033[0m installing %s\n' "${missing[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
