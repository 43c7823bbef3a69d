# tests/integration/cluster/lab_lib.sh - a Slurm lab (tests/cluster/lab.sh)
# for one test: its own directory, link names and /24, taken down when the
# test ends, whatever the outcome. Source after lib.sh; LAB_SH and
# lab_usable are set, lab_up N [lab.sh up options] starts it.
LAB_SH=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/cluster/lab.sh
export LOOM_LAB_DIR=$WORK/lab
# Short and distinct per test run: two cluster tests may run at once.
export LOOM_LAB_NAME=${LAB_PREFIX:-lt}$(($$ % 100000))
export LOOM_LAB_NET=10.231.$((20 + $$ % 200))
LAB_WHY=$("$LAB_SH" check) && lab_usable=1 || lab_usable=0
LAB_STARTED=0

lab_cleanup() {
    if [ "$LAB_STARTED" = 1 ]; then "$LAB_SH" down >/dev/null 2>&1; fi
    cleanup
}
trap lab_cleanup EXIT

# lab_up N [options]: starts the lab and exports its SLURM_CONF; exits the
# test (failed) when it cannot, with the lab's own message.
lab_up() {
    LAB_STARTED=1
    if ! "$LAB_SH" up "$@" >"$WORK/lab-up.out" 2>&1; then
        fail "lab.sh up $*: $(cat "$WORK/lab-up.out")"
        exit 1
    fi
    eval "$("$LAB_SH" env)"
}
lab() { "$LAB_SH" "$@"; }
# node_idle NODE: Slurm shows NODE idle (no job still completing on it).
node_idle() { [ "$(sinfo -h -n "$1" -o %t 2>/dev/null)" = idle ]; }
