#!/usr/bin/env bash
# tests/cluster/lab.sh - a real Slurm cluster on one machine, for tests and
# demos: munged, slurmctld and N slurmd "nodes" (node1..nodeN) from Debian's
# packages (slurmd slurmctld slurm-client munge iproute2), run as root.
#
#   lab.sh up N [--gpus node1:2[,node3:1]] [--hide DIR]...
#   lab.sh down | status | env | check
#   lab.sh ctl stop|start        slurmctld away and back (a restart)
#   lab.sh exec NODE CMD...     run CMD on a node (its network, hostname and
#                               mount namespaces)
#
# Each node is a network namespace (a veth to a bridge; addresses in a
# private /24 used only on that bridge), a UTS namespace (hostname nodeI) and
# a mount namespace in which it has its own /tmp and /dev/shm (tmpfs: shared
# memory cannot leak between nodes), its own /etc/hosts, /etc/passwd and
# /etc/group (the host's system accounts plus the accounts loom runs jobs
# as, loom-uFIRST..), a tmpfs over /root, /home and every --hide DIR (the
# loom host's home), and LAB/shared bind-mounted at the same path on every
# node, as an NFS mount would be. slurmctld runs in the root network
# namespace on the bridge address, so Slurm's clients and libslurm work from
# the host with `eval "$(lab.sh env)"`.
#
# Settings (environment): LOOM_LAB_DIR (default ${TMPDIR:-/tmp}/loom-lab),
# LOOM_LAB_NAME (prefix of the bridge, namespaces and links, at most 8
# characters: default loomlab), LOOM_LAB_NET (the /24's first three octets:
# default 10.231.7), LOOM_LAB_CPUS (CPUs per node: 2), LOOM_LAB_UID_FIRST and
# LOOM_LAB_ACCOUNTS (the accounts made on nodes: 200000 and 16, as loom's
# --job-uid-range starts).
#
# Every wait has a deadline and checks that the daemon it waits for lives;
# `down` kills exactly the processes `up` started (and whatever runs inside
# the lab's namespaces), then removes the namespaces, links and the run
# directory, leaving nothing behind.
set -euo pipefail

LAB=${LOOM_LAB_DIR:-${TMPDIR:-/tmp}/loom-lab}
RUN=$LAB/run
SHARED=$LAB/shared

log() { echo "lab.sh: $*" >&2; }
die() { log "$*"; exit 1; }

# Settings fixed at `up`, read back by every other command.
load_config() {
    NAME=${LOOM_LAB_NAME:-loomlab}
    NET=${LOOM_LAB_NET:-10.231.7}
    CPUS=${LOOM_LAB_CPUS:-2}
    UID_FIRST=${LOOM_LAB_UID_FIRST:-200000}
    ACCOUNTS=${LOOM_LAB_ACCOUNTS:-16}
    # shellcheck disable=SC1091
    [ -f "$RUN/config" ] && . "$RUN/config"
    BR=${NAME}br
    NSPFX=${NAME}-node
    VPFX=${NAME}v
    CTL_IP=$NET.1
}
node_ip() { echo "$NET.$((10 + $1))"; }

# alive PID: exists and is not a zombie (kill -0 succeeds on a zombie, and
# PID 1 may reap late).
alive() {
    [ -n "${1:-}" ] && [ -r "/proc/$1/stat" ] || return 1
    local state
    state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
    [ -n "$state" ] && [ "$state" != Z ]
}
pid_of() { cat "$RUN/pids/$1.pid" 2>/dev/null || true; }
# The poll interval of every bounded wait below.
tick() { sleep 0.05; }

# wait_for SECONDS WHAT DAEMON COMMAND...: polls COMMAND until it succeeds;
# fails at once when DAEMON (a pids/ name, or -) has died, or after SECONDS.
wait_for() {
    local end=$((SECONDS + $1)) what=$2 daemon=$3
    shift 3
    until "$@" >/dev/null 2>&1; do
        if [ "$daemon" != - ] && ! alive "$(pid_of "$daemon")"; then
            die "$daemon died while waiting for $what; see $RUN/log/$daemon.*"
        fi
        [ "$SECONDS" -lt "$end" ] || die "$what: not after $1 s"
        tick
    done
}

# check: whether this machine can make the lab; prints why not.
cmd_check() {
    [ "$(id -u)" -eq 0 ] || { echo "the Slurm lab needs root (namespaces, a bridge, mounts)"; return 1; }
    local p
    for p in unshare nsenter ip munged slurmctld slurmd sinfo srun scontrol; do
        command -v "$p" >/dev/null 2>&1 ||
            { echo "the Slurm lab needs $p (scripts/bootstrap installs slurmd slurmctld slurm-client munge iproute2)"; return 1; }
    done
    unshare --mount --uts --net true 2>/dev/null ||
        { echo "this machine cannot make namespaces (unshare --mount --uts --net failed)"; return 1; }
    return 0
}

# The accounts of a node: the host's system accounts and loom's job accounts.
write_accounts() {
    local u
    awk -F: '$3 < 1000 || $3 == 65534' /etc/passwd > "$RUN/etc/passwd"
    awk -F: '$3 < 1000 || $3 == 65534' /etc/group > "$RUN/etc/group"
    for ((u = UID_FIRST; u < UID_FIRST + ACCOUNTS; u++)); do
        echo "loom-u$u:x:$u:$u:loom job account:/nonexistent:/usr/sbin/nologin" >> "$RUN/etc/passwd"
        echo "loom-u$u:x:$u:" >> "$RUN/etc/group"
    done
    chmod 0644 "$RUN/etc/passwd" "$RUN/etc/group"
}

# gres_of NODE: the node's GPU count from --gpus (0 when none).
gres_of() {
    local item
    for item in ${GPUS//,/ }; do
        [ "${item%%:*}" = "$1" ] && { echo "${item#*:}"; return; }
    done
    echo 0
}

free_port() {
    # from a random start: two labs coming up at once rarely try the same one
    local p k start=$((16817 + RANDOM % 1000))
    for ((k = 0; k < 1000; k++)); do
        p=$((16817 + (start - 16817 + k) % 1000))
        [ -z "$(ss -Htln "sport = :$p" 2>/dev/null)" ] && { echo "$p"; return; }
    done
    die "no free TCP port in 16817-17816 for slurmctld"
}

write_configs() {
    local n=$1 i g
    mkdir -p "$RUN"/{etc,log,pids,ctld,munge,spool,fakedev,stage} "$SHARED"
    chmod 0755 "$LAB" "$RUN" "$RUN"/*
    # the shared directory is where jobs of every account write
    chmod 1777 "$SHARED"
    for ((i = 1; i <= n; i++)); do mkdir -p "$RUN/spool/node$i" "$RUN/stage/node$i"; done
    write_accounts
    {
        echo "127.0.0.1 localhost"
        echo "$CTL_IP ctl"
        for ((i = 1; i <= n; i++)); do echo "$(node_ip "$i") node$i"; done
    } > "$RUN/etc/hosts"
    local port; port=$(free_port)
    cat > "$RUN/etc/slurm.conf" <<EOF
ClusterName=loomlab
SlurmctldHost=ctl($CTL_IP)
SlurmctldPort=$port
SlurmdPort=6818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$RUN/munge/munge.socket
StateSaveLocation=$RUN/ctld
SlurmdSpoolDir=$RUN/spool/%n
SlurmctldPidFile=$RUN/pids/slurmctld.pidfile
SlurmdPidFile=$RUN/pids/slurmd.%n.pidfile
SlurmctldLogFile=$RUN/log/slurmctld.log
SlurmdLogFile=$RUN/log/slurmd.%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
MailProg=/bin/true
SlurmdParameters=config_overrides
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
MessageTimeout=5
InactiveLimit=0
MinJobAge=300
KillWait=5
Waittime=0
EOF
    : > "$RUN/etc/gres.conf"
    echo "AutoDetect=off" >> "$RUN/etc/gres.conf"
    for ((i = 1; i <= n; i++)); do
        g=$(gres_of "node$i")
        local gres=""
        if [ "$g" -gt 0 ]; then
            gres=" Gres=gpu:$g"
            # gres File= must be a character device: /dev/null's twins
            mkdir -p "$RUN/fakedev/node$i"
            local k
            for ((k = 0; k < g; k++)); do mknod -m 0666 "$RUN/fakedev/node$i/nvidia$k" c 1 3; done
            echo "NodeName=node$i Name=gpu File=$RUN/fakedev/node$i/nvidia[0-$((g - 1))]" >> "$RUN/etc/gres.conf"
        fi
        echo "NodeName=node$i NodeHostname=node$i NodeAddr=$(node_ip "$i") CPUs=$CPUS Boards=1" \
             "SocketsPerBoard=1 CoresPerSocket=$CPUS ThreadsPerCore=1 RealMemory=1000" \
             "State=UNKNOWN$gres" >> "$RUN/etc/slurm.conf"
    done
    echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP" >> "$RUN/etc/slurm.conf"
    : > "$RUN/etc/cgroup.conf"
}

start_munge() {
    dd if=/dev/urandom of="$RUN/munge/munge.key" bs=1024 count=1 status=none
    chmod 0400 "$RUN/munge/munge.key"
    setsid munged -F --force --key-file="$RUN/munge/munge.key" \
        --socket="$RUN/munge/munge.socket" --pid-file="$RUN/munge/munged.pidfile" \
        --log-file="$RUN/log/munged.log" --seed-file="$RUN/munge/munged.seed" \
        </dev/null >>"$RUN/log/munged.stdout" 2>&1 &
    echo $! > "$RUN/pids/munged.pid"
    wait_for 10 "munged's socket" munged munge_ok
}
munge_ok() { munge -n -S "$RUN/munge/munge.socket" </dev/null | unmunge -S "$RUN/munge/munge.socket"; }

setup_net() {
    local n=$1 i ns
    # The first `ip netns add` makes /run/netns a bind mount: undone by down.
    [ -d /run/netns ] || touch "$RUN/created_run_netns_dir"
    mountpoint -q /run/netns || touch "$RUN/created_run_netns_mount"
    ip link add "$BR" type bridge
    ip addr add "$CTL_IP/24" dev "$BR"
    ip link set "$BR" up
    for ((i = 1; i <= n; i++)); do
        ns=$NSPFX$i
        ip netns add "$ns"
        ip link add "$VPFX$i" type veth peer name eth0 netns "$ns"
        ip link set "$VPFX$i" master "$BR" up
        ip -n "$ns" link set lo up
        ip -n "$ns" addr add "$(node_ip "$i")/24" dev eth0
        ip -n "$ns" link set eth0 up
    done
}

# hide DIR MODE STAGE: a fresh tmpfs over DIR in this mount namespace. The
# lab's own directory stays visible at its path when it lies beneath DIR:
# the tmpfs is prepared on STAGE (the lab directory bound into it) and then
# moved over DIR.
hide() {
    local dir=$1 mode=$2 stage=$3
    [ -d "$dir" ] || return 0
    mount -t tmpfs -o "mode=$mode,size=64m" loomlab "$stage"
    case "$LAB/" in
    "$dir"/*)
        mkdir -p "$stage${LAB#"$dir"}"
        mount --bind "$LAB" "$stage${LAB#"$dir"}"
        ;;
    esac
    mount --move "$stage" "$dir"
}

# _node NAME: runs inside a new UTS and mount namespace (unshare makes its
# mounts private): gives it what the header says, then becomes ITS_DAEMON.
cmd_node() {
    local name=$1; shift
    hostname "$name"
    local stage=$RUN/stage/$name d
    mkdir -p "$stage"
    mount --bind "$RUN/etc/hosts" /etc/hosts
    mount --bind "$RUN/etc/passwd" /etc/passwd
    mount --bind "$RUN/etc/group" /etc/group
    if [ "$name" != ctl ]; then
        hide /tmp 1777 "$stage"
        hide /dev/shm 1777 "$stage"
        hide /root 0700 "$stage"
        hide /home 0755 "$stage"
        while read -r d; do [ -n "$d" ] && hide "$d" 0700 "$stage"; done < "$RUN/hide"
        mount --bind "$SHARED" "$SHARED"
    fi
    # A daemon's working directory is /: the caller's may be under /tmp or
    # a home, which this node does not see (slurmstepd returns to it after
    # every step and fails there).
    cd /
    exec "$@"
}

start_slurmctld() {
    SLURM_CONF=$RUN/etc/slurm.conf setsid unshare --uts --mount -- \
        bash "$SELF" _node ctl slurmctld -D -c \
        </dev/null >>"$RUN/log/slurmctld.stdout" 2>&1 &
    echo $! > "$RUN/pids/slurmctld.pid"
}

start_slurmd() {
    local i=$1
    # nsenter, not `ip netns exec`: that remounts /sys, hiding /sys/fs/cgroup,
    # and slurmd always starts its cgroup plugin.
    SLURM_CONF=$RUN/etc/slurm.conf setsid nsenter --net="/run/netns/$NSPFX$i" -- \
        unshare --uts --mount -- bash "$SELF" _node "node$i" slurmd -D -N "node$i" \
        </dev/null >>"$RUN/log/slurmd.node$i.stdout" 2>&1 &
    echo $! > "$RUN/pids/slurmd.node$i.pid"
}

ctl_up() { scontrol ping | grep -q 'is UP'; }
nodes_idle() { [ "$(sinfo -h -N -t idle -o '%N' | sort -u | wc -l)" -ge "$1" ]; }

cmd_up() {
    local n=${1:-}
    shift || true
    [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 50 ] ||
        { log "usage: lab.sh up N (1..50) [--gpus nodeI:G[,...]] [--hide DIR]..."; exit 2; }
    GPUS=""
    local hides=()
    while [ $# -gt 0 ]; do
        case "$1" in
        --gpus) [ $# -ge 2 ] || die "--gpus: expected nodeI:G[,nodeJ:G]"; GPUS=$2; shift 2 ;;
        --hide) [ $# -ge 2 ] || die "--hide: expected a directory"; hides+=("$2"); shift 2 ;;
        *) log "up: unknown option '$1'"; exit 2 ;;
        esac
    done
    local item
    for item in ${GPUS//,/ }; do
        [[ "$item" =~ ^node([0-9]+):([0-9]+)$ ]] && [ "${BASH_REMATCH[1]}" -ge 1 ] &&
            [ "${BASH_REMATCH[1]}" -le "$n" ] && [ "${BASH_REMATCH[2]}" -le 16 ] ||
            die "--gpus: '$item' is not nodeI:G with I in 1..$n and G in 0..16"
    done
    local why
    why=$(cmd_check) || die "$why"
    [ ${#NAME} -le 8 ] || die "LOOM_LAB_NAME '$NAME': at most 8 characters (link names are short)"
    [ -e "$RUN" ] && die "$RUN exists: run 'lab.sh down' first"
    ip link show "$BR" >/dev/null 2>&1 && die "bridge $BR exists: another lab (LOOM_LAB_NAME) runs"
    ip -o addr show | grep -q " inet $NET\." && die "$NET.0/24 is in use on this machine (LOOM_LAB_NET)"
    local t0=$SECONDS
    mkdir -p "$RUN"
    printf 'NAME=%q\nNET=%q\nCPUS=%q\nUID_FIRST=%q\nACCOUNTS=%q\n' \
        "$NAME" "$NET" "$CPUS" "$UID_FIRST" "$ACCOUNTS" > "$RUN/config"
    echo "$n" > "$RUN/nodes"
    printf '%s\n' "${hides[@]}" > "$RUN/hide"
    trap 'rc=$?; if [ $rc -ne 0 ]; then log "up failed; logs kept in $LAB/lastlogs"; KEEP_LOGS=1 cmd_down; fi' EXIT
    write_configs "$n"
    start_munge
    setup_net "$n"
    export SLURM_CONF=$RUN/etc/slurm.conf
    start_slurmctld
    wait_for 30 "slurmctld answering" slurmctld ctl_up
    local i
    for ((i = 1; i <= n; i++)); do start_slurmd "$i"; done
    local end=$((SECONDS + 60))
    until nodes_idle "$n" 2>/dev/null; do
        for ((i = 1; i <= n; i++)); do
            alive "$(pid_of "slurmd.node$i")" || die "slurmd of node$i died; see $RUN/log/slurmd.node$i.*"
        done
        [ "$SECONDS" -lt "$end" ] || { sinfo -N -l >&2 || true; die "not all $n nodes idle after 60 s"; }
        tick
    done
    trap - EXIT
    log "up: $n node(s) idle in $((SECONDS - t0)) s; eval \"\$(lab.sh env)\" to use it"
}

# kill_wait PID SECONDS: TERM, then KILL when it outlives SECONDS.
kill_wait() {
    local pid=$1 end=$((SECONDS + $2))
    alive "$pid" || return 0
    kill -TERM "$pid" 2>/dev/null || true
    while alive "$pid"; do
        if [ "$SECONDS" -ge "$end" ]; then
            kill -KILL "$pid" 2>/dev/null || true
            end=$((SECONDS + 5))
            while alive "$pid" && [ "$SECONDS" -lt "$end" ]; do tick; done
            return 0
        fi
        tick
    done
}

lab_namespaces() { ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$NSPFX[0-9]+$" || true; }
no_jobs() { [ -z "$(squeue -h -o %i)" ]; }

cmd_down() {
    local f ns pid
    # Without its settings the names are guesses: another lab's, maybe.
    if [ ! -f "$RUN/config" ]; then
        log "down: no lab at $LAB"
        return 0
    fi
    export SLURM_CONF=$RUN/etc/slurm.conf
    # 1. jobs, while the controller is there to end their steps
    if alive "$(pid_of slurmctld)" && ! no_jobs 2>/dev/null; then
        scancel --full --quiet 2>/dev/null || true
        ( wait_for 10 "the lab's jobs to end" - no_jobs ) || true
    fi
    # 2. slurmd's, then whatever is left inside the nodes' namespaces
    for f in "$RUN"/pids/slurmd.node*.pid; do [ -f "$f" ] && kill_wait "$(cat "$f")" 10; done
    for ns in $(lab_namespaces); do
        for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
    done
    # 3. the controller and munged
    for f in "$RUN/pids/slurmctld.pid" "$RUN/pids/munged.pid"; do
        [ -f "$f" ] && kill_wait "$(cat "$f")" 10
    done
    # 4. the network: deleting a namespace deletes its veth end, and its peer
    for ns in $(lab_namespaces); do ip netns del "$ns"; done
    for f in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -E "^$VPFX[0-9]+$" || true); do
        ip link del "$f" 2>/dev/null || true
    done
    if ip link show "$BR" >/dev/null 2>&1; then ip link del "$BR"; fi
    if [ -f "$RUN/created_run_netns_mount" ] && mountpoint -q /run/netns &&
       [ -z "$(ls -A /run/netns 2>/dev/null)" ]; then
        umount /run/netns 2>/dev/null || true
    fi
    if [ -f "$RUN/created_run_netns_dir" ]; then rmdir /run/netns 2>/dev/null || true; fi
    # 5. the daemons' reaping (PID 1 may be slow), then the run directory
    for f in "$RUN"/pids/*.pid; do
        [ -f "$f" ] || continue
        pid=$(cat "$f")
        local end=$((SECONDS + 10))
        while [ -e "/proc/$pid" ] && [ "$SECONDS" -lt "$end" ]; do tick; done
    done
    if [ -d "$RUN" ]; then
        if [ -n "${KEEP_LOGS:-}" ]; then rm -rf "$LAB/lastlogs"; cp -a "$RUN/log" "$LAB/lastlogs"; fi
        rm -rf "$RUN"
    fi
    log "down: done"
}

# ctl stop|start: slurmctld goes away and comes back (its state is kept in
# the run directory), as when an administrator restarts it.
cmd_ctl() {
    [ -f "$RUN/config" ] || die "ctl: no lab at $LAB"
    export SLURM_CONF=$RUN/etc/slurm.conf
    case "${1:-}" in
    stop) kill_wait "$(pid_of slurmctld)" 10 ;;
    start)
        alive "$(pid_of slurmctld)" && die "ctl start: slurmctld runs already"
        start_slurmctld
        wait_for 30 "slurmctld answering" slurmctld ctl_up
        ;;
    *) log "usage: lab.sh ctl stop|start"; exit 2 ;;
    esac
}

cmd_exec() {
    local node=$1; shift
    [[ "$node" =~ ^node[0-9]+$ ]] || die "exec: '$node' is not a node name (nodeI)"
    local pid; pid=$(pid_of "slurmd.$node")
    [ -n "$pid" ] || die "exec: no node $node in this lab"
    alive "$pid" || die "exec: slurmd of $node is not running"
    SLURM_CONF=$RUN/etc/slurm.conf exec nsenter -t "$pid" -n -u -m -- "$@"
}

cmd_status() {
    local f pid
    [ -d "$RUN" ] || { echo "no lab at $LAB"; return 1; }
    for f in "$RUN"/pids/*.pid; do
        [ -f "$f" ] || continue
        pid=$(cat "$f")
        printf '%-22s %-8s %s\n' "$(basename "$f" .pid)" "$pid" "$(alive "$pid" && echo alive || echo DEAD)"
    done
    lab_namespaces
    SLURM_CONF=$RUN/etc/slurm.conf sinfo -N -l 2>&1 || true
}

cmd_env() {
    [ -f "$RUN/etc/slurm.conf" ] || die "no lab at $LAB (lab.sh up N)"
    printf 'export SLURM_CONF=%q\nexport LOOM_LAB_DIR=%q\nexport LOOM_LAB_SHARED=%q\n' \
        "$RUN/etc/slurm.conf" "$LAB" "$SHARED"
}

SELF=$(readlink -f "$0")
load_config
case "${1:-}" in
up) shift; cmd_up "$@" ;;
down) cmd_down ;;
status) cmd_status ;;
env) cmd_env ;;
check) cmd_check ;;
ctl) shift; cmd_ctl "$@" ;;
exec) shift; [ $# -ge 2 ] || { log "usage: lab.sh exec NODE CMD..."; exit 2; }; cmd_exec "$@" ;;
_node) shift; cmd_node "$@" ;;
*) log "usage: lab.sh up N [--gpus nodeI:G,...] [--hide DIR]... | down | status | env | check | ctl stop|start | exec NODE CMD..."; exit 2 ;;
esac
