#!/usr/bin/env bash
# kernel.gpu and replica have their effect: "no" instances hold CPU slots
# (or, where the scheduler hands out GPUs, none); "exclusive" one GPU each;
# "shared" one GPU for all of the service's instances; a GPU mode on a host
# without GPUs is refused by name; `replica` groups multiply the instances.
# GPUs come from a stand-in CUDA driver reporting LOOM_FAKE_CUDA_DEVICES.
LOOM=$1 BUILD=$4 FAKE_DRIVER_DIR=$5
. "$(dirname "$0")/../lib.sh"
EX="$BUILD/examples/serving"
export LD_LIBRARY_PATH=$FAKE_DRIVER_DIR

profile() { # profile GPU REPLICA MIN MAX
    printf '{"replica": %s, "policy": {"kernel_min": %s, "kernel_max": %s}, "kernel": {"gpu": "%s"}}' \
        "$2" "$3" "$4" "$1" > "$WORK/profile.json"
}
post() { curl -s -o "$WORK/body" -w '%{http_code}' -H "Authorization: Bearer $TOKEN" -X POST \
         -H 'Content-Type: application/json' --data-binary "$2" "$URL/dlim/v1/inference/$1"; }
# running NAME: the instances serving it; held: the kind of each device held
# (only the service's instances run here)
running() { curl -s -H "Authorization: Bearer $TOKEN" "$URL/dlim/v1/model/$1" |
            /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["kernels"]["running"])'; }
held() { curl -s -H "Authorization: Bearer $TOKEN" "$URL/loom/v1/slots" | /usr/bin/python3 -c '
import json, sys
for s in json.load(sys.stdin):
    if s["held"]: print(s["kind"])'; }
wait_running() { # wait_running NAME N: up to 20 s
    for _ in $(seq 1 200); do [ "$(running "$1")" = "$2" ] && return; sleep 0.1; done
}
deploy() { # deploy GPU REPLICA MIN MAX
    "$LOOM" model undeploy echo-so -f >/dev/null 2>&1
    profile "$@"
    "$LOOM" model deploy -p "$EX/echo-so" --profile "$WORK/profile.json" >/dev/null
}

# ---- a host without GPUs: CPU slots
export LOOM_FAKE_CUDA_DEVICES=0
start_host --cpu-slots 4
for mode in exclusive shared; do
    deploy $mode 1 1 1
    expect_fails "gpu $mode without a GPU" "$LOOM" model start echo-so --wait 90
    expect_contains "gpu $mode: refused by name" "$(cat "$WORK/out")" \
        "kernel.gpu \"$mode\": this host has no GPU"
done
expect_eq "nothing held after the refusals" "$(held)" ""
deploy no 1 1 1
expect_ok "gpu no starts" "$LOOM" model start echo-so --wait 90
expect_eq "gpu no: the instance holds a CPU slot" "$(held)" "cpu"
expect_ok "stop" "$LOOM" model stop echo-so
expect_eq "the slot is given back" "$(held)" ""
deploy no 2 1 1
expect_ok "replica 2 starts" "$LOOM" model start echo-so --wait 90
wait_running echo-so 2
expect_eq "replica 2 x kernel_min 1: two instances" "$(running echo-so)" 2
expect_eq "replica 2: two CPU slots" "$(held | wc -l)" 2
expect_eq "replica 2 answers" "$(post echo-so '{"r":2}')" 200
expect_ok "stop" "$LOOM" model stop echo-so
profile no 40 1 2
expect_fails "replica x kernel_max over the limit" "$LOOM" model updateprofile echo-so -f "$WORK/profile.json"
expect_contains "the refusal names replica" "$(cat "$WORK/out")" "replica: 40 groups of up to 2 instances"
stop_host

# ---- a host with two GPUs
export LOOM_FAKE_CUDA_DEVICES=2
start_host
deploy exclusive 1 2 2
expect_ok "gpu exclusive starts" "$LOOM" model start echo-so --wait 90
wait_running echo-so 2
expect_eq "exclusive: one GPU per instance" "$(held)" "$(printf 'gpu\ngpu')"
expect_eq "exclusive answers" "$(post echo-so '{"g":1}')" 200
expect_ok "stop" "$LOOM" model stop echo-so
deploy shared 1 3 3
expect_ok "gpu shared starts" "$LOOM" model start echo-so --wait 90
wait_running echo-so 3
expect_eq "shared: three instances" "$(running echo-so)" 3
expect_eq "shared: one GPU for them all" "$(held)" "gpu"
expect_eq "shared answers" "$(post echo-so '{"g":2}')" 200
expect_ok "stop" "$LOOM" model stop echo-so
expect_eq "the shared GPU is given back" "$(held)" ""
deploy no 1 1 1
expect_ok "gpu no on a GPU host starts" "$LOOM" model start echo-so --wait 90
expect_eq "gpu no: no GPU taken" "$(held)" ""
expect_eq "gpu no answers" "$(post echo-so '{"g":3}')" 200
stop_host
finish
