"""The pipeline on a real Kubernetes cluster, end to end (k8s/cluster: built from source, two nodes).

Starts the test cluster (cluster.sh up), builds and imports the images, installs the chart, then runs
the workloads of workload/workloads.yaml and compares what the graph says with what the clients
counted on their sockets:
- pod -> pod edges (the client's pod on the first node and the CronJob's on the second -> the two
  server pods on the second) with exact bytes each way and connection counts, through the ClusterIP
  Service (kube-proxy's DNAT, on either node) and the headless Service;
- the pods' names, namespaces, kept labels and node as the API server has them;
- no External node for the Service's virtual IP (or any Service address): resolved to the backends;
- the same totals at the pod, service and namespace levels of graph-service's service graph;
- request latency on the edges (server time at least the server's delay, round trip at least that);
- faults during traffic (the JobManager, a Kafka broker, Neo4j and the agent deleted, the agent drained):
  the edges stay exact, and a pod burning CPU through them has windows adding up to the kernel's count;
- a placement recommendation for the namespace: the client moves to its servers' node; its patch,
  applied with kubectl, moves the pod there, and the moved pod's new edges are exact and on that node;
- last, `helm uninstall`: the agents' pinned BPF programs leave the nodes with them.
Both nodes share this kernel (the second is a kubelet in a network namespace of its own), so each
agent counts only its own node (the chart's nodeAgent.nodeScope, docs/kubernetes.md).
Everything it made is removed at the end (cluster.sh down), also when it fails or is stopped;
WATTGRAPH_K8S_KEEP=1 keeps the cluster for a look (and lets the next run use it). It refuses a
cluster it did not start, and holds the cluster's lock for its whole run, so cluster.sh up/down/install
from elsewhere wait their turn. Needs root; fails (not skips) under CI=true without it.

Run: python3 k8s/tests/test_cluster.py, or bin/wattgraph k8s test (after bin/wattgraph build: the
images take the host's builds).
"""
import base64
import fcntl
import json
import os
import pathlib
import shlex
import signal
import string
import subprocess
import sys
import time
import unittest
import urllib.error
import urllib.request

import yaml

K8S = pathlib.Path(__file__).resolve().parent.parent
CLUSTER = K8S / "cluster"
sys.path.insert(0, str(CLUSTER))
from kube import K8S_BIN, KUBECONFIG, NODE, NODE2, NODES, env_value, kget, kubectl, run  # noqa: E402 (after its path)
import usage  # noqa: E402

WORKLOADS = K8S / "tests" / "workload" / "workloads.yaml"
IMAGE = "wattgraph/e2e-workload:0.1.0"
WATTGRAPH_NS = os.environ.get("WATTGRAPH_K8S_NAMESPACE", "wattgraph")
# Names of this run: the graph keeps earlier runs' pods (WATTGRAPH_K8S_KEEP=1), never under these.
APP_NS = f"e2e-app-{os.getpid()}"
BATCH_NS = f"e2e-batch-{os.getpid()}"
# The workload's shape; the expected graph is what the clients count, these only size it.
PARAMS = {"DELAY_MS": 20, "BODY_BYTES": 3000, "SERVICE_CONNECTIONS": 6, "HEADLESS_CONNECTIONS": 2,
          "REQUESTS_PER_CONNECTION": 12, "SHORT_CONNECTIONS": 8, "LINGER_S": 3}
# The agent's default --pod-labels: the labels it keeps of a pod.
KEPT_LABELS = {"app", "app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/component",
               "k8s-app"}
# How long the pipeline may take to show what happened (agent intervals, pod metadata polls, the
# pairing horizon, windows, checkpoints): a deadline for polling, generous for 2 shared cores.
SETTLE_S = 420
TIMINGS = {}
# The fault test's connections: 250 ms apart (110 s), so its load spans every fault and its recovery.
FAULT_CONNECTIONS = 440
DNS_IP = env_value("K8S_DNS_IP")
# Where the chart's agents pin (--bpf-pin-dir): a directory a node, since the nodes share a bpffs.
PIN_DIR = pathlib.Path("/sys/fs/bpf/wattgraph")
NODE2_NETNS = env_value("K8S_NODE2_NETNS")
STATE = env_value("K8S_STATE")


def log(msg):
    print(f"cluster test: {msg}", file=sys.stderr, flush=True)


def timed(step, *cmd):
    """A cluster script step with its output on our stderr; its duration goes into TIMINGS."""
    start = time.monotonic()
    subprocess.run([str(c) for c in cmd], check=True)
    TIMINGS[step] = time.monotonic() - start
    log(f"{step}: {TIMINGS[step]:.0f} s")


def eventually(what, check, timeout=SETTLE_S, every=3):
    """check() until it returns without an AssertionError; then its value. Fails with the last error."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return check()
        except AssertionError as e:
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} not reached after {timeout} s: {e}") from None
        time.sleep(every)


class Api:
    """graph-service's REST API at its ClusterIP (the host reaches Services through kube-proxy's rules)."""

    def __init__(self):
        svc = kget("-n", WATTGRAPH_NS, "service", "graph-service")
        self.base = f"http://{svc['spec']['clusterIP']}:8080/api/v1"
        secret = kget("-n", WATTGRAPH_NS, "secret", "graph-service-auth")
        self.token = base64.b64decode(secret["data"]["admin-tokens"]).decode().split(",")[0]

    def call(self, method, path, body=None):
        req = urllib.request.Request(self.base + path, method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"Bearer {self.token}",
                                              "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:
            raise AssertionError(f"{method} {path}: {e.code} {e.read()[:500]!r}") from None
        except OSError as e:
            raise AssertionError(f"{method} {path}: {e}") from None

    def cypher(self, query, **parameters):
        r = self.call("POST", "/cypher", {"query": query, "parameters": parameters, "maxRows": 10000})
        assert not r["truncated"], f"Cypher result truncated: {query}"
        return [dict(zip(r["columns"], row)) for row in r["rows"]]


def workload_documents():
    """workloads.yaml with its $-names filled in."""
    text = string.Template(WORKLOADS.read_text()).substitute(
        APP_NS=APP_NS, BATCH_NS=BATCH_NS, IMAGE=IMAGE, CLIENT_NODE=NODE, SERVER_NODE=NODE2,
        **{k: str(v) for k, v in PARAMS.items()})
    return [d for d in yaml.safe_load_all(text) if d]


def apply(documents):
    kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": documents}))


def tally_of(namespace, pod):
    """The TALLY line a workload pod printed: its ground truth."""
    for line in kubectl("-n", namespace, "logs", pod).splitlines():
        if line.startswith("TALLY "):
            return json.loads(line[len("TALLY "):])
    raise AssertionError(f"{namespace}/{pod} printed no tally yet")


def pods(namespace, selector):
    return kget("-n", namespace, "pods", "-l", selector)["items"]


def kept_labels(pod):
    """The pod's labels the agent keeps, as the graph has them: key=value, in key order."""
    return [f"{k}={v}" for k, v in sorted(pod["metadata"].get("labels", {}).items()) if k in KEPT_LABELS]


class ClusterEndToEndTest(unittest.TestCase):
    torn_down = None  # False once setUpClass has the lock, True after the teardown
    maxDiff = None
    # Filled by setUpClass: the pods by name and the edges the clients counted.
    servers = {}
    clients = {}
    expected = {}

    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            if os.environ.get("CI") == "true":
                raise AssertionError("the cluster test needs root (it starts a Kubernetes node); CI must run it as root")
            raise unittest.SkipTest("the cluster test needs root")
        lock = env_value("K8S_LOCK")
        cls.lock = open(lock, "w")
        try:
            fcntl.flock(cls.lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise AssertionError(f"the cluster is in use ({lock} is held: another cluster test, or cluster.sh)") from None
        os.environ["WATTGRAPH_K8S_LOCK_HELD"] = "1"  # for cluster.sh, run by this test
        # A cluster this run did not start is someone's: used only when asked (a kept cluster), never
        # torn down by this run.
        if os.path.isdir(STATE) and os.environ.get("WATTGRAPH_K8S_KEEP") != "1":
            raise AssertionError(f"a cluster is already up ({STATE}): the test starts and removes its own; "
                                 "`bin/wattgraph k8s down` first if it is yours, or WATTGRAPH_K8S_KEEP=1 to use it")
        # Registered first: whatever fails from here on, the cluster goes.
        cls.torn_down = False
        cls.addClassCleanup(cls.tear_down_cluster)
        timed("cluster up", CLUSTER / "cluster.sh", "up")
        timed("images", CLUSTER / "images.sh", "build")
        timed("chart install", CLUSTER / "cluster.sh", "install")
        cls.api = Api()
        start = time.monotonic()
        # The pipeline carries data: both nodes' agents have reached the graph (agent -> Kafka -> Flink -> Neo4j).
        eventually("the nodes in the graph's hosts", cls.assert_host)
        TIMINGS["pipeline flowing"] = time.monotonic() - start
        cls.usage = usage.reading()
        cls.run_workloads()

    @classmethod
    def assert_host(cls):
        hosts = {h["id"] for h in cls.api.call("GET", "/hosts")["hosts"]}
        assert set(NODES) <= hosts, f"hosts in the graph: {sorted(hosts)}"

    @classmethod
    def tear_down_cluster(cls):
        cls.torn_down = True
        if getattr(cls, "usage", None):
            try:
                log("CPU and memory from the pipeline flowing to the end of the checks:\n"
                    + usage.table(cls.usage, usage.reading()))
            except AssertionError as e:
                log(f"no usage table: {e}")
        if os.environ.get("WATTGRAPH_K8S_KEEP") == "1":
            log(f"WATTGRAPH_K8S_KEEP=1: the cluster stays up (KUBECONFIG={KUBECONFIG}; {CLUSTER}/cluster.sh down)")
        else:
            timed("cluster down", CLUSTER / "cluster.sh", "down")
        log("times: " + ", ".join(f"{k} {v:.0f} s" for k, v in TIMINGS.items()))
        cls.lock.close()

    @classmethod
    def run_workloads(cls):
        start = time.monotonic()
        docs = workload_documents()
        # A kept cluster (WATTGRAPH_K8S_KEEP=1) may hold an earlier run's workloads.
        kubectl("delete", "namespace", "-l", "wattgraph.io/e2e=true", "--wait=true", "--timeout=300s")
        first = [d for d in docs if d["kind"] in ("Namespace", "Service") or d["metadata"]["name"] == "server"]
        apply(first)
        kubectl("-n", APP_NS, "rollout", "status", "deployment/server", "--timeout=300s")
        # The clients start once kube-proxy has both backends behind the virtual IP and DNS has both
        # pod addresses for the headless name: nothing they do may fail and be retried.
        for netns in (None, NODE2_NETNS):
            eventually("kube-proxy's rules for the Service", lambda: cls.assert_proxied(f"{APP_NS}/server:http", 2, netns))
        eventually("DNS for the headless Service", lambda: cls.assert_dns(f"server-headless.{APP_NS}.svc.cluster.local", 2))
        apply([d for d in docs if d not in first])
        client = eventually("the client's pod", lambda: cls.one_running(APP_NS, "app=client"))
        client_tally = eventually("the client's tally", lambda: tally_of(APP_NS, client))
        # The CronJob's first run (at the next minute), then no more: suspended once a Job exists,
        # and every Job it made counted.
        eventually("a Job of the CronJob", lambda: cls.assert_jobs(1), timeout=180)
        kubectl("-n", BATCH_NS, "patch", "cronjob", "shortconn", "-p", '{"spec":{"suspend":true}}')
        jobs = eventually("the CronJob's Jobs finished", cls.finished_jobs)
        tallies = [client_tally] + [tally_of(BATCH_NS, p) for p in jobs]
        cls.vip = kget("-n", APP_NS, "service", "server")["spec"]["clusterIP"]
        cls.servers = {p["metadata"]["name"]: p for p in pods(APP_NS, "app=server")}
        cls.clients = {client: kget("-n", APP_NS, "pod", client)}
        cls.clients.update({p: kget("-n", BATCH_NS, "pod", p) for p in jobs})
        cls.expected = {}
        for t in tallies:
            for backend, counts in t["backends"].items():
                assert backend in cls.servers, f"{t['pod']} was answered by {backend}, not a server pod"
                cls.expected[(t["pod"], backend)] = counts
        TIMINGS["workloads"] = time.monotonic() - start
        log(f"workloads done: {len(tallies)} clients, expected edges "
            f"{json.dumps({'%s>%s' % k: v for k, v in cls.expected.items()})}")

    @staticmethod
    def assert_proxied(comment, endpoints, netns=None):
        """kube-proxy's rules on the first node (the host's), or in the second's namespace."""
        rules = run(*(["ip", "netns", "exec", netns] if netns else []), "iptables-save", "-t", "nat")
        seps = {line.split()[1] for line in rules.splitlines()
                if line.startswith("-A KUBE-SEP-") and f'"{comment}"' in line}
        assert len(seps) == endpoints, f"kube-proxy has {len(seps)} endpoints for {comment}"

    @staticmethod
    def assert_dns(name, count):
        answers = run("dig", "+short", "+time=2", "+tries=1", f"@{DNS_IP}", name, check=False).split()
        assert len(answers) == count, f"{name} resolves to {answers}"

    @staticmethod
    def one_running(namespace, selector):
        items = [p for p in pods(namespace, selector) if p["status"].get("phase") == "Running"]
        assert len(items) == 1, f"running pods for {selector}: {[p['metadata']['name'] for p in items]}"
        return items[0]["metadata"]["name"]

    @staticmethod
    def agents():
        """Node -> its agent pod, running (one on each node)."""
        running = {p["spec"]["nodeName"]: p["metadata"]["name"]
                   for p in pods(WATTGRAPH_NS, "app.kubernetes.io/name=node-agent") if p["status"].get("phase") == "Running"}
        assert set(running) == set(NODES), f"running agents by node: {running}"
        return running

    @classmethod
    def other_agents(cls, before):
        """Node -> its agent pod, running, none of them one of `before`'s."""
        now = cls.agents()
        assert not set(now.values()) & set(before.values()), f"agents {now}, before {before}"
        return now

    def assert_agents_reused_their_pins(self, agents):
        """Each agent said it went on from its node's pins (its start-up log, polled: a running pod may
        not have got that far yet)."""
        def said(node, pod):
            text = kubectl("-n", WATTGRAPH_NS, "logs", pod)
            self.assertIn("reusing the connections BPF programs", text, f"{node}'s agent")
            self.assertIn("CPU accounting continues from the sched programs pinned by a previous agent", text,
                          f"{node}'s agent")
        for node, pod in agents.items():
            eventually(f"{node}'s agent on its pins", lambda: said(node, pod), timeout=120)

    @staticmethod
    def assert_jobs(n):
        jobs = kget("-n", BATCH_NS, "jobs")["items"]
        assert len(jobs) >= n, f"{len(jobs)} Jobs"

    @staticmethod
    def finished_jobs():
        jobs = kget("-n", BATCH_NS, "jobs")["items"]
        for j in jobs:
            s = j.get("status", {})
            if s.get("failed"):
                raise RuntimeError(f"Job {j['metadata']['name']} failed: {s}")  # not retried: a test failure
            assert s.get("succeeded") == 1, f"Job {j['metadata']['name']} not finished: {s}"
        names = []
        for p in pods(BATCH_NS, "app=shortconn"):
            assert p["status"]["phase"] == "Succeeded", f"{p['metadata']['name']}: {p['status']['phase']}"
            names.append(p["metadata"]["name"])
        assert len(names) == len(jobs), f"{len(names)} pods for {len(jobs)} Jobs"
        return sorted(names)

    # ---------------------------------------------------------------- graph queries
    def pod_edges(self):
        """(client pod, server pod) -> totals of the TALKS_TO edges into the server pods' processes."""
        rows = self.api.cypher(
            "MATCH (c:Process)-[t:TALKS_TO]->(s:Process)-[:IN_CONTAINER]->(sc:Container) "
            "WHERE sc.podNamespace = $ns "
            "OPTIONAL MATCH (c)-[:IN_CONTAINER]->(cc:Container) "
            "RETURN cc.podName AS client, sc.podName AS server, sum(t.connections) AS connections, "
            "sum(t.bytesClientToServer) AS sent, sum(t.bytesServerToClient) AS received",
            ns=APP_NS)
        return {(r["client"], r["server"]): {"connections": r["connections"], "sent": r["sent"],
                                             "received": r["received"]} for r in rows}

    def expected_edges(self):
        return {k: {"connections": v["connections"], "sent": v["sent"], "received": v["received"]}
                for k, v in self.expected.items()}

    def assert_edges_exact(self):
        want, got = self.expected_edges(), self.pod_edges()
        differ = {f"{k[0]}>{k[1]}": {"expected": want.get(k), "graph": got.get(k)}
                  for k in sorted(set(want) | set(got), key=str) if want.get(k) != got.get(k)}
        self.assertEqual(want, got, f"pod -> pod edges into the server pods differ: {json.dumps(differ)}")

    def level(self, level, namespace):
        g = self.api.call("GET", f"/service-graph?level={level}&namespace={namespace}")
        return {(e["source"], e["target"]): (e["connections"], e["bytesClientToServer"], e["bytesServerToClient"])
                for e in g["edges"]}, {n["id"]: n for n in g["nodes"]}

    # ---------------------------------------------------------------- tests, in name order
    def test_0_every_topic_is_replicated_as_the_chart_says(self):
        # The budget loop once created wattgraph.power-budgets before the topic hook, with one replica
        # under min.insync.replicas 2: every topic of docs/contracts.md is now the chart's.
        values = yaml.safe_load((K8S / "chart" / "wattgraph" / "values.yaml").read_text())["kafka"]
        out = kubectl("-n", WATTGRAPH_NS, "exec", "kafka-0", "--", "java", "-Xmx128m", "-cp", "/opt/kafka/lib/*",
                      "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", "localhost:9092", "--describe")
        topics = {}
        for line in out.splitlines():
            if line.startswith("Topic:") and "\tTopicId:" in line:
                f = dict(part.split(": ", 1) for part in line.split("\t") if ": " in part)
                topics[f["Topic"]] = (int(f["ReplicationFactor"]), "cleanup.policy=compact" in f.get("Configs", ""))
        compacted = {"wattgraph.service-mappings", "wattgraph.power-budgets"}
        expected = {t: (values["replicationFactor"], t in compacted) for t in
                    ["wattgraph." + n for n in ("connections", "transactions", "resources", "cgroups", "metrics",
                                                "edge-metrics", "namespace-metrics", "dlq", "service-mappings",
                                                "power-budgets")]}
        self.assertEqual(expected, {t: v for t, v in topics.items() if t.startswith("wattgraph.")}, out)

    def test_1_pod_to_pod_edges_are_exact(self):
        eventually("exact pod -> pod edges", self.assert_edges_exact)
        # Both paths reached both backends (kube-proxy's pick is random; the headless loop dials each).
        self.assertEqual(set(self.servers), {s for _, s in self.expected})

    def test_2_pods_carry_names_namespaces_and_labels_from_the_api_server(self):
        # Each workload container as the API server has it (containerd's id in the pod's status) is a
        # Container of the graph with its pod's UID, name, namespace, kept labels and node.
        want = {}
        for name, pod in {**self.servers, **self.clients}.items():
            (status,) = pod["status"]["containerStatuses"]
            want[status["containerID"].removeprefix("containerd://")] = (
                pod["metadata"]["uid"], name, pod["metadata"]["namespace"], kept_labels(pod), pod["spec"]["nodeName"])

        def check():
            rows = self.api.cypher(
                "MATCH (c:Container) WHERE c.id IN $ids RETURN c.id AS id, c.podUid AS uid, c.podName AS name, "
                "c.podNamespace AS ns, c.podLabels AS labels, c.hostId AS host", ids=list(want))
            got = {r["id"]: (r["uid"], r["name"], r["ns"], r["labels"], r["host"]) for r in rows}
            self.assertEqual(want, got)
        eventually("pod metadata in the graph", check)

    def test_3_the_service_address_is_resolved_to_its_backends(self):
        # Every edge out of the workloads' pods ends at a server pod's process: nothing they dialled
        # is left as an External node, the VIP least of all.
        eventually("pod metadata of the clients", lambda: self.assertNotIn(None, {c for c, _ in self.pod_edges()}))
        rows = self.api.cypher(
            "MATCH (c:Process)-[:IN_CONTAINER]->(cc:Container) WHERE cc.podNamespace IN $ns "
            "MATCH (c)-[t:TALKS_TO]->(x) "
            "OPTIONAL MATCH (x)-[:IN_CONTAINER]->(xc:Container) "
            "RETURN cc.podName AS client, labels(x) AS kind, x.id AS id, xc.podName AS server",
            ns=[APP_NS, BATCH_NS])
        self.assertEqual(set(self.clients), {r["client"] for r in rows})
        for r in rows:
            self.assertEqual((["Process"], True), (r["kind"], r["server"] in self.servers), f"edge {r}")
        externals = self.api.cypher(
            "MATCH (e:External) WHERE e.id STARTS WITH $vip OR e.id STARTS WITH '10.96.' RETURN e.id AS id",
            vip=self.vip)
        self.assertEqual([], externals, "External nodes for Service addresses")
        # And nothing reached the server pods from outside the monitored pods.
        inbound = self.api.cypher(
            "MATCH (x)-[t:TALKS_TO]->(s:Process)-[:IN_CONTAINER]->(sc:Container) WHERE sc.podNamespace = $ns "
            "AND NOT x:Process RETURN x.id AS id", ns=APP_NS)
        self.assertEqual([], inbound)

    def test_4_pod_service_and_namespace_levels(self):
        def ns_of(pod):
            return self.clients[pod]["metadata"]["namespace"] if pod in self.clients else APP_NS

        def app(pod):
            return (self.clients.get(pod) or self.servers[pod])["metadata"]["labels"]["app"]

        def grouped(key):
            out = {}
            for (c, s), v in self.expected.items():
                k = key(c, s)
                a = out.get(k, (0, 0, 0))
                out[k] = (a[0] + v["connections"], a[1] + v["sent"], a[2] + v["received"])
            return out

        levels = {"pod": grouped(lambda c, s: (f"pod:{ns_of(c)}/{c}", f"pod:{APP_NS}/{s}")),
                  "service": grouped(lambda c, s: (f"service:{ns_of(c)}/{app(c)}", f"service:{APP_NS}/{app(s)}")),
                  "namespace": grouped(lambda c, s: (f"namespace:{ns_of(c)}", f"namespace:{APP_NS}"))}
        for level, want in levels.items():
            def check():
                edges, nodes = self.level(level, APP_NS)
                got = {k: v for k, v in edges.items() if k[1] in {t for _, t in want}}
                self.assertEqual(want, got, f"{level} level")
                for s, t in want:
                    self.assertEqual((level, level), (nodes[s]["kind"], nodes[t]["kind"]))
            eventually(f"the {level} level", check)

    def test_5_edges_carry_request_latency(self):
        delay_ns = PARAMS["DELAY_MS"] * 1_000_000

        def check():
            rows = self.api.cypher(
                "MATCH (c:Process)-[t:TALKS_TO]->(s:Process)-[:IN_CONTAINER]->(sc:Container) "
                "WHERE sc.podNamespace = $ns "
                "RETURN c.id AS client, s.id AS server, t.requestRate AS rate, t.clientRttP50Ns AS rttP50, "
                "t.clientRttP99Ns AS rttP99, t.clientRttMeanNs AS rttMean, t.serverTimeP50Ns AS serverP50, "
                "t.serverTimeMeanNs AS serverMean", ns=APP_NS)
            self.assertEqual(len(self.expected), len(rows))
            for r in rows:
                self.assertNotIn(None, r.values(), f"edge {r}")
                # The server sleeps DELAY_MS before every answer: no request took less (histogram bucket
                # midpoints are within 0.39 % of the value).
                self.assertGreater(r["rate"], 0, f"edge {r}")
                self.assertGreaterEqual(r["serverP50"], delay_ns * 0.99, f"edge {r}")
                self.assertGreaterEqual(r["rttMean"], r["serverMean"], f"edge {r}")
                self.assertGreaterEqual(r["rttP99"], r["rttP50"], f"edge {r}")
        eventually("latency on the edges", check)

        # The service answers from its graph cache (up to wattgraph.graph.cache-ttl old, 5 s), which
        # test_4's reads of this level may have filled before the latency windows were written.
        def check_pods():
            g = self.api.call("GET", f"/service-graph?level=pod&namespace={APP_NS}")
            into_servers = [e for e in g["edges"] if e["target"].startswith(f"pod:{APP_NS}/server")]
            self.assertEqual(len(self.expected), len(into_servers))
            for e in into_servers:
                self.assertGreaterEqual(e.get("latencyP50Ms", 0), PARAMS["DELAY_MS"] * 0.99, f"edge {e}")
                self.assertGreaterEqual(e.get("serverTimeP50Ms", 0), PARAMS["DELAY_MS"] * 0.99, f"edge {e}")
        eventually("latency on the pod edges", check_pods)

    def test_6_the_job_reports_its_counters_to_prometheus(self):
        # The chart's Flink Prometheus reporter (what a PodMonitor scrapes): the job's own counters,
        # and no record of this run's traffic was undecodable.
        texts = []
        for p in pods(WATTGRAPH_NS, "app.kubernetes.io/name=flink"):
            ports = [c["containerPort"] for c in p["spec"]["containers"][0].get("ports", []) if c["name"] == "metrics"]
            if ports and p["status"].get("podIP"):
                with urllib.request.urlopen(f"http://{p['status']['podIP']}:{ports[0]}/", timeout=30) as r:
                    texts.append(r.read().decode())
        series = {}
        for line in "\n".join(texts).splitlines():
            if line.startswith("flink_taskmanager_job_task_operator_"):
                name, value = line.split("{")[0], float(line.rsplit(" ", 1)[1])
                series[name] = series.get(name, 0.0) + value
        for name in ("deserializer_deadLetters", "deserializer_transactionDeadLetters", "lateSamplesDropped",
                     "vipUnresolved", "oneSidedConnections"):
            self.assertIn(f"flink_taskmanager_job_task_operator_{name}", series, f"metric {name} on port 9249")
        self.assertEqual(0.0, series["flink_taskmanager_job_task_operator_deserializer_deadLetters"])
        log(f"job metrics: {len(series)} operator series, vipTranslated "
            f"{series.get('flink_taskmanager_job_task_operator_vipTranslated')}")

    def test_7_faults_during_traffic_lose_nothing(self):
        # Short connections at a steady pace while the Flink JobManager's pod, one Kafka broker's pod,
        # Neo4j's pod and the node's agent pod are deleted: the job recovers from its checkpoint (Kubernetes HA), the agents'
        # producers move to the other brokers, the Neo4j sink's unwritten rows wait in its checkpointed
        # state for the new Neo4j pod (same volume), and the edges end exact, the earlier workloads' untouched.
        cron = next(d for d in workload_documents() if d["kind"] == "CronJob")
        job = {"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": "faultload", "namespace": BATCH_NS},
               "spec": json.loads(json.dumps(cron["spec"]["jobTemplate"]["spec"]))}
        pod_spec = job["spec"]["template"]
        pod_spec["metadata"]["labels"] = {"app": "faultload"}
        container = pod_spec["spec"]["containers"][0]
        container["name"] = "faultload"
        container["env"] = [e for e in container["env"] if e["name"] not in ("SHORT_CONNECTIONS", "PACE_MS")] + [
            {"name": "SHORT_CONNECTIONS", "value": str(FAULT_CONNECTIONS)}, {"name": "PACE_MS", "value": "250"}]
        apply([job, self.burner(container)])
        pod = eventually("the fault load's pod", lambda: self.one_running(BATCH_NS, "app=faultload"))
        start = time.monotonic()
        time.sleep(10)
        kubectl("-n", WATTGRAPH_NS, "delete", "pod", "-l",
                "app.kubernetes.io/name=flink,app.kubernetes.io/component=jobmanager", "--wait=false")
        time.sleep(20)
        kubectl("-n", WATTGRAPH_NS, "delete", "pod", "kafka-1", "--wait=false")
        time.sleep(15)
        kubectl("-n", WATTGRAPH_NS, "delete", "pod", "neo4j-0", "--wait=false")
        agents = self.agents()
        time.sleep(10)
        # The nodes' agents restarted (as in a rolling update or a drain): their pinned programs keep
        # counting and their rings keep the events until the DaemonSet's new pods read on.
        kubectl("-n", WATTGRAPH_NS, "delete", "pod", "-l", "app.kubernetes.io/name=node-agent", "--wait=false")
        restarted = eventually("the agents' new pods", lambda: self.other_agents(agents))
        self.assert_agents_reused_their_pins(restarted)
        # The nodes drained of their agents and given them back: a nodeSelector no node has makes the
        # DaemonSet stop its pods (a clean stop, which keeps the pins while the DaemonSet exists);
        # without it the pods come back on the pins, which counted meanwhile.
        drained_at = time.monotonic() - start
        selector = {"spec": {"template": {"spec": {"nodeSelector": {"wattgraph.io/drained": "true"}}}}}
        kubectl("-n", WATTGRAPH_NS, "patch", "daemonset", "node-agent", "--type=merge", "-p", json.dumps(selector))
        eventually("the nodes drained of their agents", lambda: self.assertEqual(
            [], [p["metadata"]["name"] for p in pods(WATTGRAPH_NS, "app.kubernetes.io/name=node-agent")]), timeout=120)
        time.sleep(10)
        selector["spec"]["template"]["spec"]["nodeSelector"] = None
        kubectl("-n", WATTGRAPH_NS, "patch", "daemonset", "node-agent", "--type=merge", "-p", json.dumps(selector))
        back_at = time.monotonic() - start
        tally = eventually("the fault load's tally", lambda: tally_of(BATCH_NS, pod), timeout=300)
        log(f"fault load: {sum(c['connections'] for c in tally['backends'].values())} connections in "
            f"{time.monotonic() - start:.0f} s, JobManager, kafka-1, neo4j-0 and the agent deleted at 10, 30, 45 and 55 s, "
            f"the agent drained from {drained_at:.0f} s to {back_at:.0f} s")
        for backend, counts in tally["backends"].items():
            self.assertIn(backend, self.servers)
            type(self).expected[(tally["pod"], backend)] = counts
        kubectl("-n", WATTGRAPH_NS, "rollout", "status", "deployment/flink-jobmanager", "--timeout=300s")
        kubectl("-n", WATTGRAPH_NS, "rollout", "status", "statefulset/kafka", "--timeout=300s")
        kubectl("-n", WATTGRAPH_NS, "rollout", "status", "statefulset/neo4j", "--timeout=300s")
        kubectl("-n", WATTGRAPH_NS, "rollout", "status", "daemonset/node-agent", "--timeout=300s")
        back = eventually("the agents back on the nodes", lambda: self.other_agents(restarted))
        self.assert_agents_reused_their_pins(back)
        eventually("exact pod -> pod edges after the faults", self.assert_edges_exact)
        # CPU windows through the same faults: the burner's windows between its boundaries add up to the
        # CPU time the kernel counted for it between them.
        burned = eventually("the burner done", lambda: self.burned(BATCH_NS, "cpuburn"), timeout=300)
        (status,) = kget("-n", BATCH_NS, "pod", "cpuburn")["status"]["containerStatuses"]
        container = status["containerID"].removeprefix("containerd://")
        log(f"burner: {burned['cpuNs'] / 1e9:.6f} s of CPU from {burned['fromNs']} to {burned['toNs']}, "
            f"as the kernel counted it")
        graph_ns = eventually("the burner's CPU windows equal the kernel's count", lambda: self.assert_cpu_windows(
            container, burned["fromNs"], burned["toNs"], burned["cpuNs"]))
        log(f"burner: its windows in the graph add up to {graph_ns:.0f} ns, {graph_ns - burned['cpuNs']:+.0f} ns")
        TIMINGS["faults"] = time.monotonic() - start

    @staticmethod
    def burner(like):
        """A pod burning CPU at 20 % of a core through the faults, then idle (its CPU time final)."""
        container = json.loads(json.dumps(like))
        container.update(name="cpuburn", args=["burn"], env=[
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "BURN_S", "value": str(FAULT_CONNECTIONS // 4)}])
        # On the second node: its agent counts it, the first node's does not (both see its threads).
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "cpuburn", "namespace": BATCH_NS, "labels": {"app": "cpuburn"}},
                "spec": {"restartPolicy": "Never", "enableServiceLinks": False,
                         "nodeSelector": {"kubernetes.io/hostname": NODE2},
                         "automountServiceAccountToken": False, "containers": [container]}}

    @staticmethod
    def burned(namespace, pod):
        lines = [line for line in kubectl("-n", namespace, "logs", pod).splitlines() if line.startswith("BURNED ")]
        assert lines, f"{pod} has not finished burning"
        return json.loads(lines[0].removeprefix("BURNED "))

    def assert_cpu_windows(self, container, from_ns, to_ns, truth_ns):
        """The container's windows ending after from_ns up to to_ns (graph history: cpuUsage in
        cores) add up to truth_ns. Allowed: 1 ms, for the difference between the ends of the
        burner's two reads (tens of microseconds) and each window's figure being a double."""
        (row,) = self.api.cypher(
            "MATCH (c:Container {id: $id}) RETURN c.historyWindowEndNs AS ends, c.historyCpuUsage AS cpu, "
            "c.metricsWindowEndNs - c.metricsWindowStartNs AS windowNs", id=container)
        windows = [(end, cpu) for end, cpu in zip(row["ends"] or [], row["cpu"] or []) if from_ns < end <= to_ns]
        graph_ns = sum(cpu * row["windowNs"] for _, cpu in windows if cpu == cpu)  # NaN: no CPU that window
        self.assertLessEqual(abs(graph_ns - truth_ns), 1_000_000,
                             f"container {container}: {len(windows)} windows from {from_ns} to {to_ns}, graph "
                             f"{graph_ns:.0f} ns, kernel {truth_ns} ns; per window (end, ns): "
                             f"{[(end, round(cpu * row['windowNs'])) for end, cpu in windows]}")
        return graph_ns

    def test_8_totals_stay_exact(self):
        # Later windows, checkpoints and the correlator's horizons added nothing and took nothing away.
        self.assert_edges_exact()

    def test_9_placement_moves_the_client_to_its_servers_node(self):
        # The client alone on the first node, everything it talks to on the second: one move puts the
        # namespace's traffic on one node (moving the servers and the batch clients instead would be
        # three), and the recommendation's patch, applied as it is, moves the pod there.
        result = self.api.call("POST", "/placement", {"level": "service", "namespace": APP_NS})
        log(f"placement: {json.dumps(result)[:2000]}")
        client = f"service:{APP_NS}/client"
        self.assertTrue(result["feasible"])
        self.assertEqual([{"workload": client, "from": NODE, "to": NODE2}], result["moves"])
        self.assertEqual({NODE2}, set(result["assignment"].values()))
        client_bytes = sum(v["sent"] + v["received"] for (c, _), v in self.expected.items() if c in self.clients
                           and self.clients[c]["metadata"]["labels"].get("app") == "client")
        self.assertEqual((client_bytes, 0, 2, 1), (result["crossNodeBytesBefore"], result["crossNodeBytesAfter"],
                                                   result["nodesUsedBefore"], result["nodesUsedAfter"]))
        (patch,) = result["patches"]
        self.assertEqual((APP_NS, "client", NODE2), (patch["namespace"], patch["name"], patch["node"]))
        before = self.one_running(APP_NS, "app=client")
        # The recommendation's own kubectl command, with this cluster's kubectl and credentials.
        command = shlex.split(patch["kubectl"])
        self.assertEqual("kubectl", command[0])
        kubectl(*command[1:])
        kubectl("-n", APP_NS, "rollout", "status", "deployment/client", "--timeout=300s")
        moved = eventually("the client's new pod", lambda: self.other_client(before))
        pod = kget("-n", APP_NS, "pod", moved)
        self.assertEqual(NODE2, pod["spec"]["nodeName"], "the client's pod runs where the recommendation said")
        # The moved pod called the servers again: its edges are exact, and the graph has it on its new
        # node (the second node's agent counted it, the first's did not).
        tally = eventually("the moved client's tally", lambda: tally_of(APP_NS, moved))
        for backend, counts in tally["backends"].items():
            self.assertIn(backend, self.servers)
            type(self).expected[(moved, backend)] = counts
        type(self).clients[moved] = pod
        eventually("exact pod -> pod edges after the move", self.assert_edges_exact)
        (status,) = pod["status"]["containerStatuses"]
        (row,) = self.api.cypher("MATCH (c:Container {id: $id}) RETURN c.hostId AS host",
                                 id=status["containerID"].removeprefix("containerd://"))
        self.assertEqual(NODE2, row["host"])

    @staticmethod
    def other_client(before):
        """The client's one pod, running, other than `before` (the old one gone)."""
        now = pods(APP_NS, "app=client")
        running = [p["metadata"]["name"] for p in now if p["status"].get("phase") == "Running"]
        assert len(now) == 1 and running and running[0] != before, f"client pods {[p['metadata']['name'] for p in now]}"
        return running[0]

    def test_9_uninstall_removes_the_pins(self):
        # Last in name order (after test_9_placement...): it uninstalls the release.
        if os.environ.get("WATTGRAPH_K8S_KEEP") == "1":
            self.skipTest("WATTGRAPH_K8S_KEEP=1: the release stays installed for a look")
        for node in NODES:
            self.assertTrue(pinned(node), f"{node}'s agent's programs are pinned under {PIN_DIR / node} before the uninstall")
        if getattr(ClusterEndToEndTest, "usage", None):  # while the pipeline still runs
            log("CPU and memory from the pipeline flowing to the end of the checks:\n"
                + usage.table(ClusterEndToEndTest.usage, usage.reading()))
            ClusterEndToEndTest.usage = None
        # Each agent's log to its end: why it unpinned, or why not.
        logs = {node: subprocess.Popen([f"{K8S_BIN}/kubectl", "--kubeconfig", KUBECONFIG, "-n", WATTGRAPH_NS, "logs",
                                        "-f", "--tail=5", agent], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       text=True)
                for node, agent in self.agents().items()}
        said = {}
        try:
            run(f"{K8S_BIN}/helm", "--kubeconfig", KUBECONFIG, "uninstall", "wattgraph", "-n", WATTGRAPH_NS)
            eventually("the agents' pods gone", lambda: self.assertEqual(
                [], [p["metadata"]["name"] for p in pods(WATTGRAPH_NS, "app.kubernetes.io/name=node-agent")]), timeout=180)
            said = {node: follow.communicate(timeout=60)[0] for node, follow in logs.items()}
        finally:
            for follow in logs.values():
                if follow.poll() is None:
                    follow.kill()
                    follow.wait()
        for node in NODES:
            log(f"{node}'s agent's last lines:\n{said[node][-3000:]}")
            self.assertEqual([], pinned(node), f"pins left on {node} after helm uninstall; its agent said:\n{said[node][-2000:]}")
            # The connection programs' and the sched programs' directories.
            self.assertIn(f"unpinned 2 BPF object(s) under {PIN_DIR / node}", said[node])


def pinned(node):
    """The BPF objects pinned under a node's pin directory."""
    d = PIN_DIR / node
    return sorted(p.name for p in d.iterdir() if p.is_dir()) if d.is_dir() else []


if __name__ == "__main__":
    # Stopped from outside (CI's timeout, Ctrl-C): the cluster still goes. KeyboardInterrupt, because
    # unittest takes any other exception in a test for that test's error and goes on with the next.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        unittest.main(verbosity=2)
    finally:
        if ClusterEndToEndTest.torn_down is False:
            ClusterEndToEndTest.tear_down_cluster()
