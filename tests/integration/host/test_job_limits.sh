#!/usr/bin/env bash
# Limits on what one exec's processes take. By default a job makes 400
# processes and 300 MiB without a refusal, and `exec view` shows the
# limits it runs under (4,096 processes, its share of the machine's
# memory, 20 GiB of disk). With small limits on the serve, a job that
# forks 200 sleeps sees fork fail, one that allocates 300 MiB is killed,
# one that writes past the disk limit is stopped, and each ends ERROR
# naming the flag that set the limit.
LOOM=$1
. "$(dirname "$0")/../lib.sh"

if [ "$(id -u)" != 0 ] || { [ ! -w /sys/fs/cgroup/pids ] && [ ! -w /sys/fs/cgroup/unified ]; }; then
    echo "NOT TESTED: needs root and a writable cgroupfs" >&2
    exit 77
fi
PY=$(PATH=/usr/local/bin:/usr/bin:/bin command -v python3)
[ -n "$PY" ] || { echo "NOT TESTED: no python3" >&2; exit 77; }

MODEL="$WORK/model"
mkdir -p "$MODEL"
# forks N sleeps; exits 1 when one was refused
cat > "$MODEL/forks.sh" <<'SH'
#!/bin/sh
refused=0
i=0
while [ "$i" -lt "$1" ]; do
    sleep 30 &
    [ $? -eq 0 ] || refused=1
    i=$((i + 1))
done
echo "started $i sleeps"
[ "$refused" = 0 ]
SH
cat > "$MODEL/alloc.sh" <<SH
#!/bin/sh
exec $PY -c 'import sys; b = b"x" * (300 << 20); print("allocated", len(b))'
SH
# three 8 MiB files, then waits to be stopped
cat > "$MODEL/fill.sh" <<'SH'
#!/bin/sh
for n in 1 2 3; do
    dd if=/dev/zero of="$RESULT_DIR/fill.$n" bs=1M count=8 2>/dev/null
done
exec sleep 1000
SH
chmod +x "$MODEL"/*.sh

submit() { # submit SCRIPT [ARGS]: prints the exec id
    local script=$1; shift
    "$LOOM" exec start --exec-start command --model-dir "$MODEL" --model-main "$script" -- "$@" |
        sed -n 's/^exec \([^ ]*\) submitted.*/\1/p'
}
field() { "$LOOM" --json exec view "$1" | python3 -c "import json,sys; print(json.load(sys.stdin)$2)"; }
ends() { "$LOOM" exec wait "$1" --timeout 90 >/dev/null 2>&1; field "$1" '["state"]'; }

# ---- the defaults: room for 400 processes and 300 MiB
start_host
id=$(submit forks.sh 400)
expect_eq "400 processes by default" "$(ends "$id")" FINISHED
id=$(submit alloc.sh)
expect_eq "300 MiB by default" "$(ends "$id")" FINISHED
view=$("$LOOM" exec view "$id")
expect_contains "exec view shows the process limit" "$view" "limits      4096 processes and threads (--job-max-procs)"
expect_contains "the memory limit is the exec's share" "$view" "(--job-max-memory: its share of the machine)"
expect_contains "the disk limit" "$view" "20480 MiB disk under RESULT_DIR"
expect_eq "and --json" "$(field "$id" '["limits"]["processes"]')" 4096
expect_eq "the disk limit in --json" "$(field "$id" '["limits"]["diskBytes"]')" $((20 << 30))
stop_host

# ---- small limits
start_host --job-max-procs 64 --job-max-memory 128M --job-max-disk 20M
id=$(submit forks.sh 200)
expect_eq "200 sleeps under --job-max-procs 64: fork fails" "$(ends "$id")" ERROR
expect_contains "the message names the process limit" "$(field "$id" '["message"]')" "--job-max-procs"
expect_eq "exec view shows it" "$(field "$id" '["limits"]["processes"]')" 64

id=$(submit alloc.sh)
expect_eq "300 MiB under --job-max-memory 128M: killed" "$(ends "$id")" ERROR
msg=$(field "$id" '["message"]')
expect_contains "the message names the memory limit" "$msg" "went over the memory limit, 128 MiB (loom serve --job-max-memory)"
expect_eq "exec view shows it" "$(field "$id" '["limits"]["memoryBytes"]')" $((128 << 20))

id=$(submit fill.sh)
expect_eq "24 MiB under --job-max-disk 20M: stopped" "$(ends "$id")" ERROR
expect_contains "the message names the disk limit" "$(field "$id" '["message"]')" "over the disk limit of 20 MiB (loom serve --job-max-disk)"
expect_contains "exec view shows it" "$("$LOOM" exec view "$id")" "20 MiB disk under RESULT_DIR"
stop_host
finish
