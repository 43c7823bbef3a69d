#!/usr/bin/env bash
# Users, plans and state end to end: plans have members and a submission
# never makes a plan (but the user's own); the log-on limiter counts per
# address and per account; API keys are listed and revoked, and go with a
# password change; records follow a user's immutable id, not the name; exec
# ids never collide; bounds on queued execs, log size and archive entries;
# a Lua file registering two plugins outlives the removal of one.
LOOM=$1
. "$(dirname "$0")/../lib.sh"

logon() { # logon USER PASSWORD [curl args]: prints the token
    local u=$1 p=$2; shift 2
    curl -s -X POST -u "$u:$p" "$@" "$URL/auth/v1/logon" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("token",""))'
}
status_from() { # status_from ADDRESS USER PASSWORD: the log-on's HTTP status
    curl -s -o /dev/null -w '%{http_code}' --interface "$1" -X POST -u "$2:$3" "$URL/auth/v1/logon"
}
as() { # as TOKEN METHOD PATH [curl args]: prints "STATUS BODY"
    local token=$1 method=$2 path=$3; shift 3
    curl -s -o "$WORK/body" -w '%{http_code}' -X "$method" -H "Authorization: Bearer $token" "$URL$path" "$@" > "$WORK/status"
    printf '%s %s' "$(cat "$WORK/status")" "$(cat "$WORK/body")"
}
submit_json() { # submit_json TOKEN DLICMD-ARGS: prints "STATUS BODY"
    as "$1" POST /platform/rest/deeplearning/v1/execs -H 'Content-Type: application/json' \
        -d "{\"args\": \"$2\"}"
}
job() { # job NAME SCRIPT: a model directory whose one worker runs SCRIPT
    mkdir -p "$WORK/$1"
    printf '#!/bin/sh\n%s\n' "$2" > "$WORK/$1/run.sh"; chmod +x "$WORK/$1/run.sh"
}
start_as() { # start_as TOKEN MODEL ARGS...: prints the exec id
    local token=$1 model=$2; shift 2
    LOOM_TOKEN=$token "$LOOM" exec start --exec-start command --model-dir "$WORK/$model" \
        --model-main run.sh "$@" 2>"$WORK/start.err" | sed -n 's/^exec \([^ ]*\) submitted.*/\1/p'
}
PLANS=/loom/v1/plan/members
EXECS=/platform/rest/deeplearning/v1/execs

start_host --cpu-slots 2
"$LOOM" user add alice -p alice-password >/dev/null
"$LOOM" user add bob -p bob-password >/dev/null
alice=$(logon alice alice-password)
bob=$(logon bob bob-password)
job sleep5 'sleep 5'
job quick 'echo done'

# ---- plans have members; a submission never makes a plan but the user's own
a1=$(start_as "$alice" sleep5)
expect_contains "alice's first job made her plan" "$("$LOOM" plan list)" "/alice"
expect_ok "an administrator's plan" "$LOOM" plan add /vip
r=$(submit_json "$bob" "--exec-start command --consumer /vip")
expect_contains "bob may not use /vip (403)" "$r" "403 "
expect_contains "the refusal says why and how" "$r" "not a member of plan \\\"/vip\\\""
r=$(submit_json "$bob" "--exec-start command --consumer /alice")
expect_contains "nor alice's plan" "$r" "403 "
r=$(submit_json "$bob" "--exec-start command --consumer /bobextra1")
expect_contains "an unknown plan is 404" "$r" "404 "
expect_contains "naming it" "$r" "no plan \\\"/bobextra1\\\""
expect_not_contains "and no plan was made" "$("$LOOM" plan list)" "/bobextra1"
expect_fails "the CLI says so too" env LOOM_TOKEN="$bob" "$LOOM" exec start --exec-start command \
    --model-dir "$WORK/quick" --model-main run.sh --consumer /vip
expect_contains "naming the plan" "$(cat "$WORK/out")" "/vip"
expect_ok "an administrator adds bob to /vip" "$LOOM" plan member add /vip bob
expect_contains "members are listed" "$("$LOOM" plan member list /vip)" "bob"
expect_eq "members by REST" "$(as "$bob" GET "$PLANS?path=/vip" | cut -c1-3)" "403"
expect_fails "adding him twice" "$LOOM" plan member add /vip bob
expect_contains "is a conflict" "$(cat "$WORK/out")" "already a member"
expect_fails "an unknown user" "$LOOM" plan member add /vip nobody
expect_fails "an unknown plan" "$LOOM" plan member add /nope bob
expect_ok "a sub-plan" "$LOOM" plan add /vip/team
b1=$(start_as "$bob" quick --consumer /vip/team)
expect_contains "a member submits to the plan's sub-plans" "$b1" "bob-"
expect_ok "bob leaves /vip" "$LOOM" plan member remove /vip bob
expect_fails "and may not use it again" env LOOM_TOKEN="$bob" "$LOOM" exec start \
    --exec-start command --model-dir "$WORK/quick" --model-main run.sh --consumer /vip
expect_contains "administrators submit to any plan" "$(start_as "$TOKEN" quick --consumer /vip)" "admin-"

# ---- the slots show another user's exec only as held
for _ in $(seq 1 50); do
    [ "$(as "$TOKEN" GET /loom/v1/slots | grep -c "$a1")" = 1 ] && break; sleep 0.1
done
expect_contains "an administrator sees alice's exec on its slot" "$(as "$TOKEN" GET /loom/v1/slots)" "$a1"
expect_contains "alice sees it" "$(as "$alice" GET /loom/v1/slots)" "$a1"
r=$(as "$bob" GET /loom/v1/slots)
expect_not_contains "bob does not" "$r" "$a1"
expect_contains "but sees the slot is held" "$r" '"held":true'

# ---- records follow the immutable id: alice made again sees nothing
"$LOOM" exec stop "$a1" >/dev/null
"$LOOM" exec wait "$a1" --timeout 20 >/dev/null 2>&1
# Model services (and tuning tasks) are kept by their owner's name: a user
# who still owns one is not removed, so a new alice cannot inherit it.
expect_ok "alice deploys a model service" env LOOM_TOKEN="$alice" "$LOOM" model deploy \
    -p "$4/examples/serving/echo-lua"
expect_fails "alice cannot be removed while she owns it" "$LOOM" user remove alice
expect_contains "the refusal says what to do" "$(cat "$WORK/out")" "undeploy and delete them first"
expect_ok "she undeploys it" env LOOM_TOKEN="$alice" "$LOOM" model undeploy echo-lua
expect_ok "remove alice" "$LOOM" user remove alice
expect_ok "add alice again" "$LOOM" user add alice -p alice-password-2
alice2=$(logon alice alice-password-2)
expect_eq "the new alice sees no exec" "$(as "$alice2" GET "$EXECS")" "200 []"
expect_contains "nor the old one's by id" "$(as "$alice2" GET "$EXECS/$a1")" "404 "
expect_contains "an administrator still does" "$(as "$TOKEN" GET "$EXECS/$a1")" "200 "

# ---- exec ids: a 63-character user name, two submissions
long=$(printf 'u%.0s' $(seq 1 63))
"$LOOM" user add "$long" -p long-password >/dev/null
longt=$(logon "$long" long-password)
l1=$(start_as "$longt" sleep5)
l2=$(start_as "$longt" sleep5)
expect_ok "the first submission" test -n "$l1"
expect_ok "the second submission" test -n "$l2"
[ "$l1" != "$l2" ] && pass || fail "two execs got the same id $l1"
expect_eq "ids fit their field whole" "$(python3 -c "print(len('$l1') <= 63)")" "True"
expect_fails "a submission that fails" env LOOM_TOKEN="$longt" "$LOOM" exec start \
    --exec-start command --model-dir "$WORK/quick" --model-main missing.sh
expect_ok "leaves the first exec's folder" test -d "$LOOM_HOME/execs/$l1/_submitted_code"
expect_ok "and the second's" test -d "$LOOM_HOME/execs/$l2/_submitted_code"
expect_contains "the first still runs" "$(LOOM_TOKEN=$longt "$LOOM" exec view "$l1")" "$l1"
LOOM_TOKEN=$longt "$LOOM" exec stop "$l1" >/dev/null 2>&1
LOOM_TOKEN=$longt "$LOOM" exec stop "$l2" >/dev/null 2>&1

# ---- API keys: listed, revoked, and gone with a password change
key=$(LOOM_TOKEN=$bob "$LOOM" apikey create laptop | sed -n 's/.*(shown once): //p')
expect_contains "a key logs on" "$(curl -s -X POST -d "{\"apikey\": \"$key\"}" "$URL/auth/v1/logon")" '"token"'
expect_contains "bob lists his keys" "$(LOOM_TOKEN=$bob "$LOOM" apikey list)" "laptop"
expect_contains "an administrator lists them" "$("$LOOM" apikey list --user bob)" "laptop"
expect_contains "bob may not list alice's" "$(as "$bob" GET '/auth/v1/apikeys?user=alice')" "403 "
expect_ok "bob revokes it" env LOOM_TOKEN="$bob" "$LOOM" apikey revoke laptop
expect_contains "a revoked key does not log on" \
    "$(curl -s -o /dev/null -w '%{http_code}' -X POST -d "{\"apikey\": \"$key\"}" "$URL/auth/v1/logon")" "401"
expect_fails "revoking it twice" env LOOM_TOKEN="$bob" "$LOOM" apikey revoke laptop
key=$(LOOM_TOKEN=$bob "$LOOM" apikey create ci | sed -n 's/.*(shown once): //p')
expect_ok "a new password, keys kept" "$LOOM" user passwd bob -p bob-password-2 --keep-keys
expect_contains "the kept key logs on" \
    "$(curl -s -o /dev/null -w '%{http_code}' -X POST -d "{\"apikey\": \"$key\"}" "$URL/auth/v1/logon")" "200"
expect_eq "the old token is revoked" "$(as "$bob" GET "$EXECS" | cut -c1-3)" "401"
expect_ok "a new password" "$LOOM" user passwd bob -p bob-password-3
expect_contains "revokes the keys" \
    "$(curl -s -o /dev/null -w '%{http_code}' -X POST -d "{\"apikey\": \"$key\"}" "$URL/auth/v1/logon")" "401"

# ---- the log-on limiter: per address and per account
for _ in 1 2 3 4 5; do status_from 127.0.0.2 admin wrong-password >/dev/null; done
expect_eq "five failures lock out that address" "$(status_from 127.0.0.2 admin "$ADMIN_PASSWORD")" "429"
expect_eq "not the administrator from another address" "$(status_from 127.0.0.3 admin "$ADMIN_PASSWORD")" "200"
expect_eq "bob logs on from 127.0.0.1" "$(status_from 127.0.0.1 bob bob-password-3)" "200"
for i in $(seq 10 16); do
    for _ in 1 2 3 4; do status_from "127.0.0.$i" bob wrong-password >/dev/null; done
done
expect_eq "rotating addresses: a new one is refused for bob" "$(status_from 127.0.0.60 bob bob-password-3)" "429"
expect_eq "bob's own address still logs on" "$(status_from 127.0.0.1 bob bob-password-3)" "200"
expect_eq "another account from a new address" "$(status_from 127.0.0.61 "$long" long-password)" "200"
stop_host TERM

# ---- bounds: queued execs, log size, archive entries
rm -rf "$LOOM_HOME"
start_host --cpu-slots 1 --max-queued-execs 2 --log-max-bytes 64K --archive-max-entries 50
job sleep20 'sleep 20'
blocker=$(start_as "$TOKEN" sleep20)
q1=$(start_as "$TOKEN" quick)
q2=$(start_as "$TOKEN" quick)
expect_ok "two queued" test -n "$q2"
expect_fails "a third waiting exec is refused" "$LOOM" exec start --exec-start command \
    --model-dir "$WORK/quick" --model-main run.sh
expect_contains "naming the bound" "$(cat "$WORK/out")" "--max-queued-execs"
"$LOOM" exec stop "$q1" >/dev/null; "$LOOM" exec stop "$q2" >/dev/null; "$LOOM" exec stop "$blocker" >/dev/null
"$LOOM" exec wait "$blocker" --timeout 20 >/dev/null 2>&1
job chatty 'i=0; while [ $i -lt 20000 ]; do echo "line $i of a job that talks too much"; i=$((i+1)); done; echo last-line'
c=$(start_as "$TOKEN" chatty)
expect_ok "the chatty job ends" "$LOOM" exec wait "$c" --timeout 60
log="$LOOM_HOME/execs/$c/log/worker-0/stdout"
size=$(stat -c %s "$log")
expect_eq "its log is within the bound" "$(python3 -c "print($size <= 65536)")" "True"
expect_contains "and says it was cut" "$(head -c 300 "$log")" "--log-max-bytes"
expect_contains "keeping the tail" "$(tail -n1 "$log")" "last-line"
mkdir -p "$WORK/many"
for i in $(seq 1 60); do echo "$i" > "$WORK/many/f$i"; done
cp "$WORK/quick/run.sh" "$WORK/many/"
expect_fails "an archive of 61 entries" "$LOOM" exec start --exec-start command \
    --model-dir "$WORK/many" --model-main run.sh
expect_contains "is refused naming the bound" "$(cat "$WORK/out")" "--archive-max-entries"
expect_fails "a bad bound is refused at start" "$LOOM" serve --listen 127.0.0.1:0 --max-queued-execs 0
expect_contains "naming it" "$(cat "$WORK/out")" "--max-queued-execs: expected"

# ---- a Lua file registering two plugins: removing one keeps the file
cat > "$WORK/twins.lua" <<'LUA'
for _, name in ipairs({"twin_a", "twin_b"}) do
  loom.register_framework{
    name = name, version = "1.0", description = "one of two in a file", style = "launch",
    plan = function(req) return {{argv = {"sh", req.model_main}}} end,
  }
end
LUA
r=$(http POST /loom/v1/plugins -F kind=framework -F "file=@$WORK/twins.lua")
expect_contains "the file registers" "$r" "201 "
expect_contains "both" "$("$LOOM" plugin list)" "twin_b"
expect_contains "remove one" "$(http DELETE /loom/v1/plugins/framework/twin_a)" "200 "
expect_contains "the other stays" "$("$LOOM" plugin list)" "twin_b"
t=$("$LOOM" exec start --exec-start twin_b --model-dir "$WORK/quick" --model-main run.sh 2>&1)
expect_contains "and runs" "$t" "submitted"
stop_host TERM
start_host --cpu-slots 1
listing=$("$LOOM" --json plugin list)
expect_contains "after a restart the other still loads" "$listing" '"name":"twin_b"'
expect_not_contains "the removed one does not come back" "$listing" '"name":"twin_a"'
expect_not_contains "nor any failure" "$listing" '"state":"failed"'
expect_contains "remove the other" "$(http DELETE /loom/v1/plugins/framework/twin_b)" "200 "
expect_eq "the file went with the last" "$(ls "$LOOM_HOME/plugins" | grep -c lua)" "0"
stop_host TERM
finish
