#!/bin/sh
# bench/http/run.sh - the HTTP front door under a mixed load: 64 clients
# submitting small execs and polling them, 1,000 idle sockets from
# 127.0.0.2 and one slow uploader, while health is timed from 127.0.0.1;
# then unauthenticated clients push 250 MB bodies. Prints health's p99
# beside the same host's p99 with no load (the peer, from the same run),
# whether any acknowledged submission is missing from the listing, and the
# host's peak RSS (VmHWM) against the targets: p99 < 100 ms, no loss,
# RSS < 200 MiB.
#
#   bench/http/run.sh [BUILD_DIR]            (default: build next to this tree)
#   CLIENTS=64 SECONDS_LOAD=20 bench/http/run.sh
set -eu

here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
loom=$build/bin/loom
py=/usr/bin/python3
[ -x "$loom" ] || { echo "run.sh: $loom not found; build loom first" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/loom-bench-http-XXXXXX")
export LOOM_HOME="$work/home"
unset LOOM_HOST
host_pid=
cleanup() {
    [ -z "$host_pid" ] || { kill "$host_pid" 2>/dev/null; wait "$host_pid" 2>/dev/null || true; }
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

echo bench-admin-password > "$work/admin.pw"
# 64 submitting clients: enough upload slots for them (each submission is a
# multipart upload), the rest of the limits at their defaults.
"$loom" serve --listen 127.0.0.1:0 --admin-password-file "$work/admin.pw" --cpu-slots 4 \
    --max-uploads 80 --max-uploads-per-user 80 >"$work/serve.out" 2>&1 &
host_pid=$!
for _ in $(seq 1 100); do [ -s "$LOOM_HOME/host" ] && break; sleep 0.05; done
url=$(head -n1 "$LOOM_HOME/host")
logon() {
    curl -s -X POST -u "$1:$2" "$url/auth/v1/logon" | $py -c 'import json,sys; print(json.load(sys.stdin)["token"])'
}
admin=$(logon admin bench-admin-password)
: > "$work/tokens"
for u in u1 u2 u3 u4 u5 u6 u7 u8; do
    "$loom" user add "$u" -p "$u-bench-password" >/dev/null 2>&1 ||
        curl -s -o /dev/null -H "Authorization: Bearer $admin" -H 'Content-Type: application/json' \
             --data "{\"name\": \"$u\", \"password\": \"$u-bench-password\"}" "$url/auth/v1/users"
    logon "$u" "$u-bench-password" >> "$work/tokens"
done
mkdir -p "$work/model"
printf '#!/bin/sh\ntrue\n' > "$work/model/run.sh"; chmod +x "$work/model/run.sh"
tar -C "$work/model" -cf "$work/model.tar" .

echo "loom $($loom version | head -n1); $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
out=$($py "$here/load.py" "$url" "$admin" "$work/tokens" "$work/model.tar")
hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$host_pid/status")
echo "$out" | $py -c '
import json, sys
r = json.load(sys.stdin)
hwm = int(sys.argv[1]) / 1024
print("health p99 under load      %8.1f ms   (same host, no load: %.1f ms; target < 100 ms)"
      % (r["health_p99_ms"], r["idle_host_health_p99_ms"]))
print("health p50 under load      %8.1f ms   (%d probes, %d failed)"
      % (r["health_p50_ms"], r["health_probes"], r["health_failed"]))
print("submissions acknowledged   %8d      lost: %d (target 0); refused: %s; client errors: %d"
      % (r["submissions_acknowledged"], r["acknowledged_lost"], r["submissions_refused"] or "none",
         r["client_errors"]))
print("slow uploads finished      %8d" % r["slow_uploads_done"])
print("host peak RSS (VmHWM)      %8.1f MiB  after %d unauthenticated 250 MB pushes (statuses %s; "
      "target < 200 MiB)" % (hwm, r["unauthenticated_250MB_pushes"], r["their_statuses"]))
' "$hwm"
