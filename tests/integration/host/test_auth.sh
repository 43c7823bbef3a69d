#!/usr/bin/env bash
# Users and isolation over the real REST API: every route but logon needs a
# token; users see only their own execs (another's is 404, not 403);
# plugins, plans and users are for administrators; logons are rate limited;
# unsafe uploads and oversized bodies are refused.
LOOM=$1
TP=$2
. "$(dirname "$0")/../lib.sh"

start_host
anon() { # anon METHOD PATH [curl args]: no credentials
    local method=$1 path=$2; shift 2
    curl -s -o /dev/null -w '%{http_code}' -X "$method" "$URL$path" "$@"
}
as() { # as TOKEN METHOD PATH [curl args]: prints "STATUS BODY"
    local token=$1 method=$2 path=$3; shift 3
    curl -s -o "$WORK/body" -w '%{http_code}' -X "$method" -H "Authorization: Bearer $token" "$URL$path" "$@" > "$WORK/status"
    printf '%s %s' "$(cat "$WORK/status")" "$(cat "$WORK/body")"
}
logon() { # logon USER PASSWORD: prints the token
    curl -s -X POST -u "$1:$2" "$URL/auth/v1/logon" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("token",""))'
}

# ---- every route needs a token
for route in "GET /loom/v1/health" "GET /loom/v1/plugins" "POST /loom/v1/plugins" \
             "GET /loom/v1/plugins/framework/command" "DELETE /loom/v1/plugins/logger/jsonl" \
             "GET /platform/rest/deeplearning/v1/execs" "POST /platform/rest/deeplearning/v1/execs" \
             "GET /platform/rest/deeplearning/v1/execs/frameworks" "GET /platform/rest/deeplearning/v1/execs/x" \
             "GET /platform/rest/deeplearning/v1/execs/x/log" "POST /platform/rest/deeplearning/v1/execs/x/stop" \
             "POST /platform/rest/deeplearning/v1/execs/x/resize" "DELETE /platform/rest/deeplearning/v1/execs/x" \
             "GET /loom/v1/slots" "GET /loom/v1/plans" "POST /loom/v1/plans" "GET /loom/v1/plan?path=/" \
             "PUT /loom/v1/plan?path=/" "DELETE /loom/v1/plan?path=/x" "GET /auth/v1/users" \
             "POST /auth/v1/users" "DELETE /auth/v1/users/x" "PUT /auth/v1/users/x/password" \
             "POST /auth/v1/apikeys" "POST /auth/v1/logout"; do
    set -- $route
    expect_eq "401 without a token: $route" "$(anon "$1" "$2")" "401"
    expect_eq "401 with a forged token: $route" "$(anon "$1" "$2" -H 'Authorization: Bearer loomt_forged')" "401"
done
expect_eq "logon without credentials" "$(anon POST /auth/v1/logon)" "401"
expect_eq "logon with a wrong password" "$(anon POST /auth/v1/logon -u admin:wrong-password)" "401"

# ---- users
admin=$TOKEN
expect_ok "add alice" "$LOOM" user add alice -p alice-password
expect_ok "add bob" "$LOOM" user add bob -p bob-password
expect_fails "a short password" "$LOOM" user add carol -p short
expect_contains "short password named" "$(cat "$WORK/out")" "password"
expect_contains "user list" "$("$LOOM" user list)" "alice"
alice=$(logon alice alice-password)
bob=$(logon bob bob-password)
expect_ok "alice logged on" test -n "$alice"
expect_eq "dlim token route works too" "$(curl -s -o /dev/null -w '%{http_code}' -X POST -u bob:bob-password "$URL/dlim/v1/auth/token")" "200"
expect_contains "X-Auth-Token is accepted" "$(curl -s -H "X-Auth-Token: $alice" "$URL/loom/v1/health")" '"status":"ok"'

# ---- isolation
mkdir -p "$WORK/model"
printf '#!/bin/sh\necho secret of alice\nsleep 30\n' > "$WORK/model/run.sh"; chmod +x "$WORK/model/run.sh"
tar -C "$WORK/model" -cf "$WORK/model.tar" .
r=$(as "$alice" POST /platform/rest/deeplearning/v1/execs -F 'args=--exec-start command --model-dir m --model-main run.sh' -F "file=@$WORK/model.tar")
expect_contains "alice submits" "$r" "201 "
aid=$(echo "${r#* }" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
expect_contains "the exec is alice's" "$aid" "alice-"
for req in "GET /platform/rest/deeplearning/v1/execs/$aid" "GET /platform/rest/deeplearning/v1/execs/$aid/log" \
           "POST /platform/rest/deeplearning/v1/execs/$aid/stop" "DELETE /platform/rest/deeplearning/v1/execs/$aid"; do
    set -- $req
    expect_contains "bob gets 404 on alice's exec: $1 ${2##*/}" "$(as "$bob" "$1" "$2")" "404 "
done
expect_eq "bob's list does not show it" "$(as "$bob" GET /platform/rest/deeplearning/v1/execs)" "200 []"
expect_contains "alice's list shows it" "$(as "$alice" GET /platform/rest/deeplearning/v1/execs)" "$aid"
expect_contains "the admin sees it" "$(as "$admin" GET /platform/rest/deeplearning/v1/execs)" "$aid"
expect_contains "alice reads her log" "$(as "$alice" GET "/platform/rest/deeplearning/v1/execs/$aid/log")" "secret of alice"
expect_contains "alice stops her exec" "$(as "$alice" POST "/platform/rest/deeplearning/v1/execs/$aid/stop")" "200 "

# ---- administrators only
expect_contains "a user cannot install a plugin" \
    "$(as "$alice" POST /loom/v1/plugins -F kind=logger -F "file=@$TP/good_thirdparty.so")" "403 "
expect_contains "a user cannot remove one" "$(as "$alice" DELETE /loom/v1/plugins/logger/jsonl)" "403 "
expect_contains "a user cannot add a plan" "$(as "$alice" POST /loom/v1/plans -d '{"path": "/x"}')" "403 "
expect_contains "a user cannot list users" "$(as "$alice" GET /auth/v1/users)" "403 "
expect_contains "a user cannot change another's password" \
    "$(as "$alice" PUT /auth/v1/users/bob/password -d '{"password": "new-bob-password"}')" "403 "
expect_contains "a user changes their own" \
    "$(as "$alice" PUT /auth/v1/users/alice/password -d '{"password": "new-alice-password"}')" "200 "
expect_eq "the old password no longer works" "$(anon POST /auth/v1/logon -u alice:alice-password)" "401"

# ---- API keys and logout
r=$(as "$bob" POST /auth/v1/apikeys -d '{"label": "ci"}')
key=$(echo "${r#* }" | python3 -c 'import json,sys; print(json.load(sys.stdin)["apikey"])')
expect_contains "an API key logs on" "$(curl -s -X POST "$URL/auth/v1/logon" -d "{\"apikey\": \"$key\"}")" '"user":"bob"'
expect_contains "logout" "$(as "$bob" POST /auth/v1/logout)" "200 "
expect_contains "a token is dead after logout" "$(as "$bob" GET /loom/v1/health)" "401 "

# ---- the CLI keeps its token private
expect_eq "credentials file is 0600" "$(stat -c %a "$LOOM_HOME/credentials")" "600"

# ---- logon rate limit
for _ in 1 2 3 4 5; do anon POST /auth/v1/logon -u bob:wrong >/dev/null; done
expect_eq "the sixth failed logon is refused" "$(anon POST /auth/v1/logon -u bob:wrong)" "429"
expect_eq "even with the right password, for a while" "$(anon POST /auth/v1/logon -u bob:bob-password)" "429"

# ---- unsafe uploads and oversized bodies
mkdir -p "$WORK/evil"
python3 - "$WORK" <<'PY'
import io, sys, tarfile
work = sys.argv[1]
def make(name, members):
    with tarfile.open(f"{work}/{name}", "w") as t:
        for info, data in members:
            t.addfile(info, io.BytesIO(data) if data is not None else None)
i = tarfile.TarInfo("../escape.txt"); i.size = 4
make("dotdot.tar", [(i, b"evil")])
l = tarfile.TarInfo("link"); l.type = tarfile.SYMTYPE; l.linkname = "/etc"
make("abslink.tar", [(l, None)])
a = tarfile.TarInfo("d/up"); a.type = tarfile.SYMTYPE; a.linkname = "../.."
make("uplink.tar", [(a, None)])
PY
for t in dotdot abslink uplink; do
    r=$(as "$admin" POST /platform/rest/deeplearning/v1/execs -F 'args=--exec-start command --model-dir m --model-main x' -F "file=@$WORK/$t.tar")
    expect_contains "tar $t refused" "$r" "400 "
done
expect_ok "nothing escaped" test ! -e "$LOOM_HOME/execs/escape.txt"
truncate -s 100M "$WORK/big.bin"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $admin" \
       -H 'Content-Type: application/json' --data-binary @"$WORK/big.bin" "$URL/platform/rest/deeplearning/v1/execs")
expect_eq "a 100 MB body is refused" "$code" "413"

stop_host TERM
finish
