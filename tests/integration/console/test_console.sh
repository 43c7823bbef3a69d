#!/usr/bin/env bash
# The web console in a real browser: Debian's Chromium, headless, driven by
# console_browser.py against a live host. An administrator logs on, sees a
# native training exec in the experiments list and its loss curve grow, the
# devices page; a wrong password and another user's exec are refused in the
# page; a model is deployed from a zip of its folder, its profile edited
# (a bad value refused), started, asked, stopped and undeployed from the
# page; a tuning task submitted from its JSON and a zip, its experiments and
# plots filling (a bad task refused as the CLI refuses it); a CSRF-less POST with the session cookie and a cross-origin cookie
# request are refused (curl). Screenshots stay in $WORK/shots, copied to
# the build tree's console-shots/ for whoever looks after a run.
LOOM=$1
SRC=$3
BUILD=${4:-}
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../train_lib.sh"

start_host --cpu-slots 4

# Another user's exec, which the administrator's pages... are the
# administrator's to see; so the browser logs on as alice and bob owns it.
expect_ok "add alice" "$LOOM" user add alice -p alice-password
expect_ok "add bob" "$LOOM" user add bob -p bob-password
# alice's exec trains until it is stopped (from the page, at the end): a
# fixed number of epochs once ended before a slow browser on a loaded
# machine had watched its curve grow
wide_model "$WORK/m" 6000 100000 1024
ALICE_EXEC=$(as_user alice alice-password "$LOOM" exec start --exec-start edt --model-dir "$WORK/m" --numWorker 2 |
             sed -n 's/^exec \([^ ]*\) submitted.*/\1/p')
model_dir "$WORK/b" 300 1
model_dir "$WORK/small" 300 1
(cd "$WORK" && python3 -c 'import os, zipfile
with zipfile.ZipFile("small.zip", "w") as z:
    for f in sorted(os.listdir("small")): z.write("small/" + f)')
BOB_EXEC=$(as_user bob bob-password "$LOOM" exec start --exec-start edt --model-dir "$WORK/b" --numWorker 1 |
           sed -n 's/^exec \([^ ]*\) submitted.*/\1/p')
# A tuning task of alice's, submitted from the page: random search over x
# and y of a shell "training" whose loss is (x - 0.3)^2 + (y - 2)^2.
mkdir -p "$WORK/tune"
cat > "$WORK/tune/train.sh" <<'SH'
#!/bin/sh
x=$(sed -n 's/.*"x":[[:space:]]*\([-0-9.eE+]*\).*/\1/p' config.json)
y=$(sed -n 's/.*"y":[[:space:]]*\([-0-9.eE+]*\).*/\1/p' config.json)
awk -v x="$x" -v y="$y" -v out="$RESULT_DIR/val_dict_list.json" \
    'BEGIN { printf "[{\"loss\": %.6f}]\n", (x-0.3)^2 + (y-2)^2 > out }'
SH
chmod +x "$WORK/tune/train.sh"
cat > "$WORK/task.json" <<'JSON'
{"hpoName": "console-tune", "modelSpec": {"args": "--exec-start command --model-dir tune --model-main train.sh"},
 "algoDef": {"algorithm": "random", "maxJobNum": 4, "maxParalleJobNum": 1, "objectiveMetric": "loss",
             "objective": "minimize"},
 "hyperParams": [{"name": "x", "type": "Range", "dataType": "DOUBLE", "minDbVal": 0, "maxDbVal": 1},
                 {"name": "y", "type": "Discrete", "dataType": "INT", "discreteIntVal": [1, 2, 3]}]}
JSON
# submitted from the tuning page, with the folder as a zip
(cd "$WORK" && python3 -c 'import zipfile
with zipfile.ZipFile("tune.zip", "w") as z: z.write("tune/train.sh")')
# The serving example as a zip of its folder, deployed from the page.
(cd "$BUILD/examples/serving" && python3 -c 'import os, sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as z:
    for f in sorted(os.listdir("echo-so")): z.write("echo-so/" + f)' "$WORK/echo-so.zip")
# the CLI as the administrator again (the browser's checks call it)
echo "$ADMIN_PASSWORD" | "$LOOM" login -u admin --password-stdin >/dev/null
[ -n "$ALICE_EXEC" ] && [ -n "$BOB_EXEC" ] || { fail "submissions: '$ALICE_EXEC' '$BOB_EXEC'"; finish; exit; }

# ---- refusals a page cannot show, with a session made as the page makes it
curl -s -D "$WORK/h" -o "$WORK/logon.json" -H 'Content-Type: application/json' \
     -d '{"user":"alice","password":"alice-password"}' "$URL/console/logon" >/dev/null
SESSION=$(sed -n 's/^Set-Cookie: loom_session=\([^;]*\);.*/\1/ip' "$WORK/h" | tr -d '\r')
code=$(curl -s -o "$WORK/b.json" -w '%{http_code}' -X POST -H "Cookie: loom_session=$SESSION" \
       "$URL/platform/rest/deeplearning/v1/execs/$ALICE_EXEC/stop")
expect_eq "a CSRF-less POST with the cookie" "$code" "403"
expect_contains "it names the header" "$(cat "$WORK/b.json")" "X-CSRF-Token"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Cookie: loom_session=$SESSION" \
       -H 'Origin: http://elsewhere.example' "$URL/platform/rest/deeplearning/v1/execs")
expect_eq "a cross-origin request with the cookie" "$code" "403"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Cookie: loom_session=$SESSION" \
       "$URL/platform/rest/deeplearning/v1/execs/$BOB_EXEC")
expect_eq "another user's exec with the cookie" "$code" "404"

# ---- a detail page's event stream: one item's, the user's own only
sse() { # sse QUERY: 3 s of the stream (or its refusal) with alice's cookie
    curl -s --max-time 3 -H "Cookie: loom_session=$SESSION" "$URL/loom/v1/events?$1"
}
expect_contains "an exec's own stream" "$(sse "exec=$ALICE_EXEC")" "event: exec"
expect_contains "its data is the exec's view" "$(sse "exec=$ALICE_EXEC" | sed -n 's/^data: //p' | head -n1)" "\"id\":\"$ALICE_EXEC\""
expect_eq "and not the lists" "$(sse "exec=$ALICE_EXEC" | grep -c '^event: \(slots\|execs\|models\)')" "0"
expect_contains "another user's exec is refused" "$(sse "exec=$BOB_EXEC")" '"status":404'
expect_contains "one subject a stream" "$(sse "exec=$ALICE_EXEC&task=console-tune")" "a stream follows one of exec, task or model"
expect_contains "a subject past 255 bytes" "$(sse "model=$(printf 'm%.0s' $(seq 256))")" "model: expected a name of 1 to 255 bytes, got 256"

# ---- the browser
if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ] || ! /usr/bin/python3 -c 'import selenium' 2>/dev/null; then
    if [ -n "${CI:-}" ]; then
        fail "chromium, chromium-driver or python3-selenium missing in CI (scripts/bootstrap installs them)"
    else
        skip_part "the browser (install chromium chromium-driver python3-selenium: scripts/bootstrap does)"
    fi
else
    mkdir -p "$WORK/shots"
    if /usr/bin/python3 "$(dirname "$0")/console_browser.py" "$URL" alice alice-password "$ALICE_EXEC" \
           "$BOB_EXEC" "$WORK/shots" "$WORK/small.zip" "$WORK/echo-so.zip" "$LOOM" \
           "$WORK/task.json" "$WORK/tune.zip" > "$WORK/browser.out" 2>&1; then
        pass
    else
        fail "the browser's checks: $(grep -v '^ok:' "$WORK/browser.out" | tail -n 20)"
    fi
    cat "$WORK/browser.out"
    for s in logon-refused experiments exec devices plans models exec-stopped submitted tuning-refused tuning model-deployed model-profile-refused model other-users-exec devices-375; do
        expect_eq "screenshot $s" "$(test -s "$WORK/shots/$s.png" && echo kept)" "kept"
    done
    if [ -n "$BUILD" ]; then
        rm -rf "$BUILD/console-shots" && cp -r "$WORK/shots" "$BUILD/console-shots"
    fi
fi

"$LOOM" exec stop "$ALICE_EXEC" >/dev/null 2>&1 # when the browser did not
"$LOOM" model stop echo-so -f >/dev/null 2>&1
stop_host
finish
