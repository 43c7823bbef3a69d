#!/bin/sh
# bench/auth/basic.sh - what HTTP Basic credentials on every request cost
# (WMLA's notebooks send them with each call): GET .../execs with Basic
# (verified once, then remembered), beside the same call with a bearer
# token and beside a password log-on per call (one argon2id each: what
# every Basic request would cost without the cache). Medians of RUNS calls
# over one kept-alive connection, Python requests as the notebooks use.
#
#   bench/auth/basic.sh [BUILD_DIR]      (default: build next to this tree)
#   RUNS=500 bench/auth/basic.sh
set -eu

here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
loom=$build/bin/loom
runs=${RUNS:-200}
[ -x "$loom" ] || { echo "basic.sh: $loom not found; build loom first" >&2; exit 1; }
/usr/bin/python3 -c 'import requests' 2>/dev/null ||
    { echo "basic.sh: needs python3-requests (scripts/bootstrap installs it)" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/loom-bench-auth-XXXXXX")
export LOOM_HOME="$work/home"
unset LOOM_HOST
echo bench-admin-password > "$work/pw"
"$loom" serve --listen 127.0.0.1:0 --admin-password-file "$work/pw" > "$work/serve.out" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 1 100); do [ -s "$LOOM_HOME/host" ] && break; sleep 0.05; done
url=$(head -n1 "$LOOM_HOME/host")

/usr/bin/python3 - "$url" "$runs" <<'PY'
import statistics, sys, time
import requests
url, runs = sys.argv[1], int(sys.argv[2])
auth = ("admin", "bench-admin-password")
execs = url + "/platform/rest/deeplearning/v1/execs"
s = requests.Session()
token = s.get(url + "/auth/v1/logon", auth=auth).json()["accessToken"]

def median_ms(call, n):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        r = call()
        times.append((time.perf_counter() - t) * 1000)
        assert r.status_code == 200, r.text
    return statistics.median(times)

bearer = median_ms(lambda: s.get(execs, headers={"Authorization": "Bearer " + token}), runs)
basic = median_ms(lambda: s.get(execs, auth=auth), runs)
logon = median_ms(lambda: s.post(url + "/auth/v1/logon", auth=auth), max(runs // 10, 5))
print("GET .../execs, median of %d calls (ms):" % runs)
print("  loom, Basic on every call (cached)   %8.2f" % basic)
print("  loom, bearer token                   %8.2f" % bearer)
print("  a password log-on per call (argon2id) %7.2f" % logon)
PY
