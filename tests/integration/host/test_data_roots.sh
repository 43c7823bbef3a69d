#!/usr/bin/env bash
# Where an exec's DATA_DIR may be: under the data store (HOME/data),
# /usr/share/datasets and the folders `loom serve --data-root` lists, never
# in the rest of the state home nor a folder holding it. `--data-dir /`,
# the home, its execs/ and hpo/ folders, a ".." out of the data store and a
# link in an allowed root leading into the home are all refused (400 naming
# the flag and the roots), and the refusal reads the same for a folder that
# exists and one that does not. A folder under a listed root is the job's
# DATA_DIR; a --data-root inside the home keeps the host from starting.
LOOM=$1
. "$(dirname "$0")/../lib.sh"

DL=/platform/rest/deeplearning/v1
mkdir -p "$WORK/model" "$WORK/shared/set" "$WORK/outside" "$LOOM_HOME"
printf 'sample\n' > "$WORK/shared/set/file.txt"
printf '#!/bin/sh\necho "data is $DATA_DIR"\ncat "$DATA_DIR/file.txt"\n' > "$WORK/model/run.sh"
chmod +x "$WORK/model/run.sh"
chmod 0711 "$WORK"
chmod -R a+rX "$WORK/shared"
tar -C "$WORK/model" -cf "$WORK/model.tar" .

# submit_data DIR: "STATUS BODY" for a launch exec whose --data-dir is DIR.
submit_data() {
    http POST "$DL/execs" -F "args=--exec-start command --model-dir m --model-main run.sh --data-dir $1" \
        -F "file=@$WORK/model.tar"
}
# The answer with the path the submitter named left out.
answer_without() { # answer_without DIR
    local r
    r=$(submit_data "$1")
    printf '%s' "${r//"$1"/DIR}"
}

expect_fails "a data root inside the home keeps the host from starting" \
    timeout 20 "$LOOM" serve --listen 127.0.0.1:0 --admin-password-file "$WORK/admin.pw" --data-root "$LOOM_HOME"
expect_contains "and says why" "$(cat "$WORK/out")" "--data-root $LOOM_HOME: inside the state home"

start_host --data-root "$WORK/shared"
"$LOOM" user add carol -p carol-password >/dev/null
TOKEN=$(curl -s -X POST -u carol:carol-password "$URL/auth/v1/logon" |
    python3 -c 'import json,sys; print(json.load(sys.stdin).get("token",""))')
# a tuning folder of another user's: its contents must stay unreadable
mkdir -p "$LOOM_HOME/hpo"

for dir in / "$LOOM_HOME" "$LOOM_HOME/execs" "$LOOM_HOME/hpo" "$LOOM_HOME/data/.." \
           "$LOOM_HOME/data/../execs" "$WORK" "$WORK/outside" relative/set; do
    r=$(submit_data "$dir")
    expect_contains "--data-dir $dir is refused" "$r" "400 "
    expect_contains "--data-dir $dir: the flag is named" "$r" "--data-dir"
    expect_contains "--data-dir $dir: the roots are named" "$r" "$WORK/shared"
done
ln -s "$LOOM_HOME" "$WORK/shared/home-link"
r=$(submit_data "$WORK/shared/home-link/hpo")
expect_contains "a link in a data root leading into the home is refused" "$r" "400 "

# No existence oracle: an existing folder outside and a missing one read
# the same, and so do a missing one inside a root.
expect_eq "an existing and a missing folder outside: one answer" \
    "$(answer_without /root)" "$(answer_without /no-such-folder-anywhere)"
expect_eq "a missing folder inside a root: the same answer" \
    "$(answer_without /root)" "$(answer_without "$WORK/shared/missing")"

# Allowed: a folder under the listed root, the data store, Debian's data.
r=$(submit_data "$WORK/shared/set")
expect_contains "a folder under --data-root is accepted" "$r" "201 "
id=$(printf '%s' "${r#* }" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("id",""))')
expect_ok "the job ends" "$LOOM" exec wait "$id" --timeout 60
logs=$("$LOOM" exec logs "$id" 2>&1)
expect_contains "its DATA_DIR is that folder" "$logs" "data is $WORK/shared/set"
expect_contains "and the job reads it" "$logs" "sample"
mkdir -p "$LOOM_HOME/data/sets"
expect_contains "a folder in the data store is accepted" "$(submit_data "$LOOM_HOME/data/sets")" "201 "
if [ -d /usr/share/datasets ]; then
    expect_contains "/usr/share/datasets is accepted" "$(submit_data /usr/share/datasets)" "201 "
fi
stop_host
finish
