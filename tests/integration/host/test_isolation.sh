#!/usr/bin/env bash
# Jobs cannot see the host's state: a job of alice's tries to read and write
# loom.db, loom.log, the credentials, the plugins folder and bob's exec
# folder, to make herself an administrator through SQLite, to signal the
# host and read its environment; every attempt fails and alice stays a user. Run with the host
# as root (jobs under accounts of their own) and, when this runs as root,
# again with the host as an unprivileged user (jobs under that same user:
# Landlock alone). Root without accounts is refused.
LOOM=$1
TP=$2
. "$(dirname "$0")/../lib.sh"

logon() { # logon USER PASSWORD: prints the token
    curl -s -X POST -u "$1:$2" "$URL/auth/v1/logon" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("token",""))'
}
submit() { # submit TOKEN MODELDIR MAIN: prints the exec id
    tar -C "$2" -cf "$WORK/model.tar" .
    curl -s -H "Authorization: Bearer $1" -X POST "$URL/platform/rest/deeplearning/v1/execs" \
         -F "args=--exec-start command --model-dir m --model-main $3" -F "file=@$WORK/model.tar" |
        python3 -c 'import json,sys; print(json.load(sys.stdin).get("id",""))'
}
state_of() {
    "$LOOM" --json exec view "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("state",""))'
}
wait_state() { # wait_state ID STATE
    for _ in $(seq 1 200); do
        [ "$(state_of "$1")" = "$2" ] && return 0
        sleep 0.1
    done
    return 1
}

# The attack: every line it prints with "GOT" is a hole.
write_attack() { # write_attack DIR HOME BOBS_EXEC HOST_PID
    mkdir -p "$1"
    cat > "$1/attack.sh" <<SH
#!/bin/sh
H='$2'; BOB='$3'
for f in "\$H/loom.db" "\$H/loom.log" "\$H/credentials" "\$H/loom.lock" "\$BOB/log/worker-0/stdout"; do
    cat "\$f" >/dev/null 2>&1 && echo "GOT read \$f"
    (echo x >> "\$f") 2>/dev/null && echo "GOT write \$f"
done
for d in "\$H" "\$H/plugins" "\$H/execs" "\$BOB"; do
    ls "\$d" >/dev/null 2>&1 && echo "GOT list \$d"
    (echo x > "\$d/planted") 2>/dev/null && echo "GOT create in \$d"
done
ls "\$H/plugins"/*.so >/dev/null 2>&1 && echo "GOT plugin files"
rm -rf "\$BOB/log" 2>/dev/null && echo "GOT removed bob's log"
ln -s "\$H/loom.db" "\$RESULT_DIR/db" && cat "\$RESULT_DIR/db" >/dev/null 2>&1 && echo "GOT db via link"
if python3 -c 'import sqlite3' 2>/dev/null; then
    python3 - "\$H/loom.db" <<'PY' && echo "GOT sqlite update"
import sqlite3, sys
try:
    c = sqlite3.connect(sys.argv[1]); c.execute("update users set role='admin' where name='alice'"); c.commit()
except Exception:
    sys.exit(1)
PY
else
    echo "no python3 sqlite3: SQL attempt not run"
fi
kill -0 $4 2>/dev/null && echo "GOT signal to the host"
cat /proc/$4/environ >/dev/null 2>&1 && echo "GOT the host's environment"
for f in /proc/$4/fd/*; do cat "\$f" >/dev/null 2>&1 && echo "GOT the host's open file \$f"; done
echo mine > "\$RESULT_DIR/mine.txt" && echo "own exec folder writable"
[ "\$FABRIC_HOME" != "\$H" ] && echo "FABRIC_HOME is not the state home"
echo "attack done"
SH
    chmod +x "$1/attack.sh"
}

# run_attack LABEL: users alice and bob on the running host; bob's job
# runs, alice's attacks it and the host.
run_attack() {
    local label=$1
    "$LOOM" user add alice -p alice-password >/dev/null 2>&1
    "$LOOM" user add bob -p bob-password >/dev/null 2>&1
    local alice bob
    alice=$(logon alice alice-password)
    bob=$(logon bob bob-password)
    mkdir -p "$WORK/bobmodel"
    printf '#!/bin/sh\necho secret of bob\nsleep 60\n' > "$WORK/bobmodel/run.sh"
    chmod +x "$WORK/bobmodel/run.sh"
    local bid aid
    bid=$(submit "$bob" "$WORK/bobmodel" run.sh)
    expect_ok "$label: bob's job runs" wait_state "$bid" RUNNING
    write_attack "$WORK/attack" "$LOOM_HOME" "$LOOM_HOME/execs/$bid" "$HOST_PID"
    aid=$(submit "$alice" "$WORK/attack" attack.sh)
    expect_ok "$label: alice's job ends" "$LOOM" exec wait "$aid" --timeout 60
    local logs
    logs=$("$LOOM" exec logs "$aid" 2>&1)
    expect_contains "$label: the attack ran to its end" "$logs" "attack done"
    expect_not_contains "$label: no attempt got through" "$logs" "GOT"
    grep GOT <<<"$logs" >&2
    expect_contains "$label: the job writes its own folder" "$logs" "own exec folder writable"
    expect_contains "$label: FABRIC_HOME" "$logs" "FABRIC_HOME is not the state home"
    if ! grep -q "no python3 sqlite3" <<<"$logs"; then pass; else echo "NOT TESTED ($label): python3 without sqlite3" >&2; fi
    expect_contains "$label: alice stays a user" "$("$LOOM" user list)" "$(printf 'alice')"
    expect_eq "$label: alice's role" \
        "$("$LOOM" --json user list | python3 -c 'import json,sys; print([u["role"] for u in json.load(sys.stdin) if u["name"]=="alice"][0])')" "user"
    expect_contains "$label: bob's log is intact" "$("$LOOM" exec logs "$bid")" "secret of bob"
    expect_ok "$label: the host is alive" curl -sf -o /dev/null -H "Authorization: Bearer $TOKEN" "$URL/loom/v1/health"
    expect_eq "$label: loom.db is 0600" "$(stat -c %a "$LOOM_HOME/loom.db")" "600"
    expect_eq "$label: loom.log is 0600" "$(stat -c %a "$LOOM_HOME/loom.log")" "600"
    "$LOOM" exec stop "$bid" >/dev/null 2>&1
}

# ---- the host as root: each user's jobs under a uid of their own (they
# must be able to pass the folders above the home)
chmod 0711 "$WORK"
start_host
expect_contains "the host says what isolation jobs have" "$(cat "$WORK/serve.out")" "jobs: "
if grep -q "no Landlock" "$WORK/serve.out"; then
    echo "NOT TESTED: this kernel has no Landlock; $(grep 'jobs:' "$WORK/serve.out")" >&2
    finish
    exit $?
fi
if [ "$(id -u)" = 0 ]; then
    expect_contains "root: a uid per user" "$(cat "$WORK/serve.out")" "a uid per user from 200000-299999"
    expect_eq "the home is 0711" "$(stat -c %a "$LOOM_HOME")" "711"
fi
run_attack root
if [ "$(id -u)" = 0 ]; then
    aowner=$(stat -c '%u %a' "$LOOM_HOME"/execs/alice-*)
    bowner=$(stat -c '%u %a' "$LOOM_HOME"/execs/bob-*)
    case "$aowner" in 2[0-9][0-9][0-9][0-9][0-9]" 700") pass ;; *) fail "alice's folder owner: $aowner" ;; esac
    expect_ok "bob's folder has another owner" test "${aowner%% *}" != "${bowner%% *}"
fi
stop_host

# ---- elastic training under an account: `loom worker` confined, its
# shared-memory segment and model folder its own (the demo, one epoch)
if [ "$(id -u)" = 0 ]; then
    expect_ok "the demo trains under an account of its own" \
        timeout 250 "$LOOM" demo --home "$WORK/demo-home" --keep --epochs 1
    expect_contains "the elastic job finished" "$(cat "$WORK/out")" "every sample used once per epoch through both resizes: yes"
    expect_contains "under a uid per user" "$(stat -c %u "$WORK"/demo-home/execs/*/model)" "2000"
fi

# ---- root without accounts is refused (test_root_home has the rest)
if [ "$(id -u)" = 0 ]; then
    expect_fails "root without accounts" \
        timeout 20 "$LOOM" serve --listen 127.0.0.1:0 --job-uid-range none --require-isolation
    expect_contains "the refusal says why" "$(cat "$WORK/out")" "--job-uid-range none: refused as root"
fi
expect_fails "a bad uid range" timeout 20 "$LOOM" serve --job-uid-range 5-1
expect_contains "the range is named" "$(cat "$WORK/out")" "--job-uid-range"

# ---- the host as an unprivileged user: Landlock alone
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
    export LOOM_HOME="$WORK/home-nobody"
    mkdir -p "$LOOM_HOME"
    chown 65534:65534 "$LOOM_HOME" "$WORK"
    chmod 0711 "$WORK"
    cat > "$WORK/loom-as-nobody" <<SH
#!/bin/sh
if [ "\$1" = serve ]; then exec setpriv --reuid=65534 --regid=65534 --clear-groups "$LOOM" "\$@"; fi
exec "$LOOM" "\$@"
SH
    chmod +x "$WORK/loom-as-nobody"
    REAL_LOOM=$LOOM
    LOOM="$WORK/loom-as-nobody"
    start_host --require-isolation
    LOOM=$REAL_LOOM
    expect_contains "not root: jobs run as the host's user" "$(cat "$WORK/serve.out")" "not root"
    run_attack nobody
    stop_host
else
    echo "NOT TESTED: the host as an unprivileged user (needs root and setpriv to switch)" >&2
fi
finish
