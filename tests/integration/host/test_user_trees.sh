#!/usr/bin/env bash
# A job plants links in its own exec folder and the host, running as root,
# must not follow them: the log routes refuse a log that is a link (to the
# administrator's credentials), the log pump's trim leaves a root-only file
# that "stdout.trim" points at alone, the result zip leaves links and the
# host's own files out, deploying the exec's model copies no link's target,
# and deleting the exec leaves the outside alone.
LOOM=$1
. "$(dirname "$0")/../lib.sh"

mkdir -p "$WORK/outside"
echo "admin-token-4f1d9c" > "$WORK/outside/credentials"
echo "root-only content" > "$WORK/outside/victim"
chmod 600 "$WORK/outside/credentials" "$WORK/outside/victim"
chmod 711 "$WORK" "$WORK/outside"

start_host --log-max-bytes 8192

mkdir -p "$WORK/model"
cat > "$WORK/model/plant.sh" <<SH
#!/bin/sh
L="\$RESULT_DIR/log/worker-0"
echo "before the links" >&2
rm -f "\$L/stderr" && ln -s "$WORK/outside/credentials" "\$L/stderr"
mkdir -p "\$RESULT_DIR/log/driver" && ln -s "$WORK/outside/credentials" "\$RESULT_DIR/log/driver/stdout"
ln -s "$WORK/outside/victim" "\$L/stdout.trim"
ln -s "$WORK/outside/credentials" "\$RESULT_DIR/creds"
ln -s ../../../outside "\$RESULT_DIR/up"
ln -s "$WORK/outside" "\$RESULT_DIR/outside"
mkdir -p "\$RESULT_DIR/tmp" && echo scratch > "\$RESULT_DIR/tmp/scratch"
echo 1234 > "\$RESULT_DIR/log/.edtPyTorch-checkpoint"
echo mine > "\$RESULT_DIR/result.txt"
mkdir -p "\$RESULT_DIR/model" && ln -s "$WORK/outside/credentials" "\$RESULT_DIR/model/model.safetensors"
echo '{}' > "\$RESULT_DIR/model/edt.json"
i=0
while [ \$i -lt 2000 ]; do echo "the job chose this line \$i"; i=\$((i + 1)); done
echo planted
SH
chmod +x "$WORK/model/plant.sh"
out=$("$LOOM" exec start --exec-start command --model-dir "$WORK/model" --model-main plant.sh)
id=$(echo "$out" | sed -n 's/^exec \([^ ]*\) submitted.*/\1/p')
expect_ok "the planting job finishes" "$LOOM" exec wait "$id" --timeout 60
dir="$LOOM_HOME/execs/$id"
expect_ok "the job planted its stderr link" test -L "$dir/log/worker-0/stderr"

# ---- the log routes refuse the link
E=/platform/rest/deeplearning/v1/execs
r=$(http GET "$E/$id/log?worker=0&stream=stderr")
expect_not_contains "log route: the credentials are not read" "$r" "admin-token"
expect_contains "log route: refused" "$r" "403 "
expect_contains "log route: names the file and the link" "$r" "log/worker-0/stderr: refused"
r=$(http GET "$E/$id/log?offset=0&worker=0&stream=stderr")
expect_not_contains "log route by parts: not read" "$r" "admin-token"
r=$(http GET "$E/$id/log")
expect_not_contains "log route, driver's log by default: not read" "$r" "admin-token"
expect_contains "log route, driver's log: refused" "$r" "403 "
r=$(http GET "/platform/rest/deeplearning/v1/scheduler/applications/$id/executor/1/logs/stderr")
expect_not_contains "executor log route: the credentials are not read" "$r" "admin-token"
expect_contains "executor log route: refused" "$r" "403 "
r=$(http GET "/platform/rest/deeplearning/v1/scheduler/applications/$id/executor/1/logs/stdout?lastlines=1")
expect_contains "executor log route: a plain log still reads" "$r" "200 planted"

# ---- the trim wrote the log, not the file its .trim link names
expect_eq "trim: the root-only file is unchanged" "$(cat "$WORK/outside/victim")" "root-only content"
expect_ok "trim: the link is still a link" test -L "$dir/log/worker-0/stdout.trim"
expect_contains "trim: the log was trimmed" "$(head -c 200 "$dir/log/worker-0/stdout")" "passed its limit of 8192 bytes"

# ---- the result zip: no links, none of the host's files
curl -s -o "$WORK/result.zip" -H "Authorization: Bearer $TOKEN" "$URL$E/$id/result"
names=$(python3 -c 'import sys, zipfile; print("\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))' "$WORK/result.zip")
expect_contains "zip: the job's result is in" "$names" "result.txt"
expect_contains "zip: the job's log is in" "$names" "log/worker-0/stdout"
for left in creds up outside log/worker-0/stderr log/worker-0/stdout.trim log/driver/stdout tmp/ \
            log/.edtPyTorch-checkpoint _submitted_code; do
    expect_not_contains "zip: $left is left out" "$(echo "$names" | grep -x -- "$left/\?.*")" "$left"
done
leaks=$(python3 -c 'import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
print(sum(b"admin-token" in z.read(n) or b"root-only" in z.read(n) for n in z.namelist()))' "$WORK/result.zip")
expect_eq "zip: nothing from outside is in it" "$leaks" "0"

# ---- deploying the exec's model copies no link's target
r=$(http POST /dlim/v1/model -H 'Content-Type: application/json' --data "{\"fromExec\": \"$id\", \"name\": \"stolen\"}")
expect_contains "deploy from the exec: refused" "$r" "403 "
expect_contains "deploy from the exec: names the file" "$r" "model/model.safetensors"
expect_eq "deploy from the exec: the credentials are in no model" \
    "$(grep -rl admin-token "$LOOM_HOME/models" 2>/dev/null | wc -l)" "0"

# ---- a data_path through a link in the data store makes nothing outside
mkdir -p "$LOOM_HOME/data" && ln -s "$WORK/outside" "$LOOM_HOME/data/elsewhere"
expect_fails "data_path through a link: refused" "$LOOM" exec start --exec-start command \
    --model-dir "$WORK/model" --model-main plant.sh --cs-datastore-meta type=fs,data_path=elsewhere/new
expect_contains "data_path through a link: says why" "$(cat "$WORK/out")" "data_path"
expect_ok "data_path through a link: no folder made outside" test ! -e "$WORK/outside/new"

# ---- deleting the exec follows none of its links
expect_ok "delete the exec" "$LOOM" exec delete "$id"
expect_ok "delete: the exec folder is gone" test ! -e "$dir"
expect_eq "delete: the credentials are still there" "$(cat "$WORK/outside/credentials")" "admin-token-4f1d9c"
expect_eq "delete: the victim is still there" "$(cat "$WORK/outside/victim")" "root-only content"

stop_host
finish
