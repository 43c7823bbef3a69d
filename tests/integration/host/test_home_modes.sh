#!/usr/bin/env bash
# The state home's modes, as README's table says: a home populated with an
# exec, a tuning task, a deployed and started model, an installed Lua
# algorithm and Python optimizer is listed and read, path by path, as an
# unprivileged local account (nobody): only the data store and the plugin
# files (by name) are readable, nothing is listable but the data store,
# and every top-level entry has its mode. An older home with wider modes
# is tightened at start. Needs root (skipped otherwise).
LOOM=$1
SRC=$3
BUILD=$4
. "$(dirname "$0")/../lib.sh"
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
    echo "SKIP: needs root and setpriv"; exit 77
fi

chmod 0711 "$WORK" # accounts need the folders above the home searchable
# an older home: the folders a service made 0755
mkdir -p "$LOOM_HOME/hpo/old-task" "$LOOM_HOME/algorithms/old" "$LOOM_HOME/models"
chmod 0755 "$LOOM_HOME" "$LOOM_HOME/hpo" "$LOOM_HOME/algorithms" "$LOOM_HOME/models"
echo secret > "$LOOM_HOME/hpo/old-task/search.log"
chmod 0644 "$LOOM_HOME/hpo/old-task/search.log"
start_host
. "$(dirname "$0")/erin_jobs.sh"
erin_logs_on

# ---- populate: an exec, a tuning task, a model, two algorithms
erin_submits
id=$ERIN_EXEC
TOKEN=$ADMIN_TOKEN
expect_ok "the exec ends" "$LOOM" exec wait "$id" --timeout 60
for _ in $(seq 1 300); do
    http GET /platform/rest/deeplearning/v1/hypersearch/erintask | grep -q '"state":"FINISHED"' && break
    sleep 0.1
done
expect_contains "the tuning task finished" "$(http GET /platform/rest/deeplearning/v1/hypersearch/erintask)" '"state":"FINISHED"'
expect_ok "a model deployed" "$LOOM" model deploy -p "$SRC/examples/serving/echo-lua"
expect_ok "and started" "$LOOM" model start echo-lua --wait 90
expect_contains "its kernel reads its files" \
    "$(curl -s -H "Authorization: Bearer $TOKEN" -X POST -H 'Content-Type: application/json' \
        --data-binary '{"x":[1]}' "$URL/dlim/v1/inference/echo-lua")" '{"x":[1]}'
mkdir -p "$WORK/idle"
cp "$SRC/examples/serving/echo-lua/echo.lua" "$WORK/idle/"
sed 's/"echo-lua"/"echo-idle"/' "$SRC/examples/serving/echo-lua/model.json" > "$WORK/idle/model.json"
expect_ok "a model deployed, never started" "$LOOM" model deploy -p "$WORK/idle"
expect_ok "a Lua algorithm" "$LOOM" algorithm add "$SRC/algorithms/examples/lua_search/coordinate_search.lua"
expect_ok "a Python optimizer" "$LOOM" algorithm add "$SRC/tests/integration/hpo/fixtures/wmla_optimizer"

# ---- every top-level entry has its mode
modes=$(cd "$LOOM_HOME" && stat -c '%n %a' . execs plugins data models hpo algorithms uploads \
        loom.db loom.log credentials host | tr '\n' ' ')
expect_eq "the table's modes" "$modes" \
    ". 711 execs 711 plugins 711 data 755 models 711 hpo 711 algorithms 711 uploads 700 loom.db 600 loom.log 600 credentials 600 host 600 "

# ---- list and read every path as nobody
(cd "$LOOM_HOME" && find . -mindepth 0) > "$WORK/paths"
cat > "$WORK/probe.sh" <<'SH'
#!/bin/sh
cd "$1" 2>/dev/null || { echo "NOHOME"; exit 0; }
while IFS= read -r p; do
    if [ -d "$1/$p" ]; then
        ls "$1/$p" >/dev/null 2>&1 && echo "LIST $p"
    elif [ -e "$1/$p" ]; then
        head -c 1 "$1/$p" >/dev/null 2>&1 && echo "READ $p"
    fi
done < "$2"
SH
chmod 0755 "$WORK/probe.sh"
chmod 0644 "$WORK/paths"
setpriv --reuid=65534 --regid=65534 --clear-groups sh "$WORK/probe.sh" "$LOOM_HOME" "$WORK/paths" > "$WORK/got" 2>&1
allowed() { # what README's table lets any local account read or list
    case "$1" in
        "LIST ./data" | "LIST ./data/"* | "READ ./data/"*) return 0 ;;
        "READ ./plugins/"*/*) return 1 ;;
        "READ ./plugins/"*) return 0 ;;
    esac
    return 1
}
bad=0
while IFS= read -r line; do
    allowed "$line" || { echo "readable by nobody: $line" >&2; bad=$((bad + 1)); }
done < "$WORK/got"
expect_eq "nothing else is readable or listable by another account" "$bad" 0
expect_contains "the probe reached the home (a plugin file by name)" "$(cat "$WORK/got")" "READ ./plugins/"
expect_eq "paths probed" "$(grep -c . "$WORK/paths" | awk '$1 > 30 {print "many"}')" many
expect_contains "an old tuning folder was populated" "$(cat "$WORK/paths")" "./hpo/old-task/search.log"
expect_contains "the exec's result is among them" "$(cat "$WORK/paths")" "result.txt"
expect_contains "the model's files are among them" "$(cat "$WORK/paths")" "./models/echo-lua/model/echo.lua"
expect_contains "so are the idle model's" "$(cat "$WORK/paths")" "./models/echo-idle/model/echo.lua"
"$LOOM" model stop echo-lua >/dev/null 2>&1
stop_host

# ---- an older home's model folders are tightened at start
chmod 0755 "$LOOM_HOME/models/echo-idle" "$LOOM_HOME/models/echo-idle/model" "$LOOM_HOME/models/echo-idle/work"
start_host
for _ in $(seq 1 100); do
    [ "$(stat -c %a "$LOOM_HOME/models/echo-idle/model")" = 750 ] && break
    sleep 0.05
done
expect_eq "an older model's folders" \
    "$(cd "$LOOM_HOME/models/echo-idle" && stat -c '%n %a' . model work | tr '\n' ' ')" ". 711 model 750 work 700 "
stop_host
finish
