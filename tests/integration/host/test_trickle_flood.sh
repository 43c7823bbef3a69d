#!/usr/bin/env bash
# 1,152 connections from 9 loopback addresses that trickle their headers
# (one line every 5 s), more than the host's 1,024: a client on 127.0.0.1
# is still answered within 1 s (a connection from an address holding fewer
# takes the place of the flood's oldest unfinished one), and the host
# stopped meanwhile stops within seconds, and cleanly (libmicrohttpd could
# keep a worker waiting on a mutex for good, and the stop waited for it).
LOOM=$1
. "$(dirname "$0")/../lib.sh"
FLOOD=
trap '[ -n "$FLOOD" ] && kill "$FLOOD" 2>/dev/null; cleanup' EXIT

start_host
PORT=${URL##*:}
python3 "$(dirname "$0")/trickle_flood.py" "$PORT" 128 9 5 120 "$WORK/flood.ready" &
FLOOD=$!
wait_until 60 test -s "$WORK/flood.ready"
expect_eq "the flood's connections were attempted" "$(cat "$WORK/flood.ready" 2>/dev/null)" "1152"
# header lines arrive while the host runs: wait for the flood's first round
wait_until 20 test -s "$WORK/flood.ready.rounds"
expect_ok "the flood trickles header lines" test -s "$WORK/flood.ready.rounds"

slow=0
for i in 1 2 3 4 5; do
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 -H "Authorization: Bearer $TOKEN" "$URL/loom/v1/health")
    [ "$code" = 200 ] || { slow=$((slow + 1)); echo "probe $i: $code" >&2; }
done
expect_eq "/health from 127.0.0.1 answers within 1 s, 5 of 5 times, during the flood" "$slow" 0

pid=$HOST_PID
kill -TERM "$pid"
host_gone() { ! kill -0 "$1" 2>/dev/null; }
stopped=0
wait_until 20 host_gone "$pid" && stopped=1
expect_eq "the host stopped within 20 s of SIGTERM" "$stopped" 1
if [ "$stopped" = 1 ]; then
    stop_host TERM # collects the exit status and checks for sanitizer reports
else
    kill -9 "$pid"; wait "$pid" 2>/dev/null; HOST_PID=
fi
finish
