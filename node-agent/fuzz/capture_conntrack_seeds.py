#!/usr/bin/env python3
"""Captures real ctnetlink datagrams as fuzz seeds (seeds/conntrack/): run as root by
capture-seeds.sh inside a network namespace it made, where one IPv4 and one IPv6 loopback
connection pass a DNAT rule and one UDP datagram passes untranslated. Saves the NEW/DESTROY
event datagrams (the table is flushed at the end), the dump answer, an error answer and an
acknowledgement, exactly as recv() returned them."""
import os
import socket
import struct
import sys
import time

NETLINK_NETFILTER = 12
NFNL_SUBSYS_CTNETLINK = 1
IPCTNL_MSG_CT_GET = 1
NLM_F_REQUEST, NLM_F_ACK, NLM_F_DUMP = 0x1, 0x4, 0x300

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
events = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
events.bind((0, (1 << 0) | (1 << 2)))  # NFNLGRP_CONNTRACK_NEW, NFNLGRP_CONNTRACK_DESTROY
saved = 0


def save(name, data):
    global saved
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
    saved += 1


def tcp(listen, dial):
    fam = socket.AF_INET6 if ":" in listen[0] else socket.AF_INET
    srv = socket.socket(fam, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(listen)
    srv.listen(1)
    c = socket.create_connection(dial, timeout=5)
    s, _ = srv.accept()
    c.sendall(b"GET / HTTP/1.1\r\n\r\n")
    s.recv(64)
    for x in (c, s, srv):
        x.close()


tcp(("127.0.0.1", 8080), ("127.0.0.2", 80))
tcp(("::1", 8081), ("::1", 81))
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.sendto(b"x", ("127.0.0.1", 9999))
u.close()

dump = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
dump.bind((0, 0))
for seq, flags, name in [(1, NLM_F_REQUEST | NLM_F_DUMP, "dump"), (2, NLM_F_REQUEST | NLM_F_ACK, "error")]:
    # nlmsghdr + nfgenmsg (AF_UNSPEC, version 0, res_id 0); a GET without a tuple is refused.
    req = struct.pack("=IHHII", 20, (NFNL_SUBSYS_CTNETLINK << 8) | IPCTNL_MSG_CT_GET, flags, seq, 0) + b"\0" * 4
    dump.send(req)
    for i in range(8):
        data = dump.recv(65536)
        save(f"{name}-{i}", data)
        ty = struct.unpack_from("=H", data, 4)[0]
        if ty in (2, 3):  # NLMSG_ERROR, NLMSG_DONE
            break

# Flush the table (a DELETE without a tuple): each entry's DESTROY event follows.
IPCTNL_MSG_CT_DELETE = 2
dump.send(struct.pack("=IHHII", 20, (NFNL_SUBSYS_CTNETLINK << 8) | IPCTNL_MSG_CT_DELETE, NLM_F_REQUEST | NLM_F_ACK, 3, 0) + b"\0" * 4)
save("ack-0", dump.recv(65536))
time.sleep(0.2)
events.setblocking(False)
i = 0
while True:
    try:
        data = events.recv(65536)
    except BlockingIOError:
        break
    save(f"event-{i}", data)
    i += 1
print(f"saved {saved} datagrams ({i} event datagrams) into {out}")
