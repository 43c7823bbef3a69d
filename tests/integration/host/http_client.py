#!/usr/bin/python3
"""A small HTTP client for the front door's tests and benchmark: pushes
large bodies, holds idle sockets from another loopback address, times
health, holds uploads open. Only the standard library: it must run where
Debian's python3 does."""
import argparse
import base64
import json
import os
import resource
import select
import socket
import sys
import threading
import time

CHUNK = 1 << 20
BOUNDARY = "loomboundary7d3a"


def connect(host, port, src=None, timeout=10.0):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    if src:
        s.bind((src, 0))
    s.connect((host, port))
    return s


def read_reply(s):
    """Status and body of one reply on s (Content-Length framed)."""
    data = b""
    while b"\r\n\r\n" not in data:
        got = s.recv(65536)
        if not got:
            break
        data += got
    if not data:
        return 0, b""
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    length = 0
    for line in lines[1:]:
        k, _, v = line.partition(":")
        if k.strip().lower() == "content-length":
            length = int(v.strip())
    while len(body) < length:
        got = s.recv(65536)
        if not got:
            break
        body += got
    return status, body


def request(host, port, method, path, token=None, body=b"", ctype=None, src=None,
            timeout=10.0):
    s = connect(host, port, src, timeout)
    try:
        head = "%s %s HTTP/1.1\r\nHost: %s:%d\r\nConnection: close\r\n" % (method, path, host, port)
        if token:
            head += "Authorization: Bearer %s\r\n" % token
        if ctype:
            head += "Content-Type: %s\r\n" % ctype
        head += "Content-Length: %d\r\n\r\n" % len(body)
        s.sendall(head.encode() + body)
        return read_reply(s)
    finally:
        s.close()


def multipart_head(args, size):
    """The start of a multipart body with an 'args' part and a 'file' part
    of `size` bytes, and its end; the file's bytes go between."""
    pre = ("--%s\r\nContent-Disposition: form-data; name=\"args\"\r\n\r\n%s\r\n"
           "--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"m.tar\"\r\n"
           "Content-Type: application/octet-stream\r\n\r\n" % (BOUNDARY, args, BOUNDARY)).encode()
    post = ("\r\n--%s--\r\n" % BOUNDARY).encode()
    return pre, post


def push(host, port, path, size, token=None, args="--exec-start command --model-main x",
         src=None, rate=0.0, expect_continue=False):
    """Sends a multipart upload with a file part of `size` bytes, streamed
    (never held here), until the host answers or closes; at `rate` bytes per
    second (0: as fast as it goes). With `expect_continue` the body waits for
    the host's "100 Continue", so a refusal from the headers is read before
    any body byte is sent (a host closing on unread bytes resets the
    connection, which can drop its reply). Returns (status, bytes sent,
    seconds, body)."""
    pre, post = multipart_head(args, size)
    t0 = time.monotonic()
    s = connect(host, port, src, timeout=60)
    head = ("POST %s HTTP/1.1\r\nHost: %s:%d\r\nConnection: close\r\n"
            "Content-Type: multipart/form-data; boundary=%s\r\nContent-Length: %d\r\n"
            % (path, host, port, BOUNDARY, len(pre) + size + len(post)))
    if token:
        head += "Authorization: Bearer %s\r\n" % token
    if expect_continue:
        head += "Expect: 100-continue\r\n"
    sent = 0
    zeros = b"\0" * CHUNK
    try:
        if expect_continue:
            s.sendall(head.encode() + b"\r\n")
            status, body = read_reply(s)
            if status != 100:
                s.close()
                return status, 0, time.monotonic() - t0, body
            s.sendall(pre)
        else:
            s.sendall(head.encode() + b"\r\n" + pre)
        s.setblocking(False)
        left = size
        poller = select.poll()
        poller.register(s, select.POLLIN | select.POLLOUT)
        while left > 0:
            events = dict(poller.poll(5000)).get(s.fileno(), 0)
            if events & (select.POLLIN | select.POLLHUP | select.POLLERR):
                break  # the host answered (a refusal from the headers) or closed
            if not events & select.POLLOUT:
                continue
            try:
                n = s.send(zeros[:min(left, CHUNK)])
            except (BrokenPipeError, ConnectionResetError):
                break
            left -= n
            sent += n
            if rate:
                time.sleep(n / rate)
        if left == 0:
            s.setblocking(True)
            s.sendall(post)
        s.setblocking(True)
        s.settimeout(60)
        status, body = read_reply(s)
    except (BrokenPipeError, ConnectionResetError, socket.timeout):
        status, body = 0, b""
    finally:
        s.close()
    return status, sent, time.monotonic() - t0, body


def hold_idle(host, port, src, count):
    """Opens `count` sockets from `src` that send half a request's headers
    and then nothing. Returns the open sockets (some may have been closed by
    the host already)."""
    held = []
    for _ in range(count):
        try:
            s = connect(host, port, src, timeout=2)
            s.sendall(b"GET /loom/v1/health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            held.append(s)
        except OSError:
            pass
    return held


def time_health(host, port, src, count, token=None, pause=0.02):
    """Latencies in ms of `count` health requests (None for a failure)."""
    out = []
    for _ in range(count):
        t0 = time.monotonic()
        try:
            status, _ = request(host, port, "GET", "/loom/v1/health", token, src=src, timeout=5)
            out.append((time.monotonic() - t0) * 1000 if status == 200 else None)
        except OSError:
            out.append(None)
        time.sleep(pause)
    return out


def percentile(values, p):
    v = sorted(values)
    if not v:
        return float("nan")
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))]


def vm_kib(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def main():
    # Many sockets: up to the hard limit, whatever the soft one is.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("push")
    p.add_argument("--path", default="/platform/rest/deeplearning/v1/execs")
    p.add_argument("--size", type=int, required=True)
    p.add_argument("--token")
    p.add_argument("--parallel", type=int, default=1)
    p.add_argument("--args", default="--exec-start command --model-main x")
    p.add_argument("--expect-continue", action="store_true",
                   help="send the body only after the host's 100 Continue")
    p = sub.add_parser("idle")
    p.add_argument("--token")
    p.add_argument("--src", action="append", help="a loopback address to open them from "
                   "(repeat: --count from each)")
    p.add_argument("--count", type=int, default=1000)
    p.add_argument("--probes", type=int, default=20)
    p.add_argument("--logon", help="USER:PASSWORD: also log on this many times / 4")
    p = sub.add_parser("health")
    p.add_argument("--token")
    p.add_argument("--count", type=int, default=20)
    p = sub.add_parser("hold-uploads")
    p.add_argument("--token", action="append", required=True)
    p.add_argument("--seconds", type=float, default=5, help="at most this long")
    p.add_argument("--until", help="a file: stop holding once it exists")
    a = ap.parse_args()
    hostport = a.url.split("://", 1)[1].rstrip("/")
    host, port = hostport.rsplit(":", 1)
    port = int(port)

    if a.cmd == "push":
        results = [None] * a.parallel

        def one(i):
            results[i] = push(host, port, a.path, a.size, a.token, a.args,
                              expect_continue=a.expect_continue)
        ts = [threading.Thread(target=one, args=(i,)) for i in range(a.parallel)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        for status, sent, secs, body in results:
            print("%d %d %.2f %s" % (status, sent, secs, body.decode("utf-8", "replace")))
    elif a.cmd == "idle":
        held = []
        for src in a.src or ["127.0.0.2"]:
            held += hold_idle(host, port, src, a.count)
        lat = time_health(host, port, "127.0.0.1", a.probes, a.token)
        ok = [x for x in lat if x is not None]
        logons_failed = 0
        if a.logon:
            basic = "Basic " + base64.b64encode(a.logon.encode()).decode()
            for _ in range(max(1, a.probes // 4)):
                try:
                    s = connect(host, port, "127.0.0.1", timeout=5)
                    s.sendall(("POST /auth/v1/logon HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                               "Authorization: %s\r\nContent-Length: 0\r\n\r\n" % basic).encode())
                    logons_failed += read_reply(s)[0] != 200
                    s.close()
                except OSError:
                    logons_failed += 1
        print(json.dumps({"idle_opened": len(held), "probes": len(lat), "failed": len(lat) - len(ok),
                          "logons_failed": logons_failed,
                          "p50_ms": round(percentile(ok, 50), 1),
                          "p99_ms": round(percentile(ok, 99), 1),
                          "max_ms": round(max(ok) if ok else float("nan"), 1)}))
        for s in held:
            s.close()
    elif a.cmd == "health":
        lat = time_health(host, port, "127.0.0.1", a.count, a.token)
        ok = [x for x in lat if x is not None]
        print(json.dumps({"probes": len(lat), "failed": len(lat) - len(ok),
                          "p50_ms": round(percentile(ok, 50), 1),
                          "max_ms": round(max(ok) if ok else float("nan"), 1)}))
    elif a.cmd == "hold-uploads":
        # One upload per --token, each sending a byte at a time: the host
        # holds a slot for each until they end. "holding" is printed once
        # the host has said "100 Continue" to each, so their slots are taken.
        socks = []
        for tok in a.token:
            pre, _ = multipart_head("--exec-start command --model-main x", 1 << 20)
            s = connect(host, port)
            s.sendall(("POST /platform/rest/deeplearning/v1/execs HTTP/1.1\r\nHost: x\r\n"
                       "Authorization: Bearer %s\r\nConnection: close\r\nExpect: 100-continue\r\n"
                       "Content-Type: multipart/form-data; boundary=%s\r\nContent-Length: %d\r\n\r\n"
                       % (tok, BOUNDARY, len(pre) + (1 << 20) + 32)).encode())
            status, body = read_reply(s)
            if status != 100:
                print("refused %d %s" % (status, body.decode("utf-8", "replace")), flush=True)
                return 1
            s.sendall(pre)
            socks.append(s)
        print("holding %d" % len(socks), flush=True)
        end = time.monotonic() + a.seconds
        while time.monotonic() < end and not (a.until and os.path.exists(a.until)):
            for s in socks:
                try:
                    s.send(b"\0")
                except OSError:
                    pass
            time.sleep(0.5)
        for s in socks:
            s.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
