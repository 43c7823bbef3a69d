#!/usr/bin/env bash
# Two users' elastic jobs sharing four devices, watched in a real browser:
# alice's 4-worker exec alone holds 4; bob, in a browser of his own,
# submits his 4-worker exec from the submit form: 2 + 2; he stops it from
# his exec's page: alice's holds 4 again. Alice's devices page, live
# through its event stream, shows each step in its table and its timeline
# (console_share.py). Screenshots stay in
# $WORK/shots, copied to the build tree's console-shots/.
LOOM=$1
SRC=$3
BUILD=${4:-}
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../train_lib.sh"

if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ] || ! /usr/bin/python3 -c 'import selenium' 2>/dev/null; then
    [ -z "${CI:-}" ] || { fail "chromium, chromium-driver or python3-selenium missing in CI"; finish; exit; }
    skip "no browser (install chromium chromium-driver python3-selenium: scripts/bootstrap does)"
fi
start_host --cpu-slots 4 --hysteresis 1
expect_ok "add alice" "$LOOM" user add alice -p alice-password
expect_ok "add bob" "$LOOM" user add bob -p bob-password
start_as() { # start_as NAME PASSWORD DIR: a 4-worker elastic exec; prints its id
    as_user "$1" "$2" "$LOOM" exec start --exec-start edt --model-dir "$3" --numWorker 4 |
        sed -n 's/^exec \([^ ]*\) submitted.*/\1/p'
}
model_dir "$WORK/a" 12000 400
model_dir "$WORK/b" 12000 400
A=$(start_as alice alice-password "$WORK/a")
[ -n "$A" ] || { fail "alice's exec was not submitted"; finish; exit; }
expect_ok "alice's exec runs on 4" wait_for "$A" 'v["training"]["workers"] == 4' 60

# the CLI as the administrator again, who may view bob's exec
echo "$ADMIN_PASSWORD" | "$LOOM" login -u admin --password-stdin >/dev/null
# bob's model directory as a zip of its folder, for his browser
(cd "$WORK" && python3 -c 'import os, zipfile
with zipfile.ZipFile("b.zip", "w") as z:
    for f in sorted(os.listdir("b")): z.write("b/" + f)')
mkdir -p "$WORK/shots"
/usr/bin/python3 "$(dirname "$0")/console_share.py" "$URL" alice alice-password "$A" "$WORK/shots" \
    bob bob-password "$WORK/b.zip" > "$WORK/browser.out" 2>&1
rc=$?
cat "$WORK/browser.out"
B=$(sed -n "s/^bob's exec: //p" "$WORK/browser.out")
expect_eq "the browser's checks" "$rc" "0"
expect_eq "no check failed" "$(grep -c '^FAIL' "$WORK/browser.out")" "0"
expect_ok "bob's exec was submitted from his page" test -n "$B"
expect_eq "and stopped from it" "$(field "$B" 'v["state"]')" "KILLED"
for s in share-alone share-bob-submitted share-2-2 share-bob-stopped share-timeline; do
    expect_eq "screenshot $s" "$(test -s "$WORK/shots/$s.png" && echo kept)" "kept"
done
if [ -n "$BUILD" ]; then
    mkdir -p "$BUILD/console-shots" && cp "$WORK/shots"/share-*.png "$BUILD/console-shots/"
fi
"$LOOM" exec stop "$A" >/dev/null 2>&1
stop_host
finish
