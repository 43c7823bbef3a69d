#!/usr/bin/env bash
# `loom serve --slurm PARTITION` on a 2-node Slurm lab: node1 with two
# (fake) GPUs in its gres, node2 with 2 CPUs. `loom slots` lists node1's
# GPUs and node2's CPU slots with their nodes; node2 drained leaves the
# inventory and comes back when resumed; a job's devices are of its kind;
# an exec given Slurm devices is
# refused, not run here; a missing partition, an unreadable configuration
# and an unreachable slurmctld are clear errors at start, not a hang.
# Skipped (77) without root and namespaces, or without libslurm in the build.
LOOM=$1
EXAMPLES=$2/examples/serving
LAB_PREFIX=ls
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lab_lib.sh"

# Flags that need no Slurm. (Hosts refused at start use a home of their
# own: the test's is made by start_host, with its administrator.)
refused_home=$WORK/refused-home
expect_fails "--slurm-conf without --slurm" "$LOOM" serve --slurm-conf /x
expect_contains "it is named" "$(cat "$WORK/out")" "go with --slurm PARTITION"
expect_fails "--cpu-slots with --slurm" "$LOOM" serve --slurm debug --cpu-slots 2
expect_contains "the nodes' slots are meant" "$(cat "$WORK/out")" "--slurm-cpus-per-slot"
expect_fails "an unreadable Slurm configuration" env SLURM_CONF="$WORK/none.conf" \
    "$LOOM" serve --home "$refused_home" --listen 127.0.0.1:0 --slurm debug
if grep -q "built without libslurm" "$WORK/out"; then
    expect_contains "a build without libslurm names the package" "$(cat "$WORK/out")" "libslurm-dev"
    skip_part "the lab: this loom was built without libslurm"
    finish
    exit
fi
expect_contains "the configuration is named" "$(cat "$WORK/out")" "$WORK/none.conf"
expect_contains "and how to name another" "$(cat "$WORK/out")" "SLURM_CONF"
if [ "$lab_usable" = 0 ]; then
    skip_part "the Slurm lab: $LAB_WHY"
    finish
    exit
fi

lab_up 2 --gpus node1:2
start_host --slurm debug
# slots_on NODE [KIND]: how many devices `loom slots` lists on NODE.
slots_on() {
    "$LOOM" --json slots | python3 -c "
import json, sys
print(sum(1 for d in json.load(sys.stdin) if d['node'] == '$1' and ('${2:-}' in ('', d['kind']))))"
}
expect_eq "node1's GPUs" "$(slots_on node1 gpu)" "2"
expect_eq "node1 gives no CPU slot beside its GPUs" "$(slots_on node1 cpu)" "0"
expect_eq "node2's CPU slots" "$(slots_on node2 cpu)" "2"
expect_eq "nothing local" "$(slots_on local)" "0"
expect_contains "the table names the nodes" "$("$LOOM" slots)" "node2"

# GPUs and CPU slots are kept apart: each kind is a pool of its own, so a
# CPU job of 3 can never fit node2's 2 slots (node1's GPUs are not CPU
# slots), nor a GPU job of 3 node1's 2 GPUs, while 2 of each would.
mkdir -p "$WORK/model"
printf '#!/bin/sh\necho ran > "$RESULT_DIR/ran"\n' > "$WORK/model/run.sh"
chmod +x "$WORK/model/run.sh"
expect_fails "a CPU job of 3 workers" "$LOOM" exec start --exec-start command --model-dir "$WORK/model" \
    --model-main run.sh --numWorker 3
expect_contains "is larger than the CPU slots" "$(cat "$WORK/out")" "exceeds the 2 CPU-slot device(s)"
expect_fails "a GPU job of 3 workers" "$LOOM" exec start --exec-start command --model-dir "$WORK/model" \
    --model-main run.sh --numWorker 3 --workerDeviceType gpu
expect_contains "is larger than the GPUs" "$(cat "$WORK/out")" "exceeds the 2 GPU device(s)"

# An exec on Slurm nodes needs the shared folder: refused without it, never
# run on this machine (test_slurm_launch.sh runs one on the nodes).
out=$("$LOOM" exec start --exec-start command --model-dir "$WORK/model" --model-main run.sh 2>&1)
id=$(echo "$out" | grep -o 'admin-[0-9]*-[0-9]*' | head -n1)
exec_message() { "$LOOM" exec view "$id" | awk '$1 == "message" {$1 = ""; print}'; }
wait_until 20 output_is "ERROR" sh -c "'$LOOM' exec view '$id' | awk '\$1 == \"state\" {print \$2}'"
expect_contains "an exec on Slurm devices is refused without --shared-dir" "$(exec_message)" \
    "its folder must be on a folder every node mounts (loom serve --shared-dir DIR)"
expect_eq "the exec's devices are free again" "$("$LOOM" --json slots | grep -c "\"$id\"")" "0"
# Nor are a model's kernel instances.
# (kernel.gpu "exclusive": a GPU each, here node1's; "no" runs beside the
# host without a device.)
echo '{"kernel": {"gpu": "exclusive"}}' > "$WORK/gpu-profile.json"
expect_ok "deploy a model" "$LOOM" model deploy -p "$EXAMPLES/echo-so" --profile "$WORK/gpu-profile.json"
expect_ok "start it" "$LOOM" model start echo-so
model_state() { "$LOOM" --json model view echo-so | python3 -c 'import json,sys; v=json.load(sys.stdin); print(v["state"])'; }
if wait_until 20 output_is failed model_state; then pass; else fail "the model is $(model_state), not failed"; fi
expect_contains "a model on Slurm devices is refused, saying why" "$("$LOOM" model view echo-so)" \
    "serving on Slurm nodes is not supported yet"
expect_eq "and holds no device" "$("$LOOM" --json slots | grep -c '"model/echo-so"')" "0"
expect_ok "stop it" "$LOOM" model stop echo-so

# node2 drained leaves the inventory; resumed, it comes back.
expect_ok "drain node2" scontrol update nodename=node2 state=drain reason=test
if wait_until 20 output_is 0 slots_on node2; then pass; else fail "node2's slots still listed after the drain"; fi
expect_eq "node1 stays" "$(slots_on node1 gpu)" "2"
expect_contains "the drain is logged with its reason" "$(cat "$LOOM_HOME/loom.log")" \
    "node node2 is drain (reason: test)"
expect_ok "resume node2" scontrol update nodename=node2 state=resume
if wait_until 20 output_is 2 slots_on node2 cpu; then pass; else fail "node2's slots not back after resume"; fi
# DOWN, as an administrator sets it, the same way.
expect_ok "node2 down" scontrol update nodename=node2 state=down reason=test-down
if wait_until 20 output_is 0 slots_on node2; then pass; else fail "node2's slots still listed when down"; fi
expect_ok "resume node2" scontrol update nodename=node2 state=resume
if wait_until 20 output_is 2 slots_on node2 cpu; then pass; else fail "node2's slots not back after down"; fi

# slurmctld restarted: the inventory stays meanwhile, said once, and the
# host follows Slurm again once it answers.
expect_ok "slurmctld stops" lab ctl stop
log_has() { grep -q "$1" "$LOOM_HOME/loom.log"; }
if wait_until 30 log_has "the inventory stays as it was until Slurm answers"; then pass; else fail "no word of slurmctld gone"; fi
expect_eq "the inventory stays" "$(slots_on node1 gpu) $(slots_on node2 cpu)" "2 2"
expect_ok "slurmctld starts again" lab ctl start
if wait_until 30 log_has "Slurm answers again"; then pass; else fail "no word of slurmctld back"; fi
expect_eq "said once while it was gone" "$(grep -c 'the inventory stays as it was' "$LOOM_HOME/loom.log")" "1"
expect_ok "drain node2 after the restart" scontrol update nodename=node2 state=drain reason=after
if wait_until 20 output_is 0 slots_on node2; then pass; else fail "a drain after the restart not followed"; fi
stop_host

# A partition Slurm does not have: named, with those it has.
expect_fails "a missing partition" "$LOOM" serve --home "$refused_home" --listen 127.0.0.1:0 --slurm nosuch
expect_contains "the partition is named" "$(cat "$WORK/out")" "--slurm nosuch: no such partition (Slurm has: debug)"
# slurmctld gone: a clear error in bounded time (Slurm's MessageTimeout, 5 s in the lab).
expect_ok "slurmctld stops" lab ctl stop
t0=$SECONDS
expect_fails "slurmctld unreachable at start" timeout 60 "$LOOM" serve --home "$refused_home" --listen 127.0.0.1:0 --slurm debug
expect_contains "slurmctld is named" "$(cat "$WORK/out")" "is slurmctld running"
expect_contains "the configuration is named" "$(cat "$WORK/out")" "$SLURM_CONF"
echo "unreachable slurmctld refused after $((SECONDS - t0)) s"
if [ $((SECONDS - t0)) -lt 30 ]; then pass; else fail "the refusal took $((SECONDS - t0)) s"; fi
finish
