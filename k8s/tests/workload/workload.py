"""The cluster test's workload: an HTTP/1.1 server and a client that counts exactly what it exchanged.

  workload.py server                 answer every request after DELAY_MS with BODY_BYTES of body and the
                                     pod's name in X-Backend; ready file /tmp/ready once listening
  workload.py client                 keep-alive connections to the ClusterIP Service (SERVICE_HOST:80),
                                     then to every address of the headless Service (HEADLESS_HOST:8080);
                                     prints the tally, then idles until stopped
  workload.py short                  SHORT_CONNECTIONS connections of one request each to the ClusterIP
                                     Service; prints the tally, exits after LINGER_S
  workload.py burn                   idles across a WINDOW_MS boundary, then BURN_MS of CPU every
                                     PERIOD_MS for BURN_S seconds, idles across another; prints the two
                                     boundaries and the CPU time the kernel counted between (BURNED),
                                     then idles until stopped

The tally (one JSON line starting with "TALLY ") is the ground truth the test compares the graph with:
per backend pod (from X-Backend), connections, requests, bytes sent and bytes received, counted on the
socket. Nothing here retries: a failed connection ends the process with an error, so the tally is never
short of what went over the wire.
"""
import json
import os
import signal
import socket
import sys
import threading
import time

POD = os.environ.get("POD_NAME", socket.gethostname())
PORT = 8080


def env_int(name, default):
    return int(os.environ.get(name, default))


# ---------------------------------------------------------------- server
def serve_connection(conn, delay, body):
    with conn:
        buf = b""
        while True:
            while b"\r\n\r\n" not in buf:
                data = conn.recv(65536)
                if not data:
                    return
                buf += data
            _, buf = buf.split(b"\r\n\r\n", 1)
            time.sleep(delay)
            head = (f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n"
                    f"X-Backend: {POD}\r\n\r\n").encode()
            conn.sendall(head + body)


def server():
    delay = env_int("DELAY_MS", 5) / 1000.0
    body = b"w" * env_int("BODY_BYTES", 4096)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("0.0.0.0", PORT))
    listener.listen(128)
    open("/tmp/ready", "w").close()
    print(f"serving on :{PORT} as {POD}", flush=True)
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=serve_connection, args=(conn, delay, body), daemon=True).start()


# ---------------------------------------------------------------- client
class Tally:
    def __init__(self):
        self.backends = {}

    def add(self, backend, connections, requests, sent, received):
        b = self.backends.setdefault(backend, {"connections": 0, "requests": 0, "sent": 0, "received": 0})
        b["connections"] += connections
        b["requests"] += requests
        b["sent"] += sent
        b["received"] += received

    def print(self, **extra):
        print("TALLY " + json.dumps({"pod": POD, "backends": self.backends, **extra}, sort_keys=True), flush=True)


def read_response(sock, buf):
    """One response: returns (backend, bytes read for it, what is left in buf)."""
    received = 0
    while b"\r\n\r\n" not in buf:
        data = sock.recv(65536)
        if not data:
            raise ConnectionError("server closed the connection before a whole response")
        received += len(data)
        buf += data
    head, rest = buf.split(b"\r\n\r\n", 1)
    fields = dict(line.split(": ", 1) for line in head.decode().split("\r\n")[1:])
    length = int(fields["Content-Length"])
    while len(rest) < length:
        data = sock.recv(65536)
        if not data:
            raise ConnectionError("server closed the connection within a body")
        received += len(data)
        rest += data
    return fields["X-Backend"], received, rest[length:]


def exchange(tally, address, requests, path):
    """One connection with `requests` requests, counted under the backend that answered."""
    sent = received = 0
    backend = None
    with socket.create_connection(address, timeout=30) as sock:
        buf = b""
        for i in range(requests):
            req = f"GET {path}/{i} HTTP/1.1\r\nHost: {address[0]}\r\nUser-Agent: wattgraph-e2e\r\n\r\n".encode()
            sock.sendall(req)
            sent += len(req)
            b, n, buf = read_response(sock, buf)
            if backend not in (None, b):
                raise RuntimeError(f"one connection answered by {backend} and {b}")
            backend = b
            received += n
        if buf:
            raise RuntimeError(f"{len(buf)} bytes after the last response")
    tally.add(backend, 1, requests, sent, received)


def client():
    tally = Tally()
    service = os.environ["SERVICE_HOST"]
    headless = os.environ["HEADLESS_HOST"]
    requests = env_int("REQUESTS_PER_CONNECTION", 12)
    for _ in range(env_int("SERVICE_CONNECTIONS", 6)):
        exchange(tally, (service, 80), requests, "/items")
    addresses = sorted({a[4][0] for a in socket.getaddrinfo(headless, PORT, socket.AF_INET, socket.SOCK_STREAM)})
    for ip in addresses:
        for _ in range(env_int("HEADLESS_CONNECTIONS", 2)):
            exchange(tally, (ip, PORT), requests, "/direct")
    tally.print(headless=addresses)
    # Stay: a Deployment's pod that exits is restarted, and its next run would add traffic.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        time.sleep(3600)


def short():
    tally = Tally()
    service = os.environ["SERVICE_HOST"]
    pace = env_int("PACE_MS", 0) / 1000
    for _ in range(env_int("SHORT_CONNECTIONS", 20)):
        exchange(tally, (service, 80), 1, "/short")
        time.sleep(pace)
    tally.print()
    # Alive past the agent's next sampling interval: a container gone within the interval it worked in
    # has its CPU counted under the host and no pod name in the graph (k8s/README.md, limits).
    time.sleep(env_int("LINGER_S", 0))


def schedstat_ns():
    """The kernel's CPU time of this process (its threads' scheduler runtime, ns)."""
    return sum(int(open(f"/proc/self/task/{t}/schedstat").read().split()[0]) for t in os.listdir("/proc/self/task"))


def burn():
    # The kernel's count is read twice while idle, 3 s before a window boundary (the agent reports
    # every second): the windows between the two boundaries hold exactly what ran between the reads.
    # Start-up, the last waking and the print fall in other windows. Both reads end the same way,
    # into a sleep, so what one read leaves out of its side the other leaves out of its own.
    window = env_int("WINDOW_MS", 10000) / 1000

    def idle_until_before_boundary():
        now = time.time()
        boundary = (int((now + 3) / window) + 1) * window
        time.sleep(boundary - 3 - now)
        return int(boundary)

    start = idle_until_before_boundary()
    before = schedstat_ns()
    time.sleep(6)
    busy = env_int("BURN_MS", 20) / 1000
    period = env_int("PERIOD_MS", 100) / 1000
    end = time.monotonic() + env_int("BURN_S", 100)
    while time.monotonic() < end:
        until = time.monotonic() + busy
        while time.monotonic() < until:
            pass
        time.sleep(period - busy)
    stop = idle_until_before_boundary()
    cpu = schedstat_ns() - before
    time.sleep(6)
    print("BURNED " + json.dumps({"pod": POD, "fromNs": start * 1_000_000_000, "toNs": stop * 1_000_000_000,
                                  "cpuNs": cpu}), flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    {"server": server, "client": client, "short": short, "burn": burn}[sys.argv[1]]()
