#!/usr/bin/env bash
# The README's "Using it" section submits the model directories in
# examples/: its `loom exec start ... examples/...` commands run here as
# written (from the repository's root, against a test host), each with
# cheaper training arguments appended where the trainer's last word wins:
# the MLP for one epoch, to FINISHED; the CNN until it has trained a few
# steps (an epoch takes a minute), then stopped; the two-worker command job
# to FINISHED. With "distpytorch" as the fifth argument only the
# distPyTorch example runs (one epoch on 2,000 samples), skipped (77)
# when the Python its job runs has no PyTorch. An example that cannot run
# here (no PyTorch, no Fashion-MNIST) makes the test skipped, not passed.
LOOM=$1
SRC=$3
ONLY=${5:-}
. "$(dirname "$0")/../lib.sh"
FMNIST=/usr/share/datasets/fashion-mnist

# The code block that follows "## Using it", continuation lines joined and
# comments dropped; only the submissions of examples/.
commands=$(awk '/^## Using it/ {on = 1; next} on && /^## / {exit}
                on && /^```/ {if (inblock) exit; inblock = 1; next}
                inblock' "$SRC/README.md" |
           sed -e ':a' -e '/\\$/N; s/\\\n[[:space:]]*/ /; ta' -e 's/[[:space:]]*#.*$//' |
           grep -E '^loom exec start .*examples/')
# Every example folder is submitted by some README command.
# (examples/serving holds model services, not jobs: the serving tests in
# tests/integration/infer deploy each of them.)
for d in "$SRC"/examples/*/; do
    [ "$(basename "$d")" = serving ] && continue
    case "$commands" in
        *"examples/$(basename "$d") "*) pass ;;
        *) fail "no README command submits examples/$(basename "$d")" ;;
    esac
done
# The python3 a launch-style job runs: loom serve's --python (LOOM_PYTHON),
# else the first on the jobs' PATH (LOOM_JOB_PATH, else the default in
# host/util/job_env.h), not the python3 on this shell's PATH.
job_python() {
    if [ -n "${LOOM_PYTHON:-}" ]; then echo "$LOOM_PYTHON"; return; fi
    local dir IFS=:
    for dir in ${LOOM_JOB_PATH:-/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin}; do
        [ -x "$dir/python3" ] && { echo "$dir/python3"; return; }
    done
}
if [ "$ONLY" = distpytorch ]; then
    py=$(job_python)
    [ -n "$py" ] || skip "no python3 on the jobs' PATH"
    "$py" -c 'import torch' 2>/dev/null || skip "the jobs' python3 ($py) cannot import torch"
    commands=$(printf '%s\n' "$commands" | grep -- '--exec-start distPyTorch')
else
    commands=$(printf '%s\n' "$commands" | grep -v -- '--exec-start distPyTorch')
fi
expect_ok "the README names examples to run" test -n "$commands"

loom() { "$LOOM" "$@"; }
field() { # field ID PYTHON-EXPRESSION over the exec's view as v
    "$LOOM" --json exec view "$1" | python3 -c "import json,sys; v=json.load(sys.stdin); print($2)"
}
start_host
cd "$SRC" || exit 1
while read -r line; do
    dir=$(printf '%s\n' "$line" | sed -E 's/.*--model-dir (examples\/[^ ]*).*/\1/')
    expect_ok "$dir exists" test -d "$dir"
    extra= ; budget=finish
    case "$line" in
        *"--exec-start edtPyTorch"*)
            /usr/bin/python3 -c 'import torch' 2>/dev/null || { skip_part "$dir: /usr/bin/python3 has no torch"; continue; }
            extra=" --epochs 1 --train-samples 6000 --test-samples 1000" ;;
        *"--exec-start edt"*)
            [ -r "$FMNIST/train-images-idx3-ubyte.gz" ] || { skip_part "$dir: no Fashion-MNIST in $FMNIST"; continue; }
            extra=" --epochs 1"
            case "$dir" in *cnn*) budget=steps ;; esac ;;
        *"--exec-start distPyTorch"*) extra=" --epochs 1 --limit 2000" ;;
    esac
    echo "running: $line$extra (at ${SECONDS}s)"
    out=$(eval "$line$extra" 2>&1)
    id=$(printf '%s\n' "$out" | sed -n 's/^exec \([^ ]*\) submitted.*/\1/p')
    expect_ok "README: ${line:0:90}... submits ($out)" test -n "$id"
    [ -n "$id" ] || continue
    if [ "$budget" = steps ]; then
        deadline=$((SECONDS + 150))
        while [ "$SECONDS" -lt "$deadline" ]; do
            [ "$(field "$id" 'v.get("training", {}).get("iteration", 0) >= 3 or v["state"] != "RUNNING" and v["state"] not in ("SUBMITTED", "PENDING", "LAUNCHING")' 2>/dev/null)" = True ] && break
            sleep 0.1
        done
        expect_eq "$dir trains" "$(field "$id" 'v["state"]')" "RUNNING"
        expect_ok "$dir: stop" "$LOOM" exec stop "$id"
        "$LOOM" exec wait "$id" --timeout 60 >/dev/null
        continue
    fi
    expect_ok "$dir FINISHED" "$LOOM" exec wait "$id" --timeout 250
    [ "$FAILED" -eq 0 ] || "$LOOM" exec logs "$id" --stderr | tail -n 20 >&2
    case "$dir" in
        *command-two-workers*)
            for w in 0 1; do
                expect_contains "$dir: worker $w wrote its metrics for 3 epochs" \
                    "$(cat "$LOOM_HOME/execs/$id/val_dict_list-worker$w.json" 2>/dev/null)" '{"step": 3, "loss": '
            done ;;
        *)
            expect_contains "$dir: val_dict_list.json" \
                "$(cat "$LOOM_HOME/execs/$id/val_dict_list.json" 2>/dev/null)" '"accuracy":' ;;
    esac
done <<<"$commands"
stop_host
echo "done at ${SECONDS}s"
finish
