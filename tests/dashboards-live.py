#!/usr/bin/env python3
"""The pipeline-health dashboard against the running stack of `bin/wattgraph run`.

Starts Debian's Prometheus (on loopback, scraping every second) on the agent's, the Flink job's and the
graph service's metrics, waits until every target is up and scraped a few times, then runs each query of
k8s/monitoring/dashboards/wattgraph-pipeline-health.json through Prometheus' HTTP API: each must return
data. graph-service's PrometheusMonitoringTest checks every dashboard against the service alone; this
is where the agent's and the job's panels meet real agents and a real job.

usage: dashboards-live.py WORK_DIR AGENT_URL JOB_URL SERVICE_URL   (URLs of their /metrics pages)
"""
import json
import pathlib
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent
DASHBOARD = ROOT / "k8s/monitoring/dashboards/wattgraph-pipeline-health.json"
PROMETHEUS = "/usr/bin/prometheus"
WAIT_S = 90
SCRAPES = 5


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def queries(dashboard):
    """(panel title, expr) of every panel, rows' nested panels included."""
    out = []

    def walk(panels):
        for p in panels:
            walk(p.get("panels", []))
            for t in p.get("targets", []):
                if t.get("expr"):
                    out.append((p.get("title", "?"), t["expr"]))

    walk(json.loads(dashboard.read_text())["panels"])
    return out


def get(api, path, **params):
    url = f"{api}{path}?{urllib.parse.urlencode(params)}"
    with urllib.request.urlopen(url, timeout=10) as r:
        body = json.load(r)
    if body.get("status") != "success":
        raise RuntimeError(f"{path} {params}: {body}")
    return body["data"]


def main(work, agent, job, service):
    work = pathlib.Path(work)
    work.mkdir(parents=True, exist_ok=True)
    targets = {"agent": agent, "job": job, "service": service}
    jobs = []
    for name, url in targets.items():
        u = urllib.parse.urlsplit(url)
        jobs.append(f"  - job_name: {name}\n    metrics_path: {u.path}\n    static_configs:\n"
                    f"      - targets: ['{u.netloc}']\n")
    config = work / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n" + "".join(jobs))
    port = free_port()
    api = f"http://127.0.0.1:{port}"
    log = open(work / "prometheus.log", "w")
    prometheus = subprocess.Popen(
        [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={work / 'data'}",
         f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + WAIT_S
        while True:
            try:
                up = get(api, "/api/v1/query", query="count_over_time(up[5m]) and up == 1")
                scraped = {r["metric"]["job"]: int(r["value"][1]) for r in up["result"]}
                if len(scraped) == len(targets) and min(scraped.values()) >= SCRAPES:
                    break
            except OSError:
                scraped = {}
            if prometheus.poll() is not None or time.monotonic() > deadline:
                sys.exit(f"dashboards-live: FAIL: targets not all up and scraped {SCRAPES} times within "
                         f"{WAIT_S} s: {scraped} (log: {work / 'prometheus.log'})")
            time.sleep(1)
        # The service's series follow its export refresh (15 s) and the first windows: ask until each has data.
        deadline = time.monotonic() + WAIT_S
        while True:
            empty = []
            checked = 0
            for title, expr in queries(DASHBOARD):
                q = expr.replace("$__rate_interval", "1m").replace("$__range", "5m")
                if "$" in q:
                    sys.exit(f"dashboards-live: FAIL: unknown variable in {title!r}: {expr}")
                checked += 1
                if not get(api, "/api/v1/query", query=q)["result"]:
                    empty.append(f"{title}: {expr}")
            if not empty or time.monotonic() > deadline:
                break
            time.sleep(2)
        if empty:
            sys.exit("dashboards-live: FAIL: panels without data on the running stack:\n  " + "\n  ".join(empty))
        print(f"dashboards-live: all {checked} queries of {DASHBOARD.name} return data from the running agent, "
              f"job and service")
    finally:
        prometheus.terminate()
        try:
            prometheus.wait(timeout=30)
        except subprocess.TimeoutExpired:
            prometheus.kill()
        log.close()


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    main(*sys.argv[1:])
