"""CPU and memory of every container on the test cluster's nodes, from the kubelets' summary API
(/stats/summary through the API server: no metrics-server needed).

  usage.py [SECONDS]   two readings SECONDS apart (default 60); prints, per container, the mean
                       cores between them and the memory working set (at the second reading)
tests/test_cluster.py logs the same table for the span of its workloads and checks.
"""
import json
import sys
import time

from kube import NODES, kubectl


def reading():
    """(namespace, pod, container) -> (cumulative CPU ns, working set bytes, monotonic time), every node's."""
    out = {}
    for node in NODES:
        summary = json.loads(kubectl("get", "--raw", f"/api/v1/nodes/{node}/proxy/stats/summary"))
        now = time.monotonic()
        for p in summary.get("pods", []):
            ref = p["podRef"]
            for c in p.get("containers", []):
                out[(ref["namespace"], ref["name"], c["name"])] = (
                    c.get("cpu", {}).get("usageCoreNanoSeconds", 0), c.get("memory", {}).get("workingSetBytes", 0), now)
    return out


def table(before, after):
    """Markdown rows of the containers in both readings, highest CPU first."""
    rows = []
    for key, (cpu1, mem, t1) in after.items():
        if key in before:
            cpu0, _, t0 = before[key]
            rows.append((max(cpu1 - cpu0, 0) / 1e9 / max(t1 - t0, 1e-9), mem, key))
    rows.sort(key=lambda r: -r[0])
    lines = ["| namespace | pod | container | CPU (mean cores) | memory (working set, MiB) |",
             "|---|---|---|---|---|"]
    lines += [f"| {ns} | {pod} | {c} | {cores:.3f} | {mem / 2**20:.0f} |" for cores, mem, (ns, pod, c) in rows]
    return "\n".join(lines)


if __name__ == "__main__":
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60
    first = reading()
    time.sleep(seconds)
    print(f"over {seconds:.0f} s on nodes {', '.join(NODES)}:")
    print(table(first, reading()))
