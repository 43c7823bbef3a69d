#!/usr/bin/env bash
# The console's live updates (GET /loom/v1/events, Server-Sent Events):
# events arrive when a job starts and ends; another user's exec never shows
# in a stream; a quiet stream gets its keep-alive comment; logging off a
# token ends its streams; one user's streams are bounded (--max-event-streams-per-user, 429 past it) and a
# closed one frees its place; the host stops promptly with streams open.
LOOM=$1
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../train_lib.sh"

start_host --cpu-slots 4 --max-event-streams-per-user 2
expect_ok "add bob" "$LOOM" user add bob -p bob-password
BOB_TOKEN=$(curl -s -X POST -u bob:bob-password "$URL/auth/v1/logon" |
            python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
# bob from the console: its session cookie
curl -s -D "$WORK/bob.h" -o /dev/null -X POST -H 'Content-Type: application/json' \
     -d '{"user":"bob","password":"bob-password"}' "$URL/console/logon"
BOB_COOKIE=$(sed -n 's/^[Ss]et-[Cc]ookie: \(loom_session=[^;]*\);.*/\1/p' "$WORK/bob.h")
expect_contains "bob's session" "$BOB_COOKIE" "loom_session=loomt_"

PIDS=()
stream() { # stream FILE CURL-ARGS...: a stream followed in the background
    local out=$1; shift
    curl -sN -D "$out.h" -o "$out" "$@" "$URL/loom/v1/events" &
    PIDS+=($!)
}
has() { grep -q -- "$2" "$1" 2>/dev/null; } # has FILE TEXT
# has_event FILE KIND PYTHON-CONDITION: an event KIND whose data d meets it
has_event() {
    python3 - "$1" "$2" "$3" <<'PY'
import json, sys
path, kind, cond = sys.argv[1:]
events, name = [], None
for line in open(path, encoding="utf-8"):
    line = line.rstrip("\n")
    if line.startswith("event: "):
        name = line[7:]
    elif line.startswith("data: ") and name == kind:
        events.append(json.loads(line[6:]))
sys.exit(0 if any(eval(cond, {"d": d}) for d in events) else 1)
PY
}

stream "$WORK/admin.sse" -H "Authorization: Bearer $TOKEN"
stream "$WORK/bob.sse" -H "Cookie: $BOB_COOKIE"
expect_ok "the administrator's stream starts with the devices" wait_until 10 has_event "$WORK/admin.sse" slots 'len(d) == 4'
expect_ok "and the execs (none)" wait_until 10 has_event "$WORK/admin.sse" execs 'd == []'
expect_ok "and the models (none)" wait_until 10 has_event "$WORK/admin.sse" models 'd == []'
expect_ok "bob's stream (his cookie) starts too" wait_until 10 has_event "$WORK/bob.sse" slots 'len(d) == 4'
expect_contains "an event stream" "$(cat "$WORK/admin.sse.h")" "Content-Type: text/event-stream"
expect_contains "not cached" "$(cat "$WORK/admin.sse.h")" "Cache-Control: no-cache"
expect_contains "a reconnection delay for EventSource" "$(cat "$WORK/admin.sse")" "retry: 2000"

# ---- a job starts and ends: its events arrive
model_dir "$WORK/m" 12000 400
x=$(submit --model-dir "$WORK/m" --numWorker 2)
expect_ok "the exec appears in the owner's stream" wait_until 30 has_event "$WORK/admin.sse" execs "any(e['id'] == '$x' for e in d)"
expect_ok "its devices appear held" wait_until 30 has_event "$WORK/admin.sse" slots "sum(1 for s in d if s['owner'] == '$x') == 2"
expect_ok "it runs" wait_for "$x" 'v["state"] == "RUNNING"' 30
expect_ok "its running state arrives" wait_until 30 has_event "$WORK/admin.sse" execs "any(e['id'] == '$x' and e['state'] == 'RUNNING' for e in d)"
expect_ok "it is stopped" "$LOOM" exec stop "$x"
"$LOOM" exec wait "$x" --timeout 60 >/dev/null 2>&1
final=$(field "$x" 'v["state"]')
expect_ok "it ended" test "$final" != RUNNING
expect_ok "its end ($final) arrives" wait_until 30 has_event "$WORK/admin.sse" execs "any(e['id'] == '$x' and e['state'] == '$final' for e in d)"
expect_ok "its devices free again" wait_until 30 has_event "$WORK/admin.sse" slots "len(d) == 4 and all(s['owner'] is None for s in d)"
expect_ok "bob saw the devices held (by another user's job)" has_event "$WORK/bob.sse" slots "any(s['held'] for s in d)"
expect_eq "bob never saw the exec" "$(grep -c -- "$x" "$WORK/bob.sse")" "0"
expect_ok "bob's execs stay empty" has_event "$WORK/bob.sse" execs 'd == []'

# ---- a quiet stream's keep-alive
expect_ok "a keep-alive comment within 15 s of silence" wait_until 25 has "$WORK/bob.sse" ': keep-alive'

# ---- logging off ends the streams of that session, not bob's others
stream "$WORK/bob-bearer.sse" -H "Authorization: Bearer $BOB_TOKEN"
expect_ok "bob's Bearer stream" wait_until 10 has_event "$WORK/bob-bearer.sse" slots 'True'
expect_eq "bob logs off that token" "$(curl -s -o /dev/null -w '%{http_code}' -X POST \
    -H "Authorization: Bearer $BOB_TOKEN" "$URL/auth/v1/logout")" "200"
ended_pid() { ! kill -0 "$1" 2>/dev/null; }
expect_ok "its stream ends" wait_until 10 ended_pid "${PIDS[2]}"
expect_ok "his cookie stream goes on" kill -0 "${PIDS[1]}"
BOB_TOKEN=$(curl -s -X POST -u bob:bob-password "$URL/auth/v1/logon" |
            python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')

# ---- the bound: 2 streams for bob (the flag), more refused; others unaffected
stream "$WORK/bob2.sse" -H "Authorization: Bearer $BOB_TOKEN"
expect_ok "bob's second stream" wait_until 10 has_event "$WORK/bob2.sse" slots 'True'
code=$(curl -s -o "$WORK/refused" -w '%{http_code}' --max-time 10 -H "Cookie: $BOB_COOKIE" "$URL/loom/v1/events")
expect_eq "bob's third is refused" "$code" "429"
expect_contains "naming the flag" "$(cat "$WORK/refused")" "--max-event-streams-per-user 2"
stream "$WORK/admin2.sse" -H "Authorization: Bearer $TOKEN"
expect_ok "the administrator's second stream is not bob's" wait_until 10 has_event "$WORK/admin2.sse" slots 'True'
# a closed stream frees its place at the hub's next round
kill "${PIDS[3]}"
opened() { [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 -H "Cookie: $BOB_COOKIE" "$URL/loom/v1/events")" = 200 ]; }
expect_ok "a closed stream's place is free again" wait_until 5 opened

# ---- the host stops promptly with streams open
t0=$SECONDS
stop_host
expect_ok "within 3 s" test $((SECONDS - t0)) -le 3
ended() { for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null && return 1; done; return 0; }
expect_ok "every stream ended" wait_until 10 ended
finish
