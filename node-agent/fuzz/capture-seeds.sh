#!/usr/bin/env bash
# Regenerates the seed corpus (seeds/) from real inputs of this machine: ctnetlink datagrams
# captured in a network namespace made here (root), /proc and cgroup files of live processes,
# the shared Avro test vectors, the example config file, the HTTP request lines of the tests.
# Not part of the test command: the seeds are committed; run this after a format changes.
set -euo pipefail
FUZZ=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
AGENT=$(dirname "$FUZZ")
ROOT=$(dirname "$AGENT")
S=$FUZZ/seeds
[ "$(id -u)" = 0 ] || { echo "capture-seeds.sh: needs root (netns, iptables)" >&2; exit 1; }

# ctnetlink: one IPv4 and one IPv6 connection through DNAT, one UDP datagram, in a netns of ours.
NS=wg-fuzz-seeds-$$
cleanup() { ip netns del "$NS" 2>/dev/null || true; }
trap cleanup EXIT
ip netns add "$NS"
ip -n "$NS" link set lo up
ip netns exec "$NS" iptables -t nat -A OUTPUT -p tcp -d 127.0.0.2 --dport 80 -j DNAT --to-destination 127.0.0.1:8080
ip netns exec "$NS" ip6tables -t nat -A OUTPUT -p tcp -d ::1 --dport 81 -j DNAT --to-destination '[::1]:8081'
rm -rf "$S/conntrack"
ip netns exec "$NS" python3 "$FUZZ/capture_conntrack_seeds.py" "$S/conntrack"

# Avro: every shared vector's bytes.
rm -rf "$S/avro_records" && mkdir -p "$S/avro_records"
for f in "$ROOT"/schemas/test-vectors/*/*.json; do
  name=$(basename "$(dirname "$f")")-$(basename "$f" .json)
  python3 -c 'import json,sys; sys.stdout.buffer.write(bytes.fromhex(json.load(open(sys.argv[1]))["singleObjectHex"]))' "$f" > "$S/avro_records/$name"
done

# Config: the example file.
rm -rf "$S/config_file" && mkdir -p "$S/config_file"
cp "$AGENT/wattgraph-agent.example.toml" "$S/config_file/example.toml"

# cgroup paths: the container runtimes' layouts (src/identity/cgroup.rs documents them) as /proc/<pid>/cgroup
# shows them, v2 and hybrid, and a few paths that name no container.
rm -rf "$S/cgroup_paths" && mkdir -p "$S/cgroup_paths"
ID=3f2a9c1b7d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5061728394a5b6c7d8e POD=0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0
i=0
for p in "/docker/$ID" "/system.slice/docker-$ID.scope" \
         "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${POD//-/_}.slice/cri-containerd-$ID.scope" \
         "/kubepods/besteffort/pod$POD/$ID" "/kubepods.slice/kubepods-pod${POD//-/_}.slice/crio-conmon-$ID.scope" \
         "/kubepods.slice/kubepods-pod${POD//-/_}.slice/crio-$ID.scope" "/system.slice/containerd-$ID.scope" \
         "/machine.slice/libpod-$ID.scope/container" "/user.slice/user-0.slice/session-3.scope" "/system.slice/sshd.service" "/"; do
  printf '0::%s\n' "$p" > "$S/cgroup_paths/layout-$i"; i=$((i + 1))
done
printf '12:memory:/docker/%s\n11:cpu,cpuacct:/docker/%s\n1:name=systemd:/docker/%s\n0::/\n' "$ID" "$ID" "$ID" > "$S/cgroup_paths/hybrid-docker"
printf '4:pids:/kubepods/burstable/pod%s/%s\n3:cpu:/kubepods/burstable/pod%s/%s\n' "$POD" "$ID" "$POD" "$ID" > "$S/cgroup_paths/v1-kubepods"

# /proc and sysfs files, each behind its selector byte (see fuzz_targets/proc_files.rs). The
# process files are a child's of ours in the namespace above, with listeners of both families.
rm -rf "$S/proc_files" && mkdir -p "$S/proc_files"
put() { { printf "\\x$(printf %02x "$1")"; cat "$2"; } > "$S/proc_files/$3" 2>/dev/null || rm -f "$S/proc_files/$3"; }
tmp=$(mktemp -d)
ip netns exec "$NS" python3 - "$tmp" <<'PY'
import shutil, socket, subprocess, sys, time
out = sys.argv[1]
l4 = socket.socket(); l4.bind(("127.0.0.1", 8080)); l4.listen()
l6 = socket.socket(socket.AF_INET6); l6.bind(("::", 9000)); l6.listen()
c = socket.create_connection(("127.0.0.1", 8080))
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", "--fuzz seed", "ü"])
time.sleep(0.3)
for f in ["stat", "cmdline", "net/tcp", "net/tcp6"]:
    shutil.copy(f"/proc/{child.pid}/{f}", f"{out}/{f.replace('/', '-')}")
child.kill()
PY
put 0 "$tmp/stat" stat
put 1 "$tmp/cmdline" cmdline
put 2 "$tmp/net-tcp" net-tcp
put 2 "$tmp/net-tcp6" net-tcp6
rm -rf "$tmp"
put 3 /sys/devices/system/cpu/cpu0/topology/thread_siblings_list cpu-siblings
put 3 /sys/devices/system/cpu/online cpu-online
v2=/sys/fs/cgroup; [ -e /sys/fs/cgroup/unified/cgroup.procs ] && v2=/sys/fs/cgroup/unified
cg=$v2$(sed -n 's/^0:://p' /proc/self/cgroup)
put 4 "$cg/cpu.stat" v2-cpu.stat
put 5 "$cg/memory.current" v2-memory.current
put 6 "$cg/io.stat" v2-io.stat
for v1 in /sys/fs/cgroup/cpuacct/cpuacct.usage:7 /sys/fs/cgroup/cpu/cpu.stat:8 \
          /sys/fs/cgroup/memory/memory.usage_in_bytes:9 \
          /sys/fs/cgroup/blkio/blkio.throttle.io_service_bytes_recursive:10; do
  put "${v1##*:}" "${v1%:*}" "v1-$(basename "${v1%:*}")"
done
put 11 "$cg/pids.current" pids.current
printf '\x0a8:0 Read 4096\n8:0 Write 512\n8:0 Sync 0\nTotal 4608\n' > "$S/proc_files/v1-io-made"
printf '\x06259:0 rbytes=4097 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n' > "$S/proc_files/v2-io-made"

# HTTP request lines (the kernel parser's test cases) and two that are not.
rm -rf "$S/http_request_line" && mkdir -p "$S/http_request_line"
i=0
for l in 'GET / HTTP/1.1\r\n' 'POST /api/v1/orders HTTP/1.1\r\n' 'PUT /users/42 HTTP/1.1\r\n' \
         'DELETE /a/1/b/22/c/333 HTTP/1.1\r\n' 'HEAD /q?id=7&x=y HTTP/1.1\r\n' 'GET /p#frag HTTP/1.1\r\n' \
         'OPTIONS * HTTP/1.1\r\n' 'CONNECT db:5432 HTTP/1.1\r\n' 'TRACE /x HTTP/1.1\r\n' \
         'PATCH /o/550e8400-e29b-41d4-a716-446655440000 HTTP/1.1\r\n' 'GET /blob/deadbeef01 HTTP/1.1\r\n' \
         'HTTP/1.1 200 OK\r\n' '\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03'; do
  printf "$l" > "$S/http_request_line/line-$i"; i=$((i + 1))
done

# Kubernetes JSON: PodLists and Service/EndpointSlice lists like the tests' fixtures.
rm -rf "$S/kube_json" && mkdir -p "$S/kube_json"
cat > "$S/kube_json/podlist.json" <<'JSON'
{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[{"metadata":{"name":"web-0","namespace":"shop","uid":"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0","labels":{"app":"web","tier":"front"}}},{"metadata":{"name":"db","namespace":"shop","uid":"1f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0","labels":null}}]}
JSON
cat > "$S/kube_json/services.json" <<'JSON'
{"services":{"kind":"ServiceList","items":[{"metadata":{"name":"web","namespace":"shop"},"spec":{"type":"ClusterIP","clusterIP":"10.96.0.10","clusterIPs":["10.96.0.10","fd00::a"],"ports":[{"name":"http","protocol":"TCP","port":80},{"name":"dns","protocol":"UDP","port":53}]}},{"metadata":{"name":"ext","namespace":"shop"},"spec":{"type":"ExternalName"}}]},
 "slices":{"kind":"EndpointSliceList","items":[{"metadata":{"namespace":"shop","labels":{"kubernetes.io/service-name":"web"}},"addressType":"IPv4","endpoints":[{"addresses":["10.1.0.5"],"conditions":{"ready":true},"nodeName":"node-a"},{"addresses":["10.1.1.7"],"conditions":{"ready":false}}],"ports":[{"name":"http","port":8080}]},{"metadata":{"namespace":"shop","labels":{"kubernetes.io/service-name":"web"}},"addressType":"IPv6","endpoints":[{"addresses":["fd00:1::5"]}],"ports":[{"name":"http","port":8080}]}]}}
JSON
du -sh "$S"; for d in "$S"/*; do echo "$(basename "$d"): $(ls "$d" | wc -l) files"; done
