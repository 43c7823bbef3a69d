#!/usr/bin/python3
"""Drives a loom host the way IBM's WMLA notebooks do, with requests:
log on three ways, list frameworks, submit a gzip'd model archive with the
arguments in the query string and WMLA's flags, poll, read the log as JSON,
download the result zip and check its size header.

usage: wmla_client.py URL USER PASSWORD WORKDIR
Prints one line per check; exits 1 when any failed.
"""
import base64
import io
import os
import sys
import tarfile
import time
import zipfile

import requests

URL, USER, PASSWORD, WORK = sys.argv[1:5]
DL = URL + "/platform/rest/deeplearning/v1"
SC = URL + "/platform/rest/conductor/v1"
AUTH = (USER, PASSWORD)
failures = 0


def check(what, ok, detail=""):
    global failures
    if ok:
        print("ok  ", what)
    else:
        failures += 1
        print("FAIL", what, detail)


# ---- log on, three ways
r = requests.get(SC + "/auth/logon", auth=AUTH)
check("conductor log-on with Basic", r.status_code == 200, r.text)
r = requests.get(URL + "/auth/v1/logon", auth=AUTH)
check("GET /auth/v1/logon answers accessToken", r.status_code == 200 and "accessToken" in r.json(), r.text)
access = r.json().get("accessToken", "")
r = requests.get(DL + "/execs", headers={"X-Auth-Token": access})
check("X-Auth-Token is accepted", r.status_code == 200, r.text)
userpasswd = base64.b64encode(("%s:%s" % AUTH).encode()).decode()
r = requests.post(URL + "/dlim/v1/auth/token", json={"method": "password", "userpasswd": userpasswd})
check("dlim token answers user_token", r.status_code == 200 and "user_token" in r.json(), r.text)
user_token = r.json().get("user_token", "")
r = requests.get(DL + "/execs", headers={"X-User-Token": user_token})
check("X-User-Token is accepted", r.status_code == 200, r.text)

# ---- frameworks, with Basic credentials on the request itself
r = requests.get(DL + "/execs/frameworks", auth=AUTH)
names = [f.get("name") for f in r.json()] if r.status_code == 200 else []
check("frameworks listed with Basic", "python" in names, r.text)

# ---- a model archive as the notebooks make it: a gzip'd tar whose top
# folder is the model directory's own name
model = os.path.join(WORK, "wmla-model")
os.makedirs(model, exist_ok=True)
with open(os.path.join(model, "train.py"), "w") as f:
    f.write('''import os, time
data = open(os.path.join(os.environ["DATA_DIR"], "samples.txt")).read().strip()
print("data:", data, flush=True)
for step in range(1, 4):
    print("timestamp: %d, global_steps: %d, iteration: %d, loss: %.3f, accuracy: %.2f"
          % (time.time(), step, step, 1.0 / step, 0.3 * step), flush=True)
out = os.path.join(os.environ["RESULT_DIR"], "model")
os.makedirs(out, exist_ok=True)
open(os.path.join(out, "weights.txt"), "w").write("w" * 5000)
print("DEBUG_LEVEL=" + os.environ.get("DEBUG_LEVEL", ""), flush=True)
''')
archive = os.path.join(WORK, "wmla-model.modelDir.tar")
with tarfile.open(archive, "w:gz") as t:
    t.add(model, arcname="wmla-model")

args = ("--exec-start PyTorch --model-dir wmla-model --model-main train.py --numWorker 1 "
        "--gpuPerWorker 1 --cs-datastore-meta type=fs,data_path=wmla-data "
        "--python-version 3.6 --conda-env-name dlipy3 --debug-level DEBUG -- --epochs 1")
with open(archive, "rb") as f:
    r = requests.post(DL + "/execs", params={"args": args, "sigName": "no-such-sig"},
                      files={"file": f}, auth=AUTH)
check("submission accepted", r.status_code in (200, 201), r.text)
reply = r.json()
exec_id = reply.get("id")
check("reply has id, sigId, submissionId",
      all(k in reply for k in ("id", "sigId", "submissionId")), r.text)
check("the unknown sigName is a warning",
      any("no-such-sig" in w for w in reply.get("warnings", [])), r.text)
check("--python-version is a warning",
      any("python-version" in w for w in reply.get("warnings", [])), r.text)

# ---- poll while it is on its way
state = reply.get("state")
deadline = time.time() + 120
while time.time() < deadline:
    r = requests.get(DL + "/execs/" + exec_id, auth=AUTH)
    state = r.json().get("state")
    if state not in ("SUBMITTED", "PENDING", "PENDING_CRD_SCHEDULER", "LAUNCHING", "RUNNING"):
        break
    time.sleep(0.5)
check("the exec finished", state == "FINISHED", r.text)

# ---- the log as the notebooks read it
r = requests.get(DL + "/execs/%s/log" % exec_id, auth=AUTH, headers={"Accept": "application/json"})
log = r.json() if r.status_code == 200 else None
check("log as one JSON string", isinstance(log, str) and "global_steps: 3" in log, r.text)
check("DATA_DIR is the data store's data_path", isinstance(log, str) and "data: wmla-samples" in log, r.text)
check("--debug-level reaches the job", isinstance(log, str) and "DEBUG_LEVEL=debug" in log, r.text)
r = requests.get(DL + "/execs/%s/log" % exec_id, auth=AUTH, headers={"Accept": "text/plain"})
check("log as text/plain", r.headers.get("Content-Type", "").startswith("text/plain")
      and "global_steps: 1" in r.text, r.headers)
r = requests.get(DL + "/scheduler/applications/%s/executor/1/logs/stdout?lastlines=1" % exec_id,
                 auth=AUTH, headers={"Accept": "text/plain"})
check("executor 1's last line", r.status_code == 200 and r.text.strip() == "DEBUG_LEVEL=debug", r.text)

# ---- the result, streamed to model.zip, its size from Content-Disposition
r = requests.get(DL + "/execs/%s/result" % exec_id, auth=AUTH,
                 headers={"Accept": "application/octet-stream"}, stream=True)
disposition = r.headers.get("Content-Disposition", "")
size = None
for part in disposition.split(";"):
    part = part.strip()
    if part.startswith("size="):
        size = int(part[5:])
path = os.path.join(WORK, "model.zip")
with open(path, "wb") as f:
    for chunk in r.iter_content(chunk_size=65536):
        f.write(chunk)
check("size= equals the bytes received", size is not None and size == os.path.getsize(path),
      "%s vs %d" % (disposition, os.path.getsize(path)))
names = zipfile.ZipFile(path).namelist() if zipfile.is_zipfile(path) else []
check("the zip holds the model", "model/weights.txt" in names, names)
check("the zip leaves out _submitted_code", not any(n.startswith("_submitted_code") for n in names), names)

sys.exit(1 if failures else 0)
