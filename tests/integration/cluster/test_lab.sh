#!/usr/bin/env bash
# The Slurm lab (tests/cluster/lab.sh): a 2-node cluster whose nodes are
# isolated as separate machines would be. /tmp and /dev/shm are each node's
# own; the loom job accounts exist on the nodes and Slurm runs a job under
# one; the host's home directories are hidden; the shared directory is the
# same on every node and the host; `down` leaves no process, namespace,
# link or mount behind. Skipped (77) where namespaces cannot be made.
LOOM=$1
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lab_lib.sh"

# The harness's usage errors need no root.
expect_fails "up without a node count" lab up
expect_contains "its usage is named" "$(cat "$WORK/out")" "usage: lab.sh up N"
expect_fails "an unknown command" lab frob
expect_ok "down where there is no lab" env LOOM_LAB_DIR="$WORK/nolab" "$LAB_SH" down
expect_contains "says so, touching nothing" "$(cat "$WORK/out")" "no lab at $WORK/nolab"
expect_fails "--gpus naming a node outside the lab" env LOOM_LAB_DIR="$WORK/nolab" "$LAB_SH" up 2 --gpus node3:1
if [ "$lab_usable" = 0 ]; then
    skip_part "the Slurm lab: $LAB_WHY"
    finish
    exit
fi

# Labs of tests running at once stay apart: this test's /24 is claimed in
# its name, and a second test whose PID would give the same /24 (seeded as
# this one here) is given another, its claim gone when it ends.
net_index=${LOOM_LAB_NET##*.}
expect_eq "this test's /24 is claimed in its name" "$(cat "/run/loom-lab-claims/$net_index" 2>/dev/null)" "$$"
other_net=$(LAB_SEED=$$ bash -c '. "$1/../lib.sh"; . "$1/lab_lib.sh"; echo "$LOOM_LAB_NET $LOOM_LAB_NAME"' _ \
    "$(cd "$(dirname "$0")" && pwd)")
expect_ok "a second test seeded as this one is given a /24 and names of its own" \
    test -n "$other_net" -a "${other_net% *}" != "$LOOM_LAB_NET" -a "${other_net#* }" != "$LOOM_LAB_NAME"
other_index=${other_net% *}
expect_eq "its claim is gone with it" "$(test -e "/run/loom-lab-claims/${other_index##*.}" && echo left)" ""

mkdir -p "$LOOM_HOME"
echo secret > "$LOOM_HOME/host-only"
# A home outside /tmp (as root's /var/lib/loom is): hidden by --hide alone.
OUTER_HOME=$(mktemp -d /var/tmp/loom-lab-home-XXXXXX)
echo secret > "$OUTER_HOME/host-only"
lab_cleanup_home() { rm -rf "$OUTER_HOME"; lab_cleanup; }
trap lab_cleanup_home EXIT
t0=$(date +%s%N)
lab_up 2 --gpus node1:2 --hide "$LOOM_HOME" --hide "$OUTER_HOME"
echo "lab up (2 nodes) in $((($(date +%s%N) - t0) / 1000000)) ms"
SHARED=$LOOM_LAB_SHARED
probe=loom-lab-probe-$$

# /tmp and /dev/shm: node1's own
expect_ok "node1 writes its /tmp" lab exec node1 sh -c "echo 1 > /tmp/$probe"
expect_ok "node1 sees its own /tmp file" lab exec node1 test -e "/tmp/$probe"
expect_fails "node2 does not see node1's /tmp file" lab exec node2 test -e "/tmp/$probe"
expect_eq "the host does not see node1's /tmp file" "$(test -e "/tmp/$probe" && echo seen)" ""
# (shm_open through Python; its tracker would unlink the segment at exit)
expect_ok "node1 makes a shared-memory segment" lab exec node1 python3 -c "
from multiprocessing import shared_memory, resource_tracker
s = shared_memory.SharedMemory(name='$probe', create=True, size=4096)
resource_tracker.unregister(s._name, 'shared_memory'); s.close()"
expect_ok "node1 opens its segment again" lab exec node1 python3 -c "
from multiprocessing import shared_memory, resource_tracker
s = shared_memory.SharedMemory(name='$probe')
resource_tracker.unregister(s._name, 'shared_memory'); s.close()"
expect_fails "node2 does not see node1's segment" lab exec node2 test -e "/dev/shm/$probe"
expect_eq "the host does not see node1's segment" "$(test -e "/dev/shm/$probe" && echo seen)" ""

# names, hosts and accounts
expect_eq "node1's hostname" "$(lab exec node1 hostname)" "node1"
expect_eq "node2 resolves node1" "$(lab exec node2 getent hosts node1 | awk '{print $2}')" "node1"
expect_eq "node1 has the first loom account" \
    "$(lab exec node1 getent passwd 200000 | cut -d: -f1)" "loom-u200000"
expect_eq "node2 has the sixteenth" "$(lab exec node2 getent passwd 200015 | cut -d: -f1)" "loom-u200015"

# a Slurm job under a loom account (srun --uid needs root and the account
# where srun runs: a node, as a login node would be)
echo "from the host" > "$SHARED/from-host"
wait_until 20 node_idle node2
out=$(lab exec node1 timeout 30 srun -w node2 --uid=200001 --gid=200001 --chdir="$SHARED" \
      sh -c 'id -u; hostname; cat from-host; echo from-node2 > from-node2' 2>&1)
expect_eq "srun as uid 200001 on node2" "$out" "$(printf '200001\nnode2\nfrom the host')"
expect_eq "the job's file is on the shared directory, the account's" \
    "$(stat -c %u "$SHARED/from-node2" 2>&1)" "200001"
wait_until 20 node_idle node1
expect_eq "srun -w node1 id -u as 200000" \
    "$(lab exec node1 timeout 30 srun -w node1 --uid=200000 --gid=200000 --chdir="$SHARED" id -u 2>&1)" "200000"
wait_until 20 node_idle node1
expect_eq "a fake GPU of node1's gres" \
    "$(timeout 30 srun -w node1 --gres=gpu:1 --chdir="$SHARED" printenv CUDA_VISIBLE_DEVICES 2>&1)" "0"

# the host's home directories are hidden; the shared directory is not
expect_eq "/root is empty on a node" "$(lab exec node1 ls -A /root)" ""
expect_eq "/home is empty on a node" "$(lab exec node2 ls -A /home)" ""
expect_fails "the loom host's home is not readable on a node" lab exec node1 cat "$LOOM_HOME/host-only"
expect_fails "a --hide home outside /tmp is not readable on a node" lab exec node2 cat "$OUTER_HOME/host-only"
expect_eq "it is an empty directory there" "$(lab exec node2 ls -A "$OUTER_HOME")" ""
expect_eq "the host still reads it" "$(cat "$OUTER_HOME/host-only")" "secret"
expect_eq "the shared directory is a mount on the node" \
    "$(lab exec node1 findmnt -n -o TARGET --target "$SHARED")" "$SHARED"

# down leaves nothing behind
pids=$(cat "$LOOM_LAB_DIR"/run/pids/*.pid)
expect_ok "lab down" lab down
LAB_STARTED=0
left=""
for p in $pids; do [ -e "/proc/$p" ] && left="$left $p"; done
expect_eq "no daemon of the lab is left" "$left" ""
expect_eq "no namespace is left" "$(ip netns list | grep "^$LOOM_LAB_NAME-" || true)" ""
expect_eq "no link is left" "$(ip -o link show | grep -E ": $LOOM_LAB_NAME(br|v[0-9])" || true)" ""
expect_eq "no mount is left" "$(grep -c "$LOOM_LAB_DIR" /proc/self/mountinfo)" "0"
expect_eq "the run directory is gone" "$(test -e "$LOOM_LAB_DIR/run" && echo left)" ""
finish
