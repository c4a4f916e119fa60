"""The test cluster from Python: env.sh's values and its kubectl (for tests/test_cluster.py and usage.py)."""
import json
import pathlib
import subprocess

HERE = pathlib.Path(__file__).resolve().parent


def env_value(name):
    return subprocess.run(["bash", "-c", f". {HERE}/env.sh && printf %s \"${name}\""], check=True,
                          capture_output=True, text=True).stdout


K8S_BIN = env_value("K8S_BIN")
KUBECONFIG = env_value("KUBECONFIG_ADMIN")
NODE = env_value("K8S_NODE")
NODE2 = env_value("K8S_NODE2")
NODES = (NODE, NODE2)


def run(*cmd, input=None, check=True):
    r = subprocess.run([str(c) for c in cmd], input=input, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, cmd))} failed ({r.returncode}):\n{r.stdout[-3000:]}{r.stderr[-3000:]}")
    return r.stdout


def kubectl(*args, input=None, check=True):
    return run(f"{K8S_BIN}/kubectl", "--kubeconfig", KUBECONFIG, *args, input=input, check=check)


def kget(*args):
    return json.loads(kubectl("get", "-o", "json", *args))
