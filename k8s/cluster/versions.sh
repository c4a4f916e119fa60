# Pinned versions of the test cluster (sourced by the scripts beside it).
# Kubernetes 1.34: the last minor whose kubelet runs on cgroup v1 without failCgroupV1=false
# (this kind of machine has hybrid cgroups).
K8S_VERSION=v1.34.4
# The k8s.io staging modules published for that release (k8s.io/api, client-go, ...).
K8S_STAGING_VERSION=v0.34.4
# etcd 3.6: the line Kubernetes 1.34 is tested with.
ETCD_VERSION=v3.6.16
COREDNS_VERSION=v1.14.7
HELM_VERSION=v3.21.4
# Everything built or downloaded lives here, keyed by these versions; deleting it costs a rebuild.
WATTGRAPH_CACHE=${WATTGRAPH_CACHE:-/var/cache/wattgraph}
K8S_CACHE=$WATTGRAPH_CACHE/k8s-$K8S_VERSION-etcd-$ETCD_VERSION-coredns-$COREDNS_VERSION-helm-$HELM_VERSION
K8S_BIN=$K8S_CACHE/bin
