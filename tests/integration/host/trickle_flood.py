"""Opens PER connections from each of NADDR loopback addresses (127.0.0.2
and up) to PORT, sends a request line, then one header line every INTERVAL
seconds on each, never finishing the headers. Writes READY_FILE once every
connection has sent its request line, READY_FILE.rounds with the number of
header rounds sent, and READY_FILE.closed with how many connections the
host has closed; runs until killed or SECONDS pass. With a 7th argument
"tls", each connection speaks TLS (the certificate is not checked)."""
import select, socket, ssl, sys, time

port, per, naddr, interval, seconds, ready_file = (
    int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]),
    float(sys.argv[5]), sys.argv[6])
tls = len(sys.argv) > 7 and sys.argv[7] == "tls"
context = None
if tls:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
socks, closed = [], set()
for a in range(naddr):
    for _ in range(per):
        s = socket.socket()
        s.bind(("127.0.0.%d" % (a + 2), 0))
        s.settimeout(2)
        try:
            s.connect(("127.0.0.1", port))
            if context:
                s = context.wrap_socket(s)
            s.send(b"GET /health HTTP/1.1\r\n")
        except OSError:
            pass  # refused by the host's limits: still an attempt
        socks.append(s)
open(ready_file, "w").write("%d\n" % len(socks))


def note_closed():
    """Connections the host closed: readable, and at their end (or reset)."""
    for s in socks:
        if s in closed or s.fileno() < 0:
            continue
        poller = select.poll()  # select() stops at descriptor 1024
        poller.register(s, select.POLLIN | select.POLLHUP | select.POLLERR)
        if not poller.poll(0):
            continue
        try:
            s.settimeout(0.2)
            if s.recv(1) == b"":
                closed.add(s)
        except (ssl.SSLWantReadError, socket.timeout):
            pass
        except OSError:
            closed.add(s)
    open(ready_file + ".closed", "w").write("%d\n" % len(closed))


start, k = time.time(), 0
while time.time() - start < seconds:
    time.sleep(interval)
    for s in socks:
        if s in closed:
            continue
        try:
            s.send(b"X-Trickle-%d: y\r\n" % k)
        except OSError:
            pass
    k += 1
    open(ready_file + ".rounds", "w").write("%d\n" % k)
    note_closed()
