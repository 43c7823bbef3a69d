"""Opens PER connections from each of NADDR loopback addresses (127.0.0.2
and up) to PORT, sends a request line, then one header line every INTERVAL
seconds on each, never finishing the headers. Writes READY_FILE once every
connection has sent its request line, and READY_FILE.rounds with the
number of header rounds sent; runs until killed or SECONDS pass."""
import socket, sys, time

port, per, naddr, interval, seconds, ready_file = (
    int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]),
    float(sys.argv[5]), sys.argv[6])
socks = []
for a in range(naddr):
    for _ in range(per):
        s = socket.socket()
        s.bind(("127.0.0.%d" % (a + 2), 0))
        s.settimeout(2)
        try:
            s.connect(("127.0.0.1", port))
            s.send(b"GET /health HTTP/1.1\r\n")
        except OSError:
            pass  # refused by the host's limits: still an attempt
        socks.append(s)
open(ready_file, "w").write("%d\n" % len(socks))
start, k = time.time(), 0
while time.time() - start < seconds:
    time.sleep(interval)
    for s in socks:
        try:
            s.send(b"X-Trickle-%d: y\r\n" % k)
        except OSError:
            pass
    k += 1
    open(ready_file + ".rounds", "w").write("%d\n" % k)
