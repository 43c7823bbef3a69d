#!/usr/bin/env bash
# bench/cluster/allreduce.sh - the all-reduce between nodes on the Slurm
# lab's 2 nodes (tests/cluster/lab.sh: each node a network namespace),
# in interleaved turns, medians of RUNS runs:
#   loom net   loom's ring (host/train/comm/net_allreduce.h), 2 nodes x 1 peer
#   gloo       PyTorch's gloo (torch.distributed, init over tcp://) across
#              the same two namespaces (bench/comm/gloo_allreduce.py)
#   mpi tcp    Open MPI's MPI_Allreduce over its TCP transport (ob1/tcp), and
#   mpi ucx    over UCX's TCP transport (pml ucx), both started by mpirun
#              from this machine into the two namespaces
#              (bench/cluster/mpi_allreduce.c, built here with mpicc; both
#              columns are left out, saying so, without Debian's openmpi-bin
#              and libopenmpi-dev)
#   stream     one raw TCP stream from node2 to node1: what the link carries
#   shm        loom's shm all-reduce, 1 node x 2 workers (bench/comm's
#              comm_bench, in place and staged): the cost of crossing a node.
#              It runs outside the lab's namespaces (same CPUs, no network):
#              a lab node's /dev/shm is a 64 MB tmpfs, too small for 64 MB
#              in place (2 gradient regions and staging)
# All figures are bus bandwidth (2 (n-1)/n * bytes / time per all-reduce;
# for 2 peers, what each link carries each way) or, for the stream, bytes /
# time one way.
#
#   bench/cluster/allreduce.sh [BUILD_DIR]     (default: build in this tree)
#   RUNS=7 bench/cluster/allreduce.sh
#
# Needs root and a machine that can make namespaces (lab.sh check); says so
# and skips otherwise. The lab is its own (LOOM_LAB_NAME, LOOM_LAB_DIR and
# LOOM_LAB_NET below, unless set), so it runs beside another lab.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
runs=${RUNS:-5}
python=${PYTHON:-/usr/bin/python3} # Debian's python3-torch
sizes="2700000 67108864"
lab=$root/tests/cluster/lab.sh
export LOOM_LAB_NAME=${LOOM_LAB_NAME:-loombnch}
export LOOM_LAB_DIR=${LOOM_LAB_DIR:-${TMPDIR:-/tmp}/loom-bench-lab}
export LOOM_LAB_NET=${LOOM_LAB_NET:-10.231.9}

find_bin() { # the build puts executables in bin/ or next to their sources
    if [ -x "$build/bin/$1" ]; then echo "$build/bin/$1"; else echo "$build/bench/$2/$1"; fi
}
ring=$(find_bin net_allreduce_bench cluster)
comm=$(find_bin comm_bench comm)
for b in "$ring" "$comm"; do
    [ -x "$b" ] || { echo "allreduce.sh: $b not found; build it: cmake --build $build --target $(basename "$b")" >&2; exit 1; }
done
if ! why=$("$lab" check); then
    echo "allreduce.sh: skipped: $why"
    exit 0
fi
if ! "$python" -c 'import torch.distributed' 2>/dev/null; then
    echo "allreduce.sh: PyTorch is missing: apt-get install -y python3-torch" >&2
    exit 1
fi

"$lab" up 2 >&2
trap '"$lab" down >&2' EXIT
eval "$("$lab" env)"
meet=$LOOM_LAB_SHARED/allreduce-bench # every node sees it at this path
mkdir -p "$meet"
head -c 32 /dev/urandom >"$meet/secret"
# A node's address and interface on the lab's bridge.
address_of() { "$lab" exec "$1" ip -4 -o addr show scope global | awk '{print $4}' | cut -d/ -f1 | head -1; }
interface_of() { "$lab" exec "$1" ip -4 -o addr show scope global | awk '{print $2}' | head -1; }
a1=$(address_of node1)
a2=$(address_of node2)
if1=$(interface_of node1)

# Open MPI: its launcher runs here and starts each rank in its node through
# lab.sh exec (an "rsh agent" naming the node by its address, node i being
# .10+i); both transports are told the lab's /24 alone. Its ranks yield
# when idle instead of spinning: here the two nodes share this machine's
# cores, and spinning ranks ran 4-6x slower (2.7 MB: 0.11 against 0.64
# GB/s over TCP), which a machine per node would not see.
mpi=0
if command -v mpicc >/dev/null && command -v mpirun >/dev/null; then
    mpicc -O2 -o "$meet/mpi_allreduce" "$here/mpi_allreduce.c"
    cat >"$LOOM_LAB_DIR/mpi-agent" <<AGENT
#!/usr/bin/env bash
while [[ "\$1" == -* ]]; do shift; done
host=\$1; shift
exec env LOOM_LAB_NAME=$LOOM_LAB_NAME LOOM_LAB_DIR=$LOOM_LAB_DIR "$lab" exec "node\$(( \${host##*.} - 10 ))" sh -c "\$*"
AGENT
    chmod 0755 "$LOOM_LAB_DIR/mpi-agent"
    mpi=1
else
    echo "allreduce.sh: Open MPI is missing (apt-get install -y openmpi-bin libopenmpi-dev): no mpi columns" >&2
fi
net24=${a1%.*}.0/24
mpi_run() { # mpi_run LABEL SIZE N MCA...: one Open MPI turn on node1 and node2
    local label=$1 size=$2 n=$3; shift 3
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --host "$a1,$a2" -np 2 \
        --mca plm_rsh_agent "$LOOM_LAB_DIR/mpi-agent" --mca oob_tcp_if_include "$net24" \
        --mca mpi_yield_when_idle 1 "$@" \
        "$meet/mpi_allreduce" "$size" "$n" "$label"
}

iterations_for() { # each turn around a second on this machine
    if [ "$1" -le 4000000 ]; then echo 50; else echo 5; fi
}

results=$(mktemp)
trap 'rm -f "$results"; rm -rf "$meet"; "$lab" down >&2' EXIT
port=29600
for run in $(seq "$runs"); do
    for size in $sizes; do
        n=$(iterations_for "$size")
        rm -f "$meet"/peer.* "$meet/stream"
        "$lab" exec node2 "$ring" ring "$meet" 1 2 "$a2" "$size" "$n" &
        "$lab" exec node1 "$ring" ring "$meet" 0 2 "$a1" "$size" "$n" >>"$results"
        wait
        port=$((port + 1)) # a fresh rendezvous port each turn
        "$lab" exec node2 env GLOO_SOCKET_IFNAME="$if1" OMP_NUM_THREADS=1 "$python" \
            "$root/bench/comm/gloo_allreduce.py" "$size" "$n" --rank 1 --world 2 \
            --init "tcp://$a1:$port" &
        "$lab" exec node1 env GLOO_SOCKET_IFNAME="$if1" OMP_NUM_THREADS=1 "$python" \
            "$root/bench/comm/gloo_allreduce.py" "$size" "$n" --rank 0 --world 2 \
            --init "tcp://$a1:$port" >>"$results"
        wait
        if [ "$mpi" = 1 ]; then
            mpi_run mpi-tcp "$size" "$n" --mca pml ob1 --mca btl tcp,self \
                --mca btl_tcp_if_include "$net24" >>"$results"
            mpi_run mpi-ucx "$size" "$n" --mca pml ucx --mca pml_ucx_tls any \
                --mca pml_ucx_devices any -x UCX_TLS=tcp,self -x "UCX_NET_DEVICES=$if1" >>"$results"
        fi
        "$lab" exec node2 "$ring" stream-send "$meet" "$size" "$n" &
        "$lab" exec node1 "$ring" stream-recv "$meet" "$a1" "$size" "$n" >>"$results"
        wait
        "$comm" inplace "$size" "$n" 2 >>"$results"
        "$comm" allreduce "$size" "$n" 2 >>"$results"
    done
    echo "run $run of $runs done" >&2
done

"$python" - "$results" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1]) if line.startswith("RESULT")]
def median(what, size):
    return statistics.median(float(r[3]) for r in rows if r[1] == what and int(r[2]) == size)
runs = sum(1 for r in rows if r[1] == "net") // len({int(r[2]) for r in rows if r[1] == "net"})
print(f"all-reduce between nodes, Slurm lab 2 nodes x 1 peer, GB/s, median of {runs} runs:")
have_mpi = any(r[1] == "mpi-tcp" for r in rows)
print(f"{'size':>8} {'loom net':>9} {'gloo':>7}" + (f" {'mpi tcp':>8} {'mpi ucx':>8}" if have_mpi else "")
      + f" {'stream':>7} {'shm 1x2':>8} {'staged':>7}"
      f" {'net/gloo':>9}" + (f" {'net/mpi':>8}" if have_mpi else "") + f" {'net/stream':>11} {'shm/net':>8}")
for size in sorted({int(r[2]) for r in rows if r[1] == "net"}):
    net, gloo, stream = median("net", size), median("gloo", size), median("stream", size)
    shm, staged = median("inplace", size), median("allreduce", size)
    mpi_cols = mpi_ratio = ""
    if have_mpi:
        tcp, ucx = median("mpi-tcp", size), median("mpi-ucx", size)
        mpi_cols = f" {tcp:>8.3f} {ucx:>8.3f}"
        mpi_ratio = f" {net / max(tcp, ucx):>7.2f}x"
    print(f"{size / 1e6:>6.1f}MB {net:>9.3f} {gloo:>7.3f}{mpi_cols} {stream:>7.3f} {shm:>8.3f} {staged:>7.3f}"
          f" {net / gloo:>8.2f}x{mpi_ratio} {net / stream:>11.2f} {shm / net:>7.1f}x")
PY
