# tests/integration/cluster/lab_lib.sh - a Slurm lab (tests/cluster/lab.sh)
# for one test: its own directory, link names and /24, taken down when the
# test ends, whatever the outcome. Source after lib.sh; LAB_SH and
# lab_usable are set, lab_up N [lab.sh up options] starts it.
LAB_SH=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/cluster/lab.sh
export LOOM_LAB_DIR=$WORK/lab
LAB_WHY=$("$LAB_SH" check) && lab_usable=1 || lab_usable=0
LAB_STARTED=0
LAB_CLAIM=

# lab_claim_net SEED: a /24 (10.231.20-219) of this test's own, and link
# names made from it. Cluster tests run at once, and a /24 derived from the
# PID alone once gave two of them the same one: the choice is made under a
# lock among this machine's tests, each claim naming its test's PID (a
# claim whose test is gone is taken again), and a /24 already on this
# machine is passed over. Needs root, as the lab does.
LAB_CLAIMS=/run/loom-lab-claims
lab_claim_net() {
    local seed=$1 i n owner addrs
    mkdir -p "$LAB_CLAIMS" || return 1
    exec 9>"$LAB_CLAIMS/lock" && flock 9 || return 1
    addrs=$(ip -o addr show)
    for ((i = 0; i < 200; i++)); do
        n=$((20 + (seed + i) % 200))
        owner=$(cat "$LAB_CLAIMS/$n" 2>/dev/null)
        if [ -n "$owner" ] && kill -0 "$owner" 2>/dev/null; then continue; fi
        [[ "$addrs" == *" inet 10.231.$n."* ]] && continue
        echo $$ >"$LAB_CLAIMS/$n" && LAB_CLAIM=$LAB_CLAIMS/$n
        break
    done
    exec 9>&-
    [ -n "$LAB_CLAIM" ] || return 1
    export LOOM_LAB_NET=10.231.$n LOOM_LAB_NAME=${LAB_PREFIX:-lt}$n
}
if [ "$lab_usable" = 1 ] && ! lab_claim_net "${LAB_SEED:-$$}"; then
    lab_usable=0
    LAB_WHY="no free /24 in 10.231.20-219 for a lab (claims in $LAB_CLAIMS)"
fi

lab_cleanup() {
    if [ "$LAB_STARTED" = 1 ]; then "$LAB_SH" down >/dev/null 2>&1; fi
    if [ -n "$LAB_CLAIM" ]; then rm -f "$LAB_CLAIM"; fi
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
# lab_require_loom LOOM: skips the test (77), saying why, where the lab
# cannot run or LOOM was built without libslurm.
lab_require_loom() {
    if [ "$lab_usable" = 0 ]; then
        echo "SKIP: the Slurm lab: $LAB_WHY"; exit 77
    fi
    if ! "$1" serve --help | grep -q -- "--slurm PARTITION"; then
        echo "SKIP: this loom was built without libslurm"; exit 77
    fi
}
# node_idle NODE: Slurm shows NODE idle (no job still completing on it).
node_idle() { [ "$(sinfo -h -n "$1" -o %t 2>/dev/null)" = idle ]; }

# lab_install_loom LOOM BUILD: loom as a site installs it on its login node,
# where the nodes see it too ($SHARED/loom), and the jobs' shared folder
# ($SHARED/files); sets SHARED, NODE1 and LOOM_HOME (the lab's, which node1
# sees; $WORK it does not).
lab_install_loom() {
    SHARED=$LOOM_LAB_SHARED
    chmod 0711 "$LOOM_LAB_DIR" "$SHARED"
    mkdir -p "$SHARED/loom/bin" "$SHARED/loom/lib/loom" "$SHARED/files"
    cp "$1" "$SHARED/loom/bin/loom"
    cp -r "$2/lib/loom/plugins" "$SHARED/loom/lib/loom/plugins"
    NODE1=$LOOM_LAB_NET.11
    export LOOM_HOME=$LOOM_LAB_DIR/home
    cp "$WORK/admin.pw" "$LOOM_LAB_DIR/admin.pw"
}
lab_host_up() { test -s "$LOOM_HOME/host" || ! kill -0 "$HOST_PID" 2>/dev/null; }
# start_on_node1 [serve options]: the host on node1 (a login node: srun
# --uid needs the accounts where it runs; the lab's bridge is private, so
# passwords over plain HTTP are allowed), the CLI logged on as admin.
start_on_node1() {
    rm -f "$LOOM_HOME/host"
    # lab.sh execs nsenter, which execs loom: $! is the host itself
    "$LAB_SH" exec node1 env LOOM_HOME="$LOOM_HOME" "$SHARED/loom/bin/loom" serve \
        --listen "$NODE1:0" --admin-password-file "$LOOM_LAB_DIR/admin.pw" --slurm debug \
        --allow-basic-over-http \
        "$@" >"$WORK/serve.out" 2>&1 &
    HOST_PID=$!
    wait_until 60 lab_host_up
    test -s "$LOOM_HOME/host" || { fail "host on node1: $(cat "$WORK/serve.out")"; exit 1; }
    URL=$(head -n1 "$LOOM_HOME/host")
    echo "$ADMIN_PASSWORD" | "$LOOM" login -u admin --password-stdin >/dev/null || exit 1
}
