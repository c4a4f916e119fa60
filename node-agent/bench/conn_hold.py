#!/usr/bin/env python3
"""Hold many loopback TCP connections open, for the agent footprint benchmark.

conn_hold.py BASE_PORT PORTS COUNT READY_FILE RELEASE_FILE
  listens on 127.0.0.1:BASE_PORT..BASE_PORT+PORTS-1, opens COUNT connections to them (both ends in
  this process, so 2*COUNT sockets: run several processes where the file limit is lower), does one 64-byte request/response on each (so every socket
  has bytes and a transaction), writes READY_FILE with the count established, waits until
  RELEASE_FILE exists (at most 600 s), closes everything and exits.
"""
import os, resource, socket, sys, time


def main():
    base, nports, count = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    ready, release = sys.argv[4], sys.argv[5]
    want = 2 * count + nports + 64
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and want > hard:
        sys.exit(f"{count} connections need {want} files; the hard limit is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    listeners = []
    for p in range(base, base + nports):
        ls = socket.socket()
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("127.0.0.1", p))
        ls.listen(65535)
        ls.setblocking(False)
        listeners.append(ls)
    clients, servers = [], []
    req = b"q" * 64

    def accept_all():
        for ls in listeners:
            while True:
                try:
                    s, _ = ls.accept()
                except BlockingIOError:
                    break
                servers.append(s)

    deadline = time.monotonic() + 300
    for i in range(count):
        if time.monotonic() > deadline:
            break
        c = socket.socket()
        try:
            c.connect(("127.0.0.1", base + i % nports))
        except OSError as e:
            print(f"connect {i} failed: {e}", file=sys.stderr)
            c.close()
            break
        clients.append(c)
        if i % 256 == 255:
            accept_all()
    while len(servers) < len(clients) and time.monotonic() < deadline:
        accept_all()
        time.sleep(0.01)
    for c in clients:
        c.sendall(req)
    for s in servers:
        s.setblocking(True)
        got = 0
        while got < len(req):
            got += len(s.recv(len(req) - got))
        s.sendall(req)
    for c in clients:
        got = 0
        while got < len(req):
            got += len(c.recv(len(req) - got))
    with open(ready, "w") as f:
        f.write(f"{len(clients)}\n")
    end = time.monotonic() + 600
    while not os.path.exists(release) and time.monotonic() < end:
        time.sleep(0.2)
    for s in clients + servers + listeners:
        s.close()


if __name__ == "__main__":
    main()
