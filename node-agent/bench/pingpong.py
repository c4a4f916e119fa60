import socket, sys, threading, time
# keep-alive request/response over loopback: N exchanges on C connections
fam = socket.AF_INET6 if len(sys.argv) > 3 and sys.argv[3] == '6' else socket.AF_INET
host = '::1' if fam == socket.AF_INET6 else '127.0.0.1'
secs = float(sys.argv[1]); conns = int(sys.argv[2])
srv = socket.socket(fam); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind((host, 0)); srv.listen(64); port = srv.getsockname()[1]
def serve(c):
    while True:
        d = c.recv(4096)
        if not d: break
        c.sendall(b'x' * 200)
    c.close()
def acceptor():
    while True:
        c, _ = srv.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
threading.Thread(target=acceptor, daemon=True).start()
n = [0]
def client():
    s = socket.create_connection((host, port)); end = time.time() + secs
    while time.time() < end:
        s.sendall(b'GET / HTTP/1.1\r\n\r\n'); s.recv(4096); n[0] += 1
    s.close()
ts = [threading.Thread(target=client) for _ in range(conns)]
[t.start() for t in ts]; [t.join() for t in ts]
print("exchanges", n[0])
