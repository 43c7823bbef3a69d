#!/usr/bin/env bash
# Inference over HTTPS takes the lane: the host terminates TLS itself on
# the lane's loops; requests under its prefixes (dlim's and the Open
# Inference Protocol's) are answered there (a request for another route
# pipelined after one is refused, which only the lane does), every other
# route is relayed to libmicrohttpd on the same port and connection; a
# kept-alive TLS connection carries 100 calls; a client that never
# finishes its handshake is closed at the header deadline.
LOOM=$1
BUILD=$4
. "$(dirname "$0")/../lib.sh"
EX="$BUILD/examples/serving"

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1" \
    -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null
expect_ok "a certificate for the test" test -s "$WORK/cert.pem"
export LOOM_CA_CERT="$WORK/cert.pem"
start_host --cpu-slots 2 --tls-cert "$WORK/cert.pem" --tls-key "$WORK/key.pem" --header-timeout 2
expect_contains "the host says https" "$URL" "https://127.0.0.1:"
PORT=${URL##*:}
expect_ok "deploy echo-so over HTTPS (a multipart upload, relayed)" "$LOOM" model deploy -p "$EX/echo-so"
expect_ok "start echo-so" "$LOOM" model start echo-so --wait 90

BODY='{"id":1,"data":"aGVsbG8="}'
out=$(curl -s --cacert "$WORK/cert.pem" -H "Authorization: Bearer $TOKEN" \
      -H 'Content-Type: application/json' --data-binary "$BODY" "$URL/dlim/v1/inference/echo-so")
expect_eq "an inference call over HTTPS" "$out" "$BODY"

# raw HTTP/1.1 over one TLS connection, the server's replies as they come
tls_raw() {
    printf '%b' "$1" | timeout 10 openssl s_client -quiet -connect "127.0.0.1:$PORT" \
        -CAfile "$WORK/cert.pem" 2>/dev/null
}
call="POST /dlim/v1/inference/echo-so HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer $TOKEN\r\nContent-Type: application/json\r\nContent-Length: ${#BODY}\r\n\r\n$BODY"
health="GET /loom/v1/health HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer $TOKEN\r\n\r\n"
out=$(tls_raw "$call$health")
expect_eq "the inference call, then the pipelined /health refused, as only the lane does" \
    "$(printf '%s' "$out" | grep -ao 'HTTP/1.1 [0-9]*' | tr '\n' ' ')" "HTTP/1.1 200 HTTP/1.1 400 "
expect_contains "the refusal says why" "$out" "pipelined"
v2="POST /v2/models/echo-so/ready HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer $TOKEN\r\nContent-Length: 0\r\n\r\n"
out=$(tls_raw "$v2$health")
expect_contains "the second prefix's request is the lane's too: the pipelined /health refused" \
    "$out" "pipelined"

# not the lane's: relayed to libmicrohttpd, on the same port
out=$(curl -s --cacert "$WORK/cert.pem" -H "Authorization: Bearer $TOKEN" "$URL/loom/v1/health")
expect_contains "/health over HTTPS" "$out" '"status":"ok"'
logon() { printf '%s\n' "$ADMIN_PASSWORD" | "$LOOM" login -u admin --password-stdin; }
expect_ok "token logon over HTTPS (the CLI)" logon
expect_contains "the CLI over HTTPS" "$("$LOOM" model list 2>&1)" "echo-so"

# 100 calls, then /health, on one kept-alive TLS connection
args=()
for _ in $(seq 1 100); do
    args+=(-o /dev/null "$URL/dlim/v1/inference/echo-so")
done
out=$(curl -s --cacert "$WORK/cert.pem" -H "Authorization: Bearer $TOKEN" \
      -H 'Content-Type: application/json' --data-binary "$BODY" -w '%{http_code} %{num_connects}\n' \
      "${args[@]}" --next --cacert "$WORK/cert.pem" -H "Authorization: Bearer $TOKEN" -o /dev/null \
      -w '%{http_code} %{num_connects}\n' "$URL/loom/v1/health")
expect_eq "101 replies 200" "$(printf '%s\n' "$out" | grep -c '^200 ')" 101
expect_eq "on one connection" "$(printf '%s\n' "$out" | awk '{n += $2} END {print n}')" 1

# a client that connects and never starts its handshake: closed at the
# header deadline (2 s)
exec 3<>"/dev/tcp/127.0.0.1/$PORT"
t0=$SECONDS
closed=no
if timeout 10 cat <&3 >/dev/null; then closed=yes; fi
exec 3<&-
expect_eq "a silent client is closed" "$closed" yes
expect_ok "within the deadline and a second of sweep" test $((SECONDS - t0)) -le 4

stop_host TERM
finish
