#!/usr/bin/env bash
# A model directory sent as a zip (what the console's users have at hand):
# unpacked like a tar, through the same checks and limits: it trains; a zip
# with "..", an absolute path, a link out or past --archive-max-entries /
# --archive-max-bytes is refused by name, and nothing lands outside.
LOOM=$1
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../train_lib.sh"

start_host --cpu-slots 2 --archive-max-entries 20 --archive-max-bytes 2000000
model_dir "$WORK/zm" 300 1
python3 - "$WORK" <<'PY'
import os, stat, sys, zipfile
w = sys.argv[1]
def zipdir(path, top, arc):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for f in sorted(os.listdir(os.path.join(w, top))):
            z.write(os.path.join(w, top, f), arc + f)
zipdir(w + "/zm.zip", "zm", "zm/")       # one top folder named like --model-dir
zipdir(w + "/flat.zip", "zm", "")        # the files at the root
with zipfile.ZipFile(w + "/dotdot.zip", "w") as z:
    z.writestr("zm/edt.json", "{}")
    z.writestr("../escaped.txt", "out")
with zipfile.ZipFile(w + "/abs.zip", "w") as z:
    z.writestr("/tmp/loom-zip-abs.txt", "out")
with zipfile.ZipFile(w + "/link.zip", "w") as z:
    info = zipfile.ZipInfo("zm/passwd")
    info.create_system = 3
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    z.writestr(info, "/etc/passwd")
with zipfile.ZipFile(w + "/many.zip", "w") as z:
    for i in range(30):
        z.writestr("zm/f%d.txt" % i, "x")
with zipfile.ZipFile(w + "/bomb.zip", "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr("zm/zeros.bin", b"\0" * 5000000)
open(w + "/junk.zip", "wb").write(b"PK\x03\x04 this is no zip at all")
PY
submit_zip() { # submit_zip FILE [MODEL-DIR]: "STATUS BODY"
    http POST /platform/rest/deeplearning/v1/execs \
        -F "args=--exec-start edt --model-dir ${2:-zm} --numWorker 1" -F "file=@$1;filename=$(basename "$1")"
}
R=$(submit_zip "$WORK/zm.zip")
expect_eq "a zip with the model's folder" "${R%% *}" "201"
ID=$(printf '%s' "${R#* }" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
wait_for "$ID" 'v["state"] == "FINISHED"' 120 || fail "the zip's exec: $(view "$ID" | head -c 300)"
expect_eq "it trained" "$(field "$ID" 'v["state"]')" "FINISHED"
R=$(submit_zip "$WORK/flat.zip")
expect_eq "a zip with the files at its root" "${R%% *}" "201"

for bad in dotdot:'..' abs:'absolute path' link:'symbolic link out' many:'more than 20 entries' \
           bomb:'exceed the limit of 2000000 bytes' junk:'zip'; do
    name=${bad%%:*} why=${bad#*:}
    R=$(submit_zip "$WORK/$name.zip")
    case "${R%% *}" in 400|413) pass ;; *) fail "$name.zip: got ${R%% *}, expected a refusal" ;; esac
    expect_contains "$name.zip: why" "$R" "$why"
done
expect_eq "nothing escaped" "$(ls "$LOOM_HOME/execs/escaped.txt" /tmp/loom-zip-abs.txt 2>/dev/null | wc -l)" "0"

stop_host
finish
