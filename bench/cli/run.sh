#!/bin/sh
# bench/cli/run.sh - how long a CLI call takes from exec to exit: `loom
# version` (no host) and `loom exec list` (one REST call to a local host)
# beside their peers from the same run: /bin/true (a process that does
# nothing) and curl fetching the same route with the same token. Medians of
# RUNS runs each, by hyperfine; the host runs in a temporary home.
#
#   bench/cli/run.sh [BUILD_DIR]      (default: build next to this tree)
#   RUNS=500 bench/cli/run.sh
set -eu

here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
loom=$build/bin/loom
runs=${RUNS:-40}
rounds=${ROUNDS:-8}

[ -x "$loom" ] || { echo "run.sh: $loom not found; build loom first" >&2; exit 1; }
if ! command -v hyperfine >/dev/null; then
    if [ "$(id -u)" -eq 0 ]; then
        apt-get install -y -qq hyperfine >/dev/null
    else
        echo "run.sh: hyperfine is missing: sudo apt-get install -y hyperfine" >&2
        exit 1
    fi
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/loom-bench-cli-XXXXXX")
export LOOM_HOME="$work/home"
unset LOOM_HOST
host_pid=
cleanup() {
    [ -z "$host_pid" ] || { kill "$host_pid" 2>/dev/null; wait "$host_pid" 2>/dev/null || true; }
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

echo bench-admin-password > "$work/admin.pw"
"$loom" serve --listen 127.0.0.1:0 --admin-password-file "$work/admin.pw" >"$work/serve.out" 2>&1 &
host_pid=$!
for _ in $(seq 1 100); do
    [ -s "$LOOM_HOME/host" ] && break
    sleep 0.05
done
[ -s "$LOOM_HOME/host" ] || { echo "run.sh: the host did not start: $(cat "$work/serve.out")" >&2; exit 1; }
url=$(head -n1 "$LOOM_HOME/host")
echo bench-admin-password | "$loom" login -u admin --password-stdin >/dev/null
token=$(awk -v u="$url" '$1 == u {print $2}' "$LOOM_HOME/credentials")
route=/platform/rest/deeplearning/v1/execs
"$loom" exec list >/dev/null # fails the script if the call does not work

echo "CLI start-up: $rounds rounds of $runs runs each (hyperfine -N);" \
     "$(ldd "$loom" | wc -l) shared objects mapped when loom starts"
for round in $(seq "$rounds"); do
    hyperfine -N --warmup 5 --runs "$runs" --export-json "$work/round-$round.json" \
        "$loom version" /bin/true "$loom exec list" \
        "curl -s -o /dev/null -H 'Authorization: Bearer $token' $url$route" >/dev/null 2>&1
done
python3 - "$work"/round-*.json <<'PY'
import json, statistics, sys
names = ["loom version", "/bin/true (peer)", "loom exec list", "curl, same route (peer)"]
wall = {n: [] for n in names}
cpu = {n: [] for n in names}
for path in sys.argv[1:]:
    for name, r in zip(names, json.load(open(path))["results"]):
        wall[name] += r["times"]
        cpu[name].append((r["user"] + r["system"]) * 1000)
print(f"{'command':<26} {'median ms':>10} {'user+sys ms':>12}")
for name in names:
    print(f"{name:<26} {statistics.median(wall[name]) * 1000:>10.2f} "
          f"{statistics.median(cpu[name]):>12.2f}")
PY
