#!/usr/bin/env bash
# The worker link: workers reach their coordinator over TCP (loom serve
# --worker-link tcp) and train to the same final loss as over the Unix
# socket with the same seed; the exec's secret is in no worker's command
# line and wiped from its environment; a connection to the TCP port with a
# wrong MAC, or none, is refused and named in the driver's log while the
# exec trains on; a worker SIGSTOPped mid-training (no more heartbeats) is
# dropped within a few seconds, on either link and in ASYNC mode too, and
# the exec finishes with
# the others, every sample once per epoch; workers whose coordinator is
# silent (its host stopped) exit within a few seconds, and the host,
# continued, replaces them and finishes the exec; a driver logger that
# keeps the coordinator's loop busy for 4 s silences no heartbeat.
# A host with a certificate (--tls-cert) keeps the TCP link in TLS: the
# workers are told tls:, train to the same loss, in ASYNC too (weights and
# gradients through the link), and a plain peer is shut out; where GnuTLS
# cannot be loaded, a TLS link is refused at the host's start, naming it.
LOOM=$1
PLUGINS=$2
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../train_lib.sh"

driver_log() { cat "$LOOM_HOME/execs/$1/log/driver/stdout"; }
final_losses() { # the last validation's loss and accuracy
    python3 -c "import json, sys; v = json.load(open(sys.argv[1]))[-1]; print(v['loss'], v['accuracy'])" \
        "$LOOM_HOME/execs/$1/val_dict_list.json"
}
# worker_pids ID COUNT: true once COUNT workers of the exec run; their pids
# in $WORK/pids.
worker_pids() {
    pgrep -f "worker .*--exec-id $1 " > "$WORK/pids"
    [ "$(grep -c . "$WORK/pids")" -ge "$2" ]
}
mid_epoch='v["training"]["epochSamplesDone"] > v["training"]["epochSamples"] // 4'

# stop_one_worker ID WHAT: SIGSTOPs one worker of a running 2-worker exec
# mid-epoch and checks it is dropped for its silence (the driver log says
# so, within 20 s: the step deadline is 60 s), then that the exec finishes
# exactly. How long the drop took is printed (3 s of silence, the
# coordinator's loop and the drop: 3.3 s on an idle machine).
stop_one_worker() {
    local id=$1 what=$2
    expect_ok "$what: found its workers" wait_until 60 worker_pids "$id" 2
    expect_ok "$what: mid-epoch with 2 workers" wait_for "$id" "$mid_epoch and v[\"training\"][\"workers\"] == 2" 120
    local victim t0 t1
    victim=$(head -n1 "$WORK/pids")
    t0=$(date +%s%N)
    kill -STOP "$victim"
    # silent between messages, in the middle of one (ASYNC's gradients), or
    # not reading (ASYNC's weights)
    if wait_until 20 grep -qE "no heartbeat for 3 s|nothing for 3 s in the middle of a message|weights could not be sent" \
        "$LOOM_HOME/execs/$id/log/driver/stdout"; then
        t1=$(date +%s%N)
        local ms=$(( (t1 - t0) / 1000000 ))
        # the message says why (its silence, not the 60 s step deadline);
        # the time is printed, not asserted: a loaded machine stretches it
        echo "$what: the stopped worker was dropped after $ms ms"
        pass
    else
        fail "$what: the stopped worker was not dropped for its silence: $(tail -n 5 "$LOOM_HOME/execs/$id/log/driver/stdout")"
    fi
    kill -CONT "$victim" 2>/dev/null
    expect_ok "$what: finishes" "$LOOM" exec wait "$id" --timeout 300
    expect_eq "$what: every sample once per epoch" "$(field "$id" "$every_epoch_once")" "True"
}

model_dir "$WORK/m" 1200 3
wide_model "$WORK/w" 24000 2

# ---- the Unix link: the reference loss, and a stopped worker
start_host --cpu-slots 4
ref=$(submit --model-dir "$WORK/m" --numWorker 2)
expect_ok "unix: finishes" "$LOOM" exec wait "$ref" --timeout 300
ref_loss=$(final_losses "$ref")
echo "unix: final loss $ref_loss"
stop_one_worker "$(submit --model-dir "$WORK/w" --numWorker 2)" "unix, a worker stopped"
stop_one_worker "$(submit --model-dir "$WORK/w" --numWorker 2 --syncMode ASYNC)" "unix ASYNC, a worker stopped"
stop_host

# ---- TCP
start_host --cpu-slots 4 --worker-link tcp
id=$(submit --model-dir "$WORK/m" --numWorker 2)
expect_ok "tcp: finishes" "$LOOM" exec wait "$id" --timeout 300
expect_eq "tcp: the same final loss as over the Unix socket" "$(final_losses "$id")" "$ref_loss"
expect_contains "tcp: the driver names the link" "$(driver_log "$id")" \
    "workers reach the coordinator over TCP at 127.0.0.1:"

# A longer exec, to knock on its port while it trains.
id=$(submit --model-dir "$WORK/w" --numWorker 2)
expect_ok "tcp: training" wait_for "$id" 'v["training"]["workers"] == 2' 120
expect_ok "tcp: found its workers" wait_until 30 worker_pids "$id" 2
pid=$(head -n1 "$WORK/pids")
ctl=$(tr '\0' '\n' < "/proc/$pid/cmdline" | awk 'prev == "--control" {print; exit} {prev = $0}')
case "$ctl" in tcp:127.0.0.1:[0-9]*) pass ;; *) fail "tcp: the worker's --control: '$ctl'" ;; esac
expect_eq "tcp: no secret on the worker's command line" \
    "$(tr '\0' '\n' < "/proc/$pid/cmdline" | grep -ciE 'SECRET|^[0-9a-f]{64}$')" 0
expect_eq "tcp: the secret wiped from the worker's environment" \
    "$(tr '\0' '\n' < "/proc/$pid/environ" | grep -c '^LOOM_WORKER_SECRET=.')" 0
cat > "$WORK/knock.py" <<'PY'
import socket, sys
host, port = sys.argv[1].rsplit(":", 1)
s = socket.create_connection((host, int(port)), timeout=30)
nonce = s.recv(32)
if sys.argv[2] == "wrong":
    s.sendall(b"\0\0\0\0" + b"\x55" * 32)
# the coordinator closes without a word once it refuses
print("closed" if s.recv(1) == b"" else "answered", len(nonce))
PY
expect_ok "tcp: a wrong MAC connects" timeout 60 python3 "$WORK/knock.py" "${ctl#tcp:}" wrong
expect_eq "tcp: and is shut out after the nonce" "$(cat "$WORK/out")" "closed 32"
expect_ok "tcp: a silent peer connects" timeout 60 python3 "$WORK/knock.py" "${ctl#tcp:}" silent
expect_eq "tcp: and is shut out too" "$(cat "$WORK/out")" "closed 32"
expect_contains "tcp: the driver names the wrong MAC" "$(driver_log "$id")" \
    "refused a control connection: a wrong MAC for slot 0 (not the exec's secret)"
expect_contains "tcp: and the missing one" "$(driver_log "$id")" \
    "refused a control connection: no answer to the nonce"
expect_ok "tcp: the exec trains on and finishes" "$LOOM" exec wait "$id" --timeout 300
expect_eq "tcp: every sample once per epoch" "$(field "$id" "$every_epoch_once")" "True"
expect_not_contains "tcp: no worker was lost" "$(driver_log "$id")" "no heartbeat"

stop_one_worker "$(submit --model-dir "$WORK/w" --numWorker 2)" "tcp, a worker stopped"

# A driver logger that takes 4 s a validation: the coordinator's loop is
# busy, its heartbeats are not (they come from a thread of their own).
expect_ok "logger add call_log_logger" "$LOOM" logger add "$PLUGINS/call_log_logger.so"
model_dir "$WORK/slow" 1200 2 ', "loggers": [{"name": "call_log_logger", "role": "driver", "config": {"test_sleep_ms": 4000}}]'
id=$(submit --model-dir "$WORK/slow" --numWorker 2)
expect_ok "slow driver logger: the exec finishes" "$LOOM" exec wait "$id" --timeout 300
expect_eq "slow driver logger: the logger was slow" \
    "$(grep -c '^test ' "$LOOM_HOME/execs/$id/plugins/call_log_logger/calls-driver.txt" 2>&1)" 2
expect_eq "slow driver logger: no worker took the coordinator for lost" \
    "$(cat "$LOOM_HOME/execs/$id"/log/worker-*/stdout | grep -c 'coordinator silent')" 0
expect_not_contains "slow driver logger: no worker was lost" "$(driver_log "$id")" "no heartbeat"
expect_eq "slow driver logger: every sample once per epoch" "$(field "$id" "$every_epoch_once")" "True"

# The coordinator silent (its host stopped): the workers exit on their own
# within a few seconds; the host, continued, replaces them and finishes.
id=$(submit --model-dir "$WORK/w" --numWorker 2)
expect_ok "host stopped: found the workers" wait_until 60 worker_pids "$id" 2
expect_ok "host stopped: mid-epoch" wait_for "$id" "$mid_epoch and v[\"training\"][\"workers\"] == 2" 120
kill -STOP "$HOST_PID"
t0=$(date +%s%N)
silent_exit() { grep -qs "coordinator silent for 3 s" "$LOOM_HOME/execs/$id"/log/worker-*/stdout; }
if wait_until 20 silent_exit; then
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    echo "host stopped: a worker left after $ms ms" # printed, not asserted
    pass
else
    fail "host stopped: no worker noticed its silent coordinator"
fi
kill -CONT "$HOST_PID"
expect_ok "host stopped: the exec finishes once it continues" "$LOOM" exec wait "$id" --timeout 300
expect_eq "host stopped: every sample once per epoch" "$(field "$id" "$every_epoch_once")" "True"
stop_host

# ---- TCP in TLS: a host with a certificate
gnutls=$(ldconfig -p | sed -n 's/.*libgnutls\.so\.30 .*=> //p' | head -n1)
if [ -n "$gnutls" ] && unshare --mount true 2>/dev/null; then
    expect_fails "tls without GnuTLS: the host does not start" timeout 60 unshare --mount sh -c \
        'mount --bind /dev/null "$(readlink -f "$1")" && shift && exec "$@"' _ "$gnutls" \
        env LOOM_HOME="$WORK/no-gnutls" "$LOOM" serve --cpu-slots 1 --worker-link tls:127.0.0.1
    expect_contains "tls without GnuTLS: saying why" "$(cat "$WORK/out")" \
        "--worker-link tls:127.0.0.1: TLS: GnuTLS cannot be loaded"
else
    skip_part "GnuTLS hidden: no mount namespace here"
fi
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1" \
    -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null
export LOOM_CA_CERT="$WORK/cert.pem"
start_host --cpu-slots 4 --worker-link tcp --tls-cert "$WORK/cert.pem" --tls-key "$WORK/key.pem"
id=$(submit --model-dir "$WORK/w" --numWorker 2)
expect_ok "tls: found its workers" wait_until 60 worker_pids "$id" 2
pid=$(head -n1 "$WORK/pids")
ctl=$(tr '\0' '\n' < "/proc/$pid/cmdline" | awk 'prev == "--control" {print; exit} {prev = $0}')
case "$ctl" in tls:127.0.0.1:[0-9]*) pass ;; *) fail "tls: the worker's --control: '$ctl'" ;; esac
expect_ok "tls: a plain peer connects" timeout 60 python3 "$WORK/knock.py" "${ctl#tls:}" silent
expect_eq "tls: and is shut out, never given a nonce in clear" "$(cat "$WORK/out")" "closed 0"
expect_ok "tls: the exec trains on and finishes" "$LOOM" exec wait "$id" --timeout 300
expect_eq "tls: every sample once per epoch" "$(field "$id" "$every_epoch_once")" "True"
expect_contains "tls: the driver names the link" "$(driver_log "$id")" \
    "workers reach the coordinator over TLS (TLS 1.3 keyed by the exec's secret) at 127.0.0.1:"
expect_contains "tls: and the plain peer it refused" "$(driver_log "$id")" \
    "refused a control connection:"
expect_not_contains "tls: no worker was lost" "$(driver_log "$id")" "no heartbeat"
id=$(submit --model-dir "$WORK/m" --numWorker 2)
expect_ok "tls: the small model finishes" "$LOOM" exec wait "$id" --timeout 300
expect_eq "tls: the same final loss as over the Unix socket" "$(final_losses "$id")" "$ref_loss"
id=$(submit --model-dir "$WORK/m" --numWorker 2 --syncMode ASYNC)
expect_ok "tls ASYNC: finishes" "$LOOM" exec wait "$id" --timeout 300
expect_eq "tls ASYNC: every sample once per epoch" "$(field "$id" "$every_epoch_once")" "True"
stop_host
finish
