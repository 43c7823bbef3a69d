#!/usr/bin/env bash
# The header deadline over HTTPS: 1,024 TLS connections from 8 loopback
# addresses (as many as the host's --max-connections) that trickle their
# headers, one line every 5 s; a client on 127.0.0.1 is still answered
# within 1 s (it takes the place of the flood's oldest unfinished
# connection), and a trickler is closed once the deadline passes.
LOOM=$1
. "$(dirname "$0")/../lib.sh"
FLOOD=
trap '[ -n "$FLOOD" ] && kill "$FLOOD" 2>/dev/null; cleanup' EXIT

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1" \
    -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null
expect_ok "a certificate for the test" test -s "$WORK/cert.pem"
export LOOM_CA_CERT="$WORK/cert.pem"
start_host --tls-cert "$WORK/cert.pem" --tls-key "$WORK/key.pem" --header-timeout 10
PORT=${URL##*:}
python3 "$(dirname "$0")/trickle_flood.py" "$PORT" 128 8 5 120 "$WORK/flood.ready" tls &
FLOOD=$!
wait_until 60 test -s "$WORK/flood.ready"
expect_eq "the flood's connections were attempted" "$(cat "$WORK/flood.ready" 2>/dev/null)" "1024"

slow=0
for i in 1 2 3 4 5; do
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 --cacert "$WORK/cert.pem" \
        -H "Authorization: Bearer $TOKEN" "$URL/loom/v1/health")
    [ "$code" = 200 ] || { slow=$((slow + 1)); echo "probe $i: $code" >&2; }
done
expect_eq "/health over HTTPS from 127.0.0.1 answers within 1 s, 5 of 5 times, during the flood" \
    "$slow" 0

# The deadline is 10 s from each connection's accept; the flood looks every
# 5 s. The probes made room by closing 5 at most: every one is closed only
# when the deadline closes the rest.
closed=0
for _ in $(seq 1 600); do # 30 s
    closed=$(cat "$WORK/flood.ready.closed" 2>/dev/null || echo 0)
    [ "${closed:-0}" -ge 1024 ] && break
    sleep 0.05
done
expect_eq "every trickler is closed after the header deadline" "$closed" 1024
kill "$FLOOD" 2>/dev/null; wait "$FLOOD" 2>/dev/null; FLOOD=
stop_host TERM
finish
