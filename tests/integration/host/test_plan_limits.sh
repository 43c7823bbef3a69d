#!/usr/bin/env bash
# Per-plan job limits. An administrator sets max_procs, max_memory and
# max_disk on a plan; an exec in it (or beneath it) runs under the nearest
# plan's value that is set, else the host's --job-max-*. A job that forks
# more than its plan's process limit (lower than the host's) is refused and
# ends ERROR naming the plan; `exec view` says where each limit came from.
# Bad values are refused with 400 naming the field, and only administrators
# set them.
LOOM=$1
. "$(dirname "$0")/../lib.sh"

if [ "$(id -u)" != 0 ] || { [ ! -w /sys/fs/cgroup/pids ] && [ ! -w /sys/fs/cgroup/unified ]; }; then
    echo "NOT TESTED: needs root and a writable cgroupfs" >&2
    exit 77
fi

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
chmod +x "$MODEL"/*.sh

submit() { # submit PLAN SCRIPT [ARGS]: prints the exec id
    local plan=$1 script=$2; shift 2
    "$LOOM" exec start --exec-start command --consumer "$plan" --model-dir "$MODEL" \
        --model-main "$script" -- "$@" | sed -n 's/^exec \([^ ]*\) submitted.*/\1/p'
}
field() { "$LOOM" --json exec view "$1" | python3 -c "import json,sys; print(json.load(sys.stdin)$2)"; }
ends() { "$LOOM" exec wait "$1" --timeout 90 >/dev/null 2>&1; field "$1" '["state"]'; }

start_host --job-max-procs 1024
expect_ok "a plan with a process limit" "$LOOM" plan add /teamA --max-procs 32
expect_ok "a plan beneath it with a memory limit" "$LOOM" plan add /teamA/sub --max-memory 256M
expect_contains "plan list shows the limits" "$("$LOOM" plan list)" "/teamA/sub"
expect_eq "plan show --json: max_procs" \
    "$("$LOOM" --json plan show /teamA | python3 -c 'import json,sys; print(json.load(sys.stdin)["max_procs"])')" 32
expect_eq "an unset limit reads 0" \
    "$("$LOOM" --json plan show /teamA | python3 -c 'import json,sys; print(json.load(sys.stdin)["max_disk"])')" 0
expect_eq "K, M, G on the command line" \
    "$("$LOOM" --json plan show /teamA/sub | python3 -c 'import json,sys; print(json.load(sys.stdin)["max_memory"])')" \
    $((256 << 20))

# ---- the plan's process limit, lower than the host's, refuses the forks
id=$(submit /teamA forks.sh 100)
expect_eq "100 sleeps in /teamA (max_procs 32): fork fails" "$(ends "$id")" ERROR
expect_contains "the message names the plan" "$(field "$id" '["message"]')" \
    "processes and threads (plan /teamA)"
view=$("$LOOM" exec view "$id")
expect_contains "exec view names the plan" "$view" "32 processes and threads (plan /teamA)"
expect_contains "and the host's flag for the rest" "$view" "20480 MiB disk under RESULT_DIR and per file (--job-max-disk)"
expect_eq "--json names the plan" "$(field "$id" '["limits"]["processesPlan"]')" /teamA

# ---- beneath it: the process limit inherited, the memory limit its own
id=$(submit /teamA/sub forks.sh 1)
expect_eq "one sleep in /teamA/sub" "$(ends "$id")" FINISHED
view=$("$LOOM" exec view "$id")
expect_contains "the process limit inherited from /teamA" "$view" "32 processes and threads (plan /teamA)"
expect_contains "the memory limit from /teamA/sub" "$view" "256 MiB memory (plan /teamA/sub)"
expect_contains "exec view names the plan it was submitted to" "$view" "plan        /teamA/sub"
expect_eq "--json too" "$(field "$id" '["plan"]')" /teamA/sub

# ---- the administrator's own plan, which sets none: the host's
id=$(submit /admin forks.sh 100)
expect_eq "100 sleeps under the host's 1024" "$(ends "$id")" FINISHED
expect_contains "exec view names the host's flag" "$("$LOOM" exec view "$id")" \
    "1024 processes and threads (--job-max-procs)"

# ---- 0 inherits again
expect_ok "max_procs back to 0" "$LOOM" plan update /teamA --max-procs 0
id=$(submit /teamA forks.sh 100)
expect_eq "100 sleeps in /teamA once it inherits" "$(ends "$id")" FINISHED

# ---- bad values, and who may set them
r=$(http PUT "/loom/v1/plan?path=/teamA" -d '{"max_procs": 3}')
expect_contains "max_procs 3: 400" "$r" "400 "
expect_contains "naming the field and what was expected" "$r" "max_procs: expected 0"
r=$(http PUT "/loom/v1/plan?path=/teamA" -d '{"max_memory": -1}')
expect_contains "max_memory -1: 400 naming it" "$r" "max_memory: expected 0"
r=$(http PUT "/loom/v1/plan?path=/teamA" -d '{"max_disk": "10G"}')
expect_contains "max_disk as text: 400 naming it" "$r" "max_disk: expected 0"
expect_fails "the CLI refuses --max-memory 1K" "$LOOM" plan update /teamA --max-memory 1K
expect_contains "naming the field" "$(cat "$WORK/out")" "max_memory"
expect_ok "add alice" "$LOOM" user add alice -p alice-password
alice=$(curl -s -X POST -u alice:alice-password "$URL/auth/v1/logon" |
        python3 -c 'import json,sys; print(json.load(sys.stdin).get("token",""))')
r=$(TOKEN=$alice http PUT "/loom/v1/plan?path=/teamA" -d '{"max_procs": 4096}')
expect_contains "a user cannot set a plan's limits" "$r" "403 "
expect_eq "the limit stays as the administrator left it" \
    "$("$LOOM" --json plan show /teamA | python3 -c 'import json,sys; print(json.load(sys.stdin)["max_procs"])')" 0

# ---- kept over a restart
"$LOOM" plan update /teamA --max-disk 10G >/dev/null
stop_host
start_host
expect_eq "max_disk kept over a restart" \
    "$("$LOOM" --json plan show /teamA | python3 -c 'import json,sys; print(json.load(sys.stdin)["max_disk"])')" \
    $((10 << 30))
stop_host
finish
