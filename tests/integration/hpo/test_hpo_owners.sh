#!/bin/bash
# An installed plugin optimizer belongs to its installer: another user
# finds no such optimizer to list, view, remove or name in a tuning task
# (the same answer as for a name nobody installed), and may not choose an
# interpreter (condaHome) on the host; once an administrator publishes it
# (loom algorithm publish), every user may name it but only its owner or
# an administrator removes it; unpublished, it is its owner's again.
# Usage: test_hpo_owners.sh LOOM SOURCE_DIR
LOOM=$1
. "$2/tests/integration/lib.sh"

start_host
ADMIN_TOKEN=$TOKEN
"$LOOM" user add bob -p bob-password >/dev/null
"$LOOM" user add alice -p alice-password >/dev/null
token_of() {
    curl -s -X POST -u "$1:$1-password" "$URL/auth/v1/logon" |
        python3 -c 'import json,sys; print(json.load(sys.stdin).get("token",""))'
}
BOB=$(token_of bob)
ALICE=$(token_of alice)
ALG=/platform/rest/deeplearning/v1/hypersearch/algorithm

mkdir -p "$WORK/model"
printf '#!/bin/sh\nprintf "[{\\"step\\": 1, \\"loss\\": 0.5}]\\n" > "$RESULT_DIR/val_dict_list.json"\n' \
    > "$WORK/model/train.sh"
chmod +x "$WORK/model/train.sh"
tar -C "$WORK" -czf "$WORK/model.tgz" model
tar -C "$2/tests/integration/hpo/fixtures" -czf "$WORK/opt.tgz" wmla_optimizer
task() { # task NAME ALGORITHM
    cat <<JSON
{"hpoName": "$1", "modelSpec": {"args": "--exec-start command --model-dir model --model-main train.sh"},
 "algoDef": {"algorithm": "$2", "maxJobNum": 1, "maxParalleJobNum": 1, "objectiveMetric": "loss",
             "objective": "minimize", "algoParams": [{"name": "RandomSeed", "value": "5"}]},
 "hyperParams": [{"name": "x", "type": "Range", "dataType": "DOUBLE", "minDbVal": 0, "maxDbVal": 1},
                 {"name": "y", "type": "Discrete", "dataType": "INT", "discreteIntVal": [1, 2, 3]}]}
JSON
}
submit_as() { # submit_as TOKEN TASK ALGORITHM: "STATUS BODY", the algorithm's name left out
    TOKEN=$1
    task "$2" "$3" > "$WORK/task.json"
    local r
    r=$(http POST /platform/rest/deeplearning/v1/hypersearch -F "data=<$WORK/task.json" -F "file=@$WORK/model.tgz")
    printf '%s' "${r//"$3"/ALG}"
}

# ---- bob installs; it is his
TOKEN=$BOB
printf '{"name": "bobopt"}' > "$WORK/inst.json"
expect_eq "bob installs an optimizer" "$(http POST "$ALG/install" -F "data=<$WORK/inst.json" -F "file=@$WORK/opt.tgz")" '200 "bobopt"'
expect_contains "bob lists it" "$(http GET "$ALG?type=PLUGIN")" '"name":"bobopt"'
expect_contains "bob views it" "$(http GET "$ALG/bobopt")" '"published":false'
expect_eq "bob's task may name it" "$(submit_as "$BOB" bobtask bobopt)" '200 "bobtask"'

# ---- alice does not find it
TOKEN=$ALICE
expect_not_contains "alice's list leaves it out" "$(http GET "$ALG?type=PLUGIN")" 'bobopt'
expect_contains "alice views it: 404" "$(http GET "$ALG/bobopt")" "404 "
expect_eq "alice: the same answer as for no optimizer" \
    "$(http GET "$ALG/bobopt" | sed 's/bobopt/ALG/g')" "$(http GET "$ALG/nobodys" | sed 's/nobodys/ALG/g')"
expect_contains "alice removes it: 404" "$(http DELETE "$ALG/bobopt")" "404 "
a=$(submit_as "$ALICE" alicetask bobopt)
expect_contains "alice's task may not name it" "$a" "400 "
expect_eq "alice's task: the same answer as for no optimizer" "$a" "$(submit_as "$ALICE" alicetask nobodys)"
TOKEN=$ALICE
printf '{"name": "aliceopt", "condaHome": "/usr"}' > "$WORK/inst.json"
r=$(http POST "$ALG/install" -F "data=<$WORK/inst.json" -F "file=@$WORK/opt.tgz")
expect_contains "a user may not choose the interpreter" "$r" "403 "
expect_contains "and is told which field" "$r" "condaHome"
expect_contains "alice may not publish" "$(http POST "$ALG/bobopt/publish")" "403 "

# ---- published by an administrator: every user names it
TOKEN=$ADMIN_TOKEN
expect_ok "loom algorithm publish" "$LOOM" algorithm publish bobopt
TOKEN=$ALICE
expect_contains "alice lists it once published" "$(http GET "$ALG?type=PLUGIN")" '"name":"bobopt"'
expect_contains "alice views it" "$(http GET "$ALG/bobopt")" '"published":true'
expect_eq "alice's task names it" "$(submit_as "$ALICE" alicetask2 bobopt)" '200 "alicetask2"'
TOKEN=$ALICE
expect_contains "alice still may not remove it" "$(http DELETE "$ALG/bobopt")" "403 "
TOKEN=$ADMIN_TOKEN
expect_ok "loom algorithm unpublish" "$LOOM" algorithm unpublish bobopt
TOKEN=$ALICE
expect_contains "unpublished: alice finds it no more" "$(http GET "$ALG/bobopt")" "404 "
expect_fails "publishing no optimizer" "$LOOM" algorithm publish nobodys
expect_contains "names it" "$(cat "$WORK/out")" 'no plugin optimizer "nobodys"'

# ---- the tasks that named it ran it
TOKEN=$ADMIN_TOKEN
for t in bobtask alicetask2; do
    for _ in $(seq 1 300); do
        s=$(http GET "/platform/rest/deeplearning/v1/hypersearch/$t" | sed -n 's/.*"state":"\([A-Z]*\)","message".*/\1/p')
        case $s in FINISHED|FAILED) break ;; esac
        sleep 0.1
    done
    expect_eq "$t finishes with the optimizer" "$s" FINISHED
    [ "$s" = FINISHED ] || http GET "/platform/rest/deeplearning/v1/hypersearch/$t" >&2
done
stop_host
finish
