#!/usr/bin/env bash
# WMLA's own clients against loom unchanged: the Python compatibility
# client (wmla_client.py, Debian's python3-requests) logs on three ways,
# submits a gzip'd model archive with WMLA's flags in the query string,
# reads the log as JSON and downloads the result zip. Then the bad input:
# wrong Basic credentials (401, counted by the log-on limiter), Basic over
# plain HTTP on a non-loopback listener, an archive whose folder does not
# match --model-dir, a data_path leaving the data store, an unknown WMLA
# flag, and CORS preflights from listed and unlisted origins.
LOOM=$1
. "$(dirname "$0")/../lib.sh"
PY=/usr/bin/python3
if ! "$PY" -c 'import requests' 2>/dev/null; then
    echo "skipped: /usr/bin/python3 has no requests module (python3-requests)"
    exit 77
fi

NOTEBOOK=http://notebook.example:8888
start_host --cors-origin "$NOTEBOOK"
DL=/platform/rest/deeplearning/v1
mkdir -p "$LOOM_HOME/data/wmla-data"
echo wmla-samples > "$LOOM_HOME/data/wmla-data/samples.txt"

# ---- the notebooks' way, end to end
mkdir -p "$WORK/py"
if "$PY" "$(dirname "$0")/wmla_client.py" "$URL" admin "$ADMIN_PASSWORD" "$WORK/py" > "$WORK/py.out" 2>&1; then
    pass
else
    fail "the WMLA client: $(grep -v '^ok' "$WORK/py.out" | tail -n 20)"
fi

# basic AUTH [curl args]: METHOD PATH with Basic credentials, "STATUS BODY".
basic() {
    local auth=$1 method=$2 path=$3; shift 3
    curl -s -o "$WORK/body" -w '%{http_code}' -u "$auth" -X "$method" "$URL$path" "$@" > "$WORK/status"
    printf '%s %s' "$(cat "$WORK/status")" "$(cat "$WORK/body")"
}

# q ARGS: the query string for a submission with ARGS, as requests sends it.
q() { "$PY" -c 'import sys, urllib.parse; print("?" + urllib.parse.urlencode({"args": sys.argv[1]}))' "$1"; }

# ---- archives: the folder must be named like --model-dir; files at the root
mkdir -p "$WORK/arch/right-name" "$WORK/arch/root"
printf 'echo hello from the root layout\n' > "$WORK/arch/root/run.sh"
cp "$WORK/arch/root/run.sh" "$WORK/arch/right-name/run.sh"
tar -czf "$WORK/wrong.tar" -C "$WORK/arch" right-name
tar -czf "$WORK/root.tar" -C "$WORK/arch/root" run.sh
r=$(basic "admin:$ADMIN_PASSWORD" POST "$DL/execs$(q "--exec-start command --model-dir other-name --model-main run.sh")" \
    -F "file=@$WORK/wrong.tar")
expect_contains "a folder not named like --model-dir is 400" "$r" "400 "
expect_contains "and both names are given" "$r" 'top-level folder \"right-name\" does not match --model-dir \"other-name\"'
r=$(basic "admin:$ADMIN_PASSWORD" POST "$DL/execs$(q "--exec-start command --model-dir root --model-main run.sh")" \
    -F "file=@$WORK/root.tar")
expect_contains "files at the archive's root are accepted" "$r" '"submissionId"'
root_id=$(printf '%s' "${r#* }" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["id"])')
expect_ok "the root-layout exec finishes" "$LOOM" exec wait "$root_id" --timeout 60
r=$(http GET "$DL/execs/$root_id/log" -H 'Accept: text/plain')
expect_contains "and ran run.sh from the root" "$r" "hello from the root layout"

# ---- the CLI sends a model directory under its own name, so one holding a
# single folder is not mistaken for a misnamed archive
mkdir -p "$WORK/one-folder/pkg"
printf 'echo from the one folder\n' > "$WORK/one-folder/pkg/run.sh"
expect_ok "the CLI submits a model directory holding one folder" \
    "$LOOM" exec start --exec-start command --model-dir "$WORK/one-folder/" --model-main pkg/run.sh
cli_id=$(grep -o '[A-Za-z0-9_.-]*-[0-9]*-[0-9]*' "$WORK/out" | head -n1)
expect_ok "and it finishes" "$LOOM" exec wait "$cli_id" --timeout 60

# ---- sigName: the resource plan of that name
r=$(http POST /loom/v1/plans -d '{"path": "/wmla-sig"}')
expect_contains "a plan for the sigName" "$r" "20"
r=$(basic "admin:$ADMIN_PASSWORD" POST "$DL/execs$(q "--exec-start command --model-dir root --model-main run.sh")&sigName=wmla-sig" \
    -F "file=@$WORK/root.tar")
expect_contains "sigName picks the plan /NAME" "$r" '"sigId":"/wmla-sig"'
expect_contains "without a warning" "$r" '"warnings":[]'
r=$(http POST /auth/v1/users -d '{"name": "bob", "password": "bob-password-1"}')
expect_contains "a user who is no member of that plan" "$r" "201 "
r=$(basic "bob:bob-password-1" POST "$DL/execs$(q "--exec-start command --model-dir root --model-main run.sh")&sigName=wmla-sig" \
    -F "file=@$WORK/root.tar")
expect_contains "a plan the user may not use is ignored" "$r" '"sigId":"/bob"'
expect_contains "with a warning" "$r" 'not a member of the resource plan /wmla-sig'

# ---- WMLA's flags: a data_path leaving the data store; unknown flags
r=$(basic "admin:$ADMIN_PASSWORD" POST "$DL/execs$(q "--exec-start command --cs-datastore-meta type=fs,data_path=../../etc -- true")")
expect_contains "a data_path leaving the data store is 400" "$r" "400 "
expect_contains "and says so" "$r" 'data_path \"../../etc\" leaves the data store'
ln -s /etc "$LOOM_HOME/data/escape"
r=$(basic "admin:$ADMIN_PASSWORD" POST "$DL/execs$(q "--exec-start command --model-main run.sh --model-dir root --cs-datastore-meta type=fs,data_path=escape")" \
    -F "file=@$WORK/root.tar")
expect_contains "a data_path through a link out of the store is 400" "$r" "leads out of the data store"
r=$(basic "admin:$ADMIN_PASSWORD" POST "$DL/execs$(q "--exec-start command --edt-options minWorkers=2 -- true")")
expect_contains "an unknown --edt-options key is named" "$r" 'unknown key \"minWorkers\"'
r=$(basic "admin:$ADMIN_PASSWORD" POST "$DL/execs$(q "--exec-start command --bogus-wmla 1 -- true")")
expect_contains "a truly unknown flag is still refused by name" "$r" "unknown flag --bogus-wmla"
r=$(basic "admin:$ADMIN_PASSWORD" POST "$DL/execs$(q "--exec-start edtPyTorch -- true")")
if ! curl -s -u "admin:$ADMIN_PASSWORD" "$URL$DL/execs/frameworks" | grep -q '"name":"edtPyTorch"'; then
    expect_contains "edtPyTorch without its adapter is refused clearly" "$r" 'runs on loom'"'"'s framework \"edtPyTorch\", which is not installed'
fi

# ---- CORS
cors() { # cors ORIGIN: the headers of a preflight from ORIGIN
    curl -s -D - -o /dev/null -X OPTIONS "$URL/dlim/v1/auth/token" -H "Origin: $1" \
        -H 'Access-Control-Request-Method: POST' -H 'Access-Control-Request-Headers: content-type'
}
h=$(cors "$NOTEBOOK")
expect_contains "a listed origin's preflight is 204" "$h" "HTTP/1.1 204"
expect_contains "and may send credentials" "$h" "Access-Control-Allow-Origin: $NOTEBOOK"
expect_contains "credentials allowed" "$h" "Access-Control-Allow-Credentials: true"
h=$(cors http://evil.example)
expect_contains "an unlisted origin's preflight is 403" "$h" "HTTP/1.1 403"
expect_not_contains "and gets no allow header" "$h" "Access-Control-Allow-Origin"
h=$(curl -s -D - -o /dev/null -u "admin:$ADMIN_PASSWORD" -H "Origin: http://evil.example" "$URL$DL/execs")
expect_not_contains "an unlisted origin's reply carries no allow header" "$h" "Access-Control-Allow"
h=$(curl -s -D - -o /dev/null -u "admin:$ADMIN_PASSWORD" -H "Origin: $NOTEBOOK" "$URL$DL/execs")
expect_contains "a listed origin's reply names it" "$h" "Access-Control-Allow-Origin: $NOTEBOOK"

# ---- the CLI downloads the same zip
expect_ok "loom exec result" "$LOOM" exec result "$root_id" -o "$WORK/result.zip"
expect_eq "loom exec result writes a zip" "$("$PY" -c 'import sys,zipfile; print(zipfile.is_zipfile(sys.argv[1]))' "$WORK/result.zip")" "True"

# ---- wrong Basic credentials: 401 on a data route, counted by the limiter
# (from 127.0.0.2, so the checks above are not locked out)
wrong() { curl -s -o /dev/null -w '%{http_code}' --interface 127.0.0.2 -u "$1" "$URL$DL/execs"; }
expect_eq "wrong Basic credentials on a data route are 401" "$(wrong admin:wrong-password)" "401"
for _ in 2 3 4 5; do wrong admin:wrong-password >/dev/null; done
expect_eq "the limiter counted them: refused after five" "$(wrong admin:wrong-password)" "429"
expect_eq "even the right password, from that address" "$(wrong "admin:$ADMIN_PASSWORD")" "429"
r=$(basic "admin:$ADMIN_PASSWORD" GET "$DL/execs")
expect_contains "another address still gets in" "$r" "200 "
stop_host

# ---- Basic over plain HTTP on a non-loopback listener
IP=$(hostname -I 2>/dev/null | awk '{print $1}')
if [ -n "$IP" ] && [ "${IP#127.}" = "$IP" ]; then
    for allow in no yes; do
        flags=()
        [ $allow = yes ] && flags=(--allow-basic-over-http)
        rm -f "$LOOM_HOME/host"
        "$LOOM" serve --listen "$IP:0" --admin-password-file "$WORK/admin.pw" "${flags[@]}" >"$WORK/serve.out" 2>&1 &
        HOST_PID=$!
        wait_until 30 test -s "$LOOM_HOME/host"
        U=$(head -n1 "$LOOM_HOME/host")
        code=$(curl -s -o "$WORK/body" -w '%{http_code}' -u "admin:$ADMIN_PASSWORD" "$U$DL/execs")
        if [ $allow = no ]; then
            expect_eq "Basic over plain HTTP on $IP is refused" "$code" "403"
            code=$(curl -s -o "$WORK/body" -w '%{http_code}' -u "admin:$ADMIN_PASSWORD" "$U/auth/v1/logon")
            expect_eq "and a Basic log-on there is 403" "$code" "403"
            expect_contains "naming the way out" "$(cat "$WORK/body")" "--allow-basic-over-http"
        else
            expect_eq "unless the host allows it" "$code" "200"
        fi
        stop_host
    done
else
    skip_part "Basic over plain HTTP on a non-loopback listener: this machine has no non-loopback address"
fi
finish
