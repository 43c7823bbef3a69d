#!/usr/bin/env bash
# --shared-dir: the folders jobs reach (execs, tuning, models, optimizers,
# data, plugins) live in a folder every node mounts, the home keeps the
# host's state alone and becomes 0700. A missing, relative, writable-by-
# others folder, or one around or inside the home, is refused naming the
# flag; a --data-dir in the state home is still refused; a restarted host
# finds its execs there. Needs root (accounts; skipped otherwise).
LOOM=$1
SRC=$3
. "$(dirname "$0")/../lib.sh"
if [ "$(id -u)" != 0 ]; then
    echo "SKIP: needs root (jobs under accounts of their own)"; exit 77
fi
chmod 0711 "$WORK"
SHARED=$WORK/shared
refused() { # refused NAME DIR TEXT: serve --shared-dir DIR fails naming TEXT
    expect_fails "$1" "$LOOM" serve --listen 127.0.0.1:0 --admin-password-file "$WORK/admin.pw" --shared-dir "$2"
    expect_contains "$1: says why" "$(cat "$WORK/out")" "$3"
}
refused "a relative folder" shared "--shared-dir shared: expected an absolute path"
refused "a missing folder" "$SHARED" "mount the shared file system there first"
mkdir -p "$SHARED" && chmod 0777 "$SHARED"
refused "a folder others may write" "$SHARED" "writable by no one else"
chmod 0755 "$SHARED"
mkdir -p "$LOOM_HOME/inside"
refused "a folder inside the home" "$LOOM_HOME/inside" "lies around it"
refused "a folder around the home" "$WORK" "lies beneath it"
expect_eq "nothing was made in a refused folder" "$(ls -A "$SHARED")" ""

start_host --shared-dir "$SHARED"
. "$(dirname "$0")/erin_jobs.sh"
erin_logs_on
erin_submits
id=$ERIN_EXEC
expect_contains "erin's exec" "$id" "erin"
expect_contains "a --data-dir in the state home is refused" \
    "$(http POST /platform/rest/deeplearning/v1/execs -F "file=@$WORK/model.tgz" \
        -F "args=--exec-start command --model-dir model --model-main train.sh --data-dir $LOOM_HOME")" \
    "400 "
TOKEN=$ADMIN_TOKEN
expect_ok "the exec ends" "$LOOM" exec wait "$id" --timeout 60
expect_eq "its result is in the shared folder" "$(cat "$SHARED/execs/$id/result.txt")" "result of erin"
expect_ok "a model deployed" "$LOOM" model deploy -p "$SRC/examples/serving/echo-lua"
expect_ok "and started" "$LOOM" model start echo-lua --wait 90
expect_contains "its kernel reads its files there" \
    "$(curl -s -H "Authorization: Bearer $TOKEN" -X POST -H 'Content-Type: application/json' \
        --data-binary '{"x":[1]}' "$URL/dlim/v1/inference/echo-lua")" '{"x":[1]}'
expect_ok "its files are there" test -f "$SHARED/models/echo-lua/model/echo.lua"
expect_ok "a Lua algorithm" "$LOOM" algorithm add "$SRC/algorithms/examples/lua_search/coordinate_search.lua"
finished() { http GET /platform/rest/deeplearning/v1/hypersearch/erintask | grep -q '"state":"FINISHED"'; }
expect_ok "the tuning task finished" wait_until 60 finished
expect_ok "its folder is there" test -d "$SHARED/hpo/erintask"
expect_ok "a Python optimizer" "$LOOM" algorithm add "$SRC/tests/integration/hpo/fixtures/wmla_optimizer"
expect_eq "the optimizer's folder is there" "$(ls "$SHARED/algorithms" | grep -c .)" "1"
expect_eq "the Lua algorithm's file is there" "$(ls "$SHARED/plugins" | grep -c '\.lua$')" "1"
"$LOOM" model stop echo-lua >/dev/null 2>&1

expect_eq "the shared folder's modes" \
    "$(cd "$SHARED" && stat -c '%n %a' . execs plugins data models hpo algorithms | tr '\n' ' ')" \
    ". 711 execs 711 plugins 711 data 755 models 711 hpo 711 algorithms 711 "
expect_eq "the home is the host's alone" "$(stat -c %a "$LOOM_HOME")" "700"
expect_eq "no job folder in the home" \
    "$(cd "$LOOM_HOME" && ls -d execs plugins data models hpo algorithms 2>/dev/null | tr '\n' ' ')" ""
expect_eq "no host state in the shared folder" \
    "$(cd "$SHARED" && ls -d loom.db loom.log credentials host uploads 2>/dev/null | tr '\n' ' ')" ""
stop_host

start_host --shared-dir "$SHARED"
expect_contains "a restarted host finds the exec" "$("$LOOM" exec view "$id")" "FINISHED"
expect_contains "and its log" "$(http GET "/platform/rest/deeplearning/v1/execs/$id/log")" "200 "
stop_host
finish
