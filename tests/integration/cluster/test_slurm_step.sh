#!/usr/bin/env bash
# A worker on a Slurm node as one Slurm job (sched/slurm_step.h), on a
# 2-node lab: srun started from node1 (a login node: srun --uid needs the
# account where it runs) runs a command on node2 as uid 200001 with a
# variable passed by name, its value never on srun's command line; srun's
# SIGTERM ends the job; a job left behind (srun killed with SIGKILL, or an
# sbatch named loom:) is found through libslurm and cancelled. Prints the
# launch latency (srun started to the command running on the node).
# Skipped (77) where namespaces cannot be made.
TOOL=$1
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lab_lib.sh"

# Refusals come before any srun: no Slurm needed.
expect_fails "a relative program" "$TOOL" run --node node2 --uid 200001 --gid 200001 \
    --cpus 1 --exec-id e1 --slot 0 --chdir / -- id
expect_contains "is named" "$(cat "$WORK/out")" "argv[0] 'id': an absolute path expected"
expect_fails "a node list" "$TOOL" run --node 'node[1-2]' --uid 200001 --gid 200001 \
    --cpus 1 --exec-id e1 --slot 0 --chdir / -- /bin/true
expect_contains "is named" "$(cat "$WORK/out")" "one node name expected"
if ! "$TOOL" libslurm; then
    skip_part "the lab: this loom was built without libslurm"
    finish
    exit
fi
expect_fails "leftovers with an unreadable Slurm configuration" \
    env SLURM_CONF="$WORK/none.conf" "$TOOL" leftovers
expect_contains "names it" "$(cat "$WORK/out")" "cannot read Slurm's configuration $WORK/none.conf"
if [ "$lab_usable" = 0 ]; then
    skip_part "the Slurm lab: $LAB_WHY"
    finish
    exit
fi

lab_up 2
SHARED=$LOOM_LAB_SHARED
# The nodes see the shared folder, not this machine's /tmp (where a build
# may be): the tool runs on node1 from there.
cp "$TOOL" "$SHARED/slurm_step_tool"
NODE_TOOL=$SHARED/slurm_step_tool
EXEC=it-$$
now_ms() { echo $(($(date +%s%N) / 1000000)); }
# step SLOT [run options] -- CMD...: the tool on node1, srun's pid in
# $SHARED/srun-SLOT.pid, its output in $SHARED/out-SLOT.
step() {
    local slot=$1; shift
    lab exec node1 "$NODE_TOOL" run --node node2 --uid 200001 --gid 200001 --cpus 1 \
        --exec-id "$EXEC" --slot "$slot" --chdir "$SHARED" --pid-file "$SHARED/srun-$slot.pid" "$@"
}
job_state() { squeue -h -n "loom:$EXEC:$1" -o %T; }
lines_at_least() { [ -f "$1" ] && [ "$(wc -l < "$1")" -ge "$2" ]; }
gone() { ! kill -0 "$1" 2>/dev/null; }

# 1. the command on node2, as 200001, its variable by name only
secret=value-$$-$RANDOM$RANDOM
wait_until 20 node_idle node2
LOOM_TEST_VAR=$secret step 0 --export LOOM_TEST_VAR -- \
    /bin/sh -c 'id -u; hostname; printenv LOOM_TEST_VAR; exec /bin/sleep 600' \
    >"$SHARED/out-0" 2>&1 &
tool0=$!
wait_until 30 lines_at_least "$SHARED/out-0" 3
expect_eq "uid, node and the variable's value on the node" "$(head -3 "$SHARED/out-0")" \
    "$(printf '200001\nnode2\n%s' "$secret")"
srun0=$(cat "$SHARED/srun-0.pid")
cmdline=$(tr '\0' ' ' < "/proc/$srun0/cmdline")
expect_contains "srun's command line exports the name" "$cmdline" "--export=LOOM_TEST_VAR "
expect_not_contains "and never the value" "$cmdline" "$secret"
expect_not_contains "nor does ps show it" "$(ps -ww -o args= -p "$srun0")" "$secret"
expect_eq "srun runs as the account once the job is granted" "$(stat -c %u "/proc/$srun0")" "200001"
expect_eq "its environment (the value) is root's alone to read" \
    "$(stat -c '%u %a' "/proc/$srun0/environ")" "0 400"
expect_eq "squeue shows the worker by name, owner and node" \
    "$(squeue -h -n "loom:$EXEC:0" -o '%j %U %N %T')" "loom:$EXEC:0 200001 node2 RUNNING"

# 2. srun's SIGTERM ends the job
t0=$(now_ms)
kill -TERM "$srun0"
wait_until 20 output_is "" job_state 0
expect_eq "no job left after srun's SIGTERM" "$(job_state 0)" ""
echo "job gone from squeue $(($(now_ms) - t0)) ms after srun's SIGTERM"
wait_until 20 gone "$tool0"
wait "$tool0"
expect_eq "srun's exit status: the worker killed" "$?" "137"

# 3. leftovers: the host gone (the tool killed with SIGKILL) leaves srun
# and its job running; srun killed with SIGKILL leaves its job to Slurm's
# own end; an sbatch named loom: (as root), and one of another name beside
wait_until 20 node_idle node2
step 1 -- /bin/sleep 600 >"$SHARED/out-1" 2>&1 &
tool1=$!
step 2 -- /bin/sleep 600 >"$SHARED/out-2" 2>&1 &
tool2=$!
wait_until 30 output_is RUNNING job_state 1
wait_until 30 output_is RUNNING job_state 2
srun1=$(cat "$SHARED/srun-1.pid")
kill -KILL "$tool1"
t_kill=$(now_ms)
kill -KILL "$(cat "$SHARED/srun-2.pid")"
wait_until 20 gone "$tool1"
wait_until 20 gone "$tool2"
sbatch -Q -J "loom:$EXEC-sb:0" -w node1 -o /dev/null --chdir=/ --wrap '/bin/sleep 600'
sbatch -Q -J "other-$EXEC" -w node1 -o /dev/null --chdir=/ --wrap '/bin/sleep 600'
wait_until 30 output_is RUNNING squeue -h -n "loom:$EXEC-sb:0" -o %T
wait_until 30 output_is RUNNING squeue -h -n "other-$EXEC" -o %T
expect_eq "the orphaned srun's job runs on" "$(job_state 1)" "RUNNING"
not_running() { [ "$(job_state "$1")" != RUNNING ]; }
wait_until 20 not_running 2
expect_eq "srun killed with SIGKILL: Slurm ends its job itself" \
    "$(job_state 2 | grep -v COMPLETING)" ""
echo "srun's SIGKILL: its job '$(job_state 2)' $(($(now_ms) - t_kill)) ms after it"
job1=$(squeue -h -n "loom:$EXEC:1" -o %i)
expect_eq "the leftover of an exec" "$("$TOOL" leftovers --exec-id "$EXEC" | grep ":1 ")" \
    "$job1 loom:$EXEC:1 200001 RUNNING node2"
expect_eq "the leftovers of loom's accounts" \
    "$("$TOOL" leftovers --uid-min 200000 --uid-max 299999 | awk '{print $2}' | grep -v ":2$")" \
    "loom:$EXEC:1"
all=$("$TOOL" leftovers | awk '{print $2}' | grep -v ":2$" | sort | tr '\n' ' ')
expect_eq "every job named loom:, none other" "$all" "loom:$EXEC-sb:0 loom:$EXEC:1 "
for id in $("$TOOL" leftovers | awk '{print $1}'); do
    expect_ok "cancel job $id" "$TOOL" cancel "$id"
done
no_loom_jobs() { [ -z "$(squeue -h -o %j | grep '^loom:')" ]; }
wait_until 30 no_loom_jobs
expect_eq "no loom: job left" "$(squeue -h -o %j | grep '^loom:')" ""
wait_until 20 gone "$srun1"
expect_ok "the orphaned srun ended with its job" gone "$srun1"
expect_eq "the other job runs on" "$(squeue -h -n "other-$EXEC" -o %T)" "RUNNING"
expect_ok "cancelling a job that ended" "$TOOL" cancel "$job1"
expect_fails "cancelling no such job" "$TOOL" cancel 4000000
expect_contains "is named" "$(cat "$WORK/out")" "cancelling job 4000000: no such job"
scancel -n "other-$EXEC"

# 4. the launch latency: srun started to the command running on node2
lat=()
for k in 1 2 3 4 5; do
    wait_until 20 node_idle node2
    t0=$(date +%s%N)
    t1=$(step "$((10 + k))" -- /bin/date +%s%N 2>/dev/null)
    [[ "$t1" =~ ^[0-9]+$ ]] && lat+=($(((t1 - t0) / 1000000)))
done
expect_eq "five launches ran" "${#lat[@]}" "5"
echo "launch latency (ms, srun start to the command on node2): ${lat[*]};" \
    "median $(printf '%s\n' "${lat[@]}" | sort -n | sed -n 3p)"

# 5. slurmctld away: finding leftovers fails, saying so
lab ctl stop
t0=$(now_ms)
expect_fails "leftovers without slurmctld" "$TOOL" leftovers
expect_contains "names what failed" "$(cat "$WORK/out")" "Slurm: reading the jobs: "
echo "leftovers failed $(($(now_ms) - t0)) ms after asking a stopped slurmctld"
finish
