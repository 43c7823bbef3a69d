#!/usr/bin/env bash
# User code never runs as root (README "Security model"). A host started as
# root refuses --job-uid-range none and a home its job accounts cannot
# reach (a 0700 folder above it), naming what to do; with no home named it
# takes /var/lib/loom (root's own ~/.loom sits under 0700 /root), and a job
# there runs as its user's account. With the suite's own host (lib.sh), a
# job's first instruction runs under its user's uid, not root's.
# Needs root (skipped otherwise); the default home is checked in a mount
# namespace of its own whose /var/lib is a fresh tmpfs, so the machine's
# /var/lib/loom is never touched.
LOOM=$1
. "$(dirname "$0")/../lib.sh"

if [ "$(id -u)" != 0 ]; then
    echo "SKIPPED: the refusals and the default home are root's" >&2
    exit 77
fi

# ---- --job-uid-range none is refused as root, before any home is made
expect_fails "root with --job-uid-range none" \
    timeout 20 "$LOOM" serve --home "$WORK/none-home" --listen 127.0.0.1:0 --job-uid-range none
expect_contains "the refusal names the flag" "$(cat "$WORK/out")" "--job-uid-range none: refused as root"
expect_contains "and says what to do" "$(cat "$WORK/out")" "start loom serve as an unprivileged user"
expect_ok "no home was made" test ! -e "$WORK/none-home"

# ---- a home beneath a folder job accounts cannot pass through
mkdir -m 0700 "$WORK/closed"
expect_fails "a home beneath a 0700 folder" \
    timeout 20 "$LOOM" serve --home "$WORK/closed/home" --listen 127.0.0.1:0
expect_contains "the refusal names the folder" "$(cat "$WORK/out")" "$WORK/closed (mode 0700) keeps other users out"
expect_contains "and what to do" "$(cat "$WORK/out")" "chmod o+x"

# ---- the suite's own host: a job runs as its user's account
start_host
expect_contains "the host runs jobs under accounts" "$(cat "$WORK/serve.out")" "a uid per user from"
MODEL="$WORK/model"
mkdir -p "$MODEL"
printf '#!/bin/sh\necho "uid=$(id -u) gid=$(id -g)"\n' > "$MODEL/whoami.sh"
chmod +x "$MODEL/whoami.sh"
submit() { # submit ARGS...: prints the exec id
    "$LOOM" exec start "$@" | sed -n 's/^exec \([^ ]*\) submitted.*/\1/p'
}
id=$(submit --exec-start command --model-dir "$MODEL" --model-main whoami.sh)
expect_ok "the job ends" "$LOOM" exec wait "$id" --timeout 60
owner=$(stat -c %u "$LOOM_HOME/execs/$id")
expect_contains "the job ran as its exec folder's owner" "$("$LOOM" exec logs "$id")" "uid=$owner gid=$owner"
case "$owner" in 2[0-9][0-9][0-9][0-9][0-9]) pass ;; *) fail "the exec folder's owner: $owner, expected an account of 200000-299999" ;; esac
stop_host

# ---- no home named: /var/lib/loom, in a namespace of its own
if ! command -v unshare >/dev/null || ! unshare -m true 2>/dev/null; then
    echo "NOT TESTED: the default home (needs unshare -m)" >&2
    finish
    exit $?
fi
cat > "$WORK/default_home.sh" <<SH
#!/bin/bash
# In a mount namespace of its own: /var/lib is a fresh tmpfs.
mount -t tmpfs -o mode=0755 tmpfs /var/lib || exit 2
unset LOOM_HOME
# Root's own home, where an older default would put ~/.loom: the test's.
export HOME="$WORK/root-home"
"$LOOM" serve --listen 127.0.0.1:0 --admin-password-file "$WORK/admin.pw" > "$WORK/default.out" 2>&1 &
pid=\$!
for _ in \$(seq 1 100); do [ -s /var/lib/loom/host ] && break; sleep 0.05; done
[ -s /var/lib/loom/host ] || { kill -9 \$pid; exit 3; }
stat -c %a /var/lib/loom > "$WORK/default.mode"
# The CLI as root finds the host in the same default home.
"$LOOM" login -u admin --password-stdin < "$WORK/admin.pw" > /dev/null || { kill -9 \$pid; exit 4; }
id=\$("$LOOM" exec start --exec-start command --model-dir "$MODEL" --model-main whoami.sh |
     sed -n 's/^exec \([^ ]*\) submitted.*/\1/p')
"$LOOM" exec wait "\$id" --timeout 60 > /dev/null
"$LOOM" exec logs "\$id" > "$WORK/default.job"
stat -c %u "/var/lib/loom/execs/\$id" > "$WORK/default.owner"
kill -TERM \$pid
wait \$pid
SH
chmod +x "$WORK/default_home.sh"
expect_ok "a host with no home named starts as root" unshare -m "$WORK/default_home.sh"
expect_contains "its home is /var/lib/loom" "$(cat "$WORK/default.out")" "home /var/lib/loom,"
expect_eq "reachable by the accounts, listed by none" "$(cat "$WORK/default.mode" 2>/dev/null)" "711"
owner=$(cat "$WORK/default.owner" 2>/dev/null)
case "$owner" in 2[0-9][0-9][0-9][0-9][0-9]) pass ;; *) fail "the default home's exec owner: '$owner'" ;; esac
expect_contains "its job ran as that account" "$(cat "$WORK/default.job" 2>/dev/null)" "uid=$owner "
expect_ok "the machine's /var/lib/loom was not touched" test ! -e /var/lib/loom/host
finish
