#!/usr/bin/env bash
# An elastic job's control socket is abstract (any local process can
# connect to it), so the coordinator hears only its own workers: a process
# of another user, and one of the job's own user that is not a worker it
# started, are refused (SO_PEERCRED: the uid, then the pid) and the job
# trains on, every sample once. The collectives' shared-memory segment is
# 0600 and owned by the job's account. Needs root and setpriv (the host
# gives jobs accounts, the test acts as other uids): skipped otherwise.
LOOM=$1
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../train_lib.sh"

if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
    echo "SKIPPED: needs root and setpriv" >&2
    exit 77
fi
start_host --cpu-slots 4
if ! grep -q "a uid per user" "$WORK/serve.out"; then
    echo "SKIPPED: no accounts per user here: $(grep 'jobs:' "$WORK/serve.out")" >&2
    exit 77
fi

wide_model "$WORK/m" 24000 2
id=$(submit --model-dir "$WORK/m" --numWorker 2)
expect_ok "submitted" test -n "$id"

# A worker of the exec: its pid, uid and control socket's name.
worker_pid() {
    ps -eo pid=,args= | awk -v id="$id" '$0 ~ / worker / && $0 ~ ("--exec-id " id " ") && !/ confine / {print $1; exit}'
}
pid=
for _ in $(seq 1 300); do
    pid=$(worker_pid)
    [ -n "$pid" ] && [ "$(awk '/^Uid:/ {print $2}' "/proc/$pid/status" 2>/dev/null)" != 0 ] && break
    sleep 0.1
done
expect_ok "a worker started" test -n "$pid"
ctl=$(tr '\0' '\n' < "/proc/$pid/cmdline" | awk 'prev == "--control" {print; exit} {prev = $0}')
shm=$(tr '\0' '\n' < "/proc/$pid/cmdline" | awk 'prev == "--shm" {print; exit} {prev = $0}')
wuid=$(awk '/^Uid:/ {print $2}' "/proc/$pid/status")
case "$wuid" in 2[0-9][0-9][0-9][0-9][0-9]) pass ;; *) fail "the worker's uid: '$wuid'" ;; esac

# ---- the shared-memory segment: the job's own, no one else's
expect_eq "the segment is 0600, owned by the job's account" \
    "$(stat -c '%a %u' "/dev/shm$shm" 2>&1)" "600 $wuid"

# ---- connections from others are refused before anything is read
cat > "$WORK/knock.py" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect("\0" + sys.argv[1])
s.settimeout(60)
try:
    s.sendall(b"\0" * 64)
    print("closed" if s.recv(1) == b"" else "answered")
except OSError as e:
    print("closed", e)
PY
expect_ok "another user connects" setpriv --reuid=65534 --regid=65534 --clear-groups \
    timeout 90 python3 "$WORK/knock.py" "$ctl"
expect_contains "and is shut out" "$(cat "$WORK/out")" "closed"
expect_ok "the job's own account, not a worker, connects" \
    setpriv --reuid="$wuid" --regid="$wuid" --clear-groups timeout 90 python3 "$WORK/knock.py" "$ctl"
expect_contains "and is shut out" "$(cat "$WORK/out")" "closed"
driver="$LOOM_HOME/execs/$id/log/driver/stdout"
expect_contains "the driver says another uid was refused" "$(cat "$driver")" \
    "refused a control connection: from uid 65534"
expect_contains "and a process that is none of its workers" "$(cat "$driver")" \
    "none of the exec's starting workers"

expect_ok "the job ends" "$LOOM" exec wait "$id" --timeout 240
expect_eq "it finished" "$(field "$id" 'v["state"]')" FINISHED
expect_eq "every sample once per epoch" "$(field "$id" "$every_epoch_once")" True
expect_ok "the segment is gone with it" test ! -e "/dev/shm$shm"
stop_host
finish
