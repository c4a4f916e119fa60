"""Checks what the Helm chart k8s/chart/wattgraph renders (helm lint, then helm template with the
default values and with every option on): no privileged container, a securityContext per
container, the node agent's capabilities and mounts, NetworkPolicies that admit exactly the
intended connections, secrets only from Secrets, Neo4j's file and memory limits, Kafka's
replication, one power-budget loop whatever the replica count, the dashboards and alert rules shipped unchanged.
Run: python3 k8s/tests/test_manifests.py (PyYAML, Debian's python3-yaml; helm from
k8s/cluster/build.sh, built on first use)."""
import functools
import json
import os
import pathlib
import re
import subprocess
import unittest

import yaml

K8S = pathlib.Path(__file__).resolve().parent.parent
CHART = K8S / "chart" / "wattgraph"
KUBE_VERSION = "v1.34.4"
# Every option that changes what is rendered, for the checks that must hold whatever the values.
ALL_ON = ["monitoring.podMonitors=true", "monitoring.dashboards=true", "monitoring.prometheusRule=true", "graphService.tls.secret=gs-tls", "kafka.security.protocol=SASL_SSL",
          "kafka.security.brokerSecret=kafka-broker", "kafka.security.clientSecrets.nodeAgent=k-agent",
          "kafka.security.clientSecrets.streamJobs=k-job", "kafka.security.clientSecrets.graphService=k-gs",
          "kafka.security.clientSecrets.serviceMapper=k-mapper", "kafka.security.clientSecrets.topics=k-topics",
          "graphService.replicas=5", "nodeAgent.nodeScope=true"]
SASL_SSL = tuple(s for s in ALL_ON if s.startswith("kafka.security."))


@functools.lru_cache(maxsize=None)
def helm():
    env = subprocess.run(["bash", "-c", f". {K8S}/cluster/versions.sh && echo $K8S_BIN/helm"],
                         check=True, capture_output=True, text=True).stdout.strip()
    if not os.access(env, os.X_OK):
        subprocess.run([str(K8S / "cluster" / "build.sh"), "helm"], check=True)
    return env


@functools.lru_cache(maxsize=None)
def render(*settings):
    args = [helm(), "template", "wattgraph", str(CHART), "--namespace", "wattgraph", "--kube-version", KUBE_VERSION]
    for s in settings:
        args += ["--set", s]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return tuple(d for d in yaml.safe_load_all(out) if d)

POD_KINDS = {"Deployment", "StatefulSet", "DaemonSet", "Job"}
AGENT_MOUNTS = {  # hostPath -> (mountPath, readOnly)
    "/sys/fs/cgroup": ("/sys/fs/cgroup", True),
    "/sys/devices/virtual": ("/host/sys/devices/virtual", True),
    "/var/lib/wattgraph": ("/var/lib/wattgraph", False),
    "/sys/fs/bpf": ("/sys/fs/bpf", False),  # --pin-bpf: the node's bpffs, where the pins outlive the pod
}


def load(name):
    return [d for d in yaml.safe_load_all((K8S / name).read_text()) if d]


VARIANTS = {"defaults": (), "all options on": tuple(ALL_ON)}
CURRENT = ["defaults"]


def applied():
    """The objects the chart renders with the values of the variant under test."""
    return render(*VARIANTS[CURRENT[0]])


def workloads():
    """name -> (pod spec, pod labels) of every workload rendered."""
    return {d["metadata"]["name"]: (d["spec"]["template"]["spec"], d["spec"]["template"]["metadata"]["labels"])
            for d in applied() if d["kind"] in POD_KINDS}


def each_variant(test):
    """Runs a check against every variant of values."""
    def run(self):
        for v in VARIANTS:
            with self.subTest(values=v):
                CURRENT[0] = v
                try:
                    test(self)
                finally:
                    CURRENT[0] = "defaults"
    return run


def env(container, name):
    return next((e for e in container.get("env", []) if e["name"] == name), None)


def value(container, name):
    return (env(container, name) or {}).get("value")


def secret_ref(container, name):
    e = env(container, name)
    ref = (e or {}).get("valueFrom", {}).get("secretKeyRef")
    return (ref["name"], ref["key"]) if ref else None


def selects(selector, labels):
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


def admitted(src, dst, port):
    """Whether a connection from `src` (pod labels, or None for a source outside the namespace's
    pods) to pod `dst` on `port` passes the NetworkPolicies (isolated pods: some rule must admit)."""
    policies = [p for p in applied() if p["kind"] == "NetworkPolicy" and selects(p["spec"]["podSelector"], dst)]
    if not policies:
        return True
    for p in policies:
        for rule in p["spec"].get("ingress", []):
            ports = [x["port"] for x in rule.get("ports", [])]
            if ports and port not in ports:
                continue
            if "from" not in rule:
                return True
            if src is not None and any("podSelector" in f and "namespaceSelector" not in f and selects(f["podSelector"], src)
                                       for f in rule["from"]):
                return True
    return False


class Manifests(unittest.TestCase):
    def test_helm_lint_passes_and_the_chart_renders_no_secret(self):
        lint = subprocess.run([helm(), "lint", "--strict", str(CHART), "--kube-version", KUBE_VERSION],
                              capture_output=True, text=True)
        self.assertEqual(lint.returncode, 0, lint.stdout + lint.stderr)
        for v in VARIANTS.values():
            self.assertFalse([d for d in render(*v) if d["kind"] == "Secret"], "secrets are created by hand")
        self.assertEqual({p.name for p in K8S.glob("*.yaml")}, {"graph-service-auth.example.yaml", "neo4j-auth.example.yaml"})
        for f in K8S.glob("*.example.yaml"):
            for d in load(f.name):
                self.assertEqual(d["kind"], "Secret", f)
                for k, v in d["stringData"].items():
                    self.assertRegex(v, r"(replace-|change-me)", f"{f} {k} holds a placeholder, not a secret")

    def test_a_missing_existing_kafka_or_neo4j_address_is_refused_by_name(self):
        for setting, name in (("kafka.enabled=false", "kafka.bootstrapServers"), ("neo4j.enabled=false", "neo4j.uri")):
            r = subprocess.run([helm(), "template", "w", str(CHART), "--kube-version", KUBE_VERSION, "--set", setting],
                               capture_output=True, text=True)
            self.assertNotEqual(r.returncode, 0, setting)
            self.assertIn(name, r.stderr)
        objs = render("kafka.enabled=false", "kafka.bootstrapServers=broker.example:9093",
                      "neo4j.enabled=false", "neo4j.uri=bolt://graph.example:7687")
        names = {d["metadata"]["name"] for d in objs if d["kind"] in POD_KINDS}
        self.assertFalse({"kafka", "neo4j", "kafka-create-topics"} & names, names)
        text = yaml.safe_dump_all(objs)
        self.assertIn("broker.example:9093", text)
        self.assertIn("bolt://graph.example:7687", text)

    def test_sasl_ssl_values_that_cannot_work_are_refused_by_name(self):
        def refused(*settings):
            r = subprocess.run([helm(), "template", "w", str(CHART), "--kube-version", KUBE_VERSION]
                               + [a for s in settings for a in ("--set", s)], capture_output=True, text=True)
            self.assertNotEqual(r.returncode, 0, settings)
            return r.stderr
        self.assertIn('kafka.security.protocol must be PLAINTEXT or SASL_SSL, not "SSL"', refused("kafka.security.protocol=SSL"))
        # Each secret SASL_SSL needs, left out in turn, is named.
        for missing in SASL_SSL[1:]:
            key = missing.split("=")[0]
            self.assertIn(f"needs {key}", refused(*(s for s in SASL_SSL if s != missing)), key)
        # Not needed where nothing uses it: the brokers' and the topics Job's with an existing Kafka,
        # graph-service's without the budget loop.
        external = [s for s in SASL_SSL if not re.match(r"kafka\.security\.(brokerSecret|clientSecrets\.(topics|graphService))=", s)]
        objs = render(*external, "kafka.enabled=false", "kafka.bootstrapServers=broker.example:9093",
                      "graphService.powerBudgets.enabled=false")
        self.assertFalse({"kafka", "kafka-create-topics", "graph-service-budgets"}
                         & {d["metadata"]["name"] for d in objs if d["kind"] in POD_KINDS})

    def test_the_topics_job_logs_in_with_its_client_file_on_sasl_ssl(self):
        def job(*settings):
            (j,) = [d for d in render(*settings) if d["kind"] == "Job" and d["metadata"]["name"] == "kafka-create-topics"]
            pod = j["spec"]["template"]["spec"]
            return pod, pod["containers"][0]
        pod, c = job()
        self.assertNotIn("--command-config", " ".join(c["command"]))
        self.assertNotIn("volumes", pod)
        pod, c = job(*SASL_SSL)
        script = c["command"][-1]
        self.assertRegex(script, r"CreateTopics \\\n\s*--command-config /etc/wattgraph/kafka/client.properties \\\n\s*\"\$BOOTSTRAP\"")
        (m,) = c["volumeMounts"]
        self.assertEqual((m["mountPath"], m.get("readOnly")), ("/etc/wattgraph/kafka", True))
        (v,) = [v for v in pod["volumes"] if v["name"] == m["name"]]
        self.assertEqual(v["secret"]["secretName"], "k-topics")

    def test_agent_flags_from_values_are_strings_in_order(self):
        def agent_args(*settings):
            (ds,) = [d for d in render(*settings) if d["kind"] == "DaemonSet"]
            return ds["spec"]["template"]["spec"]["containers"][0]["args"]
        args = agent_args()
        self.assertEqual("65536", args[args.index("--transaction-hist-entries") + 1])
        args = agent_args("nodeAgent.transactionHistogramEntries=262144",
                          "nodeAgent.extraArgs={--pod-metadata-interval-ms,5000}")
        self.assertEqual("262144", args[args.index("--transaction-hist-entries") + 1])
        # Numbers from --set or a values file stay strings, which a container's args must be.
        self.assertEqual(["--pod-metadata-interval-ms", "5000"], args[-2:])

    def test_node_scope_gives_each_agent_its_node_and_a_pin_directory_and_spool_of_its_node(self):
        def agent(*settings):
            objs = render(*settings)
            (ds,) = [d for d in objs if d["kind"] == "DaemonSet"]
            (role,) = [d for d in objs if d["kind"] == "ClusterRole" and d["metadata"]["name"].startswith("wattgraph-node-agent")]
            (c,) = ds["spec"]["template"]["spec"]["containers"]
            (state,) = [m for m in c["volumeMounts"] if m["name"] == "state"]
            return c["args"], state, role["rules"]
        args, state, rules = agent()
        self.assertNotIn("--node-scope", args)
        self.assertEqual("/sys/fs/bpf/wattgraph", args[args.index("--bpf-pin-dir") + 1])
        self.assertNotIn("subPathExpr", state)
        self.assertEqual([{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}], rules)
        # Nodes sharing a kernel share its bpffs and the host's directories: each agent its own.
        args, state, rules = agent("nodeAgent.nodeScope=true")
        self.assertEqual("$(NODE_NAME)", args[args.index("--node-scope") + 1])
        self.assertEqual("/sys/fs/bpf/wattgraph/$(NODE_NAME)", args[args.index("--bpf-pin-dir") + 1])
        self.assertEqual("$(NODE_NAME)", state["subPathExpr"])
        # Its node's pod ranges: get on nodes, nothing more.
        self.assertEqual([{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
                          {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}], rules)

    def test_the_jobs_checkpoint_interval_and_neo4j_writes_come_from_values(self):
        # The job sets its own interval (--checkpoint-interval-ms), which wins over Flink's configuration:
        # a value only in the configuration would not reach it.
        def job(*settings):
            objs = render(*settings)
            (jm,) = [d for d in objs if d["kind"] == "Deployment" and d["metadata"]["name"] == "flink-jobmanager"]
            args = jm["spec"]["template"]["spec"]["containers"][0]["args"]
            conf = next(d for d in objs if d["kind"] == "ConfigMap" and "config.yaml" in d.get("data", {}))
            return args, conf["data"]["config.yaml"]
        args, conf = job()
        self.assertEqual(["5000", "checkpointed"],
                         [args[args.index("--checkpoint-interval-ms") + 1], args[args.index("--neo4j-writes") + 1]])
        self.assertIn("execution.checkpointing.interval: 5000ms", conf)
        args, conf = job("flink.checkpointIntervalMs=2000", "flink.neo4jWrites=immediate")
        self.assertEqual(["2000", "immediate"],
                         [args[args.index("--checkpoint-interval-ms") + 1], args[args.index("--neo4j-writes") + 1]])
        self.assertIn("execution.checkpointing.interval: 2000ms", conf)
        r = subprocess.run([helm(), "template", "w", str(CHART), "--kube-version", KUBE_VERSION,
                            "--set", "flink.neo4jWrites=eventually"], capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('flink.neo4jWrites must be checkpointed or immediate, got "eventually"', r.stderr)

    @each_variant
    def test_the_agent_unpins_when_its_own_daemonset_is_gone_and_may_watch_only_that_one(self):
        (ds,) = [d for d in applied() if d["kind"] == "DaemonSet"]
        pod = ds["spec"]["template"]["spec"]
        (c,) = pod["containers"]
        args = c["args"]
        self.assertIn("--pin-bpf", args)
        self.assertEqual("$(POD_NAMESPACE)/" + ds["metadata"]["name"], args[args.index("--unpin-when-daemonset-gone") + 1])
        self.assertEqual({"fieldRef": {"fieldPath": "metadata.namespace"}}, env(c, "POD_NAMESPACE")["valueFrom"])
        (role,) = [d for d in applied() if d["kind"] == "Role" and d["metadata"]["name"] == "node-agent-own-daemonset"]
        self.assertEqual([{"apiGroups": ["apps"], "resources": ["daemonsets"], "resourceNames": [ds["metadata"]["name"]],
                           "verbs": ["list", "watch"]}], role["rules"])
        (binding,) = [d for d in applied() if d["kind"] == "RoleBinding" and d["roleRef"]["name"] == role["metadata"]["name"]]
        self.assertEqual("Role", binding["roleRef"]["kind"])
        self.assertEqual([{"kind": "ServiceAccount", "name": pod["serviceAccountName"], "namespace": "wattgraph"}],
                         binding["subjects"])
        # Nothing else of the release may touch DaemonSets for the agent's service account.
        for d in applied():
            if d["kind"] in ("Role", "ClusterRole") and d is not role:
                for rule in d.get("rules", []):
                    self.assertNotIn("daemonsets", rule.get("resources", []), d["metadata"]["name"])

    def test_kafka_is_three_kraft_brokers_with_replication_3_and_min_isr_2(self):
        (sts,) = [d for d in applied() if d["kind"] == "StatefulSet" and d["metadata"]["name"] == "kafka"]
        self.assertEqual(sts["spec"]["replicas"], 3)
        (c,) = sts["spec"]["template"]["spec"]["containers"]
        self.assertEqual(value(c, "KAFKA_REPLICAS"), "3")
        (cm,) = [d for d in applied() if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "kafka-config"]
        props = dict(line.split("=", 1) for line in cm["data"]["10-cluster.properties"].splitlines() if line)
        for k, v in {"default.replication.factor": "3", "min.insync.replicas": "2", "offsets.topic.replication.factor": "3",
                     "transaction.state.log.replication.factor": "3", "transaction.state.log.min.isr": "2",
                     "unclean.leader.election.enable": "false"}.items():
            self.assertEqual(props.get(k), v, k)

    @each_variant
    def test_exactly_one_power_budget_loop_whatever_the_replica_count(self):
        deployments = {d["metadata"]["name"]: d for d in applied() if d["kind"] == "Deployment"}
        loops = [n for n, d in deployments.items()
                 if "--wattgraph.power.budgets.enabled=true" in d["spec"]["template"]["spec"]["containers"][0].get("args", [])]
        self.assertEqual(loops, ["graph-service-budgets"])
        budgets = deployments["graph-service-budgets"]["spec"]
        self.assertEqual((budgets["replicas"], budgets["strategy"]["type"]), (1, "Recreate"))
        api = deployments["graph-service"]["spec"]["template"]["spec"]["containers"][0]["args"]
        self.assertIn("--wattgraph.power.budgets.enabled=false", api)

    def test_prometheus_scrapes_graph_service_with_a_read_token(self):
        # Its metrics name workloads and their traffic: the service answers them only to a token.
        monitors = {d["metadata"]["name"]: d["spec"]["podMetricsEndpoints"][0]
                    for d in render("monitoring.podMonitors=true") if d["kind"] == "PodMonitor"}
        for name in ("graph-service", "graph-service-budgets"):
            self.assertEqual(monitors[name].get("authorization"),
                             {"type": "Bearer", "credentials": {"name": "graph-service-auth", "key": "read-tokens"}}, name)
        self.assertNotIn("authorization", monitors["node-agent"])
        mine = {d["metadata"]["name"]: d["spec"]["podMetricsEndpoints"][0] for d in render(
            "monitoring.podMonitors=true", "monitoring.graphServiceToken.secret=prom-token",
            "monitoring.graphServiceToken.key=token") if d["kind"] == "PodMonitor"}
        self.assertEqual(mine["graph-service"]["authorization"]["credentials"], {"name": "prom-token", "key": "token"})

    def test_the_chart_ships_every_dashboard_and_alert_rule_of_k8s_monitoring_unchanged(self):
        self.assertFalse([d for d in render() if d["kind"] == "PrometheusRule"
                          or "grafana_dashboard" in d["metadata"].get("labels", {})], "monitoring is opt-in")
        docs = render("monitoring.dashboards=true", "monitoring.prometheusRule=true", "monitoring.labels.release=prom")
        shipped = {}
        for d in docs:
            if d["kind"] == "ConfigMap" and d["metadata"]["labels"].get("grafana_dashboard") == "1":
                self.assertEqual(d["metadata"]["labels"]["release"], "prom")
                shipped.update({k: json.loads(v) for k, v in d["data"].items()})
        files = {p.name: json.loads(p.read_text()) for p in (K8S / "monitoring" / "dashboards").glob("*.json")}
        self.assertEqual(len(files), 4)
        self.assertEqual(shipped, files)
        (rule,) = [d for d in docs if d["kind"] == "PrometheusRule"]
        self.assertEqual(rule["spec"], yaml.safe_load((K8S / "monitoring" / "alerts" / "wattgraph-alerts.yaml").read_text()))
        self.assertEqual(rule["metadata"]["labels"]["release"], "prom")

    def test_flink_has_kubernetes_ha_and_checkpoints_on_a_volume_of_every_flink_pod(self):
        (cm,) = [d for d in applied() if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "flink-config"]
        conf = yaml.safe_load(cm["data"]["config.yaml"])
        self.assertEqual(conf["high-availability.type"], "kubernetes")
        self.assertTrue(conf["high-availability.storageDir"].startswith("file:///flink-checkpoints/"))
        self.assertTrue(conf["state.checkpoints.dir"].startswith("file:///flink-checkpoints/"))
        for name in ("flink-jobmanager", "flink-taskmanager"):
            pod, _ = workloads()[name]
            (vol,) = [v for v in pod["volumes"] if v["name"] == "checkpoints"]
            self.assertEqual(vol["persistentVolumeClaim"]["claimName"], "flink-checkpoints", name)
            self.assertEqual(pod["serviceAccountName"], "flink")
        (role,) = [d for d in applied() if d["kind"] == "Role" and d["metadata"]["name"] == "flink-ha"]
        self.assertEqual(role["rules"][0]["resources"], ["configmaps"])

    @each_variant
    def test_no_privileged_container_and_a_security_context_for_each(self):
        for name, (pod, _) in workloads().items():
            pod_ctx = pod.get("securityContext", {})
            for c in pod.get("initContainers", []) + pod["containers"]:
                ctx = c.get("securityContext")
                self.assertIsNotNone(ctx, f"{name}/{c['name']} has no securityContext")
                self.assertFalse(ctx.get("privileged", False), f"{name}/{c['name']}")
                self.assertIs(ctx.get("allowPrivilegeEscalation"), False, f"{name}/{c['name']}")
                self.assertEqual(ctx.get("capabilities", {}).get("drop"), ["ALL"], f"{name}/{c['name']}")
                seccomp = ctx.get("seccompProfile", pod_ctx.get("seccompProfile", {})).get("type")
                self.assertEqual(seccomp, "RuntimeDefault", f"{name}/{c['name']}")
                if name == "node-agent":
                    continue
                self.assertIs(ctx.get("runAsNonRoot", pod_ctx.get("runAsNonRoot")), True, f"{name}/{c['name']}")
                self.assertNotIn("add", ctx.get("capabilities", {}), f"{name}/{c['name']}")
            if name != "node-agent":
                self.assertFalse(pod.get("hostNetwork") or pod.get("hostPID") or pod.get("hostIPC"), name)
                self.assertFalse([v for v in pod.get("volumes", []) if "hostPath" in v], name)

    def test_the_node_agent_gets_named_capabilities_each_with_a_reason_and_only_the_mounts_it_reads(self):
        pod, _ = workloads()["node-agent"]
        (c,) = pod["containers"]
        ctx = c["securityContext"]
        self.assertEqual(ctx.get("runAsUser"), 0)
        self.assertIs(ctx.get("readOnlyRootFilesystem"), True)
        added = ctx["capabilities"]["add"]
        self.assertTrue(added)
        self.assertFalse({"SYS_ADMIN", "SYS_PTRACE", "ALL"} & set(added), added)
        text = (CHART / "templates" / "node-agent.yaml").read_text()
        for cap in added:  # the list's lines carry the why as a comment (node-agent/tests/capabilities.rs reads the same list)
            self.assertRegex(text, rf"\n\s*- {cap}\s+# \S.*\S", f"{cap} has no comment saying why")
        host = {v["name"]: v["hostPath"] for v in pod["volumes"] if "hostPath" in v}
        self.assertEqual({h["path"] for h in host.values()}, set(AGENT_MOUNTS))
        for m in c["volumeMounts"]:
            if m["name"] in host:
                path = host[m["name"]]["path"]
                self.assertEqual((m["mountPath"], m.get("readOnly", False)), AGENT_MOUNTS[path], path)
        self.assertEqual(host["state"]["type"], "DirectoryOrCreate")

    def test_network_policies_admit_exactly_the_intended_connections(self):
        w = {n: labels for n, (_, labels) in workloads().items()}
        kafka, neo4j, jm, tm = w["kafka"], w["neo4j"], w["flink-jobmanager"], w["flink-taskmanager"]
        gs, mapper, topics = w["graph-service"], w["service-mapper"], w["kafka-create-topics"]
        budgets = w["graph-service-budgets"]
        deny_all = [p for p in applied() if p["kind"] == "NetworkPolicy"
                    and p["spec"]["podSelector"] == {} and "ingress" not in p["spec"]]
        self.assertTrue(deny_all, "no default-deny ingress policy")
        allowed = [(mapper, kafka, 9092), (jm, kafka, 9092), (tm, kafka, 9092), (gs, kafka, 9092), (topics, kafka, 9092),
                   (jm, neo4j, 7687), (tm, neo4j, 7687), (gs, neo4j, 7687),
                   (tm, jm, 6123), (tm, jm, 6124), (jm, tm, 6122), (tm, tm, 6122), (tm, tm, 6121),
                   (gs, jm, 8081), (mapper, jm, 8081), (None, gs, 8080),
                   (budgets, kafka, 9092), (budgets, neo4j, 7687), (kafka, kafka, 9092), (kafka, kafka, 9093)]
        denied = [(None, kafka, 9092), (mapper, kafka, 9093), (mapper, neo4j, 7687), (None, neo4j, 7687),
                  (gs, neo4j, 7474), (None, neo4j, 7474), (None, jm, 8081), (gs, jm, 6123), (gs, tm, 6121),
                  (None, gs, 9090), (gs, w["node-agent"], 9400), (None, mapper, 8080), (gs, kafka, 9093),
                  (budgets, kafka, 9093), (None, budgets, 8080)]
        for src, dst, port in allowed:
            self.assertTrue(admitted(src, dst, port), f"{src} -> {dst}:{port} should be admitted")
        for src, dst, port in denied:
            self.assertFalse(admitted(src, dst, port), f"{src} -> {dst}:{port} should be refused")
        # The agents (host network) reach Kafka by node address only.
        blocks = [f["ipBlock"] for p in applied() if p["kind"] == "NetworkPolicy" and selects(p["spec"]["podSelector"], kafka)
                  for r in p["spec"].get("ingress", []) for f in r.get("from", []) if "ipBlock" in f]
        self.assertTrue(blocks and all(b["cidr"] != "0.0.0.0/0" for b in blocks), blocks)

    @each_variant
    def test_secrets_come_from_secrets_never_from_literals_or_arguments(self):
        pods = workloads()
        gs = pods["graph-service"][0]["containers"][0]
        self.assertEqual(value(gs, "WATTGRAPH_AUTH_ENABLED"), "true")
        self.assertEqual(secret_ref(gs, "WATTGRAPH_AUTH_READ_TOKENS"), ("graph-service-auth", "read-tokens"))
        self.assertEqual(secret_ref(gs, "WATTGRAPH_AUTH_ADMIN_TOKENS"), ("graph-service-auth", "admin-tokens"))
        self.assertEqual(secret_ref(gs, "WATTGRAPH_NEO4J_PASSWORD"), ("neo4j-auth", "NEO4J_PASSWORD"))
        loop = pods["graph-service-budgets"][0]["containers"][0]
        self.assertEqual(secret_ref(loop, "WATTGRAPH_AUTH_ADMIN_TOKENS"), ("graph-service-auth", "admin-tokens"))
        self.assertEqual(secret_ref(pods["neo4j"][0]["containers"][0], "NEO4J_AUTH"), ("neo4j-auth", "NEO4J_AUTH"))
        self.assertEqual(secret_ref(pods["flink-jobmanager"][0]["containers"][0], "NEO4J_PASSWORD"), ("neo4j-auth", "NEO4J_PASSWORD"))
        secret_name = re.compile(r"PASSWORD|TOKEN|NEO4J_AUTH$|SECRET")
        for name, (pod, _) in pods.items():
            for c in pod["containers"]:
                for e in c.get("env", []):
                    if secret_name.search(e["name"]):
                        self.assertIn("secretKeyRef", e.get("valueFrom", {}), f"{name}: {e['name']} is a literal")
                # A password flag's value may only be a $(VAR) of a Secret's (the Flink job takes
                # its Neo4j password only as an argument); tokens never appear.
                args = [str(a) for a in c.get("args", []) + c.get("command", [])]
                for prev, a in zip([""] + args, args):
                    self.assertNotRegex(a, r"(?i)token", f"{name}: a token on the command line")
                    given = a.split("=", 1)[1] if re.match(r"--\S*password=", a) else a if re.search(r"(?i)password$", prev) else None
                    if given is not None:
                        ref = re.fullmatch(r"\$\((\w+)\)", given)
                        self.assertTrue(ref and secret_ref(c, ref.group(1)), f"{name}: password {given!r} on the command line")

    def test_neo4j_loads_no_files_and_bounds_transaction_memory(self):
        pod, _ = workloads()["neo4j"]
        (c,) = pod["containers"]
        self.assertEqual(value(c, "NEO4J_dbms_security_allow__csv__import__from__file__urls"), "false")
        self.assertEqual(value(c, "NEO4J_server_directories_import"), "/import")
        self.assertEqual(value(c, "NEO4J_internal_dbms_cypher__ip__blocklist"), "0.0.0.0/0,::/0",
                         "LOAD CSV must reach no URL")
        mounts = [m for m in c["volumeMounts"] if m["mountPath"] == "/import"]
        self.assertEqual(len(mounts), 1, "no volume at /import")
        m = mounts[0]
        self.assertIs(m.get("readOnly"), True)
        (v,) = [v for v in pod["volumes"] if v["name"] == m["name"]]
        self.assertEqual(v, {"name": m["name"], "emptyDir": {}})
        for setting in ("NEO4J_db_memory_transaction_max", "NEO4J_dbms_memory_transaction_total_max"):
            self.assertRegex(value(c, setting) or "", r"^\d+[km]$", setting)


if __name__ == "__main__":
    unittest.main(verbosity=2)
