#!/usr/bin/env bash
# The daemon's REST API and the exec lifecycle through the CLI: submit a
# launch-style job with a model directory, follow it to FINISHED, check the
# WMLA job contract (environment, _submitted_code, per-worker logs), stop a
# running one, delete, and the bad requests (unknown route, malformed or
# oversized bodies, bad dlicmd flags).
LOOM=$1
. "$(dirname "$0")/../lib.sh"

start_host

# ---- basics
r=$(http GET /loom/v1/health); expect_contains "health" "$r" '"status":"ok"'
r=$(http GET /nope); expect_contains "unknown route is 404" "$r" "404 "
expect_contains "unknown route names itself" "$r" "no route for GET /nope"
r=$(http PUT /loom/v1/health); expect_contains "wrong method is 405" "$r" "405 "
r=$(http GET /platform/rest/deeplearning/v1/execs/frameworks)
expect_contains "frameworks route lists command" "$r" '"name":"command"'
expect_contains "frameworks route lists distPyTorch" "$r" '"name":"distPyTorch"'

# ---- malformed, deep and oversized bodies
r=$(http POST /platform/rest/deeplearning/v1/execs -H 'Content-Type: application/json' --data '{"args": ')
expect_contains "malformed JSON is 400" "$r" "400 "
expect_contains "malformed JSON says so" "$r" "malformed JSON"
deep=$(printf '%.0s[' $(seq 1 200))
r=$(http POST /platform/rest/deeplearning/v1/execs -H 'Content-Type: application/json' --data "{\"a\": $deep")
expect_contains "deep JSON is refused" "$r" "nested deeper"
r=$(http POST /platform/rest/deeplearning/v1/execs -H 'Content-Type: application/json' --data '[1,2]')
expect_contains "non-object JSON is 400" "$r" "expected a JSON object"
head -c $((2 * 1024 * 1024)) /dev/zero | tr '\0' ' ' > "$WORK/big.json"
r=$(http POST /platform/rest/deeplearning/v1/execs -H 'Content-Type: application/json' --data-binary @"$WORK/big.json")
expect_contains "oversized JSON body is 413" "$r" "413 "
r=$(http POST /platform/rest/deeplearning/v1/execs -H 'Content-Type: application/json' --data '{"args": "--exec-start nosuch"}')
expect_contains "unknown framework is 404" "$r" "404 "
expect_contains "unknown framework is named" "$r" 'no framework named \"nosuch\"'
r=$(http POST /platform/rest/deeplearning/v1/execs -H 'Content-Type: application/json' --data '{"args": "--exec-start command --numWorker 0"}')
expect_contains "numWorker 0 is refused" "$r" "--numWorker: expected a whole number from 1"
r=$(http POST /platform/rest/deeplearning/v1/execs -H 'Content-Type: application/json' --data '{"args": "--exec-start command --bogus 1"}')
expect_contains "unknown flag is named" "$r" "unknown flag --bogus"
r=$(http POST /platform/rest/deeplearning/v1/execs -H 'Content-Type: application/json' --data '{"args": "--exec-start command"}')
expect_contains "command without model-main is refused" "$r" "400 "
r=$(http POST /platform/rest/deeplearning/v1/execs -H 'Content-Type: application/json' --data '{"args": "--exec-start command --model-main ../../etc/passwd"}')
expect_contains "model-main escaping the directory is refused" "$r" 'without \"..\"'
expect_fails "CLI: unterminated option value" "$LOOM" exec start --exec-start
expect_contains "CLI error names the flag" "$(cat "$WORK/out")" "--exec-start needs a value"

# ---- a job end to end
mkdir -p "$WORK/model/sub"
cat > "$WORK/model/main.sh" <<'SH'
#!/bin/sh
echo "rank=$RANK world=$WORLD_SIZE greeting=$GREETING args=$*"
echo "data=$DATA_DIR result=$RESULT_DIR log=$LOG_DIR id=$DLI_EXECID cuda=[$CUDA_VISIBLE_DEVICES]"
cat sub/note.txt
echo "to stderr" >&2
echo '[{"step": 1, "loss": 0.5}]' > "$RESULT_DIR/val_dict_list.json"
SH
chmod +x "$WORK/model/main.sh"
echo "a file from the model directory" > "$WORK/model/sub/note.txt"
out=$("$LOOM" exec start --exec-start command --model-dir "$WORK/model" --model-main main.sh \
      --numWorker 2 --msd-env GREETING=hello -- --epochs 3 "two words")
expect_contains "submit says submitted" "$out" "submitted"
id=$(echo "$out" | sed -n 's/^exec \([^ ]*\) submitted.*/\1/p')
expect_ok "wait for FINISHED" "$LOOM" exec wait "$id" --timeout 30
expect_contains "wait reports FINISHED" "$(cat "$WORK/out")" "FINISHED"
logs=$("$LOOM" exec logs "$id")
expect_contains "worker 0 log" "$logs" "rank=0 world=2 greeting=hello args=--epochs 3 two words"
expect_contains "worker 1 log" "$logs" "rank=1 world=2"
expect_contains "model directory copied" "$logs" "a file from the model directory"
expect_contains "job environment" "$logs" "id=$id cuda=[]"
expect_contains "RESULT_DIR is the exec's" "$logs" "result=$LOOM_HOME/execs/$id log=$LOOM_HOME/execs/$id/log"
err=$("$LOOM" exec logs "$id" --worker 1 --stderr)
expect_eq "stderr kept per worker" "$err" "to stderr"
expect_ok "submitted code under RESULT_DIR" test -f "$LOOM_HOME/execs/$id/_submitted_code/sub/note.txt"
expect_ok "val_dict_list.json written" test -s "$LOOM_HOME/execs/$id/val_dict_list.json"
view=$("$LOOM" --json exec view "$id")
expect_contains "view --json has the state" "$view" '"state":"FINISHED"'
list=$("$LOOM" exec list)
expect_contains "list shows the exec" "$list" "$id"

# ---- a failing job is ERROR with the reason
printf '#!/bin/sh\necho boom >&2\nexit 3\n' > "$WORK/model/fail.sh"; chmod +x "$WORK/model/fail.sh"
out=$("$LOOM" exec start --exec-start command --model-dir "$WORK/model" --model-main fail.sh)
fid=$(echo "$out" | sed -n 's/^exec \([^ ]*\) submitted.*/\1/p')
expect_fails "failing job: wait fails" "$LOOM" exec wait "$fid" --timeout 30
expect_contains "failing job reason" "$(cat "$WORK/out")" "ERROR: worker 0 exited with status 3"

# ---- stop a running job, then delete it
printf '#!/bin/sh\necho $$ > "$RESULT_DIR/pid"\necho started\nexec sleep 60\n' > "$WORK/model/long.sh"; chmod +x "$WORK/model/long.sh"
out=$("$LOOM" exec start --exec-start command --model-dir "$WORK/model" --model-main long.sh)
lid=$(echo "$out" | sed -n 's/^exec \([^ ]*\) submitted.*/\1/p')
expect_fails "delete a running exec is refused" "$LOOM" exec delete "$lid"
expect_contains "delete running names the state" "$(cat "$WORK/out")" "stop it first"
expect_ok "stop" "$LOOM" exec stop "$lid"
expect_fails "stopped job: wait reports not finished" "$LOOM" exec wait "$lid" --timeout 30
expect_contains "stopped job is KILLED" "$(cat "$WORK/out")" "KILLED"
expect_fails "stop again is refused" "$LOOM" exec stop "$lid"
expect_contains "stop again says why" "$(cat "$WORK/out")" "already KILLED"

# ---- every refusal carries the status its code has in README's table
E=/platform/rest/deeplearning/v1/execs
r=$(http POST "$E/$lid/stop")
expect_contains "stopping a stopped exec is 409" "$r" '409 '
expect_contains "  coded conflict" "$r" '"code":"conflict"'
r=$(http GET "$E/nosuch-1")
expect_contains "a missing exec is 404" "$r" '404 '
expect_contains "  coded not found" "$r" '"code":"not found"'
r=$(http GET "$E/$id/log?stream=stdin")
expect_contains "a bad log stream is 400" "$r" '400 '
expect_contains "  naming the field" "$r" 'stream: expected stdout or stderr'
r=$(http POST "$E/$id/resize" -d '{"workers": 1}')
expect_contains "resizing a finished exec is 409" "$r" '409 '
tar -C "$WORK/model" -cf "$WORK/model.tar" .
r=$(http POST "$E" -F "args=--exec-start command --model-main main.sh --numWorker 1000" -F "file=@$WORK/model.tar")
expect_contains "more devices than the host will ever have is 409" "$r" '409 '
expect_contains "  coded limit reached" "$r" '"code":"limit reached"'
expect_contains "  saying how to queue it" "$r" 'queue-if-too-large'
r=$(http POST /loom/v1/plans -d '{"path": "/team", "share": "lots"}')
expect_contains "a bad plan field is 400" "$r" '400 '
expect_contains "  naming the plan and field" "$r" 'plan \"/team\": share: expected a number'
r=$(http POST /loom/v1/plans -d '{"path": "/team", "share": 2, "cap": 3}')
expect_contains "a new plan is 201" "$r" '201 '
expect_contains "  as it now is" "$r" '"share":2,"min":0,"cap":3,"policy":"fair"'
r=$(http POST /loom/v1/plans -d '{"path": "/team"}')
expect_contains "the same plan again is 409" "$r" '409 '
r=$(http PUT '/loom/v1/plan?path=/nosuch' -d '{"share": 2}')
expect_contains "updating a missing plan is 404" "$r" '404 '
r=$(http PUT '/loom/v1/plan?path=/team' -d '{"min": 1.5}')
expect_contains "a fractional minimum is 400" "$r" 'min: expected a whole number'
r=$(http DELETE '/loom/v1/plan?path=/team')
expect_contains "removing the plan" "$r" '"removed":"/team"'

expect_ok "delete" "$LOOM" exec delete "$lid"
expect_ok "deleted exec's folder is gone" test ! -e "$LOOM_HOME/execs/$lid"
expect_fails "view deleted" "$LOOM" exec view "$lid"
expect_contains "view deleted is not found" "$(cat "$WORK/out")" "no exec"

# ---- clean shutdown stops running jobs and keeps the record
job_started() { [ -s "$LOOM_HOME/execs/$1/pid" ]; } # long.sh wrote its pid
out=$("$LOOM" exec start --exec-start command --model-dir "$WORK/model" --model-main long.sh)
sid=$(echo "$out" | sed -n 's/^exec \([^ ]*\) submitted.*/\1/p')
expect_ok "the job to stop by shutdown runs" wait_until 30 job_started "$sid"
stop_host TERM
expect_ok "host removed its address file" test ! -e "$LOOM_HOME/host"
start_host
r=$("$LOOM" --json exec view "$sid")
expect_contains "job stopped by shutdown is KILLED" "$r" '"state":"KILLED"'
expect_contains "with the reason" "$r" "host shut down"
r=$("$LOOM" --json exec view "$id")
expect_contains "finished job kept across restart" "$r" '"state":"FINISHED"'

# ---- a host killed while a job runs: the job is reconciled on restart
out=$("$LOOM" exec start --exec-start command --model-dir "$WORK/model" --model-main long.sh)
kid=$(echo "$out" | sed -n 's/^exec \([^ ]*\) submitted.*/\1/p')
expect_ok "the job to orphan runs" wait_until 30 job_started "$kid"
stop_host KILL
start_host
r=$("$LOOM" --json exec view "$kid")
expect_contains "orphaned job marked ERROR" "$r" '"state":"ERROR"'
expect_contains "with the reason" "$r" "host restarted while this exec was RUNNING"
kpid=$(cat "$LOOM_HOME/execs/$kid/pid")
expect_ok "the orphaned worker had started" test -n "$kpid"
# Gone, or a zombie waiting for whoever inherited it to reap it.
state=$(ps -o stat= -p "$kpid" 2>/dev/null | cut -c1)
case "$state" in ""|Z) pass ;; *) fail "its workers were stopped: pid $kpid is in state $state" ;; esac

# ---- a second host on the same home is refused
expect_fails "second host on one home" "$LOOM" serve --listen 127.0.0.1:0
expect_contains "second host says why" "$(cat "$WORK/out")" "another loom host is using this home"

# ---- a lock held a moment longer (a killed host's child between its fork
# and its exec holds it until it execs) does not keep the next host out
stop_host KILL
flock -x "$LOOM_HOME/loom.lock" sleep 0.5 &
holder=$!
lock_taken() { ! flock -n -x "$LOOM_HOME/loom.lock" true; }
wait_until 10 lock_taken
start_host
expect_ok "a host starts once a lock held a moment is let go" test -n "$URL"
wait "$holder"

stop_host TERM
finish
