#!/usr/bin/env bash
# Fairness in the host, end to end with short launch-style jobs: a user
# arriving behind another user's long queue in a shared plan starts at the
# next free slot; plans with shares 3:1 hold 6:2 of 8 slots while both
# have jobs queued; a pending exec says why it waits; a job above its
# plan's cap is refused naming the exec and --queue-if-too-large.
LOOM=$1
. "$(dirname "$0")/../lib.sh"

logon() { # logon USER PASSWORD: prints the token
    curl -s -X POST -u "$1:$2" "$URL/auth/v1/logon" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("token",""))'
}
# job SECONDS: a model directory whose one worker sleeps that long.
job() {
    mkdir -p "$WORK/sleep$1"
    printf '#!/bin/sh\nsleep %s\n' "$1" > "$WORK/sleep$1/run.sh"; chmod +x "$WORK/sleep$1/run.sh"
}
start_as() { # start_as TOKEN SECONDS ARGS...: prints the exec id
    local token=$1 seconds=$2; shift 2
    LOOM_TOKEN=$token "$LOOM" exec start --exec-start command --model-dir "$WORK/sleep$seconds" \
        --model-main run.sh "$@" | sed -n 's/^exec \([^ ]*\) submitted.*/\1/p'
}
field_as() { # field_as TOKEN ID PYTHON-EXPRESSION over the view as v
    LOOM_TOKEN=$1 "$LOOM" --json exec view "$2" | python3 -c "import json,sys; v=json.load(sys.stdin); print($3)"
}
# held_by PLAN-PREFIX: how many slots execs of that user hold ("alice-").
held_by() { "$LOOM" --json slots | python3 -c "import json,sys; print(sum(1 for d in json.load(sys.stdin) if (d['owner'] or '').startswith('$1')))"; }

start_host --cpu-slots 4 --hysteresis 1
expect_ok "add alice" "$LOOM" user add alice -p alice-password
expect_ok "add bob" "$LOOM" user add bob -p bob-password
alice=$(logon alice alice-password)
bob=$(logon bob bob-password)
job 2

# ---- 30 jobs from alice, then one from bob, in one shared plan
expect_ok "a shared plan" "$LOOM" plan add /team
expect_ok "alice may use it" "$LOOM" plan member add /team alice
expect_ok "bob may use it" "$LOOM" plan member add /team bob
# Every slot busy until both have submitted, so alice's queue is long when
# bob arrives however slowly the submissions go (with 2 s jobs running, a
# busy machine drained it as fast as it filled).
job 600
blocker=$(start_as "$TOKEN" 600 --numWorker 4)
expect_ok "a blocker holds every slot" wait_until 60 output_is 4 held_by admin-
: > "$WORK/alice.ids"
for _ in $(seq 1 30); do start_as "$alice" 2 --consumer /team >> "$WORK/alice.ids"; done
expect_eq "alice's 30 jobs are in" "$(grep -c . "$WORK/alice.ids")" "30"
last=$(tail -n1 "$WORK/alice.ids")
expect_eq "alice's last job waits" "$(field_as "$alice" "$last" 'v["state"]')" "PENDING"
expect_contains "and says why" "$(field_as "$alice" "$last" 'v.get("pendingReason", "")')" "waiting for 1 device, 0 free"
expect_contains "loom exec view shows the reason" "$(LOOM_TOKEN=$alice "$LOOM" exec view "$last")" "waiting     waiting for 1 device"
expect_contains "loom exec list shows it" "$(LOOM_TOKEN=$alice "$LOOM" exec list)" "waiting for 1 device"
b=$(start_as "$bob" 2 --consumer /team)
"$LOOM" exec stop "$blocker" >/dev/null
expect_ok "bob's job runs" sh -c "LOOM_TOKEN=$bob '$LOOM' exec wait '$b' --timeout 60"
bob_start=$(field_as "$bob" "$b" 'v["startTime"]')
# From the recorded start times, not a count at some moment: bob, last to
# arrive, starts among the first four (one per slot the blocker frees) and
# alice's other jobs start after him.
before=$(LOOM_TOKEN=$alice "$LOOM" --json exec list | python3 -c "import json,sys; print(sum(1 for v in json.load(sys.stdin) if v['creator'] == 'alice' and 0 < v['startTime'] < $bob_start))")
echo "bob's job, submitted behind 30 of alice's, started after $before of them"
expect_eq "bob starts at one of the first free slots (at most 3 of alice's jobs before his)" \
    "$(python3 -c "print($before <= 3)")" "True"
while read -r id; do LOOM_TOKEN=$alice "$LOOM" exec stop "$id" >/dev/null 2>&1; done < "$WORK/alice.ids"
wait_until 10 output_is 0 held_by alice-

# ---- a cap refusal names the exec and the flag
expect_ok "a capped plan" "$LOOM" plan add /small --cap 2
expect_ok "alice may use it" "$LOOM" plan member add /small alice
expect_fails "3 devices in a plan capped at 2" \
    env LOOM_TOKEN="$alice" "$LOOM" exec start --exec-start command --model-dir "$WORK/sleep2" \
        --model-main run.sh --numWorker 3 --consumer /small
expect_contains "the refusal names the plan's cap" "$(cat "$WORK/out")" "plan /small is capped at 2"
expect_contains "and the exec" "$(cat "$WORK/out")" "exec alice-"
expect_contains "and the flag" "$(cat "$WORK/out")" "--queue-if-too-large true"
q=$(start_as "$alice" 2 --numWorker 3 --consumer /small --queue-if-too-large true)
expect_contains "queued when asked, saying why" "$(field_as "$alice" "$q" 'v.get("pendingReason", "")')" \
    "more than plan /small's cap of 2"
LOOM_TOKEN=$alice "$LOOM" exec stop "$q" >/dev/null
stop_host TERM

# ---- shares 3:1 on 8 slots: 6 + 2 while both plans have jobs queued
rm -rf "$LOOM_HOME"
start_host --cpu-slots 8 --hysteresis 1
"$LOOM" user add alice -p alice-password >/dev/null
"$LOOM" user add bob -p bob-password >/dev/null
alice=$(logon alice alice-password)
bob=$(logon bob bob-password)
job 3
expect_ok "plan /p" "$LOOM" plan add /p
expect_ok "alice may use /p and beneath" "$LOOM" plan member add /p alice
expect_ok "bob too" "$LOOM" plan member add /p bob
expect_ok "plan /p/a, share 3" "$LOOM" plan add /p/a --share 3
expect_ok "plan /p/b, share 1" "$LOOM" plan add /p/b --share 1
# Every slot busy while the queues fill, so the shares, not the order of
# arrival, decide who starts.
# (stopped once the queues are full: a fixed length would race the
# submissions on a loaded machine)
job 600
blocker=$(start_as "$TOKEN" 600 --numWorker 8)
for i in $(seq 1 30); do
    start_as "$alice" 3 --consumer /p/a >/dev/null
    [ $((i % 2)) = 0 ] && start_as "$bob" 3 --consumer /p/b >/dev/null
done
expect_eq "the queues filled behind the blocker" "$(held_by admin-)" "8"
"$LOOM" exec stop "$blocker" >/dev/null
"$LOOM" exec wait "$blocker" --timeout 30 >/dev/null
# sample: "HELD_A HELD_B QUEUED_A QUEUED_B" for alice (/p/a) and bob (/p/b).
sample() {
    "$LOOM" --json slots > "$WORK/slots.json"
    "$LOOM" --json exec list > "$WORK/execs.json"
    python3 - "$WORK/slots.json" "$WORK/execs.json" <<'PY'
import json, sys
slots = json.load(open(sys.argv[1])); execs = json.load(open(sys.argv[2]))
held = lambda u: sum(1 for d in slots if (d['owner'] or '').startswith(u + '-'))
queued = lambda u: sum(1 for v in execs if v['creator'] == u and v['state'] == 'PENDING')
print(held('alice'), held('bob'), queued('alice'), queued('bob'))
PY
}
ok=0 counted=0 samples=""
for _ in $(seq 1 6); do
    sleep 1.3
    read -r a b qa qb <<< "$(sample)"
    [ "$qa" -gt 0 ] && [ "$qb" -gt 0 ] || continue  # the shares hold while both wait
    counted=$((counted + 1)) samples="$samples $a:$b"
    [ "$a" -ge 5 ] && [ "$a" -le 7 ] && [ "$b" -ge 1 ] && [ "$b" -le 3 ] && ok=$((ok + 1))
done
echo "slots held, /p/a:/p/b, sampled every 1.3 s while both had jobs queued:$samples"
expect_eq "at least 3 samples while both plans had jobs queued" "$(python3 -c "print($counted >= 3)")" "True"
expect_eq "every such sample is 6:2 within one device" "$ok" "$counted"
for id in $("$LOOM" --json exec list | python3 -c "import json,sys; print(' '.join(v['id'] for v in json.load(sys.stdin) if v['state'] in ('PENDING', 'LAUNCHING', 'RUNNING')))"); do
    "$LOOM" exec stop "$id" >/dev/null 2>&1
done
stop_host TERM
finish
