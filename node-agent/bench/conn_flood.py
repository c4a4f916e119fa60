#!/usr/bin/env python3
"""Loopback connection flood for the load-shedding benchmark.

sink PORT                 accept forever; read until EOF, close (one process = one domain)
gen PORT COUNT RATE NAME [SECONDS]
                          open COUNT short connections to 127.0.0.1:PORT at about RATE per
                          second (0 = as fast as possible), each sends 1 byte then closes;
                          stops early after SECONDS if given;
                          sets its process name (comm) to NAME; prints "NAME PID OK" at the end,
                          OK = connections that completed (the exact count for MAPE).
"""
import ctypes, os, socket, sys, time


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
    while True:
        c, _ = ls.accept()
        try:
            while c.recv(4096):
                pass
        except OSError:
            pass
        c.close()


def gen(port, count, rate, name, seconds):
    set_comm(name)
    ok = 0
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
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        try:
            s.connect(("127.0.0.1", port))
            s.send(b"x")
            ok += 1
        except OSError:
            pass
        s.close()
    print(name, os.getpid(), ok, flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "sink":
        sink(int(sys.argv[2]))
    else:
        gen(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5],
            float(sys.argv[6]) if len(sys.argv) > 6 else 0.0)
