#!/usr/bin/env bash
# The HTTP front door under abuse: a request is refused from its headers
# (route, method, token, Content-Length) before its body is read, so 250 MB
# bodies cost the host no memory; authenticated uploads go to disk, capped
# per user and in all; 1,000 idle sockets from each of two addresses leave health
# answering from another; unpacking many-file archives and deleting execs
# leave the server threads free; and no field is silently cut: each limit
# is refused with a 4xx that names it. Invalid UTF-8 is escaped in replies.
LOOM=$1
SRC=$3
. "$(dirname "$0")/../lib.sh"
PY=/usr/bin/python3
CLIENT="$SRC/tests/integration/host/http_client.py"
EXECS=/platform/rest/deeplearning/v1/execs

# The common default of 1,024 open files: without limits of its own, a host
# that accepts every idle socket runs out of descriptors and answers nobody.
ulimit -Sn 1024
start_host --max-uploads 4 --max-uploads-per-user 2
hwm() { awk '/^VmHWM:/ {print $2}' "/proc/$HOST_PID/status"; }
logon() { # logon USER PASSWORD: prints the token
    curl -s -X POST -u "$1:$2" "$URL/auth/v1/logon" | $PY -c 'import json,sys; print(json.load(sys.stdin).get("token",""))'
}
valid_json() { $PY -c 'import json,sys; json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))' "$1"; }
MB=$((1000 * 1000))

# ---- refused from the headers: no body byte is buffered
base=$(hwm)
out=$($PY "$CLIENT" "$URL" push --size $((250 * MB)) --parallel 3)
expect_eq "three unauthenticated 250 MB uploads get 401" "$(cut -d' ' -f1 <<<"$out" | sort -u)" "401"
sent=$(awk '{s += $2} END {print s}' <<<"$out")
expect_eq "the host stopped them early (less than 100 MB sent in all)" "$((sent < 100 * MB))" "1"
grown=$(( $(hwm) - base ))
expect_eq "the host's peak RSS grew by less than 64 MiB (grew $grown KiB)" "$((grown < 65536))" "1"
out=$($PY "$CLIENT" "$URL" push --size $((250 * MB)) --token "$TOKEN" --path /loom/v1/nowhere)
expect_contains "an unknown route is 404 before the body" "$out" "404 "
out=$($PY "$CLIENT" "$URL" push --size $((250 * MB)) --token "$TOKEN" --path /loom/v1/health)
expect_contains "a wrong method is 405 before the body" "$out" "405 "
out=$($PY "$CLIENT" "$URL" push --size $((300 * 1024 * 1024)) --token "$TOKEN")
expect_contains "a Content-Length over the upload limit is 413" "$out" "413 "
expect_contains "413 names the limit" "$out" "exceeds the limit of 268435456 bytes"

# ---- an authenticated upload goes to disk, not memory, and is removed
base=$(hwm)
out=$($PY "$CLIENT" "$URL" push --size $((250 * MB)) --token "$TOKEN")
expect_contains "a 250 MB upload was read and answered" "$out" "400 $((250 * MB)) "
grown=$(( $(hwm) - base ))
expect_eq "the upload did not grow the peak RSS by 64 MiB (grew $grown KiB)" "$((grown < 65536))" "1"
spool_empty() { [ -z "$(ls -A "$LOOM_HOME/uploads")" ]; }
wait_until 10 spool_empty
expect_eq "the spool file is gone" "$(ls "$LOOM_HOME/uploads" | wc -l)" "0"

# ---- upload slots: 2 per user, 4 in all (the small pushes wait for the
# host's "100 Continue", so a refusal is read before any body byte is sent)
holding() { grep -q holding "$1" 2>/dev/null; }
"$LOOM" user add alice -p alice-password >/dev/null
"$LOOM" user add bob -p bob-password-1 >/dev/null
alice=$(logon alice alice-password)
bob=$(logon bob bob-password-1)
$PY "$CLIENT" "$URL" hold-uploads --token "$TOKEN" --token "$TOKEN" --seconds 120 \
    --until "$WORK/release" > "$WORK/hold" &
hold=$!
expect_ok "two uploads hold their slots" wait_until 30 holding "$WORK/hold"
out=$($PY "$CLIENT" "$URL" push --size 1000 --token "$TOKEN" --expect-continue)
expect_contains "a third upload by one user is 429" "$out" "429 "
expect_contains "429 names the flag" "$out" "--max-uploads-per-user"
$PY "$CLIENT" "$URL" hold-uploads --token "$alice" --token "$alice" --seconds 120 \
    --until "$WORK/release" > "$WORK/hold2" &
hold2=$!
expect_ok "two more hold theirs" wait_until 30 holding "$WORK/hold2"
out=$($PY "$CLIENT" "$URL" push --size 1000 --token "$bob" --expect-continue)
expect_contains "an upload past the host's limit is 503" "$out" "503 "
expect_contains "503 names the flag" "$out" "--max-uploads"
touch "$WORK/release"
wait "$hold" "$hold2"
slot_given_back() {
    out=$($PY "$CLIENT" "$URL" push --size 1000 --token "$bob" --expect-continue)
    case "$out" in 503\ *) return 1 ;; esac
}
wait_until 10 slot_given_back
expect_not_contains "slots are given back when uploads end" "$out" "503 "

# ---- 1,000 idle sockets from each of 127.0.0.2 and .3; health from 127.0.0.1
out=$($PY "$CLIENT" "$URL" idle --src 127.0.0.2 --src 127.0.0.3 --count 1000 --probes 30 --token "$TOKEN" \
      --logon "admin:$ADMIN_PASSWORD")
echo "idle sockets: $out"
expect_contains "every health probe answered" "$out" '"failed": 0,'
expect_contains "every logon answered 200" "$out" '"logons_failed": 0,'
p50=$($PY -c 'import json,sys; print(int(json.loads(sys.argv[1])["p50_ms"] < 100))' "$out")
expect_eq "health's median under 2,000 idle sockets is under 100 ms" "$p50" "1"
r=$(http GET /loom/v1/health); expect_contains "health after the idle sockets" "$r" "200 "

# ---- slow work off the server threads
mkdir -p "$WORK/many/d"
printf '#!/bin/sh\necho ran\n' > "$WORK/many/run.sh"; chmod +x "$WORK/many/run.sh"
(cd "$WORK/many/d" && seq 1 9000 | xargs touch)
tar -C "$WORK/many" -cf "$WORK/many.tar" .
subs=()
for i in 1 2; do
    for who in alice bob; do
        tok=$alice; [ $who = bob ] && tok=$bob
        curl -s -o "$WORK/sub-$i-$who" -H "Authorization: Bearer $tok" \
             -F 'args=--exec-start command --model-main run.sh' -F "file=@$WORK/many.tar" "$URL$EXECS" &
        subs+=($!)
    done
done
sleep 0.2
out=$($PY "$CLIENT" "$URL" health --count 30 --token "$TOKEN")
wait "${subs[@]}"
echo "health while four 9,000-file archives unpack: $out"
expect_contains "health answered while archives unpacked" "$out" '"failed": 0'
p50=$($PY -c 'import json,sys; print(int(json.loads(sys.argv[1])["p50_ms"] < 100))' "$out")
expect_eq "health's median while archives unpack is under 100 ms" "$p50" "1"
ids=$(cat "$WORK"/sub-* | $PY -c 'import json,sys
for line in sys.stdin.read().replace("}{", "}\n{").splitlines(): print(json.loads(line).get("id", ""))')
expect_eq "the four submissions were accepted" "$(grep -c . <<<"$ids")" "4"
one=$(grep -m1 "^alice" <<<"$ids")
for _ in $(seq 1 100); do
    st=$(curl -s -H "Authorization: Bearer $alice" "$URL$EXECS/$one" | $PY -c 'import json,sys; print(json.load(sys.stdin)["state"])')
    [ "$st" = FINISHED ] && break
    sleep 0.1
done
expect_eq "a many-file exec ran" "$st" "FINISHED"
r=$(curl -s -w ' %{http_code}' -X DELETE -H "Authorization: Bearer $alice" "$URL$EXECS/$one")
expect_contains "deleting a many-file exec" "$r" " 200"
expect_eq "its folder is gone" "$(ls -d "$LOOM_HOME/execs/$one" 2>/dev/null | wc -l)" "0"

# ---- nothing silently cut
long=$($PY -c 'print("--exec-start command --model-main run.sh --msd-env X=" + "a" * 4100)')
r=$(http POST "$EXECS" -H 'Content-Type: application/json' --data "{\"args\": \"$long\"}")
expect_contains "args over 4,095 bytes are 400" "$r" "400 "
expect_contains "args' limit is named" "$r" "longer than the limit of 4095"
consumer=/$($PY -c 'print("p" * 300)')
r=$(http POST "$EXECS" -H 'Content-Type: application/json' --data "{\"args\": \"--exec-start command --model-main x --consumer $consumer\"}")
expect_contains "--consumer over 255 bytes is 400" "$r" "400 "
expect_contains "--consumer's limit is named" "$r" "--consumer: 301 bytes, longer than the limit of 255"
plan=/$($PY -c 'print("q" * 300)')
r=$(http POST /loom/v1/plans -H 'Content-Type: application/json' --data "{\"path\": \"$plan\", \"share\": 1}")
expect_contains "a 301-byte plan path is 400" "$r" "400 "
expect_contains "the plan path's limit is named" "$r" "path: 301 bytes, longer than the limit of 255"
r=$(http GET "/loom/v1/plan?path=$plan"); expect_contains "a 301-byte plan path to show is 400" "$r" "400 "
r=$(http POST /loom/v1/plans -H 'Content-Type: application/json' --data '{"path": "/capped", "cap": 1e10}')
expect_contains "cap 1e10 is 400" "$r" "400 "
expect_contains "cap's limit is named" "$r" "cap: expected a whole number from -1000000000 to 1000000000"
two=$(grep -m1 "^bob" <<<"$ids")
r=$(http GET "$EXECS/$two/log?worker=4294967296")
expect_contains "worker=4294967296 is 400" "$r" "400 "
expect_contains "worker's range is named" "$r" "worker: expected a rank from -1 to 2147483647"
r=$(http GET "$EXECS/$($PY -c 'print("e" * 300)')")
expect_contains "an exec id over 255 bytes is 400" "$r" "400 "
expect_contains "the path segment's limit is named" "$r" "path: a segment of 300 bytes, longer than the limit of 255"
r=$(http GET "$EXECS/$two/log?offset=99999999999999999999")
expect_contains "an offset past 2^63 is 400" "$r" "400 "
$PY - "$WORK/deep.tar" <<'PYEOF'
import io, sys, tarfile
name = "/".join(["d" * 200] * 21) + "/f"   # 4,223 bytes: past PATH_MAX once under the exec's folder
with tarfile.open(sys.argv[1], "w", format=tarfile.GNU_FORMAT) as t:
    i = tarfile.TarInfo("run.sh"); data = b"#!/bin/sh\n"; i.size = len(data); i.mode = 0o755
    t.addfile(i, io.BytesIO(data))
    i = tarfile.TarInfo(name); i.size = 1
    t.addfile(i, io.BytesIO(b"x"))
PYEOF
r=$(http POST "$EXECS" -F 'args=--exec-start command --model-main run.sh' -F "file=@$WORK/deep.tar")
expect_contains "a tar entry longer than PATH_MAX is 400" "$r" "400 "
expect_contains "the tar entry's limit is named" "$r" "longer than the limit of 4095 bytes (PATH_MAX)"
r=$(http POST "$EXECS" -F 'args=')
expect_contains "an empty args part is a 400, not a crash" "$r" "400 "
echo "--exec-start command" > "$WORK/args.txt"
r=$(http POST "$EXECS" -F "args=@$WORK/args.txt")
expect_contains "args sent as a file part is a 400 saying so" "$r" "not a file"
printf '{"args": "--exec-start caf\xff\xfe\xc3"}' > "$WORK/bad-utf8.json"
curl -s -o "$WORK/reply.json" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
     --data-binary @"$WORK/bad-utf8.json" "$URL$EXECS"
expect_ok "a reply echoing invalid UTF-8 is valid JSON" valid_json "$WORK/reply.json"
expect_contains "the invalid bytes are escaped" "$(cat "$WORK/reply.json")" 'caf\ufffd\ufffd\ufffd'

# ---- headers: a request's headers in all fit in --max-header-bytes (default
# 8192, with about 900 bytes to spare); past it, 431 before the route runs.
# The Date header is there once, in IMF-fixdate form.
pad() { $PY -c "import sys; print('a' * int(sys.argv[1]))" "$1"; }
r=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" -H "X-Pad: $(pad 7000)" "$URL/loom/v1/health")
expect_eq "7,000 bytes of headers pass at the default" "$r" "200"
r=$(curl -s -o /dev/null -w '%{http_code}' -H "X-Pad: $(pad 8000)" "$URL/loom/v1/health")
expect_eq "8,000 bytes of headers are 431 at the default" "$r" "431"
dates=$(curl -s -D - -o /dev/null "$URL/loom/v1/health" | tr -d '\r' | grep -i '^Date: ')
expect_eq "one Date header" "$(wc -l <<<"$dates")" "1"
expect_ok "the Date is IMF-fixdate, now" $PY -c '
import sys, email.utils, time
d = sys.argv[1].split(": ", 1)[1]
assert d.endswith(" GMT") and len(d) == 29, d
assert abs(email.utils.parsedate_to_datetime(d).timestamp() - time.time()) < 5, d' "$dates"
stop_host
expect_fails "--max-header-bytes under 4096 is refused" "$LOOM" serve --max-header-bytes 1000
start_host --max-header-bytes 16384
r=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" -H "X-Pad: $(pad 15000)" "$URL/loom/v1/health")
expect_eq "15,000 bytes of headers pass with --max-header-bytes 16384" "$r" "200"
r=$(curl -s -o /dev/null -w '%{http_code}' -H "X-Pad: $(pad 17000)" "$URL/loom/v1/health")
expect_eq "17,000 bytes are 431 with it" "$r" "431"

stop_host
finish
