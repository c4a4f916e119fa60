#!/usr/bin/env bash
# A two-node Kubernetes cluster on this machine, from the binaries build.sh made:
#   cluster.sh prepare install the packages, build the binaries and the images' bases; start nothing
#   cluster.sh up      start (or complete) etcd, the control plane, CoreDNS and two nodes: the host's
#                      network namespace, and a namespace of its own for the second, each with its
#                      containerd, kubelet and kube-proxy (iptables); return when both nodes are Ready
#                      and DNS answers
#   cluster.sh down    stop all of it and remove what it left: processes, pods' network namespaces,
#                      mounts, iptables chains, the node's interface, cgroups, $K8S_STATE
#   cluster.sh status  what runs
#   cluster.sh install the chart (k8s/chart/wattgraph) with test-values.yaml, images imported
# Needs root. Addresses and paths: env.sh.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/env.sh"

S=$K8S_STATE
P=$S/pki
N2=$S/node-2
APT_PACKAGES=(containerd runc containernetworking-plugins conntrack iptables openssl dnsutils iproute2 curl)
# Kernel settings kubelet or the pod network change; saved at `up`, put back at `down`.
SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys
         kernel.keys.root_maxbytes net.ipv4.ip_forward)
# Children first: the order `down` stops them in is the reverse.
COMPONENTS=(containerd containerd-2 etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy
            kubelet-2 kube-proxy-2)
# Each node's kubelet puts its pods under a cgroup of its own in every v1 hierarchy.
CGROUP_ROOT=wattgraph-k8s
CGROUP_ROOT2=wattgraph-k8s-2

say() { printf '\033[1mk8s:\033[0m %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

# ---------------------------------------------------------------- processes
pid_of() { local f=$S/pids/$1.pid; [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null && cat "$f"; }

start() { # start NAME CMD... : in its own session, logs in $S/logs, pid in $S/pids
  local name=$1; shift
  pid_of "$name" >/dev/null && return
  say "starting $name"
  # Not holding the lock (fd 9): it is the command's, not the cluster's.
  setsid "$@" >>"$S/logs/$name.log" 2>&1 </dev/null 9>&- &
  echo $! >"$S/pids/$name.pid"
}

stop() { # stop NAME : TERM, then KILL after 20 s
  local pid
  pid=$(pid_of "$1") || { rm -f "$S/pids/$1.pid"; return 0; }
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$S/pids/$1.pid"
  say "stopped $1"
}

wait_for() { # wait_for WHAT SECONDS CMD... ; names the log of a component that died meanwhile
  local what=$1 secs=$2 c; shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    for c in "${COMPONENTS[@]}"; do
      if [ -f "$S/pids/$c.pid" ] && ! pid_of "$c" >/dev/null; then
        tail -n 20 "$S/logs/$c.log" >&2
        die "$c exited while waiting for $what (log: $S/logs/$c.log)"
      fi
    done
    [ $SECONDS -lt $deadline ] || die "$what not ready after ${secs}s (logs: $S/logs)"
    sleep 1
  done
  say "$what is ready"
}

# ---------------------------------------------------------------- certificates
cert() { # cert NAME SUBJECT EXTENDED-KEY-USAGE [SUBJECT-ALT-NAMES]
  local n=$1
  [ -f "$P/$n.crt" ] && return
  openssl ecparam -name prime256v1 -genkey -noout -out "$P/$n.key"
  openssl req -new -key "$P/$n.key" -subj "$2" -out "$P/$n.csr"
  { echo "basicConstraints=CA:FALSE"; echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=$3"; [ -z "${4:-}" ] || echo "subjectAltName=$4"; } >"$P/$n.ext"
  openssl x509 -req -in "$P/$n.csr" -CA "$P/ca.crt" -CAkey "$P/ca.key" -CAcreateserial -days 365 \
    -extfile "$P/$n.ext" -out "$P/$n.crt" 2>/dev/null
  rm -f "$P/$n.csr" "$P/$n.ext"
}

kubeconfig() { # kubeconfig NAME : a kubeconfig with NAME's client certificate
  write_file "$P/$1.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: wattgraph
    cluster:
      server: https://$K8S_NODE_IP:$K8S_API_PORT
      certificate-authority: $P/ca.crt
users:
  - name: $1
    user:
      client-certificate: $P/$1.crt
      client-key: $P/$1.key
contexts:
  - name: wattgraph
    context: {cluster: wattgraph, user: $1}
current-context: wattgraph
EOF
}

pki() {
  mkdir -p "$P" && chmod 700 "$P"
  if [ ! -f "$P/ca.crt" ]; then
    openssl ecparam -name prime256v1 -genkey -noout -out "$P/ca.key"
    openssl req -x509 -new -key "$P/ca.key" -subj "/CN=wattgraph-test-cluster-ca" -days 365 -out "$P/ca.crt"
  fi
  cert etcd "/CN=etcd" serverAuth,clientAuth "IP:127.0.0.1,DNS:localhost"
  cert apiserver-etcd-client "/CN=kube-apiserver-etcd-client" clientAuth
  cert apiserver "/CN=kube-apiserver" serverAuth "IP:$K8S_NODE_IP,IP:$K8S_API_VIP,IP:127.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.$K8S_DOMAIN,DNS:localhost"
  cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
  cert admin "/O=system:masters/CN=wattgraph-admin" clientAuth
  cert kube-controller-manager "/CN=system:kube-controller-manager" clientAuth
  cert kube-scheduler "/CN=system:kube-scheduler" clientAuth
  cert kube-proxy "/CN=system:kube-proxy" clientAuth
  cert kubelet "/O=system:nodes/CN=system:node:$K8S_NODE" clientAuth
  cert kubelet-server "/CN=$K8S_NODE" serverAuth "IP:$K8S_NODE_IP,DNS:$K8S_NODE"
  cert kubelet-2 "/O=system:nodes/CN=system:node:$K8S_NODE2" clientAuth
  cert kubelet-2-server "/CN=$K8S_NODE2" serverAuth "IP:$K8S_NODE2_IP,DNS:$K8S_NODE2"
  [ -f "$P/sa.key" ] || { openssl genrsa -out "$P/sa.key" 2048 2>/dev/null && openssl rsa -in "$P/sa.key" -pubout -out "$P/sa.pub" 2>/dev/null; }
  local k
  for k in admin kube-controller-manager kube-scheduler kube-proxy kubelet kubelet-2; do kubeconfig "$k"; done
}

# ---------------------------------------------------------------- host: interface, sysctls, cgroups
host_setup() {
  [ -f "$S/sysctl.saved" ] || for k in "${SYSCTLS[@]}"; do echo "$k=$(sysctl -n "$k")"; done >"$S/sysctl.saved"
  # A bridge without ports: the kernel here has no dummy interfaces, and an address is all it is for.
  ip link show "$K8S_NODE_IF" >/dev/null 2>&1 || ip link add "$K8S_NODE_IF" type bridge
  # Not `ip | grep -q`: under pipefail, ip's SIGPIPE when grep stops early reads as "no address".
  grep -q "inet $K8S_NODE_IP/" <<<"$(ip addr show dev "$K8S_NODE_IF")" || ip addr add "$K8S_NODE_IP/32" dev "$K8S_NODE_IF"
  ip link set "$K8S_NODE_IF" up
  # bpffs at /sys/fs/bpf, as systemd mounts it on a node: the agent (--pin-bpf) pins its programs
  # there to outlive its pod. Mounted here only if missing, and then unmounted by `down`.
  if [ "$(stat -f -c %T /sys/fs/bpf 2>/dev/null)" != bpf_fs ]; then
    mount -t bpf bpf /sys/fs/bpf && touch "$S/bpffs.mounted"
  fi
  # Pods are routed through the host (CNI ptp: one veth pair a pod, no bridge).
  sysctl -qw net.ipv4.ip_forward=1
  # Each kubelet's pods under a cgroup of their own in every v1 hierarchy (cgroupfs driver).
  local h r
  for h in /sys/fs/cgroup/*/; do
    [ "$(stat -f -c %T "$h")" = cgroupfs ] || continue
    for r in "$CGROUP_ROOT" "$CGROUP_ROOT2"; do
      mkdir -p "$h$r"
      if [ -f "$h/cpuset.cpus" ]; then
        cat "$h/cpuset.cpus" >"$h$r/cpuset.cpus"
        cat "$h/cpuset.mems" >"$h$r/cpuset.mems"
      fi
    done
  done
  node2_network
}

# The second node's network namespace: a veth pair to the host, its address routed by the host and
# the host's node address its gateway (to the API server and the first node's pods).
in_node2() { nsenter --net="/run/netns/$K8S_NODE2_NETNS" -- "$@"; }
node2_network() {
  [ -e "/run/netns/$K8S_NODE2_NETNS" ] || ip netns add "$K8S_NODE2_NETNS"
  ip link show "$K8S_NODE2_IF" >/dev/null 2>&1 \
    || ip link add "$K8S_NODE2_IF" type veth peer name eth0 netns "$K8S_NODE2_NETNS"
  ip link set "$K8S_NODE2_IF" up
  ip -n "$K8S_NODE2_NETNS" link set lo up
  ip -n "$K8S_NODE2_NETNS" link set eth0 up
  ip -n "$K8S_NODE2_NETNS" addr replace "$K8S_NODE2_IP/32" dev eth0
  ip -n "$K8S_NODE2_NETNS" route replace "$K8S_NODE_IP/32" dev eth0 scope link
  ip -n "$K8S_NODE2_NETNS" route replace default via "$K8S_NODE_IP" dev eth0
  ip route replace "$K8S_NODE2_IP/32" dev "$K8S_NODE2_IF" src "$K8S_NODE_IP"
  # Its pods are routed through it, as the host routes the first node's.
  in_node2 sysctl -qw net.ipv4.ip_forward=1
}

# ---------------------------------------------------------------- configuration files
# Only when the content differs: kube-proxy exits when its configuration file is written, so an
# `up` of a running cluster must leave the files as they are.
write_file() { # write_file PATH < CONTENT
  local tmp=$1.tmp
  cat >"$tmp"
  if cmp -s "$tmp" "$1"; then rm -f "$tmp"; else mv "$tmp" "$1"; fi
}

containerd_config() { # containerd_config DIR SOCKET : DIR/containerd/config.toml; CNI configuration in DIR/cni/net.d
  local d=$1
  mkdir -p "$d"/{containerd,cni/net.d,cni/ipam,kubelet,run}
  write_file "$d/containerd/config.toml" <<EOF
version = 2
root = "$d/containerd/root"
state = "$d/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "$2"
[plugins."io.containerd.internal.v1.opt"]
  path = "$d/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  stream_server_address = "127.0.0.1"
  disable_apparmor = true
  # Negative oom_score_adj (the sandbox's -998, Guaranteed pods' -997) needs CAP_SYS_RESOURCE, which
  # this kind of machine does not give root: clamp at containerd's own value instead of failing.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$d/run/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$d/cni/net.d"
EOF
}

cni_config() { # cni_config DIR POD-CIDR
  # ptp: each pod a veth pair routed by its node, so kube-proxy's DNAT and the node's conntrack see
  # every pod-to-pod connection. No masquerade: pods reach each other and the nodes, nothing outside.
  write_file "$1/cni/net.d/10-wattgraph.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "wattgraph",
  "plugins": [
    {
      "type": "ptp",
      "ipMasq": false,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$2"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "$1/cni/ipam"
      }
    }
  ]
}
EOF
}

kubelet_config() { # kubelet_config DIR CERT IP CGROUP-ROOT SOCKET : DIR/kubelet/config.yaml, serving certificate CERT-server
  write_file "$1/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $3
healthzBindAddress: 127.0.0.1
readOnlyPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $P/ca.crt}
authorization: {mode: Webhook}
tlsCertFile: $P/$2-server.crt
tlsPrivateKeyFile: $P/$2-server.key
containerRuntimeEndpoint: unix://$5
cgroupDriver: cgroupfs
cgroupRoot: /$4
clusterDNS: [$K8S_DNS_IP]
clusterDomain: $K8S_DOMAIN
resolvConf: /etc/resolv.conf
failSwapOn: false
# Images are imported, never pulled; a full disk of the shared machine must not evict the test.
imageGCHighThresholdPercent: 95
imageGCLowThresholdPercent: 90
evictionHard: {nodefs.available: 2%, imagefs.available: 2%, memory.available: 200Mi}
serializeImagePulls: false
podLogsDir: $1/pod-logs
EOF
}

kube_proxy_config() { # kube_proxy_config FILE NODE IP
  write_file "$1" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection: {kubeconfig: $P/kube-proxy.kubeconfig}
hostnameOverride: $2
clusterCIDR: $K8S_CLUSTER_CIDR
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
nodePortAddresses: ["$3/32"]
iptables: {localhostNodePorts: false}
# 0: leave the host's conntrack table size and timeouts as they are.
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
EOF
}

configs() {
  mkdir -p "$S"/etcd
  containerd_config "$S" "$CONTAINERD_SOCK"
  kubelet_config "$S" kubelet "$K8S_NODE_IP" "$CGROUP_ROOT" "$CONTAINERD_SOCK"
  kube_proxy_config "$S/kube-proxy.yaml" "$K8S_NODE" "$K8S_NODE_IP"
  # The second node's. Each node's CNI configuration once it has a pod range (pod_range).
  containerd_config "$N2" "$CONTAINERD2_SOCK"
  kubelet_config "$N2" kubelet-2 "$K8S_NODE2_IP" "$CGROUP_ROOT2" "$CONTAINERD2_SOCK"
  kube_proxy_config "$N2/kube-proxy.yaml" "$K8S_NODE2" "$K8S_NODE2_IP"
}

# ---------------------------------------------------------------- start
etcd_healthy() {
  curl -fsS --cacert "$P/ca.crt" --cert "$P/apiserver-etcd-client.crt" --key "$P/apiserver-etcd-client.key" \
    "https://127.0.0.1:$K8S_ETCD_PORT/health" | grep -q '"health":"true"'
}
api_ready() { curl -fsS --cacert "$P/ca.crt" --cert "$P/admin.crt" --key "$P/admin.key" "https://$K8S_NODE_IP:$K8S_API_PORT/readyz"; }
node_ready() { # node_ready NAME
  kc get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' | grep -qx True
}
pod_cidr() { kc get node "$1" -o jsonpath='{.spec.podCIDR}'; }
has_pod_cidr() { [ -n "$(pod_cidr "$1")" ]; }
# A node's pod range is the controller manager's choice, given once its kubelet has registered it
# (in whichever order the nodes come): its CNI configuration follows it, and the kubelet reports
# Ready once that is there.
pod_range() { # pod_range NODE DIR : the range, after writing DIR's CNI configuration for it
  wait_for "pod range of $1" 120 has_pod_cidr "$1"
  local cidr
  cidr=$(pod_cidr "$1")
  cni_config "$2" "$cidr"
  echo "$cidr"
}
dns_answers() { [ "$(dig +time=2 +tries=1 +short "@$K8S_DNS_IP" "kubernetes.default.svc.$K8S_DOMAIN")" = "$K8S_API_VIP" ]; }

control_plane() {
  start etcd "$K8S_BIN/etcd" --name "$K8S_NODE" --data-dir "$S/etcd" \
    --listen-client-urls "https://127.0.0.1:$K8S_ETCD_PORT" --advertise-client-urls "https://127.0.0.1:$K8S_ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$K8S_ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$K8S_ETCD_PEER_PORT" \
    --initial-cluster "$K8S_NODE=http://127.0.0.1:$K8S_ETCD_PEER_PORT" \
    --cert-file "$P/etcd.crt" --key-file "$P/etcd.key" --trusted-ca-file "$P/ca.crt" --client-cert-auth
  wait_for etcd 60 etcd_healthy
  start kube-apiserver "$K8S_BIN/kube-apiserver" \
    --advertise-address "$K8S_NODE_IP" --bind-address "$K8S_NODE_IP" --secure-port "$K8S_API_PORT" \
    --etcd-servers "https://127.0.0.1:$K8S_ETCD_PORT" --etcd-cafile "$P/ca.crt" \
    --etcd-certfile "$P/apiserver-etcd-client.crt" --etcd-keyfile "$P/apiserver-etcd-client.key" \
    --service-cluster-ip-range "$K8S_SERVICE_CIDR" --authorization-mode Node,RBAC \
    --enable-admission-plugins NodeRestriction --client-ca-file "$P/ca.crt" \
    --tls-cert-file "$P/apiserver.crt" --tls-private-key-file "$P/apiserver.key" \
    --kubelet-client-certificate "$P/apiserver-kubelet-client.crt" --kubelet-client-key "$P/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority "$P/ca.crt" --kubelet-preferred-address-types InternalIP \
    --service-account-issuer "https://kubernetes.default.svc.$K8S_DOMAIN" \
    --service-account-key-file "$P/sa.pub" --service-account-signing-key-file "$P/sa.key"
  wait_for kube-apiserver 180 api_ready
  start kube-controller-manager "$K8S_BIN/kube-controller-manager" \
    --kubeconfig "$P/kube-controller-manager.kubeconfig" \
    --authentication-kubeconfig "$P/kube-controller-manager.kubeconfig" \
    --authorization-kubeconfig "$P/kube-controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --leader-elect=false --use-service-account-credentials \
    --cluster-signing-cert-file "$P/ca.crt" --cluster-signing-key-file "$P/ca.key" --root-ca-file "$P/ca.crt" \
    --service-account-private-key-file "$P/sa.key" --service-cluster-ip-range "$K8S_SERVICE_CIDR" \
    --allocate-node-cidrs --cluster-cidr "$K8S_CLUSTER_CIDR" --node-cidr-mask-size 24
  start kube-scheduler "$K8S_BIN/kube-scheduler" --kubeconfig "$P/kube-scheduler.kubeconfig" \
    --authentication-kubeconfig "$P/kube-scheduler.kubeconfig" --authorization-kubeconfig "$P/kube-scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --leader-elect=false
}

node() {
  start containerd containerd --config "$S/containerd/config.toml"
  wait_for containerd 60 ctr --address "$CONTAINERD_SOCK" version
  "$HERE/images.sh" import-system
  start kubelet "$K8S_BIN/kubelet" --config "$S/kubelet/config.yaml" --kubeconfig "$P/kubelet.kubeconfig" \
    --hostname-override "$K8S_NODE" --node-ip "$K8S_NODE_IP" --root-dir "$S/kubelet/root"
  start kube-proxy "$K8S_BIN/kube-proxy" --config "$S/kube-proxy.yaml"
  pod_range "$K8S_NODE" "$S" >/dev/null
  wait_for "node $K8S_NODE" 180 node_ready "$K8S_NODE"
}

# The second node: started in its network namespace with nsenter, not `ip netns exec`, which would
# give each process a mount namespace of its own, and containerd must see the kubelet's volume mounts.
node2() {
  local ns=(nsenter "--net=/run/netns/$K8S_NODE2_NETNS" --) cidr
  start containerd-2 "${ns[@]}" containerd --config "$N2/containerd/config.toml"
  wait_for containerd-2 60 ctr --address "$CONTAINERD2_SOCK" version
  "$HERE/images.sh" import-system
  start kubelet-2 "${ns[@]}" "$K8S_BIN/kubelet" --config "$N2/kubelet/config.yaml" --kubeconfig "$P/kubelet-2.kubeconfig" \
    --hostname-override "$K8S_NODE2" --node-ip "$K8S_NODE2_IP" --root-dir "$N2/kubelet/root"
  start kube-proxy-2 "${ns[@]}" "$K8S_BIN/kube-proxy" --config "$N2/kube-proxy.yaml"
  # The host routes its pods to it, as it routes the first node's to their veths.
  cidr=$(pod_range "$K8S_NODE2" "$N2")
  ip route replace "$cidr" via "$K8S_NODE2_IP" dev "$K8S_NODE2_IF" src "$K8S_NODE_IP"
  wait_for "node $K8S_NODE2" 180 node_ready "$K8S_NODE2"
}

dns() {
  sed -e "s|__DNS_IP__|$K8S_DNS_IP|g" -e "s|__DOMAIN__|$K8S_DOMAIN|g" -e "s|__IMAGE__|$COREDNS_IMAGE|g" \
    "$HERE/coredns.yaml" | kc apply -f - >/dev/null
  wait_for "cluster DNS ($K8S_DNS_IP)" 180 dns_answers
}

# Volumes for PersistentVolumeClaims: the default StorageClass, with no provisioner, and PV_COUNT
# directories of the node as PersistentVolumes it binds (world-writable: fsGroup does not apply to
# hostPath, and the pods run as their own uids).
PV_COUNT=10
storage() {
  local i
  {
    printf 'apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: node-local\n'
    printf '  annotations: {storageclass.kubernetes.io/is-default-class: "true"}\n'
    printf 'provisioner: kubernetes.io/no-provisioner\nvolumeBindingMode: WaitForFirstConsumer\nreclaimPolicy: Delete\n'
    for i in $(seq 0 $((PV_COUNT - 1))); do
      mkdir -p "$S/volumes/pv-$i" && chmod 1777 "$S/volumes/pv-$i"
      printf -- '---\napiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: node-local-%s\nspec:\n' "$i"
      printf '  capacity: {storage: 50Gi}\n  accessModes: [ReadWriteOnce, ReadWriteMany]\n'
      printf '  storageClassName: node-local\n  persistentVolumeReclaimPolicy: Retain\n  hostPath: {path: %s, type: Directory}\n' "$S/volumes/pv-$i"
    done
  } | kc apply -f - >/dev/null
}

# Everything the cluster and its images need that no build of this checkout changes: the Debian
# packages, the binaries (build.sh) and the images' bases. `bin/wattgraph test` runs it in the
# background while the other suites run: on a new machine that is most of the cluster suite's time.
prepare() {
  binaries
  "$HERE/images.sh" bases
}

binaries() {
  [ "$(id -u)" = 0 ] || die "the cluster needs root"
  ensure_packages "${APT_PACKAGES[@]}"
  "$HERE/build.sh"
}

up() {
  binaries
  mkdir -p "$S"/{logs,pids}
  pki
  host_setup
  configs
  control_plane
  node
  node2
  dns
  storage
  kc get nodes -o wide >&2
  say "up: export KUBECONFIG=$KUBECONFIG_ADMIN (kubectl: $K8S_BIN/kubectl)"
}

# ---------------------------------------------------------------- stop and clean
down() {
  [ "$(id -u)" = 0 ] || die "the cluster needs root"
  [ -d "$S" ] || { say "nothing to stop ($S does not exist)"; return 0; }
  # Nothing may recreate pods while the kubelet removes them (and runs CNI DEL for each).
  stop kube-scheduler
  stop kube-controller-manager
  if pid_of kube-apiserver >/dev/null && pid_of kubelet >/dev/null; then
    kc delete pods --all --all-namespaces --grace-period=0 --force --wait=false >/dev/null 2>&1 || true
    local deadline=$((SECONDS + 60))
    while [ $SECONDS -lt $deadline ] && [ -n "$(each_containerd ctr_k8s tasks ls -q 2>/dev/null)" ]; do sleep 1; done
  fi
  local c
  for c in kube-proxy-2 kubelet-2 kube-proxy kubelet kube-apiserver etcd; do stop "$c"; done
  # What the kubelets did not get to: tasks, sandboxes' network namespaces, then containerd.
  each_containerd kill_tasks
  stop containerd-2
  stop containerd
  # Shims outlive containerd: those serving our sockets are ours.
  local pid
  for pid in $(pgrep -f "containerd-shim-runc-v2 .*-address ($CONTAINERD_SOCK|$CONTAINERD2_SOCK)" || true); do kill -KILL "$pid" 2>/dev/null || true; done
  clean_network
  clean_mounts
  clean_cgroups
  "$K8S_BIN/kube-proxy" --cleanup >/dev/null 2>&1 || true
  # What kube-proxy's cleanup leaves: the kubelet's chains (KUBE-FIREWALL, canaries), CNI's.
  drop_chains KUBE-
  drop_chains CNI-
  [ -f "$S/sysctl.saved" ] && sysctl -q -p "$S/sysctl.saved" >/dev/null
  # The cluster's agent pinned its programs under /sys/fs/bpf/wattgraph (the chart's --bpf-pin-dir):
  # removing the pins detaches them; the bpffs goes too if this cluster mounted it.
  rm -rf /sys/fs/bpf/wattgraph
  if [ -f "$S/bpffs.mounted" ]; then
    umount /sys/fs/bpf 2>/dev/null || umount -l /sys/fs/bpf 2>/dev/null || true
  fi
  rm -rf "$S"
  say "down: processes, pod networks, mounts, iptables chains, $K8S_NODE_IF, cgroups and $S removed"
}

kill_tasks() {
  local t
  for t in $(ctr_k8s tasks ls -q 2>/dev/null); do ctr_k8s tasks kill -s KILL "$t" >/dev/null 2>&1 || true; done
  sleep 1
  for t in $(ctr_k8s tasks ls -q 2>/dev/null); do ctr_k8s tasks rm -f "$t" >/dev/null 2>&1 || true; done
}

clean_network() {
  # Pod sandboxes' network namespaces (containerd names them cni-<uuid>): ours are those whose
  # veth peer has an address of our pod range, or which CNI's IPAM recorded.
  local ns
  for ns in $(ip netns list 2>/dev/null | awk '$1 ~ /^cni-/ {print $1}'); do
    if ip -n "$ns" -4 addr 2>/dev/null | grep -q "inet ${K8S_CLUSTER_CIDR%.*.*}\."; then
      ip netns delete "$ns" 2>/dev/null || true
    fi
  done
  ip link delete "$K8S_NODE_IF" 2>/dev/null || true
  # The second node's namespace; its veth pair and the host's routes to it go with it.
  ip netns delete "$K8S_NODE2_NETNS" 2>/dev/null || true
}

# Chains named PREFIX* in every table of iptables and ip6tables, and the rules that jump to them.
drop_chains() { # drop_chains PREFIX
  local ipt table chain
  for ipt in iptables ip6tables; do
    for table in filter nat mangle; do
      for chain in $($ipt -t "$table" -S 2>/dev/null | awk -v p="$1" '$1 == "-N" && index($2, p) == 1 {print $2}'); do
        $ipt -t "$table" -S 2>/dev/null | grep -- "-j $chain\( \|$\)" | sed 's/^-A/-D/' \
          | while read -r rule; do eval "$ipt" -t "$table" "$rule" 2>/dev/null || true; done || true
      done
      for chain in $($ipt -t "$table" -S 2>/dev/null | awk -v p="$1" '$1 == "-N" && index($2, p) == 1 {print $2}'); do
        $ipt -t "$table" -F "$chain" 2>/dev/null || true
      done
      for chain in $($ipt -t "$table" -S 2>/dev/null | awk -v p="$1" '$1 == "-N" && index($2, p) == 1 {print $2}'); do
        $ipt -t "$table" -X "$chain" 2>/dev/null || true
      done
    done
  done
}

clean_mounts() {
  local m
  # Deepest first; only what lies under the state directory (overlay rootfs, secrets, netns binds).
  for m in $(awk -v s="$S/" 'index($2, s) == 1 {print $2}' /proc/self/mounts | sort -r); do
    umount -l "$m" 2>/dev/null || true
  done
}

clean_cgroups() {
  local h d r
  for h in /sys/fs/cgroup/*/; do
    for r in "$CGROUP_ROOT" "$CGROUP_ROOT2"; do
      [ -d "$h$r" ] || continue
      # Any process still inside is a pod's: it goes with the cluster.
      find "$h$r" -name cgroup.procs -exec cat {} + 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
      for d in $(find "$h$r" -depth -type d); do rmdir "$d" 2>/dev/null || true; done
    done
  done
}

# The chart with test-values.yaml and new random secrets, into namespace $NS; waits for its pods.
NS=${WATTGRAPH_K8S_NAMESPACE:-wattgraph}
install() {
  pid_of kube-apiserver >/dev/null || die "the cluster is not up (cluster.sh up)"
  "$HERE/images.sh" import
  kc create namespace "$NS" --dry-run=client -o yaml | kc apply -f - >/dev/null
  local pw read admin
  if ! kc -n "$NS" get secret neo4j-auth >/dev/null 2>&1; then
    pw=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
    kc -n "$NS" create secret generic neo4j-auth --from-literal=NEO4J_AUTH="neo4j/$pw" \
      --from-literal=NEO4J_PASSWORD="$pw" >/dev/null
  fi
  if ! kc -n "$NS" get secret graph-service-auth >/dev/null 2>&1; then
    read=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
    admin=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
    kc -n "$NS" create secret generic graph-service-auth --from-literal=read-tokens="$read" \
      --from-literal=admin-tokens="$admin" >/dev/null
  fi
  say "helm upgrade --install wattgraph ($NS)"
  "$K8S_BIN/helm" --kubeconfig "$KUBECONFIG_ADMIN" upgrade --install wattgraph "$HERE/../chart/wattgraph" \
    --namespace "$NS" -f "$HERE/test-values.yaml" --set "nodeAgent.stateHostPath=$S/agent-state" \
    --wait --timeout "${WATTGRAPH_K8S_INSTALL_TIMEOUT:-15m}" "$@"
  kc -n "$NS" get pods -o wide >&2
}

status() {
  local c
  for c in "${COMPONENTS[@]}"; do
    if pid_of "$c" >/dev/null; then echo "$c running (pid $(pid_of "$c"))"; else echo "$c not running"; fi
  done
  pid_of kube-apiserver >/dev/null && kc get nodes,pods -A -o wide || true
}

# One user at a time (env.sh, K8S_LOCK); a cluster test holds the lock and says so to its children.
lock() {
  [ "${WATTGRAPH_K8S_LOCK_HELD:-}" = 1 ] && return
  exec 9>"$K8S_LOCK"
  flock -n 9 || die "the cluster is in use: $K8S_LOCK is held (a cluster test, or another up/down/install); try again when it is done"
}

case "${1:-}" in
  prepare) lock; prepare ;;
  up) lock; up ;;
  down) lock; down ;;
  status) status ;;
  install) shift; lock; install "$@" ;;
  *) echo "usage: $0 prepare|up|down|status|install" >&2; exit 2 ;;
esac
