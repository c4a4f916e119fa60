#!/usr/bin/env python3
"""Loopback request/response flood for the load-shedding benchmark (127.0.0.1 only, bounded).

sink PORT                 accept forever (one process = one domain, one epoll loop); on each
                          connection answer every request: a request is an 8-byte header
                          (struct "!II": request length L incl. the header, response length R)
                          followed by L - 8 bytes; the answer is R bytes. Closes on EOF / reset.
gen PORT COUNT RATE NAME [SECONDS [REQ_BYTES RESP_BYTES [REQS_PER_CONN]]]
                          open at most COUNT connections to 127.0.0.1:PORT at about RATE per
                          second (0 = as fast as possible), stopping early after SECONDS (> 0);
                          on each make REQS_PER_CONN (default 1) request/response transactions:
                          send one REQ_BYTES (>= 8) request (one send), read the full
                          RESP_BYTES response; then close with a reset (SO_LINGER 0: no
                          TIME_WAIT). Without REQ_BYTES (or 0): send 1 byte and close, no
                          response (the connection-only flood of footprint.sh, shed_cost.sh).
                          Sets its process name (comm) to NAME. Prints one line at the end:
                          NAME PID CONNS REQS REQ_BYTES RESP_BYTES P50_NS P90_NS P99_NS FAILED
                          CONNS: connections that sent their first request; REQS: transactions
                          whose full response arrived; REQ_BYTES / RESP_BYTES: request bytes
                          sent / response bytes received (all, failed transactions included);
                          Pxx_NS: nearest-rank percentiles of the round trips of the REQS
                          transactions, each time.perf_counter_ns() from just before the send to
                          the receipt of the response's last byte; FAILED: connections cut short.
"""
import ctypes, math, os, selectors, socket, struct, sys, time

HDR = struct.Struct("!II")
LINGER0 = struct.pack("ii", 1, 0)


def set_comm(name):
    try:
        libc = ctypes.CDLL(None)
        libc.prctl(15, name.encode()[:15], 0, 0, 0)  # PR_SET_NAME
    except Exception:
        pass


def sink(port):
    set_comm("wg-sink")
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(4096)
    ls.setblocking(False)
    sel = selectors.DefaultSelector()
    sel.register(ls, selectors.EVENT_READ, None)
    state = {}  # socket -> [in buffer, out buffer]

    def close(c):
        sel.unregister(c)
        state.pop(c, None)
        c.close()

    def flush(c, st):
        while st[1]:
            try:
                n = c.send(st[1])
            except BlockingIOError:
                break
            except OSError:
                close(c)
                return
            del st[1][:n]
        sel.modify(c, selectors.EVENT_READ | (selectors.EVENT_WRITE if st[1] else 0), None)

    while True:
        for key, ev in sel.select():
            s = key.fileobj
            if s is ls:
                while True:
                    try:
                        c, _ = ls.accept()
                    except (BlockingIOError, InterruptedError):
                        break
                    except OSError:
                        break
                    c.setblocking(False)
                    state[c] = [bytearray(), bytearray()]
                    sel.register(c, selectors.EVENT_READ, None)
                continue
            st = state.get(s)
            if st is None:
                continue
            if ev & selectors.EVENT_READ:
                try:
                    d = s.recv(65536)
                except BlockingIOError:
                    d = None
                except OSError:
                    d = b""
                if d == b"":
                    close(s)
                    continue
                if d:
                    buf = st[0]
                    buf += d
                    answered = False
                    while len(buf) >= HDR.size:
                        req_len, resp_len = HDR.unpack_from(buf)
                        if len(buf) < req_len:
                            break
                        del buf[:max(req_len, HDR.size)]
                        st[1] += b"r" * resp_len
                        answered = True
                    if answered:
                        flush(s, st)
                        continue
            if ev & selectors.EVENT_WRITE and s in state:
                flush(s, st)


def percentile(sorted_vals, q):
    """Nearest rank: the smallest value whose rank reaches ceil(q * n)."""
    if not sorted_vals:
        return 0
    rank = min(max(math.ceil(q * len(sorted_vals)), 1), len(sorted_vals))
    return sorted_vals[rank - 1]


def gen(port, count, rate, name, seconds, req_bytes, resp_bytes, reqs_per_conn):
    set_comm(name)
    if req_bytes <= 0:  # connection-only flood: 1 byte, no response, no transaction
        request, resp_bytes, reqs_per_conn = b"x", 0, 1
    else:
        req_bytes = max(req_bytes, HDR.size)
        request = HDR.pack(req_bytes, resp_bytes) + b"q" * (req_bytes - HDR.size)
    flood_only = len(request) == 1
    conns = reqs = sent = got = failed = 0
    rtts = []
    perf = time.perf_counter_ns
    t0 = time.monotonic()
    end = t0 + seconds if seconds > 0 else float("inf")
    for i in range(count):
        if time.monotonic() >= end:
            break
        if rate > 0:
            due = t0 + i / rate
            d = due - time.monotonic()
            if d > 0:
                time.sleep(d)
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, LINGER0)
        s.settimeout(5.0)  # bounded: a stuck transaction fails the connection, not the run
        try:
            s.connect(("127.0.0.1", port))
            for k in range(reqs_per_conn):
                start = perf()
                n = s.send(request)
                sent += n
                if k == 0:
                    conns += 1
                if n != len(request):
                    raise OSError("short send")
                left = resp_bytes
                while left > 0:
                    d = s.recv(left if left < 65536 else 65536)
                    if not d:
                        raise OSError("closed by the sink")
                    left -= len(d)
                    got += len(d)
                if not flood_only:
                    rtts.append(perf() - start)
                    reqs += 1
        except OSError:
            failed += 1
        s.close()
    rtts.sort()
    # One write(2) per line: the generators append to one file at once, and print() may split a
    # line into several writes that interleave with another generator's.
    fields = (name, os.getpid(), conns, reqs, sent, got,
              percentile(rtts, 0.50), percentile(rtts, 0.90), percentile(rtts, 0.99), failed)
    os.write(1, (" ".join(str(f) for f in fields) + "\n").encode())


if __name__ == "__main__":
    if sys.argv[1] == "sink":
        sink(int(sys.argv[2]))
    else:
        a = sys.argv
        gen(int(a[2]), int(a[3]), float(a[4]), a[5],
            float(a[6]) if len(a) > 6 else 0.0,
            int(a[7]) if len(a) > 7 else 0, int(a[8]) if len(a) > 8 else 0,
            int(a[9]) if len(a) > 9 else 1)
