# tests/integration/lib.sh - what the integration tests share: a host
# started on a free loopback port with a home of its own, assertions that
# count, and the closing "N passed, N failed" line.
# Usage: LOOM=/path/to/loom; . lib.sh

set -u
PASSED=0
FAILED=0
WORK=$(mktemp -d "${TMPDIR:-/tmp}/loom-it-XXXXXX")
# A host started as root runs jobs under accounts of their own, which must
# pass through every folder above the home (mktemp's 0700 would keep them
# out, and the host refuses such a home): reachable, not listable.
chmod 0711 "$WORK"
HOST_PID=
export LOOM_HOME="$WORK/home"
unset LOOM_HOST

cleanup() {
    if [ -n "$HOST_PID" ]; then kill -9 "$HOST_PID" 2>/dev/null; wait "$HOST_PID" 2>/dev/null; fi
    rm -rf "$WORK"
}
trap cleanup EXIT

pass() { PASSED=$((PASSED + 1)); }
# A failure after the host died would only be followed by more of the same
# until the test's timeout: say so and stop at once.
fail() {
    FAILED=$((FAILED + 1))
    echo "FAIL: $*" >&2
    if [ -n "$HOST_PID" ] && ! kill -0 "$HOST_PID" 2>/dev/null; then
        echo "the host (pid $HOST_PID) is gone; its last output:" >&2
        # a sanitizer's report from its first line: its tail is a legend
        grep -m1 -A40 -E "ERROR: (LeakSanitizer|AddressSanitizer)|runtime error:" "$WORK/serve.out" >&2 ||
            tail -n 20 "$WORK/serve.out" >&2
        exit 1
    fi
}

expect_eq() { # expect_eq WHAT ACTUAL EXPECTED
    if [ "$2" = "$3" ]; then pass; else fail "$1: got '$2', expected '$3'"; fi
}
expect_contains() { # expect_contains WHAT HAYSTACK NEEDLE
    case "$2" in *"$3"*) pass ;; *) fail "$1: '$2' does not contain '$3'" ;; esac
}
expect_not_contains() {
    case "$2" in *"$3"*) fail "$1: '$2' contains '$3'" ;; *) pass ;; esac
}
expect_ok() { # expect_ok WHAT COMMAND...
    local what=$1; shift
    if "$@" >"$WORK/out" 2>&1; then pass; else fail "$what: exit $? ($(tail -c 400 "$WORK/out"))"; fi
}
expect_fails() { # expect_fails WHAT COMMAND... ; leaves the output in $WORK/out
    local what=$1; shift
    if "$@" >"$WORK/out" 2>&1; then fail "$what: succeeded, expected failure"; else pass; fi
}

# wait_until SECONDS COMMAND...: runs COMMAND every 50 ms until it succeeds
# or SECONDS have passed, and returns its last status. Tests wait for what
# they need this way, never for a fixed time, which a busy machine outlasts
# (scripts/check-test-sleeps lists every other sleep in tests/ and why).
wait_until() {
    local end=$((SECONDS + $1))
    shift
    while ! "$@"; do
        [ "$SECONDS" -lt "$end" ] || { "$@"; return; }
        sleep 0.05
    done
}
# output_is TEXT COMMAND...: true when COMMAND prints TEXT (for wait_until:
# `wait_until 10 output_is 0 slots_owned "$id"` runs slots_owned each time).
output_is() {
    [ "$("${@:2}")" = "$1" ]
}

ADMIN_PASSWORD=admin-password-for-tests
printf '%s\n' "$ADMIN_PASSWORD" > "$WORK/admin.pw"

# start_host [extra serve flags]: starts `loom serve`, waits for its
# address and logs on as the administrator.
start_host() {
    rm -f "$LOOM_HOME/host"
    "$LOOM" serve --listen 127.0.0.1:0 --admin-password-file "$WORK/admin.pw" "$@" >"$WORK/serve.out" 2>&1 &
    HOST_PID=$!
    if ! wait_until 30 test -s "$LOOM_HOME/host"; then
        echo "host did not start: $(cat "$WORK/serve.out")" >&2
        exit 1
    fi
    URL=$(head -n1 "$LOOM_HOME/host")
    echo "$ADMIN_PASSWORD" | "$LOOM" login -u admin --password-stdin >/dev/null || exit 1
    TOKEN=$(awk -v u="$URL" '$1 == u {print $2}' "$LOOM_HOME/credentials")
}

# as_user NAME PASSWORD COMMAND...: the CLI logged on as NAME, its
# credentials in a home of its own (the CLI keeps them in $LOOM_HOME), so
# the administrator's stay.
as_user() {
    local home="$WORK/cli-$1"
    mkdir -p "$home"
    cp "$LOOM_HOME/host" "$home/host"
    echo "$2" | LOOM_HOME="$home" "$LOOM" login -u "$1" --password-stdin >/dev/null
    LOOM_HOME="$home" "${@:3}"
}

# stop_host [SIGNAL]: SIGTERM by default, and wait for it to exit. A clean
# stop must exit 0 and, in a sanitizer build, report no leak or error.
stop_host() {
    kill "-${1:-TERM}" "$HOST_PID" 2>/dev/null
    wait "$HOST_PID" 2>/dev/null
    local rc=$?
    HOST_PID=
    if [ "${1:-TERM}" = TERM ]; then
        expect_eq "the host stopped cleanly" "$rc" "0"
        if grep -qE "ERROR: (LeakSanitizer|AddressSanitizer)|runtime error:" "$WORK/serve.out"; then
            fail "sanitizer report from the host: $(grep -m1 -A24 -E 'ERROR: (LeakSanitizer|AddressSanitizer)|runtime error:' "$WORK/serve.out")"
        else
            pass
        fi
    fi
}

# http METHOD PATH [curl args]: prints "STATUS BODY".
http() {
    local method=$1 path=$2; shift 2
    curl -s ${LOOM_CA_CERT:+--cacert "$LOOM_CA_CERT"} -o "$WORK/body" -w '%{http_code}' -X "$method" -H "Authorization: Bearer $TOKEN" \
         "$URL$path" "$@" > "$WORK/status"
    printf '%s %s' "$(cat "$WORK/status")" "$(cat "$WORK/body")"
}

# missing_from JSON KEY FILE: how many lines of FILE (acknowledged names)
# no object in the JSON listing has as "KEY":"line".
missing_from() {
    local n=0 v
    while read -r v; do
        case "$1" in *"\"$2\":\"$v\""*) ;; *) n=$((n + 1)) ;; esac
    done < "$3"
    echo "$n"
}

# skip REASON: the test cannot run here. It exits 77, which ctest shows as
# skipped (SKIP_RETURN_CODE 77 in the test's CMakeLists.txt), never passed.
skip() {
    echo "SKIP: $*"
    exit 77
}
# skip_part REASON: a part of the test cannot run here; the rest runs, and
# finish then reports the whole test skipped (77), naming every part left
# out, unless a check failed. A test that passes ran all of its parts.
SKIPPED_PARTS=
skip_part() {
    echo "SKIP (part): $*"
    SKIPPED_PARTS="$SKIPPED_PARTS${SKIPPED_PARTS:+; }$*"
}

finish() {
    echo "$PASSED passed, $FAILED failed"
    [ "$FAILED" -eq 0 ] && [ "$PASSED" -gt 0 ] || return 1
    [ -z "$SKIPPED_PARTS" ] || skip "parts not run here: $SKIPPED_PARTS"
}
