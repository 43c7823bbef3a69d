#!/usr/bin/python3
"""bench/http/load.py URL ADMIN_TOKEN USER_TOKENS_FILE MODEL_TAR: the mixed
load of bench/http/run.sh. Phase 1 (SECONDS): CLIENTS clients submit small
execs (multipart, the model tar) and poll each until it is accepted, 1,000
idle sockets are held from 127.0.0.2, one client uploads slowly; health is
timed from 127.0.0.1 throughout, and afterwards every acknowledged exec id
must be in the listing. Phase 2: unauthenticated clients push 250 MB
bodies. Prints one JSON object of figures."""
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "../../tests/integration/host"))
import http_client as hc  # noqa: E402

EXECS = "/platform/rest/deeplearning/v1/execs"


def submit(host, port, token, tar):
    pre, post = hc.multipart_head("--exec-start command --model-main run.sh", len(tar))
    body = pre + tar + post
    return hc.request(host, port, "POST", EXECS, token, body,
                      "multipart/form-data; boundary=%s" % hc.BOUNDARY, timeout=60)


def client(host, port, token, tar, stop, acked, refused, errors, lock):
    while not stop.is_set():
        try:
            status, body = submit(host, port, token, tar)
        except OSError:
            with lock:
                errors[0] += 1
            continue
        if status != 201:
            with lock:
                refused[status] = refused.get(status, 0) + 1
            time.sleep(0.2)
            continue
        exec_id = json.loads(body)["id"]
        with lock:
            acked.append(exec_id)
        for _ in range(3):  # poll it a few times, as a client following a job does
            try:
                hc.request(host, port, "GET", EXECS + "/" + exec_id, token, timeout=30)
            except OSError:
                with lock:
                    errors[0] += 1
            time.sleep(0.1)


def slow_upload(host, port, token, stop, out):
    # 64 KiB/s: the host holds its slot and a connection, nothing more.
    while not stop.is_set():
        r = hc.push(host, port, EXECS, 2 << 20, token,
                    "--exec-start command --model-main run.sh", rate=64 << 10)
        out.append(r[0])


def main():
    url, admin, tokens_file, tar_path = sys.argv[1:5]
    clients = int(os.environ.get("CLIENTS", "64"))
    seconds = float(os.environ.get("SECONDS_LOAD", "20"))
    host, port = url.split("://", 1)[1].rstrip("/").rsplit(":", 1)
    port = int(port)
    tokens = open(tokens_file).read().split()
    tar = open(tar_path, "rb").read()
    idle_peer = hc.time_health(host, port, "127.0.0.1", 100, admin, pause=0.01)

    stop = threading.Event()
    lock = threading.Lock()
    acked, refused, errors, slow = [], {}, [0], []
    held = hc.hold_idle(host, port, "127.0.0.2", 1000)
    threads = [threading.Thread(target=client, args=(host, port, tokens[i % len(tokens)], tar, stop,
                                                     acked, refused, errors, lock))
               for i in range(clients)]
    threads.append(threading.Thread(target=slow_upload, args=(host, port, tokens[0], stop, slow)))
    for t in threads:
        t.start()
    lat = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        lat += hc.time_health(host, port, "127.0.0.1", 1, admin, pause=0.05)
    stop.set()
    for t in threads:
        t.join()
    for s in held:
        s.close()
    status, body = hc.request(host, port, "GET", EXECS, admin, timeout=60)
    listed = {e["id"] for e in json.loads(body)} if status == 200 else set()
    lost = [i for i in acked if i not in listed]
    ok = [x for x in lat if x is not None]
    ok_peer = [x for x in idle_peer if x is not None]

    # Phase 2: unauthenticated 250 MB bodies, 4 at a time, 3 rounds.
    pushed = []
    for _ in range(3):
        rs = [None] * 4

        def one(i):
            rs[i] = hc.push(host, port, EXECS, 250 * 1000 * 1000)
        ts = [threading.Thread(target=one, args=(i,)) for i in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        pushed += [r[0] for r in rs]
    print(json.dumps({
        "health_probes": len(lat), "health_failed": len(lat) - len(ok),
        "health_p50_ms": round(hc.percentile(ok, 50), 1),
        "health_p99_ms": round(hc.percentile(ok, 99), 1),
        "idle_host_health_p99_ms": round(hc.percentile(ok_peer, 99), 1),
        "submissions_acknowledged": len(acked), "acknowledged_lost": len(lost),
        "submissions_refused": refused, "client_errors": errors[0],
        "slow_uploads_done": len(slow),
        "unauthenticated_250MB_pushes": len(pushed),
        "their_statuses": sorted(set(pushed)),
    }))


if __name__ == "__main__":
    main()
