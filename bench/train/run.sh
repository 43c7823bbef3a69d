#!/bin/sh
# bench/train/run.sh - loom's elastic trainer beside PyTorch, from the same
# invocation on the same machine (README.md says what each figure means).
#
# Default: training throughput of the MLP 784-512-512-10 on Fashion-MNIST at
# batch 64 per worker: loom with 1 and 2 workers; PyTorch in one process,
# DistributedDataParallel over gloo with 2 processes, and 2 processes that
# never synchronise; the native adapter alone without the trainer (1 and 2
# processes, when bench_native is built). Interleaved, RUNS repetitions,
# medians. Then the elastic resize latency (request -> first step with the
# new worker) over GROWS grows from 1 to 2 workers, on the gzip data as
# installed and on uncompressed copies.
#
# --accuracy: instead, the 10-epoch accuracy runs (2 workers, batch 64 each)
# of the MLP and of a 2-conv CNN, loom's test accuracy beside PyTorch DDP's
# for the same model and schedule (the CNN takes about 90 minutes).
#
# --only recovery: the cost of the coordinator's copy of the state (what a
# job rewinds to when it loses every worker): the MLP on 1 and 2 workers
# with no copy during an epoch (EDT_RECOVERY_INTERVAL_MS=86400000), the
# default interval (10 s: longer than the timed epoch, so at most one
# copy in it), a copy every second, and copies as often as allowed (0: the
# copy's round at most 1/64 of the time), interleaved, RUNS repetitions,
# medians and per-run ratios.
#
# --only profile: where a step's time goes, MLP on 2 workers (and 1), with
# one step per coordinator round (EDT_STEPS_PER_ROUND=1, the old way) and
# with the default multi-step rounds, and (2 workers) with the gradients
# reduced through staging instead of in place (EDT_IN_PLACE_REDUCE=0) and
# with the all-reduce during backward as well (EDT_OVERLAP_REDUCE=1): the coordinator's per-step sampling,
# sending plans, waiting for replies and recording (driver log), each
# worker's compute, all-reduce (and the part of it spent waiting for the
# slower peer), optimizer apply and time between rounds (worker logs), for
# the timed epoch, medians over RUNS runs; samples/s beside.
#
# --only async: --syncMode ASYNC (the parameter server) beside the
# synchronous trainer, MLP on 2 workers, batch 64 each, ACC_EPOCHS epochs
# from the same spec and seed: test accuracy after the last epoch and the
# median samples/s of epochs 2 and later, RUNS runs.
#
# --only denormals: the MLP on 1 worker for DN_EPOCHS epochs with the native
# adapter's default (denormals flushed to zero in its calls) beside the same
# spec with "flush_denormals": false, samples/s per epoch and the losses.
#
#   bench/train/run.sh [BUILD_DIR]                 (default: build-benchtrain)
#   bench/train/run.sh --only throughput|resize|recovery|profile|async|denormals [BUILD_DIR]
#   bench/train/run.sh --accuracy [--models mlp,cnn] [BUILD_DIR]
#   env: RUNS=3 EPOCHS=2 GROWS=5 ACC_EPOCHS=10 NATIVE_SECONDS=4 DN_EPOCHS=4 KEEP=1 (keep
#        the work dir) DATA=/usr/share/datasets/fashion-mnist PYTHON=/usr/bin/python3
set -eu

here=$(cd "$(dirname "$0")" && pwd)
mode=all
models=mlp,cnn
build=
while [ $# -gt 0 ]; do
    case $1 in
        --accuracy) mode=accuracy ;;
        --only) mode=$2; shift ;;
        --models) models=$2; shift ;;
        -h|--help) sed -n '2,45p' "$0"; exit 0 ;;
        -*) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
        *) build=$1 ;;
    esac
    shift
done
build=${build:-$here/../../build-benchtrain}
runs=${RUNS:-3}
epochs=${EPOCHS:-2}
grows=${GROWS:-5}
acc_epochs=${ACC_EPOCHS:-10}
native_seconds=${NATIVE_SECONDS:-4}
dn_epochs=${DN_EPOCHS:-4}
data=${DATA:-/usr/share/datasets/fashion-mnist}
# Debian's python3-torch lives in the system interpreter, not in a pyenv one.
python=${PYTHON:-/usr/bin/python3}
loom=$build/bin/loom

if [ ! -x "$loom" ] || [ ! -e "$build/lib/loom/plugins/native.so" ]; then
    echo "run.sh: loom or native.so missing in $build; build them:" >&2
    echo "  cmake -S $here/../.. -B $build -DCMAKE_BUILD_TYPE=RelWithDebInfo && make -C $build -j2 loom native jsonl bench_native" >&2
    exit 1
fi
if [ ! -r "$data/train-images-idx3-ubyte.gz" ]; then
    echo "run.sh: Fashion-MNIST not found in $data: apt-get install -y dataset-fashion-mnist" >&2
    exit 1
fi
case $mode in recovery|profile|async) need_torch= ;; *) need_torch=1 ;; esac
if [ -n "$need_torch" ] && ! "$python" -c 'import torch.distributed, numpy' 2>/dev/null; then
    echo "run.sh: PyTorch missing for $python: apt-get install -y python3-torch" >&2
    exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/loom-benchtrain-XXXXXX")
export LOOM_HOME="$work/home"
unset LOOM_HOST
cleanup() {
    if [ -s "$work/host.pid" ]; then
        pid=$(cat "$work/host.pid")
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    fi
    if [ -n "${KEEP:-}" ]; then echo "work directory kept: $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The host's pid goes to a file: a restart may happen in a subshell. The
# benchmark's own home has an administrator with a throwaway password, and
# the CLI logs on as it.
printf 'bench-admin-password\n' >"$work/admin.pw"
start_host() {
    rm -f "$LOOM_HOME/host"
    mkdir -p "$work/mlp-raw/data" # raw_model's data: like $data, a data root
    "$loom" serve --listen 127.0.0.1:0 --admin-password-file "$work/admin.pw" \
        --data-root "$data" --data-root "$work/mlp-raw/data" >>"$work/serve.out" 2>&1 &
    echo $! >"$work/host.pid"
    for _ in $(seq 1 100); do
        if [ -s "$LOOM_HOME/host" ]; then
            "$loom" login -u admin --password-stdin <"$work/admin.pw" >/dev/null && return 0
            echo "run.sh: cannot log on to the host" >&2
            exit 1
        fi
        sleep 0.05
    done
    echo "run.sh: the host did not start: $(cat "$work/serve.out")" >&2
    exit 1
}
host_alive() { kill -0 "$(cat "$work/host.pid")" 2>/dev/null; }
start_host

# ---- helpers ---------------------------------------------------------------

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
say() { echo "$*" >&2; }

submit() { # submit MODEL WORKERS ARGS... ; prints the exec id. MODEL: a name under models/ or a directory
    m=$1 n=$2
    shift 2
    dir=$here/models/$m dd=$data
    case $m in */*) dir=$m dd=$(cat "$m/data-dir") ;; esac
    # shellcheck disable=SC2086
    "$loom" exec start --exec-start native --model-dir "$dir" --data-dir "$dd" \
        --numWorker "$n" ${submit_opts:-} -- "$@" | sed -n 's/^exec \([^ ]*\) submitted.*/\1/p'
}
field() { # field ID PYTHON-EXPRESSION over the exec's view as v
    "$loom" --json exec view "$1" | "$python" -c "import json,sys; v=json.load(sys.stdin); print($2)"
}
wait_for() { # wait_for ID PYTHON-CONDITION SECONDS
    _end=$(($(date +%s) + $3))
    while [ "$(date +%s)" -le "$_end" ]; do
        [ "$(field "$1" "$2" 2>/dev/null)" = "True" ] && return 0
        sleep 0.2
    done
    return 1
}
loom_train() { # loom_train MODEL WORKERS TIMEOUT ARGS... ; prints the exec id when it finished
    m=$1 n=$2 t=$3
    shift 3
    id=$(submit "$m" "$n" "$@")
    restarts=0 submitted=$id
    while [ -n "$id" ] && ! "$loom" exec wait "$id" --timeout "$t" >/dev/null 2>&1; do
        # A host stopped from outside (SIGTERM) leaves the exec RUNNING in its
        # store; started again on the same home it resumes the job from its
        # newest checkpoint. Anything else is a failure.
        if "$loom" exec view "$id" >/dev/null 2>&1 || [ "$restarts" -ge 10 ]; then
            id= # the host answers: the job itself ended badly
            break
        fi
        for _ in $(seq 1 300); do host_alive || break; sleep 0.05; done
        restarts=$((restarts + 1))
        say "run.sh: the host was stopped from outside; restarting it (the job resumes from its last checkpoint)"
        start_host
    done
    if [ -z "$id" ]; then
        say "run.sh: loom's $m run with $n worker(s) failed; driver log:"
        [ -n "$submitted" ] && cat "$LOOM_HOME/execs/$submitted/log/driver/stdout" >&2
        exit 1
    fi
    echo "$id"
}
torch_train() { # torch_train ARGS... ; prints the RESULT line's fields
    out=$("$python" "$here/torch_train.py" --data "$data" "$@") || {
        say "run.sh: torch_train.py $* failed"
        exit 1
    }
    echo "$out" | sed -n 's/^RESULT //p'
}

# ---- throughput ------------------------------------------------------------

# bench/native's program trains the same MLP through native.so's calls in a
# plain loop, without the trainer: N copies side by side, no coordinator
# and no all-reduce, are the most loom's trainer could reach with N workers.
native=$build/bin/bench_native
native_alone() { # native_alone N ; prints the summed samples/s
    i=0
    while [ "$i" -lt "$1" ]; do
        OPENBLAS_NUM_THREADS=1 "$native" --seconds "$native_seconds" --batch 64 --data "$data" \
            >"$work/native.$i" 2>/dev/null &
        i=$((i + 1))
    done
    wait
    cat "$work"/native.* | awk '{ sum += $3 } END { print sum }'
    rm -f "$work"/native.*
}

throughput() {
    results=$work/throughput
    : >"$results"
    args="--epochs $epochs --batch-size 64 --validation-freq 0 --checkpoint-freq 0"
    last='v["training"]["epochsDone"][-1]["samplesPerSecond"]'
    first='v["training"]["epochsDone"][0]["samplesPerSecond"]'
    say "throughput: MLP 784-512-512-10, batch 64 per worker, $epochs epoch(s) per run (the last is timed), $runs run(s)"
    for run in $(seq "$runs"); do
        # shellcheck disable=SC2086
        id=$(loom_train mlp 1 300 $args)
        echo "loom1 $run $(field "$id" "$last")" >>"$results"
        echo "loom1e1 $run $(field "$id" "$first")" >>"$results"
        echo "torch1 $run $(torch_train --mode single --epochs "$epochs" --batch 64 | awk '{ print $4 }')" >>"$results"
        # shellcheck disable=SC2086
        id=$(loom_train mlp 2 300 $args)
        echo "loom2 $run $(field "$id" "$last")" >>"$results"
        echo "loom2e1 $run $(field "$id" "$first")" >>"$results"
        echo "ddp2 $run $(torch_train --mode ddp --procs 2 --epochs "$epochs" --batch 64 | awk '{ print $4 }')" >>"$results"
        echo "nosync2 $run $(torch_train --mode nosync --procs 2 --epochs "$epochs" --batch 64 | awk '{ print $4 }')" >>"$results"
        if [ -x "$native" ]; then
            echo "native1 $run $(native_alone 1)" >>"$results"
            echo "native2 $run $(native_alone 2)" >>"$results"
        fi
        say "  run $run of $runs: $(awk -v r="$run" '$2 == r && $1 !~ /^loom.e1$/ { printf "%s %.0f  ", $1, $3 }' "$results")"
    done
    med() { awk -v k="$1" '$1 == k { print $3 }' "$results" | median; }
    # loom / peer within each run (the two ran minutes apart at most, so the
    # ratio moves less than either figure when the machine's load changes).
    ratio() { awk -v a="$1" -v b="$2" '$1 == a { x[$2] = $3 } $1 == b { y[$2] = $3 }
        END { for (r in x) if (y[r] > 0) print x[r] / y[r] }' "$results" | median; }
    l1=$(med loom1) t1=$(med torch1) l2=$(med loom2) d2=$(med ddp2) n2=$(med nosync2)
    echo
    echo "Training throughput, samples/s (median of $runs; MLP 784-512-512-10, batch 64 per worker, epoch $epochs of $epochs)"
    printf '  %-44s %8s %8s %10s %10s\n' "" "loom" "peer" "loom/peer" "per run"
    row() { printf '  %-44s %8.0f %8.0f %10.2f %10.2f\n' "$1" "$2" "$3" "$(echo "$2 $3" | awk '{ print $1 / $2 }')" "$4"; }
    row "1 worker  vs PyTorch, one process" "$l1" "$t1" "$(ratio loom1 torch1)"
    row "2 workers vs PyTorch DDP/gloo, 2 processes" "$l2" "$d2" "$(ratio loom2 ddp2)"
    row "2 workers vs 2 unsynchronised processes" "$l2" "$n2" "$(ratio loom2 nosync2)"
    if [ -x "$native" ]; then
        # bench_native times about one epoch's steps from fresh weights, so
        # it is set beside loom's first epoch: later epochs run slower on
        # both sides as subnormal momentum values pile up (README.md).
        a1=$(med native1) a2=$(med native2) e1=$(med loom1e1) e2=$(med loom2e1)
        echo "  the same, first epoch from fresh weights:"
        row "1 worker  vs the native adapter alone" "$e1" "$a1" "$(ratio loom1e1 native1)"
        row "2 workers vs 2 native adapter processes" "$e2" "$a2" "$(ratio loom2e1 native2)"
    fi
    printf '  %-44s %8.2f %8.2f   (2 workers / 1; the peer: DDP / one process)\n' "scaling" \
        "$(echo "$l2 $l1" | awk '{ print $1 / $2 }')" "$(echo "$d2 $t1" | awk '{ print $1 / $2 }')"
    echo "  every run (in the order they ran):"
    for k in loom1 loom1e1 torch1 loom2 loom2e1 ddp2 nosync2 native1 native2; do
        printf '    %-8s %s\n' "$k" "$(awk -v k="$k" '$1 == k { printf "%.0f ", $3 }' "$results")"
    done
}

# ---- the cost of the recovery copy -------------------------------------------

recovery_cost() {
    results=$work/recovery
    : >"$results"
    args="--epochs $epochs --batch-size 64 --validation-freq 0 --checkpoint-freq 0"
    last='v["training"]["epochsDone"][-1]["samplesPerSecond"]'
    copies='v["training"].get("stateCopies", 0), v["training"].get("stateCopyMs", 0), sum(e["seconds"] for e in v["training"]["epochsDone"])'
    say "recovery copy: MLP 784-512-512-10, batch 64 per worker, epoch $epochs of $epochs timed, $runs run(s)"
    for run in $(seq "$runs"); do
        for n in 1 2; do
            for setting in off:86400000 default: s1:1000 often:0; do
                name=${setting%%:*} ms=${setting#*:}
                submit_opts=${ms:+--msd-env EDT_RECOVERY_INTERVAL_MS=$ms}
                # shellcheck disable=SC2086
                id=$(loom_train mlp "$n" 300 $args)
                submit_opts=
                echo "$name$n $run $(field "$id" "$last") $(field "$id" "$copies")" >>"$results"
            done
        done
        say "  run $run of $runs: $(awk -v r="$run" '$2 == r { printf "%s %.0f  ", $1, $3 }' "$results")"
    done
    med() { awk -v k="$1" '$1 == k { print $3 }' "$results" | median; }
    ratio() { awk -v a="$1" -v b="$2" '$1 == a { x[$2] = $3 } $1 == b { y[$2] = $3 }
        END { for (r in x) if (y[r] > 0) print x[r] / y[r] }' "$results" | median; }
    echo
    echo "Recovery copy, samples/s (median of $runs; MLP, batch 64 per worker, epoch $epochs of $epochs)"
    printf '  %-11s %8s %8s %8s %8s %13s %13s %13s\n' "" "no copy" "default" "1 s" "often" \
        "default/none" "1 s/none" "often/none"
    for n in 1 2; do
        printf '  %-11s %8.0f %8.0f %8.0f %8.0f %13.3f %13.3f %13.3f\n' "$n worker(s)" "$(med off$n)" \
            "$(med default$n)" "$(med s1$n)" "$(med often$n)" "$(ratio default$n off$n)" \
            "$(ratio s1$n off$n)" "$(ratio often$n off$n)"
    done
    # The copies' own rounds over the job's training time: the direct cost.
    echo "  copies per job, their rounds' ms, and that time over the epochs' time (median):"
    for k in off1 default1 s11 often1 off2 default2 s12 often2; do
        awk -v k="$k" '$1 == k { gsub(/[(),]/, ""); print $4, $5, ($6 > 0 ? $5 / 10 / $6 : 0) }' "$results" |
            sort -g -k3 | awk -v k="$k" '{ r[NR] = $0 } END { split(r[int((NR + 1) / 2)], m, " ");
                printf "    %-9s %5d copies %7.0f ms  %5.2f %%\n", k, m[1], m[2], m[3] }'
    done
}

# ---- where a step's time goes ----------------------------------------------

profile() {
    results=$work/profile
    : >"$results"
    args="--epochs $epochs --batch-size 64 --validation-freq 0 --checkpoint-freq 0"
    last='v["training"]["epochsDone"][-1]["samplesPerSecond"]'
    say "profile: MLP, batch 64 per worker, epoch $epochs of $epochs, one step per round and multi-step rounds, $runs run(s)"
    for run in $(seq "$runs"); do
        for n in 1 2; do
            for setting in single:1 multi: staged: overlap:; do
                name=${setting%%:*} steps=${setting#*:}
                # nothing to reduce or overlap with on one worker
                { [ "$name" = overlap ] || [ "$name" = staged ]; } && [ "$n" = 1 ] && continue
                submit_opts=${steps:+--msd-env EDT_STEPS_PER_ROUND=$steps}
                [ "$name" = overlap ] && submit_opts="--msd-env EDT_OVERLAP_REDUCE=1"
                [ "$name" = staged ] && submit_opts="--msd-env EDT_IN_PLACE_REDUCE=0"
                # shellcheck disable=SC2086
                id=$(loom_train mlp "$n" 300 $args)
                submit_opts=
                e=$epochs # the last epoch; profile lines count from 1
                logs=$LOOM_HOME/execs/$id/log
                # "profile epoch E: S steps in R rounds; per step ms: a x, b y, ..."
                coord=$(grep "profile epoch $e:" "$logs/driver/stdout" | tail -n1 |
                    sed 's/.*steps in \([0-9]*\) rounds; per step ms: sampling \([0-9.]*\), sending plans \([0-9.]*\), waiting for replies \([0-9.]*\), recording \([0-9.]*\).*/\1 \2 \3 \4 \5/')
                # The workers' figures, averaged over the workers.
                work=$(cat "$logs"/worker-*/stdout | grep "profile epoch $e:" |
                    sed 's/.*compute \([0-9.]*\), all-reduce \([0-9.]*\) (waiting for peers \([0-9.]*\)), apply \([0-9.]*\), between rounds \([0-9.]*\).*/\1 \2 \3 \4 \5/' |
                    awk '{ for (i = 1; i <= 5; i++) s[i] += $i; n++ } END { if (n) printf "%f %f %f %f %f", s[1]/n, s[2]/n, s[3]/n, s[4]/n, s[5]/n }')
                echo "$name$n $run $(field "$id" "$last") $coord $work" >>"$results"
            done
        done
        say "  run $run of $runs: $(awk -v r="$run" '$2 == r { printf "%s %.0f  ", $1, $3 }' "$results")"
    done
    echo
    echo "Where a step's time goes, ms per step (median of $runs; MLP 784-512-512-10, batch 64 per worker, epoch $epochs of $epochs)"
    printf '  %-24s %9s %7s | %8s %8s %8s %8s | %8s %9s %8s %7s %8s\n' "" "samples/s" "rounds" \
        "sampling" "plans" "replies" "record" "compute" "allreduce" "(waiting)" "apply" "between"
    for k in single1 multi1 single2 multi2 staged2 overlap2; do
        case $k in
            single1) label="1 worker, 1 step/round" ;;
            multi1) label="1 worker, multi-step" ;;
            single2) label="2 workers, 1 step/round" ;;
            multi2) label="2 workers, multi-step" ;;
            staged2) label="2 w., multi, staged" ;;
            *) label="2 w., multi + overlap" ;;
        esac
        printf '  %-24s' "$label"
        for col in 3 4 5 6 7 8 9 10 11 12 13; do
            v=$(awk -v k="$k" -v c="$col" '$1 == k && NF >= c { print $c }' "$results" | median)
            case $col in
                3) printf ' %9.0f' "$v" ;;
                4) printf ' %7.0f |' "$v" ;;
                8) printf ' %8.3f |' "$v" ;;
                *) printf ' %8.3f' "$v" ;;
            esac
        done
        echo
    done
    echo "  (coordinator: sampling, sending plans, waiting for replies, recording; workers, averaged:"
    echo "   compute = forward + backward, all-reduce and the part of it waiting for the slower peer,"
    echo "   apply = optimizer step, between = reply sent -> next plan received;"
    echo "   overlap: EDT_OVERLAP_REDUCE=1, all-reduce counts only what is left after backward)"
}

# ---- ASYNC beside SYNC -------------------------------------------------------

async_vs_sync() {
    results=$work/async
    : >"$results"
    args="--epochs $acc_epochs --checkpoint-freq 0"
    acc='"%.4f" % v["training"]["testMetrics"]["accuracy"]'
    rate='sorted(e["samplesPerSecond"] for e in v["training"]["epochsDone"][1:] or v["training"]["epochsDone"])[len(v["training"]["epochsDone"][1:] or v["training"]["epochsDone"]) // 2]'
    say "async: MLP, 2 workers x batch 64, $acc_epochs epochs, SYNC and ASYNC, $runs run(s)"
    for run in $(seq "$runs"); do
        for mode in SYNC ASYNC; do
            submit_opts="--syncMode $mode"
            # shellcheck disable=SC2086
            id=$(loom_train mlp 2 3600 $args)
            submit_opts=
            echo "$mode $run $(field "$id" "$acc") $(field "$id" "$rate")" >>"$results"
        done
        say "  run $run of $runs: $(awk -v r="$run" '$2 == r { printf "%s acc %s %.0f/s  ", $1, $3, $4 }' "$results")"
    done
    med() { awk -v k="$1" -v c="$2" '$1 == k { print $c }' "$results" | median; }
    echo
    echo "SYNC and ASYNC, MLP 784-512-512-10, 2 workers x batch 64, $acc_epochs epochs (median of $runs)"
    printf '  %-6s %14s %12s\n' "" "test accuracy" "samples/s"
    for k in SYNC ASYNC; do
        printf '  %-6s %14.4f %12.0f\n' "$k" "$(med $k 3)" "$(med $k 4)"
    done
    echo "  ASYNC - SYNC accuracy: $(echo "$(med ASYNC 3) $(med SYNC 3)" | awk '{ printf "%+.4f", $1 - $2 }') (target: within 0.01)"
}

# ---- resize latency --------------------------------------------------------

resize_latency() { # resize_latency LABEL MODEL
    label=$1
    say "resize ($label): MLP on 2 engines, shrink to 1 then grow to 2, $grows time(s)"
    id=$(submit "$2" 2 --epochs 1000 --batch-size 64 --validation-freq 0 --checkpoint-freq 0)
    log=$LOOM_HOME/execs/$id/log/driver/stdout
    if ! wait_for "$id" 'v["training"]["iteration"] >= 50 and v["training"]["workers"] == 2' 120; then
        say "run.sh: the resize job did not start; driver log:"
        cat "$log" >&2
        exit 1
    fi
    for g in $(seq "$grows"); do
        "$loom" exec resize "$id" --workers 1 >/dev/null
        wait_for "$id" 'v["training"]["workers"] == 1' 30 || { say "run.sh: shrink $g did not happen"; cat "$log" >&2; exit 1; }
        sleep 1 # the leaving worker's process is gone; training goes on with one
        "$loom" exec resize "$id" --workers 2 >/dev/null
        # The trainer logs one "resize applied" line per grow, when the first
        # step with the new worker has committed.
        end=$(($(date +%s) + 30))
        while [ "$(grep -c 'resize applied' "$log")" -lt "$g" ]; do
            if [ "$(date +%s)" -gt "$end" ]; then
                say "run.sh: grow $g was not applied within 30 s; driver log:"
                cat "$log" >&2
                exit 1
            fi
            sleep 0.1
        done
        say "  grow $g: $(grep 'resize applied' "$log" | tail -n1 | sed 's/.*workers \([0-9]*\) ms.*/\1/') ms"
    done
    last_ms=$(field "$id" 'v["training"].get("lastResizeMs")')
    "$loom" exec stop "$id" >/dev/null
    grep 'resize applied' "$log" | sed 's/.*workers \([0-9]*\) ms.*/\1/' >"$work/resize"
    echo
    echo "Elastic resize latency, ms ($label): request -> first step with the new worker committed, grow 1 -> 2 workers, MLP"
    echo "  median $(median <"$work/resize"), min $(sort -g "$work/resize" | head -n1), max $(sort -g "$work/resize" | tail -n1) over $grows grows (target: < 1000)"
    echo "  all: $(tr '\n' ' ' <"$work/resize")(training.lastResizeMs after the last: $last_ms)"
}

# The same MLP reading uncompressed IDX copies: a joining worker loads the
# whole data set before it says hello, and inflating the 26 MB gzip of the
# training images is most of a grow (see README.md).
raw_model() {
    raw=$work/mlp-raw
    mkdir -p "$raw/data"
    for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
        gzip -dc "$data/$f.gz" >"$raw/data/$f"
    done
    mkdir -p "$raw/model"
    sed 's/-ubyte\.gz"/-ubyte"/' "$here/models/mlp/edt.json" >"$raw/model/edt.json"
    echo "$raw/data" >"$raw/model/data-dir"
    echo "$raw/model"
}

# ---- denormals -------------------------------------------------------------

denormals() {
    kept=$work/mlp-denormals
    mkdir -p "$kept"
    "$python" -c "import json,sys; s=json.load(open(sys.argv[1])); s['flush_denormals']=False; json.dump(s, open(sys.argv[2], 'w'), indent=1)" \
        "$here/models/mlp/edt.json" "$kept/edt.json"
    echo "$data" >"$kept/data-dir"
    args="--epochs $dn_epochs --batch-size 64 --validation-freq 0 --checkpoint-freq 0"
    per_epoch='" ".join("%.0f" % e["samplesPerSecond"] for e in v["training"]["epochsDone"])'
    loss='"%.4f" % v["training"]["epochsDone"][-1]["train"]["loss"]'
    : >"$work/denormals"
    say "denormals: MLP, 1 worker, $dn_epochs epochs, flushed (default) and kept, $runs run(s)"
    for run in $(seq "$runs"); do
        # shellcheck disable=SC2086
        id=$(loom_train mlp 1 600 $args)
        echo "flushed $run $(field "$id" "$per_epoch") loss $(field "$id" "$loss")" >>"$work/denormals"
        # shellcheck disable=SC2086
        id=$(loom_train "$kept" 1 600 $args)
        echo "kept    $run $(field "$id" "$per_epoch") loss $(field "$id" "$loss")" >>"$work/denormals"
        say "  run $run of $runs done"
    done
    echo
    echo "Denormals, MLP 784-512-512-10, 1 worker, batch 64: samples/s for epochs 1..$dn_epochs, and the last epoch's training loss"
    sed 's/^/  /' "$work/denormals"
    for k in flushed kept; do
        printf '  %-8s median of epochs 2..%s: %.0f samples/s\n' "$k" "$dn_epochs" \
            "$(awk -v k="$k" -v n="$dn_epochs" '$1 == k { for (i = 4; i <= n + 2; i++) print $i }' "$work/denormals" | median)"
    done
}

# ---- accuracy --------------------------------------------------------------

accuracy() {
    echo "Test accuracy after $acc_epochs epochs, 2 workers x batch 64, SGD lr 0.05 momentum 0.9, lr halved every 3 epochs (models/*/edt.json)"
    printf '  %-34s %8s %8s %8s %9s %9s\n' "" "loom" "pytorch" "target" "loom s" "pytorch s"
    for m in $(echo "$models" | tr ',' ' '); do
        case $m in
            mlp) target=0.88 name="MLP 784-512-512-10" ;;
            cnn) target=0.90 name="CNN conv16-pool-conv32-pool-128" ;;
            *) say "run.sh: --models: expected mlp and/or cnn, got $m"; exit 2 ;;
        esac
        say "accuracy: $name, loom ($acc_epochs epochs, 2 workers)"
        t0=$(date +%s)
        id=$(loom_train "$m" 2 36000 --epochs "$acc_epochs" --checkpoint-freq 1)
        t1=$(date +%s)
        acc=$(field "$id" 'v["training"]["testMetrics"]["accuracy"]')
        cp "$LOOM_HOME/execs/$id/val_dict_list.json" "$work/val-$m.json"
        say "  loom per epoch: $("$python" -c "import json; print(' '.join('%.4f' % e['accuracy'] for e in json.load(open('$work/val-$m.json'))))")"
        say "accuracy: $name, PyTorch DDP/gloo ($acc_epochs epochs, 2 processes)"
        r=$(torch_train --mode ddp --procs 2 --model "$m" --epochs "$acc_epochs" --batch 64 --eval \
            --spec "$here/models/$m/edt.json")
        t2=$(date +%s)
        tacc=$(echo "$r" | awk '{ print $6 }')
        printf '  %-34s %8.4f %8.4f %8s %9d %9d\n' "$name" "$acc" "$tacc" ">= $target" $((t1 - t0)) $((t2 - t1))
    done
}

case $mode in
    accuracy) accuracy ;;
    denormals) denormals ;;
    recovery) recovery_cost ;;
    profile) profile ;;
    async) async_vs_sync ;;
    throughput|all|resize)
        [ "$mode" = resize ] || throughput
        [ "$mode" = throughput ] || {
            resize_latency "Fashion-MNIST as installed, gzip IDX" mlp
            resize_latency "uncompressed IDX copies" "$(raw_model)"
        } ;;
    *) echo "run.sh: --only: expected throughput, resize, recovery, profile, async or denormals, got $mode" >&2; exit 2 ;;
esac
