#!/usr/bin/env bash
# The CLI's global flags: --host URL and --home DIR (and their =forms) are
# told apart, so --host reaches a host on a port that is not the default
# one; a misspelt global flag is refused by name instead of being taken for
# a command.
LOOM=$1
. "$(dirname "$0")/../lib.sh"

start_host   # on a free port, never the default 9280
HOST_HOME=$LOOM_HOME
# From here on the default home knows no host: only the flags can find it.
export LOOM_HOME="$WORK/other-home"
mkdir -p "$LOOM_HOME" "$WORK/cwd"
cd "$WORK/cwd" || exit 1

echo "$ADMIN_PASSWORD" >"$WORK/pw"
expect_ok "login through --host URL" "$LOOM" --host "$URL" login -u admin --password-stdin <"$WORK/pw"
expect_contains "the token is kept in LOOM_HOME, for that host" \
    "$(cat "$LOOM_HOME/credentials" 2>/dev/null)" "$URL "
expect_eq "--host made no home named after the URL" "$(ls -A "$WORK/cwd")" ""

expect_ok "--host URL reaches the host" "$LOOM" --host "$URL" --json exec list
expect_eq "and gets its (empty) exec list" "$(cat "$WORK/out")" "[]"
expect_ok "--host=URL reaches the host" "$LOOM" --host="$URL" exec list
expect_contains "as a table" "$(cat "$WORK/out")" "FRAMEWORK"
expect_ok "--host after the command too" "$LOOM" exec list --host "$URL"

# --home DIR finds the host through the address it wrote there.
export LOOM_TOKEN=$TOKEN
expect_ok "--home DIR reaches that home's host" "$LOOM" --home "$HOST_HOME" --json exec list
expect_eq "its exec list" "$(cat "$WORK/out")" "[]"
expect_ok "--home=DIR too" "$LOOM" --home="$HOST_HOME" exec list
expect_fails "a home with no host is not a host" "$LOOM" --home "$WORK/cwd" exec list
expect_contains "it says where it looked" "$(cat "$WORK/out")" "127.0.0.1:9280"

# Bad global flags are refused, naming the flag.
expect_fails "a misspelt global flag" "$LOOM" --hots "$URL" exec list
expect_contains "is named" "$(cat "$WORK/out")" 'unknown global flag "--hots"'
expect_fails "--host without a value" "$LOOM" exec list --host
expect_contains "says so" "$(cat "$WORK/out")" "--host needs a value"
expect_fails "--home= without a value" "$LOOM" --home= exec list
expect_contains "says so" "$(cat "$WORK/out")" "--home needs a value"
expect_ok "--help before the command still works" "$LOOM" --help
expect_ok "--version before the command still works" "$LOOM" --version

stop_host
finish
