#!/usr/bin/env bash
# Serving end to end: the three echo kernels (.so, Lua, ffi) deployed,
# started and called over REST and through the CLI; dlim's commands;
# ownership; the profile's rules; a host restarted with models started.
LOOM=$1
BUILD=$4
. "$(dirname "$0")/../lib.sh"
EX="$BUILD/examples/serving"
WMLA=$(cd "$(dirname "$0")/../../data/wmla" && pwd) # WMLA's example files, copied into the tree

start_host --cpu-slots 4
post() { curl -s -o "$WORK/body" -w '%{http_code}' -H "Authorization: Bearer $TOKEN" -X POST \
         -H 'Content-Type: application/json' --data-binary "$2" "$URL/dlim/v1/inference/$1"; }

# Checked without a host.
expect_ok "model check echo-so" "$LOOM" model check "$EX/echo-so"
expect_ok "model check echo-lua" "$LOOM" model check "$EX/echo-lua"
expect_ok "model check echo-ffi" "$LOOM" model check "$EX/echo-ffi"

for way in so lua ffi; do
    expect_ok "deploy echo-$way" "$LOOM" model deploy -p "$EX/echo-$way"
    expect_ok "start echo-$way" "$LOOM" model start "echo-$way" --wait 90
done
expect_eq "echo-so over REST" "$(post echo-so '{"id":1,"data":"aGVsbG8="}')" 200
expect_eq "echo-so body as is" "$(cat "$WORK/body")" '{"id":1,"data":"aGVsbG8="}'
expect_eq "echo-lua over REST" "$(post echo-lua '{"x":[1,2]}')" 200
expect_eq "echo-lua body" "$(cat "$WORK/body")" '{"x":[1,2]}'
expect_eq "echo-ffi over REST" "$(post echo-ffi '{"inputs":[1.5,2,3]}')" 200
expect_eq "echo-ffi outputs (v2, the shorthand's answer)" "$(cat "$WORK/body")" \
    '{"model_name":"echo-ffi","outputs":[{"name":"y","datatype":"FP64","shape":[3],"data":[1.5,2,3]}]}'
out=$("$LOOM" model infer echo-so -d '{"a":1}' 2>&1)
expect_eq "model infer" "$out" '{"a":1}'
echo '{"from":"file"}' > "$WORK/req.json"
out=$("$LOOM" model infer echo-lua -d "@$WORK/req.json" 2>&1)
expect_contains "model infer @file" "$out" '{"from":"file"}'

# Many requests at once all answered (batched over the instance).
pids=
for i in $(seq 1 40); do
    curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" \
         -H 'Content-Type: application/json' --data-binary "{\"n\":$i}" \
         "$URL/dlim/v1/inference/echo-so" > "$WORK/code.$i" &
    pids="$pids $!"
done
wait $pids # not the host's
ok=0; for i in $(seq 1 40); do [ "$(cat "$WORK/code.$i")" = 200 ] && ok=$((ok + 1)); done
expect_eq "40 concurrent requests answered" "$ok" 40

out=$("$LOOM" model list 2>&1)
expect_contains "list shows echo-ffi" "$out" "echo-ffi"
out=$("$LOOM" model view echo-so -s 2>&1)
expect_contains "view -s: kernels" "$out" "Kernels:  1 running"
out=$("$LOOM" model view echo-so -s -a 2>&1)
expect_contains "view -a: the profile" "$out" "task_batch_size"
out=$(curl -s -H "Authorization: Bearer $TOKEN" "$URL/dlim/v1/deployment/model")
expect_contains "deployment list" "$out" '"name":"echo-lua"'

# Bad input on inference.
expect_eq "not JSON" "$(post echo-so 'not json')" 400
expect_contains "not JSON: named" "$(cat "$WORK/body")" "body: expected a JSON request"
expect_eq "not JSON to the Lua kernel" "$(post echo-lua '{"a":')" 400
expect_eq "not JSON to the ffi kernel" "$(post echo-ffi 'nope')" 400
expect_eq "unknown model" "$(post nosuch '{}')" 404
head -c 1100000 /dev/zero | tr '\0' 'a' > "$WORK/big"
code=$(curl -s -o "$WORK/body" -w '%{http_code}' -H "Authorization: Bearer $TOKEN" \
       -H 'Content-Type: application/json' --data-binary "@$WORK/big" "$URL/dlim/v1/inference/echo-so")
expect_eq "over the size limit" "$code" 413
expect_eq "ffi wrong shape" "$(post echo-ffi '{"inputs":"nope"}')" 400
# the host decodes the ffi model's v2 request and names what it expected
expect_contains "ffi wrong shape: named" \
    "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["error"])' "$WORK/body")" \
    'model "echo-ffi": inputs: expected an array of {"name", "shape", "datatype", "data"}'
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -d '{}' "$URL/dlim/v1/inference/echo-so")
expect_eq "inference needs a token" "$code" 401

# The profile: view, rules, update only when stopped, WMLA's fields kept, a field
# no profile has refused.
out=$("$LOOM" model viewprofile echo-so -j 2>&1)
expect_contains "viewprofile" "$out" '"kernel_min"'
cat > "$WORK/bad.json" <<'P'
{"policy": {"kernel_min": -1, "kernel_max": 2}}
P
expect_fails "updateprofile while started" "$LOOM" model updateprofile echo-so -f "$WMLA/profile.json"
expect_contains "updateprofile while started: why" "$(cat "$WORK/out")" "stop it"
expect_ok "stop echo-so" "$LOOM" model stop echo-so
expect_eq "stopped model" "$(post echo-so '{}')" 503
expect_fails "profile kernel_min -1" "$LOOM" model updateprofile echo-so -f "$WORK/bad.json"
expect_contains "profile rule named" "$(cat "$WORK/out")" "policy.kernel_min"
sed 's/"kernel_max": 4/"kernel_max": 2, "my_field": "kept"/' "$WMLA/profile.json" > "$WORK/p.json"
expect_fails "updateprofile: a field no profile has" "$LOOM" model updateprofile echo-so -f "$WORK/p.json"
expect_contains "is named" "$(cat "$WORK/out")" "policy.my_field"
sed 's/"kernel_max": 4/"kernel_max": 2/' "$WMLA/profile.json" > "$WORK/p.json"
expect_ok "updateprofile stopped" "$LOOM" model updateprofile echo-so -f "$WORK/p.json"
out=$("$LOOM" model viewprofile echo-so -j 2>&1)
expect_contains "stream field kept" "$out" '"stream_discard_slow_tasks"'
expect_ok "start again" "$LOOM" model start echo-so --wait 90
expect_eq "answers after restart" "$(post echo-so '{"b":2}')" 200

# Undeploy of a started model needs -f.
expect_fails "undeploy started" "$LOOM" model undeploy echo-lua
expect_contains "undeploy: why" "$(cat "$WORK/out")" "-f"

# Ownership: another user sees nothing of these models.
expect_ok "add user bob" "$LOOM" user add bob -p bob-password-1
BOB=$(curl -s -u bob:bob-password-1 -X POST "$URL/auth/v1/logon" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $BOB" -X POST -d '{}' "$URL/dlim/v1/inference/echo-so")
expect_eq "bob cannot call admin's model" "$code" 404
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $BOB" -X POST "$URL/dlim/v1/model/echo-so/operation/stop")
expect_eq "bob cannot stop it" "$code" 404
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $BOB" -X DELETE "$URL/dlim/v1/model/echo-so?force=true")
expect_eq "bob cannot undeploy it" "$code" 404
out=$(curl -s -H "Authorization: Bearer $BOB" "$URL/dlim/v1/model")
expect_eq "bob's list is empty" "$out" "[]"

# An API key of scope inference: its user's models' inference and nothing else.
keytoken() { curl -s -X POST -d "{\"apikey\": \"$1\"}" "$URL/auth/v1/logon" |
             /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])'; }
expect_fails "a scope that does not exist" "$LOOM" apikey create webapp --scope everything
expect_contains "the scope is named" "$(cat "$WORK/out")" 'scope: expected "all" or "inference"'
key=$("$LOOM" apikey create webapp --scope inference | sed -n 's/.*(shown once): //p')
expect_contains "the key's scope is listed" "$("$LOOM" apikey list)" "inference"
INF=$(keytoken "$key")
code=$(curl -s -o "$WORK/body" -w '%{http_code}' -H "X-User-Token: $INF" -X POST \
       -H 'Content-Type: application/json' -d '{"k":1}' "$URL/dlim/v1/inference/echo-so")
expect_eq "an inference key calls its user's model" "$code" 200
expect_eq "and gets its answer" "$(cat "$WORK/body")" '{"k":1}'
code=$(curl -s -o "$WORK/body" -w '%{http_code}' -H "Authorization: Bearer $INF" "$URL/dlim/v1/model")
expect_eq "an inference key may not list models" "$code" 403
expect_contains "the refusal names the scope" "$(cat "$WORK/body")" 'scope \"inference\"'
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $INF" -X POST \
       "$URL/dlim/v1/model/echo-so/operation/stop")
expect_eq "an inference key may not stop a model" "$code" 403
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $INF" "$URL/auth/v1/users")
expect_eq "an administrator's inference key is no administrator" "$code" 403
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $INF" -X POST \
       -H 'Content-Type: application/json' -d '{"label":"more"}' "$URL/auth/v1/apikeys")
expect_eq "an inference key may not make keys" "$code" 403
bobkey=$(LOOM_TOKEN=$BOB "$LOOM" apikey create bobweb --scope inference | sed -n 's/.*(shown once): //p')
BOBINF=$(keytoken "$bobkey")
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $BOBINF" -X POST \
       -d '{}' "$URL/dlim/v1/inference/echo-so")
expect_eq "another user's inference key does not reach the model" "$code" 404

# A restarted host starts the started models again, and they answer.
stop_host
start_host --cpu-slots 4
# (each model's instances start on their own: wait for each, up to 10 s;
# until then a call is told the model is starting, never that it is not)
: > "$WORK/while_starting"
for _ in $(seq 1 100); do
    code=$(post echo-ffi '{"inputs":[7]}')
    [ "$code" = 200 ] && break
    echo "$code $(cat "$WORK/body")" >> "$WORK/while_starting"
    sleep 0.1
done
expect_contains "echo-ffi after a host restart" "$(cat "$WORK/body")" '"data":[7]'
expect_eq "no call while it starts again says it is not started" \
    "$(grep -c 'is not started' "$WORK/while_starting")" 0
expect_eq "every call while it starts again is 503 saying it is starting" \
    "$(grep -vc '^503 .*is starting' "$WORK/while_starting")" 0
for _ in $(seq 1 100); do
    [ "$(post echo-so '{"c":3}')" = 200 ] && break
    sleep 0.1
done
expect_eq "echo-so after a host restart" "$(post echo-so '{"c":3}')" 200
expect_ok "undeploy -f" "$LOOM" model undeploy echo-lua -f
expect_eq "undeployed model" "$(post echo-lua '{}')" 404
stop_host

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
